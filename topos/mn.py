"""Mininet adapter, also usable as a ``--custom`` file for plain ``mn``:

    sudo python3 -m controller.launch --topo fattree,k=4 --routing ecmp &   # or dcrepro's venv
    sudo mn --custom topos/mn.py --topo fattree,4 \\
        --switch ovs,protocols=OpenFlow13,datapath=user --controller remote,ip=127.0.0.1,port=6653

Both processes rebuild the same topology from the same spec, so nothing is defined twice.
"""
from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from mininet.topo import Topo

# `mn --custom` exec()s this file without __file__; the code object still knows its path
_HERE = globals().get("__file__") or inspect.currentframe().f_code.co_filename  # type: ignore[union-attr]
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(_HERE))))

import topos as _registry  # noqa: E402  (after the path fix, for `mn --custom`)
from topos.base import Topology  # noqa: E402


class MnTopo(Topo):
    """A Mininet Topo that mirrors a dcrepro Topology, port numbers included."""

    def build(self, dc: Topology) -> None:
        """Add every node and link of ``dc`` with its structural identity."""
        self.dc = dc
        for node in dc:
            if node.kind == "switch":
                self.addSwitch(node.name, dpid=f"{node.dpid:016x}")
            else:
                self.addHost(node.name, ip=f"{node.ip}/8", mac=node.mac)
        for link in dc.links():
            self.addLink(link.a, link.b, port1=link.port_a, port2=link.port_b)


def _factory(name: str) -> Callable[..., MnTopo]:
    def make(*args: Any, **kwargs: Any) -> MnTopo:
        spec = ",".join([name, *map(str, args), *(f"{k}={v}" for k, v in kwargs.items())])
        return MnTopo(_registry.build(spec))
    return make


topos = {name: _factory(name) for name in _registry.SCHEMAS}
