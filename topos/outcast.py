"""The TCP Outcast linear topology (Fig. 3 of the reproduction 002_b94e7e7e77304abe.txt).

::

    recv --[1]-- s1 --[3]====[1]-- s2 --[2]-- a1
                 |                 |--[3]-- a2
                [2]                ...
                 |                 '--[n+1]-- an
                lone

``s1`` (DPID 1) is the bottleneck switch in front of the receiver, ``s2`` (DPID 2) the
aggregate switch.  s1's ports are fixed so a figure can name the input port of every flow:

* s1 port 1 -> ``recv`` (the bottleneck output port; its tail-drop queue is where flows meet)
* s1 port 2 <- ``lone``, the single sender on its own input port
* s1 port 3 <- uplink from s2, carrying the n senders ``a1..an`` (s2 port 1 faces s1,
  s2 port i+1 faces ``ai``)

Addresses: recv 10.0.0.1, lone 10.0.0.2, ai 10.1.(i >> 8).(i & 255); MACs follow the same
octets, so every process rebuilds the identical network from the spec ``outcast,n=N``.
"""
from __future__ import annotations

from .base import Topology, TopologyError, mac_from_octets

#: s1's port layout (see module docstring)
PORT_RECV, PORT_LONE, PORT_UPLINK = 1, 2, 3
MAX_N = 200


class OutcastLinear(Topology):
    """Receiver and lone sender on s1; n senders behind s2, whose uplink enters s1 on port 3."""

    bottleneck = "s1"
    aggregate = "s2"
    receiver = "recv"
    lone = "lone"

    def __init__(self, n: int = 6) -> None:
        super().__init__()
        if not isinstance(n, int) or not 1 <= n <= MAX_N:
            raise TopologyError(f"outcast: n={n} must be an integer in 1..{MAX_N}")
        self.n = n
        self.spec = f"outcast,n={n}"
        self.add_switch("s1", 1, role="bottleneck")
        self.add_switch("s2", 2, role="aggregate")
        self.add_host("recv", "10.0.0.1", mac_from_octets(0, 0, 1), role="receiver")
        self.add_host("lone", "10.0.0.2", mac_from_octets(0, 0, 2), role="lone")
        self.senders_behind_s2 = []
        for i in range(1, n + 1):
            name = f"a{i}"
            self.add_host(name, f"10.1.{i >> 8}.{i & 0xFF}", mac_from_octets(1, i >> 8, i & 0xFF),
                          role="aggregated")
            self.senders_behind_s2.append(name)
        # link order fixes the port numbers documented above
        self.add_link("s1", "recv")
        self.add_link("s1", "lone")
        self.add_link("s1", "s2")
        for name in self.senders_behind_s2:
            self.add_link("s2", name)
        assert (self.port("s1", "recv"), self.port("s1", "lone"), self.port("s1", "s2")) == \
            (PORT_RECV, PORT_LONE, PORT_UPLINK)

    def senders(self) -> list[str]:
        """Every sender: the lone one first, then a1..an."""
        return [self.lone, *self.senders_behind_s2]

    def entry_port(self, sender: str) -> int:
        """The s1 input port through which ``sender``'s traffic reaches the bottleneck."""
        if sender == self.lone:
            return PORT_LONE
        if sender in self.senders_behind_s2:
            return PORT_UPLINK
        raise TopologyError(f"{sender} is not a sender of {self.spec}")

    def access_port(self, sender: str) -> tuple[str, int]:
        """(switch, port) where ``sender``'s own traffic enters the network."""
        sw = self.access_switch(sender)
        return sw, self.port(sw, sender)
