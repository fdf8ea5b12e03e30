"""GRIN (003_aa7e1801a46c453f.txt): servers wire their spare ports to neighbouring servers.

The base is the paper's section 5.1 network: ``racks`` racks of ``servers`` servers under
one non-blocking switch (``sw``).  The paper puts the racks' ToRs under a "sufficiently
large switch" whose ToR uplinks carry every server at once; one switch with every server
on it has the same capacities and no oversubscription, and racks only decide who is wired
to whom.  The overlay (``degree`` horizontal links per server) is the one the flow model
uses, ``topos.overlay.grin_overlay`` (a seeded random regular graph per rack, or across
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

Two more networks share this addressing and forwarding (each its own spec):

* ``grin-fattree,k,degree,placement,seed``: the overlay on a k-ary fat tree, a rack being an
  edge switch's k/2 servers (``wire_fattree`` builds the fabric, with GRIN's addresses);
* ``multihomed,racks,servers,extra``: the paper's baseline, ``extra`` more ToRs per rack,
  every server on each (one NIC a ToR), the racks' uplink capacity divided evenly over
  their 1 + extra ToRs (each ToR-core link is worth servers / (1 + extra) server links).
  A server's NIC on ToR j is emulated as a horizontal link to a *port host* ``r<r>s<i>p<j>``
  on that ToR which forwards for it and is never a traffic endpoint: the same addressing,
  forwarding and MPTCP endpoints as GRIN carry it, and a packet crosses one more full-rate
  link, which adds delay but no bottleneck.

One addition to the paper's plan: the same interface also holds an *outgoing* address,
GRIN id 130 + n in the same prefix, routed alike.  Upstream MPTCP's in-kernel path manager
cannot use one address both to announce (the server side) and to open subflows (the
client side): a server with such endpoints spends the ids of all but one on subflows it
may not open, and announces only one (measured: 4 of 5 designed subflows at degree 2).  So
``secondary`` addresses are announced and ``outgoing`` ones open subflows.
"""
from __future__ import annotations

import networkx as nx

from .base import Topology, TopologyError, mac_from_octets
from .fattree import wire_fattree
from .overlay import grin_overlay

MAX_SERVERS = 4000     # addresses 10.H.L.1 need H = id >> 8 below 128; model runs go large
OUTGOING_ID = 130      # GRIN id of the first outgoing address (secondary ones: 2 + n)
MAX_SUBFLOWS = 9       # upstream MPTCP: the first subflow and at most 8 more
SWITCH = "sw"
#: the fat tree's fabric as one node in the independent-subflow model (see GrinFatTree)
FABRIC = "fabric"


def server_name(rack: int, j: int) -> str:
    """Name of server ``j`` of rack ``rack`` (both from 0)."""
    return f"r{rack}s{j}"


def server_address(sid: int) -> tuple[str, str]:
    """Primary address 10.H.L.1 and MAC of server id ``sid`` (from 1)."""
    return f"10.{sid >> 8}.{sid & 0xFF}.1", mac_from_octets(sid >> 8, sid & 0xFF, 1)


