"""The Orca testbed (001_da816e6d87c9a0a9.txt, section 5), as one tree::

                 snd
                  |
                 agg
              /   ...   \\
           tor1  ...   torR
          / .. \\       / .. \\
        r1 ..  rk   ...     rN

The paper's sender is dual-homed to two ToR switches that stand in for an aggregation
switch; here that aggregation switch is explicit (``agg``), so every copy the sender hands
to the network crosses one link, ``snd``-``agg``, whose load tells unicast (one copy per
receiver) from in-network multicast (one copy).  Receivers are spread evenly over ``racks``
ToR switches (r1..rk on tor1, and so on).

Addresses: snd 10.0.0.1, receiver i 10.1.(i >> 8).(i & 255); MACs follow the same octets, so
every process rebuilds the identical network from the spec ``orca,receivers=N,racks=R``.
"""
from __future__ import annotations

from .base import Topology, TopologyError, mac_from_octets

MAX_RECEIVERS = 200


class OrcaTestbed(Topology):
    """One sender above ``racks`` ToR switches that hold ``receivers`` receivers evenly."""

    sender = "snd"
    aggregate = "agg"

    def __init__(self, receivers: int = 4, racks: int = 2) -> None:
        super().__init__()
        if not 1 <= receivers <= MAX_RECEIVERS:
            raise TopologyError(f"orca: receivers={receivers} must be in 1..{MAX_RECEIVERS}")
        if not 1 <= racks <= receivers or receivers % racks:
            raise TopologyError(f"orca: racks={racks} must divide receivers={receivers}")
        self.spec = f"orca,receivers={receivers},racks={racks}"
        self.add_switch(self.aggregate, 1, role="aggregation")
        self.add_host(self.sender, "10.0.0.1", mac_from_octets(0, 0, 1), role="sender")
        self.add_link(self.aggregate, self.sender)
        self.receivers: list[str] = []
        per = receivers // racks
        for r in range(1, racks + 1):
            tor = f"tor{r}"
            self.add_switch(tor, 1 + r, role="tor")
            self.add_link(self.aggregate, tor)
            for j in range(per):
                i = (r - 1) * per + j + 1
                name = f"r{i}"
                self.add_host(name, f"10.1.{i >> 8}.{i & 0xFF}",
                              mac_from_octets(1, i >> 8, i & 0xFF), role="receiver")
                self.add_link(tor, name)
                self.receivers.append(name)
