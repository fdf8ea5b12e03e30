"""Traced paths: ask the switches which way a flow goes, hop by hop (never recompute it).

``ovs-appctl ofproto/trace`` runs a packet through a bridge's real OpenFlow tables,
including the Nicira multipath hash with that switch's basis, and reports the output port
and the packet as modified (e.g. with a path label pushed).  Following the output port to
the next bridge and tracing again gives the switch-level path the datapath uses for that
5-tuple, for every routing strategy, present or future.
"""
from __future__ import annotations

import re
from typing import Any

from .runtime import Emulation, RunError, check

_OUTPUT = re.compile(r"^\s+output:(\d+)\s*$", re.M)
_FINAL = re.compile(r"^Final flow: (.*)$", re.M)
_DROP_FIELDS = re.compile(r"^(reg\d+|in_port|tcp_flags|recirc_id|dp_hash|vlan_tci1)=")


class TraceError(RunError):
    """The traced packet was dropped, flooded, looped or delivered to the wrong host."""


def trace_flow(emu: Emulation, src: str, dst: str, five_tuple: dict[str, Any],
               proto: str = "tcp") -> list[str]:
    """Switch names a packet of ``five_tuple`` from host ``src`` to ``dst`` crosses."""
    topo = emu.topo
    sw = topo.access_switch(src)
    fields = [proto, f"dl_src={topo.node(src).mac}", f"dl_dst={topo.node(dst).mac}",
              f"nw_src={five_tuple['src_ip']}", f"nw_dst={five_tuple['dst_ip']}",
              f"tp_src={five_tuple['src_port']}", f"tp_dst={five_tuple['dst_port']}"]
    in_port = topo.port(sw, src)
    path: list[str] = []
    while True:
        if sw in path:
            raise TraceError(f"trace {src}->{dst} loops: {path + [sw]}")
        path.append(sw)
        flow = ",".join([fields[0], f"in_port={in_port}", *fields[1:]])
        out = check(["ovs-appctl", "ofproto/trace", sw, flow], timeout=15)
        ports = _OUTPUT.findall(out)
        if len(ports) != 1:
            raise TraceError(f"trace {src}->{dst} at {sw}: {len(ports)} outputs "
                             f"({out.strip().splitlines()[-1]})")
        final = _FINAL.search(out)
        if final and final.group(1).strip() != "unchanged":
            items = final.group(1).split(",")
            fields = [items[0], *(f for f in items[1:] if not _DROP_FIELDS.match(f))]
        peer, in_port = topo.ports(sw)[int(ports[0])]
        if not topo.is_switch(peer):
            if peer != dst:
                raise TraceError(f"trace {src}->{dst} delivered to {peer}")
            return path
        sw = peer


def trace_flows(emu: Emulation, flows: list[Any]) -> list[dict[str, Any]]:
    """Trace every recorded (sub)flow 5-tuple of ``flows`` (traffic.Flow objects)."""
    out = []
    for f in flows:
        for sub in f.subflows:
            out.append({"src": f.src, "dst": f.dst,
                        "five_tuple": {k: sub[k] for k in
                                       ("src_ip", "src_port", "dst_ip", "dst_port")},
                        "path": trace_flow(emu, f.src, f.dst, sub)})
    return out
