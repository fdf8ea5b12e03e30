"""GRIN (003_aa7e1801a46c453f.txt): servers wire their spare ports to neighbouring servers.

The base is the paper's section 5.1 network: ``racks`` racks of ``servers`` servers under
one non-blocking switch (``sw``).  The paper puts the racks' ToRs under a "sufficiently
large switch" whose ToR uplinks carry every server at once; one switch with every server
on it has the same capacities and no oversubscription, and racks only decide who is wired
to whom.  The overlay (``degree`` horizontal links per server) is the one the flow model
uses, ``model.grin.grin_overlay`` (a seeded random regular graph per rack, or across
adjacent racks with ``placement=cross``), so the model and the emulator cable the same
network.  ``degree=0`` is the original network.

Addressing (paper, section 3): the upper 24 bits of an address name a server, the last 8
its GRIN id.  Server ``i`` (from 0) has the prefix 10.H.L.0/24 with H.L = i + 1 and the
primary address 10.H.L.1 on its uplink (port 0).  The interface of server t that faces its
neighbour s takes s's prefix and GRIN id 2 + n, n being t's position among s's neighbours:
a packet to it reaches s by s's prefix, and s hands it over the horizontal link.  Here the
fabric switches by MAC, so "by prefix" is realised by the hosts' static neighbour tables:
every address maps to the MAC of its prefix's owner (``owner``).  Host names are
``r<rack>s<j>``.

One addition to the paper's plan: the same interface also holds an *outgoing* address,
GRIN id 130 + n in the same prefix, routed alike.  Upstream MPTCP's in-kernel path manager
cannot use one address both to announce (the server side) and to open subflows (the
client side): a server with such endpoints spends the ids of all but one on subflows it
may not open, and announces only one (measured: 4 of 5 designed subflows at degree 2).  So
``secondary`` addresses are announced and ``outgoing`` ones open subflows.
"""
from __future__ import annotations

from .base import Topology, TopologyError, mac_from_octets

MAX_SERVERS = 250      # server ids below 2**16
OUTGOING_ID = 130      # GRIN id of the first outgoing address (secondary ones: 2 + n)
SWITCH = "sw"


def server_name(rack: int, j: int) -> str:
    """Name of server ``j`` of rack ``rack`` (both from 0)."""
    return f"r{rack}s{j}"


class GrinTopology(Topology):
    """Racks of servers on one non-blocking switch plus ``degree`` horizontal links each."""

    def __init__(self, racks: int = 2, servers: int = 4, degree: int = 1,
                 placement: str = "rack", seed: int = 0) -> None:
        from model.grin import grin_overlay   # pure; the one definition of the cabling
        super().__init__()
        if racks * servers > MAX_SERVERS:
            raise TopologyError(f"grin: racks x servers = {racks * servers} exceeds "
                                f"{MAX_SERVERS}")
        try:
            pairs = grin_overlay(racks, servers, degree, placement, seed)
        except ValueError as exc:
            raise TopologyError(f"grin: {exc}") from None
        self.spec = (f"grin,racks={racks},servers={servers},degree={degree},"
                     f"placement={placement},seed={seed}")
        self.racks, self.servers_per_rack, self.degree = racks, servers, degree
        self.add_switch(SWITCH, 1, role="switch")
        names = [server_name(r, j) for r in range(racks) for j in range(servers)]
        for i, name in enumerate(names):
            sid = i + 1
            self.add_host(name, f"10.{sid >> 8}.{sid & 0xFF}.1",
                          mac_from_octets(sid >> 8, sid & 0xFF, 1), rack=i // servers,
                          server_id=sid)
            self.add_link(SWITCH, name)          # the uplink is every server's port 0
        #: horizontal links as host-name pairs, in the overlay's order
        self.horizontal: list[tuple[str, str]] = [(names[a], names[b]) for a, b in pairs]
        for a, b in self.horizontal:
            self.add_link(a, b)
        #: (t, s) -> the address of t's interface that faces s (in s's prefix)
        self.secondary: dict[tuple[str, str], str] = {}
        #: (t, s) -> the outgoing address on the same interface (see the module text)
        self.outgoing: dict[tuple[str, str], str] = {}
        for s in names:
            prefix = self.node(s).ip.rsplit(".", 1)[0]
            for n, t in enumerate(self.neighbours(s)):
                self.secondary[(t, s)] = f"{prefix}.{2 + n}"
                self.outgoing[(t, s)] = f"{prefix}.{OUTGOING_ID + n}"

    def neighbours(self, host: str) -> list[str]:
        """The servers ``host`` has a horizontal link to, in port order."""
        return [p for p in self.neighbors(host) if not self.is_switch(p)]

    def addresses(self, host: str) -> list[str]:
        """Primary address first, then one per horizontal link in port order."""
        return [self.node(host).ip] + [self.secondary[(host, s)]
                                       for s in self.neighbours(host)]

    def owner(self, ip: str) -> str:
        """The server whose prefix holds ``ip`` (where the fabric delivers it)."""
        a, b, c, _ = (int(x) for x in ip.split("."))
        sid = (b << 8) | c
        if a != 10 or not 1 <= sid <= len(self.hosts()):
            raise TopologyError(f"{ip} is not a GRIN address of {self.spec}")
        return self.hosts()[sid - 1]

    def outgoing_addresses(self, host: str) -> list[str]:
        """The outgoing address of each horizontal link, in port order."""
        return [self.outgoing[(host, s)] for s in self.neighbours(host)]

    def horizontal_addresses(self) -> dict[tuple[str, str], list[str]]:
        """(t, s) -> every address t holds on its interface facing s."""
        return {k: [v, self.outgoing[k]] for k, v in self.secondary.items()}

    def holder(self, ip: str) -> str:
        """The server that has ``ip`` on one of its interfaces."""
        for (t, _), addrs in self.horizontal_addresses().items():
            if ip in addrs:
                return t
        owner = self.owner(ip)
        if self.node(owner).ip != ip:
            raise TopologyError(f"{ip} is not assigned in {self.spec}")
        return owner

    def subflow_path(self, src_ip: str, dst_ip: str) -> list[str]:
        """Nodes a packet from ``src_ip`` to ``dst_ip`` crosses, hosts included: out over the
        horizontal link its source address belongs to (if any), through the switch unless
        the node it is on owns the destination's prefix, then over the horizontal link the
        destination address belongs to (if any)."""
        src, dst = self.holder(src_ip), self.holder(dst_ip)
        up, down = self.owner(src_ip), self.owner(dst_ip)
        path = [src] if up == src else [src, up]
        if path[-1] == dst:
            return path
        if path[-1] != down:
            path += [SWITCH, down]
        return path if path[-1] == dst else path + [dst]