class GrinTopology(Topology):
    """Racks of servers on one non-blocking switch plus ``degree`` horizontal links each."""

    def __init__(self, racks: int = 2, servers: int = 4, degree: int = 1,
                 placement: str = "rack", seed: int = 0) -> None:
        super().__init__()
        self.spec = (f"grin,racks={racks},servers={servers},degree={degree},"
                     f"placement={placement},seed={seed}")
        self.add_switch(SWITCH, 1, role="switch")
        names = [self._server(server_name(r, j), r * servers + j, r)
                 for r in range(racks) for j in range(servers)]
        for name in names:
            self.add_link(SWITCH, name)          # the uplink is every server's port 0
        self._overlay(names, racks, servers, degree, placement, seed)

    # -- building (shared by the three networks) ------------------------------------------
    def _server(self, name: str, i: int, rack: int) -> str:
        """Add server ``i`` (from 0) with the paper's primary address."""
        if i >= MAX_SERVERS:
            raise TopologyError(f"{self.spec.split(',')[0]}: more than {MAX_SERVERS} servers")
        ip, mac = server_address(i + 1)
        return self.add_host(name, ip, mac, rack=rack, server_id=i + 1)

    def _overlay(self, names: list[str], racks: int, servers: int, degree: int,
                 placement: str, seed: int) -> None:
        """Cable the overlay (``topos.overlay.grin_overlay``, the model's too) between ``names``."""
        try:
            pairs = grin_overlay(racks, servers, degree, placement, seed)
        except ValueError as exc:
            raise TopologyError(f"{self.spec.split(',')[0]}: {exc}") from None
        self.racks, self.servers_per_rack, self.degree = racks, servers, degree
        self.placement, self.seed = placement, seed
        #: the servers that carry traffic, in server-id order
        self.servers: list[str] = names
        self._horizontal(names, [(names[a], names[b]) for a, b in pairs], names)

    def _horizontal(self, names: list[str], pairs: list[tuple[str, str]],
                    owners: list[str]) -> None:
        """Link ``pairs`` and address them: the interface of t facing s, for every s in
        ``owners``, takes s's prefix (secondary 2 + n and outgoing 130 + n)."""
        #: horizontal links as host-name pairs, in the overlay's order
        self.horizontal: list[tuple[str, str]] = pairs
        for a, b in pairs:
            self.add_link(a, b)
        #: (t, s) -> the address of t's interface that faces s (in s's prefix)
        self.secondary: dict[tuple[str, str], str] = {}
        #: (t, s) -> the outgoing address on the same interface (see the module text)
        self.outgoing: dict[tuple[str, str], str] = {}
        for s in owners:
            prefix = self.ip(s).rsplit(".", 1)[0]
            for n, t in enumerate(self.neighbours(s)):
                self.secondary[(t, s)] = f"{prefix}.{2 + n}"
                self.outgoing[(t, s)] = f"{prefix}.{OUTGOING_ID + n}"
        # looked up for every subflow path: built once, the network being complete now
        self._by_id = self.hosts()
        self._holders = {self.node(h).ip: h for h in self._by_id}
        self._holders.update({ip: t for (t, _), ips in self.horizontal_addresses().items()
                              for ip in ips})

    # -- the overlay's addressing ---------------------------------------------------------
    def neighbours(self, host: str) -> list[str]:
        """The hosts ``host`` has a horizontal link to, in port order."""
        return [p for p in self.neighbors(host) if not self.is_switch(p)]

    def faces(self, host: str) -> list[str]:
        """The neighbours ``host`` holds addresses towards, in port order."""
        return [s for s in self.neighbours(host) if (host, s) in self.secondary]

    def addresses(self, host: str) -> list[str]:
        """Primary address first, then one per addressed horizontal link in port order."""
        return [self.ip(host)] + [self.secondary[(host, s)] for s in self.faces(host)]

    def owner(self, ip: str) -> str:
        """The host whose prefix holds ``ip`` (where the fabric delivers it)."""
        a, b, c, _ = (int(x) for x in ip.split("."))
        sid = (b << 8) | c
        if a != 10 or not 1 <= sid <= len(self._by_id):
            raise TopologyError(f"{ip} is not a GRIN address of {self.spec}")
        return self._by_id[sid - 1]

    def outgoing_addresses(self, host: str) -> list[str]:
        """The outgoing address of each addressed horizontal link, in port order."""
        return [self.outgoing[(host, s)] for s in self.faces(host)]

    def horizontal_addresses(self) -> dict[tuple[str, str], list[str]]:
        """(t, s) -> every address t holds on its interface facing s."""
        return {k: [v, self.outgoing[k]] for k, v in self.secondary.items()}

    def holder(self, ip: str) -> str:
        """The host that has ``ip`` on one of its interfaces."""
        if ip in self._holders:
            return self._holders[ip]
        self.owner(ip)          # an address outside every server's prefix says so
        raise TopologyError(f"{ip} is not assigned in {self.spec}")

    def full_mesh(self) -> bool:
        """Whether every connection can open the full mesh of its addresses: one subflow
        from each of the source's primary and outgoing addresses to each of the
        destination's primary and secondary addresses, (1 + d)^2 for degree d, within
        upstream MPTCP's limit.  Otherwise the star: 1 + d(src) + d(dst) subflows."""
        return (1 + max(len(self.faces(h)) for h in self.hosts())) ** 2 <= MAX_SUBFLOWS

    def designed_subflows(self, src: str, dst: str,
                          mesh: bool | None = None) -> list[tuple[str, str]]:
        """(source, destination) addresses of the subflows the path managers are set up to
        open for a connection src -> dst (emulator.hostnet.grin_mptcp_endpoints); ``mesh``
        None: the full mesh where upstream's in-kernel limit allows it, True: always (the
        userspace path manager has no limit), False: the star.

        Full mesh: every (src address, dst address) pair, so each horizontal link at either
        end has a subflow to and from each path of the other end (an isolated GRIN1 pair
        reaches 2 links' worth even with uncoupled congestion control).  Star: the direct
        one, one from each outgoing address of the source to the destination's primary,
        one from the source's primary to each secondary address of the destination."""
        s_ip, d_ip = self.ip(src), self.ip(dst)
        if self.full_mesh() if mesh is None else mesh:
            return [(a, b) for a in [s_ip] + self.outgoing_addresses(src)
                    for b in self.addresses(dst)]
        return ([(s_ip, d_ip)] + [(a, d_ip) for a in self.outgoing_addresses(src)]
                + [(s_ip, a) for a in self.addresses(dst)[1:]])

    # -- paths and models -----------------------------------------------------------------
    def fabric_path(self, up: str, down: str) -> list[str]:
        """Switches between the host whose uplink a packet takes and the one whose downlink
        it takes (unique here: one switch, or a tree)."""
        return nx.shortest_path(self.switch_graph(), self.access_switch(up),
                                self.access_switch(down))

    def subflow_path(self, src_ip: str, dst_ip: str) -> list[str]:
        """Nodes a packet from ``src_ip`` to ``dst_ip`` crosses, hosts included: out over the
        horizontal link its source address belongs to (if any), through the fabric unless
        the node it is on owns the destination's prefix, then over the horizontal link the
        destination address belongs to (if any)."""
        src, dst = self.holder(src_ip), self.holder(dst_ip)
        up, down = self.owner(src_ip), self.owner(dst_ip)
        path = [src] if up == src else [src, up]
        if path[-1] == dst:
            return path
        if path[-1] != down:
            path += [*self.fabric_path(up, down), down]
        return path if path[-1] == dst else path + [dst]

    def model_index(self, server: str) -> int:
        """The model's node for ``server``."""
        return self.servers.index(server)


