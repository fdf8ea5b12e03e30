"""From a dcrepro topology, routing plan and traffic to a simulation description (pure).

Forwarding as the plan says, in one of two ways:

* **per-flow paths** (``st``, ``ecmp``, ``hashed``, ``ksp``): each flow's path is the one the
  plan gives its 5-tuple (``routing.walk`` with the model's per-switch hash, as the flow
  model routes flows) and is pinned in the simulator with static host routes.  Per-
  destination routes cannot send two flows to one host different ways through one switch,
  so every flow gets its own pair of addresses: a destination address added to the
  receiver's interface and a source address added to the sender's, each routed hop by hop
  along the flow's path (data) and the reverse flow's path (ACKs).  A flow's packets then
  take exactly its plan path, whatever else shares the switch.
* **per-packet random spray** (``spray,mode=rnd``): ns-3's global routing with
  ``RandomEcmpRouting`` picks one of the equal-cost next hops at random for every packet at
  every hop.  That is the plan's choice set exactly when the plan sprays over all shortest
  paths, which ``build`` checks pair by pair.  ``rr`` (round robin per flow) and ``cnt``
  (least bytes sent) are not available: ns-3's global routing has no per-flow state and
  no port counters to choose by, and a routing protocol of our own in C++ is future work.

Addresses live only inside the simulator: link /30 subnets from 10.0.0.0/9; flow i gets
the /24 number i of 10.128.0.0/10, its source .1 on the sender and its destination .2 on the
receiver.  The prefix is what makes the sender use it: ns-3's TCP takes its source address
from the route to the destination (the bound address is replaced), and a host's route to
its own flow's /24 carries that /24's address as the source.
"""
from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass, field

import networkx as nx

from model.network import hash_select
from routing.plan import Plan
from routing.walk import all_paths, walk
from topos.base import Topology

#: dcrepro's congestion control names -> ns-3 TCP types (Linux's "reno" is NewReno + SACK)
CC_TYPES = {"reno": "ns3::TcpNewReno", "newreno": "ns3::TcpNewReno",
            "cubic": "ns3::TcpCubic", "bbr": "ns3::TcpBbr", "dctcp": "ns3::TcpDctcp"}
QUEUE_DISCS = ("droptail", "red")
MSS = 1448
#: bytes a data segment adds on a simulated point-to-point link: IPv4 20, TCP 20 + the
#: timestamp option padded to 12, PPP 2 (the emulator's Ethernet frame adds 14, not 2)
SEGMENT_OVERHEAD = 20 + 32 + 2
LINK_NET = ipaddress.IPv4Network("10.0.0.0/9")
FLOW_NET = ipaddress.IPv4Network("10.128.0.0/10")
FLOW_PREFIX = 24
MAX_FLOWS = 2 ** (FLOW_PREFIX - FLOW_NET.prefixlen)
BASE_PORT = 5201


def payload_ceiling(rate_mbps: float, mss: int = MSS) -> float:
    """The most TCP payload a simulated link of ``rate_mbps`` can carry (Mb/s)."""
    return rate_mbps * mss / (mss + SEGMENT_OVERHEAD)


@dataclass(frozen=True)
class SimConfig:
    """What a simulation is run with.  ``queue``: packets at every switch port (tail drop,
    or RED's limit); ``host_queue``: a host's own NIC queue (Linux's TCP small queues keep a
    real sender's from overflowing; ns-3's TCP has no such back-pressure, so it is long);
    ``rto_min_ms`` None = Linux's 200 ms (ns-3's own default is 1 s); ``delay_us``:
    propagation delay of every link; ``start_jitter_s``: each flow starts at a uniform
    random time in [0, jitter] drawn from the seed; ``packet_jitter_us``: every packet on
    every link takes a uniform random extra delay in [0, jitter] (at most a full frame's
    time on the fastest link, so that a link never reorders data)."""

    duration: float = 10.0
    trim: float = 1.0
    interval: float = 0.5
    bw: float = 10.0
    queue: int = 100
    host_queue: int | None = None
    queue_disc: str = "droptail"
    cc: str = "cubic"
    rto_min_ms: float | None = None
    delay_us: float = 0.0
    start_jitter_s: float = 0.0
    packet_jitter_us: float = 0.0
    seed: int = 1
    run: int = 1

    def check(self) -> None:
        """One-line ValueError on any bad value, before anything is built."""
        if self.duration <= 0 or not 0 <= 2 * self.trim < self.duration:
            raise ValueError(f"sim: trim {self.trim} leaves no window in duration "
                             f"{self.duration}")
        if not 0 < self.interval <= self.duration:
            raise ValueError(f"sim: interval must be in (0, duration], got {self.interval}")
        if self.bw <= 0:
            raise ValueError(f"sim: link rate must be > 0 Mb/s, got {self.bw}")
        if self.queue < 1 or (self.host_queue is not None and self.host_queue < 1):
            raise ValueError(f"sim: queues must hold >= 1 packet, got {self.queue}, "
                             f"{self.host_queue}")
        if self.queue_disc not in QUEUE_DISCS:
            raise ValueError(f"sim: queue discipline must be one of {', '.join(QUEUE_DISCS)},"
                             f" got {self.queue_disc!r}")
        if self.cc not in CC_TYPES:
            raise ValueError(f"sim: congestion control {self.cc!r} has no ns-3 counterpart "
                             f"here (known: {', '.join(sorted(CC_TYPES))})")
        if self.cc == "dctcp" and self.queue_disc != "red":
            raise ValueError("sim: dctcp needs ECN marks: use queue discipline red")
        if self.rto_min_ms is not None and not 0.001 <= self.rto_min_ms <= 10_000:
            raise ValueError(f"sim: rto_min must be 1 us .. 10 s, got {self.rto_min_ms} ms")
        if not 0 <= self.delay_us <= 1_000_000:
            raise ValueError(f"sim: propagation delay must be 0 .. 1 s, got {self.delay_us} us")
        if not 0 <= self.packet_jitter_us <= 1e6 * (1500 + 2) * 8 / (self.bw * 1e6):
            raise ValueError(f"sim: packet jitter must be 0 .. one frame's time at {self.bw} "
                             f"Mb/s ({12016 / self.bw:.1f} us), got {self.packet_jitter_us}")
        if not 0 <= self.start_jitter_s < self.duration - 2 * self.trim:
            raise ValueError(f"sim: start jitter {self.start_jitter_s} s must be >= 0 and "
                             "shorter than the measurement window")


@dataclass(frozen=True)
class SimLink:
    """One point-to-point link: its ends, their topology ports, its rate and /30 subnet."""

    a: str
    port_a: int
    b: str
    port_b: int
    rate_mbps: float
    subnet: str


@dataclass(frozen=True)
class SimFlow:
    """One long TCP flow: ends, pinned paths (switches; None when sprayed per packet), its
    own addresses (the hosts' link addresses when sprayed), port and start time."""

    index: int
    src: str
    dst: str
    path: tuple[str, ...] | None
    rev_path: tuple[str, ...] | None
    src_addr: str
    dst_addr: str
    port: int
    start: float


@dataclass
class SimNet:
    """Everything ns-3 needs to build one network and its flows."""

    nodes: list[str]
    hosts: set[str]
    links: list[SimLink]
    flows: list[SimFlow]
    spray: bool
    routing: str
    #: node -> peer -> (link index, which end: 0 = a, 1 = b)
    ends: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)

    def link_addr(self, link: int, end: int) -> str:
        """The address of one end of a link (.1 for a, .2 for b of its /30)."""
        net = ipaddress.IPv4Network(self.links[link].subnet)
        return str(net.network_address + 1 + end)

    def addr_of(self, node: str, peer: str) -> str:
        """``node``'s address on its link to ``peer``."""
        i, end = self.ends[node][peer]
        return self.link_addr(i, end)

    def link_between(self, a: str, b: str) -> int:
        """Index of the link joining a and b."""
        return self.ends[a][b][0]


def spray_mode(plan: Plan) -> str | None:
    """The plan's per-packet mode (rnd, rr, cnt), or None for per-flow forwarding."""
    sprays = plan.modes() & {"rnd", "rr", "cnt"}
    if len(sprays) > 1:
        raise ValueError(f"sim: plan mixes spray modes {sorted(sprays)}")
    return next(iter(sprays), None)


def _five_tuple(src_addr: str, dst_addr: str, index: int, rng: random.Random) -> dict:
    return {"src_ip": src_addr, "src_port": rng.randrange(32768, 61000),
            "dst_ip": dst_addr, "dst_port": BASE_PORT + index}