class GrinFatTree(GrinTopology):
    """The overlay on a k-ary fat tree: racks are edge switches, k/2 servers each.

    In the models the fat tree is one non-blocking switch: with full bisection the optimum
    is the same, and in the independent-subflow model a subflow crosses the node ``FABRIC``
    (ECMP collisions are the emulation's to show, not the model's)."""

    def __init__(self, k: int = 4, degree: int = 1, placement: str = "rack",
                 seed: int = 0) -> None:
        Topology.__init__(self)
        self.spec = f"grin-fattree,k={k},degree={degree},placement={placement},seed={seed}"
        half = k // 2
        self.k = k
        wire_fattree(self, k, lambda pod, sw, h: self._server(
            f"{pod}_{sw}_{h}", (pod * half + sw) * half + h - 2, pod * half + sw))
        self._overlay(self.hosts(), k * half, half, degree, placement, seed)

    def fabric_path(self, up: str, down: str) -> list[str]:
        return [FABRIC]

class Multihomed(GrinTopology):
    """The paper's multihoming baseline: 1 + ``extra`` ToRs per rack under one core switch,
    every server on each; the rack's uplink capacity (``servers`` server links, as the
    original network's) divided evenly over its ToRs.  See the module text for the port
    hosts that stand in for the extra NICs."""

    def __init__(self, racks: int = 2, servers: int = 4, extra: int = 1) -> None:
        Topology.__init__(self)
        if extra < 1:
            raise TopologyError(f"multihomed: extra={extra} must be >= 1 (extra=0 is the "
                                "original network, grin,degree=0)")
        self.spec = f"multihomed,racks={racks},servers={servers},extra={extra}"
        self.racks, self.servers_per_rack, self.extra = racks, servers, extra
        self.degree = extra
        self.add_switch(SWITCH, 1, role="core")
        tors = {(r, j): self.add_switch(f"t{r}_{j}", 2 + r * (1 + extra) + j, role="tor")
                for r in range(racks) for j in range(1 + extra)}
        names = [self._server(server_name(r, i), r * servers + i, r)
                 for r in range(racks) for i in range(servers)]
        n = len(names)
        ports = {(r, i, j): self._server(f"{server_name(r, i)}p{j}",
                                         n + (r * servers + i) * extra + j - 1, r)
                 for r in range(racks) for i in range(servers) for j in range(1, 1 + extra)}
        for tor in tors.values():
            self.add_link(tor, SWITCH, scale=servers / (1 + extra))
        for r in range(racks):
            for i in range(servers):
                self.add_link(tors[(r, 0)], names[r * servers + i])   # port 0: the first NIC
                for j in range(1, 1 + extra):
                    self.add_link(tors[(r, j)], ports[(r, i, j)])
        self.servers = names
        pairs = [(names[r * servers + i], p) for (r, i, _), p in ports.items()]
        self._horizontal(names, pairs, list(ports.values()))

    def model_index(self, server: str) -> int:
        i = self.servers.index(server)
        r, j = divmod(i, self.servers_per_rack)
        return r * (1 + self.extra) * self.servers_per_rack + j

    def port_host_index(self, port_host: str) -> int:
        """The model's node for a port host: its server's, in the model rack of its ToR."""
        server, j = port_host.rsplit("p", 1)
        return self.model_index(server) + int(j) * self.servers_per_rack