def _check_spray_paths(topo: Topology, plan: Plan, pairs: list[tuple[str, str]]) -> None:
    """ns-3's random ECMP sprays over all shortest paths; refuse a plan that sprays over
    another set (one line naming the first pair that differs)."""
    g = topo.graph()
    for src, dst in pairs:
        for a, b in ((src, dst), (dst, src)):
            shortest = {tuple(p[1:-1]) for p in nx.all_shortest_paths(g, a, b)}
            if all_paths(topo, plan, a, b) != shortest:
                raise ValueError(f"sim: the plan {plan.routing} sprays {a}->{b} over other "
                                 "paths than all shortest ones, which is all ns-3's random "
                                 "ECMP can do")


def build(topo: Topology, plan: Plan, pairs: list[tuple[str, str]], cfg: SimConfig,
          rng: random.Random) -> SimNet:
    """The simulation description of ``pairs`` (one long TCP flow each) on ``topo`` routed
    by ``plan``; ValueError (one line) when something cannot be simulated."""
    cfg.check()
    if not 0 < len(pairs) <= MAX_FLOWS:
        raise ValueError(f"sim: {len(pairs)} flows; the simulator takes 1..{MAX_FLOWS}")
    for s, d in pairs:
        if s == d or topo.is_switch(s) or topo.is_switch(d):
            raise ValueError(f"sim: flow {s}->{d} must join two different hosts")
    mode = spray_mode(plan)
    if mode in ("rr", "cnt"):
        raise ValueError(f"sim: spray mode {mode} is not available in the simulator (ns-3's "
                         "routing has no per-flow or per-port state to choose by); use "
                         "spray,mode=rnd")
    links: list[SimLink] = []
    ends: dict[str, dict[str, tuple[int, int]]] = {n.name: {} for n in topo}
    subnets = LINK_NET.subnets(new_prefix=30)
    for i, link in enumerate(topo.links()):
        links.append(SimLink(link.a, link.port_a, link.b, link.port_b, link.rate(cfg.bw),
                             str(next(subnets))))
        if link.b in ends[link.a]:
            raise ValueError(f"sim: {link.a} and {link.b} are joined twice; static routes "
                             "name a next hop by address, one link per pair")
        ends[link.a][link.b] = (i, 0)
        ends[link.b][link.a] = (i, 1)
    net = SimNet([n.name for n in topo], set(topo.hosts()), links, [], mode == "rnd",
                 plan.routing, ends)
    if mode == "rnd":
        _check_spray_paths(topo, plan, pairs)
    flows = []
    for i, (src, dst) in enumerate(pairs):
        start = rng.uniform(0, cfg.start_jitter_s) if cfg.start_jitter_s else 0.0
        if mode == "rnd":
            sw_s, sw_d = topo.access_switch(src), topo.access_switch(dst)
            flows.append(SimFlow(i, src, dst, None, None, net.addr_of(src, sw_s),
                                 net.addr_of(dst, sw_d), BASE_PORT + i, start))
            continue
        base = FLOW_NET.network_address + (i << (32 - FLOW_PREFIX))
        src_addr, dst_addr = str(base + 1), str(base + 2)
        ft = _five_tuple(src_addr, dst_addr, i, rng)
        back = {"src_ip": ft["dst_ip"], "src_port": ft["dst_port"], "dst_ip": ft["src_ip"],
                "dst_port": ft["src_port"]}
        path = tuple(walk(topo, plan, src, dst, hash_select(ft)))
        rev = tuple(walk(topo, plan, dst, src, hash_select(back)))
        flows.append(SimFlow(i, src, dst, path, rev, src_addr, dst_addr, BASE_PORT + i, start))
    net.flows = flows
    return net


def static_routes(net: SimNet) -> dict[str, list[tuple[str, str]]]:
    """Per-flow forwarding as static host routes: node -> [(destination address, peer to
    forward to)], for every switch on each flow's path (data to its destination address)
    and reverse path (ACKs to its source address).  Hosts need only their default route."""
    routes: dict[str, list[tuple[str, str]]] = {}
    for f in net.flows:
        if f.path is None or f.rev_path is None:
            continue
        for addr, hops, last in ((f.dst_addr, f.path, f.dst), (f.src_addr, f.rev_path, f.src)):
            nxt = list(hops[1:]) + [last]
            for here, peer in zip(hops, nxt):
                routes.setdefault(here, []).append((addr, peer))
    return routes
