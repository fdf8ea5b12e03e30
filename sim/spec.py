"""From a dcrepro topology, routing plan and traffic to a simulation description (pure).

Forwarding as the plan says, in one of two ways (``forwarding``):

* ``pinned`` (the default for per-flow plans: ``st``, ``ecmp``, ``hashed``, ``ksp``): each
  flow's path is the one the plan gives its 5-tuple (``routing.walk`` with the model's
  per-switch hash, as the flow model routes flows) and is pinned in the simulator with
  static host routes.  Per-destination routes cannot send two flows to one host different
  ways through one switch, so every flow gets its own pair of addresses: a destination
  address added to the receiver's interface and a source address added to the sender's,
  each routed hop by hop along the flow's path (data) and the reverse flow's path (ACKs).
  A flow's packets then take exactly its plan path, whatever else shares the switch.
* ``plan`` (the default, and the only way, for sprays; any plan without path labels):
  every switch holds the plan's own table, per destination host: forward, or select one
  of the choices per packet by the plan's mode, as the BPF switch does
  (dataplanes/bpf/switch.bpf.c ``choose``): ``hash`` the 5-tuple per switch (the flow
  model's ``hash_select``, so ``walk`` predicts each flow's path), ``rnd`` uniformly at
  random per packet, ``rr`` the next choice after the flow's last one at this switch and
  entry (the first at the flow's hash), ``cnt`` the choice whose port this switch has
  sent the fewest bytes on (frames as Ethernet would count them: IP + 14; ties to the
  lowest index).  ACKs are forwarded by the same rules.  Flows use the hosts' own
  addresses and a fixed, seeded source port (``SimFlow.src_port``).  The lookup is a small
  C++ routing protocol (sim/ns3run.py).

Addresses live only inside the simulator: link /30 subnets from 10.0.0.0/9; with pinned
paths flow i gets the /24 number i of 10.128.0.0/10, its source .1 on the sender and its
destination .2 on the receiver.  The prefix is what makes the sender use it: ns-3's TCP
takes its source address from the route to the destination (the bound address is
replaced), and a host's route to its own flow's /24 carries that /24's address as the
source.
"""
from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass, field
from typing import Any

from model.network import hash_select
from routing.plan import SPRAY_MODES, Plan
from routing.walk import walk
from topos.base import DEFAULT_BW, Topology

#: dcrepro's congestion control names -> ns-3 TCP types (Linux's "reno" is NewReno + SACK)
CC_TYPES = {"reno": "ns3::TcpNewReno", "newreno": "ns3::TcpNewReno",
            "cubic": "ns3::TcpCubic", "bbr": "ns3::TcpBbr", "dctcp": "ns3::TcpDctcp"}
QUEUE_DISCS = ("droptail", "red")
#: loss recovery after three duplicate ACKs -> ns-3's recovery type: "prr" (ns-3's default,
#: proportional rate reduction, as Linux) or "classic" (NewReno's halving and inflation)
RECOVERY_TYPES = {"prr": "ns3::TcpPrrRecovery", "classic": "ns3::TcpClassicRecovery"}
FORWARDING = ("pinned", "plan")
#: plan select modes -> the C++ router's numbers (sim/ns3run.py); "forward" is one choice
ROUTER_MODES = {"hash": 0, "rnd": 1, "rr": 2, "cnt": 3, "forward": 4}
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
    bw: float = DEFAULT_BW
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
    #: RED's thresholds (packets), maximum probability and EWMA weight 2^-red_wlog; None =
    #: a quarter and three quarters of ``queue``, ns-3's defaults otherwise
    red_min: float | None = None
    red_max: float | None = None
    red_p: float | None = None
    red_wlog: int | None = None
    #: hosts ask for ECN and RED marks instead of dropping (always with dctcp)
    ecn: bool = False
    #: sample one TCP data segment in about N for its fabric latency (plan forwarding); 0 off
    sample: int = 0
    #: TCP's recovery (RECOVERY_TYPES)
    recovery: str = "prr"
    #: cnt sprays balance packets sent per port, not bytes (the BPF switch's
    #: ``bpf,cnt=packets``, the ablation of what CNT counts)
    cnt_packets: bool = False

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
        if self.ecn and self.queue_disc != "red":
            raise ValueError("sim: ECN marks need queue discipline red")
        if self.queue_disc == "red":
            lo = self.queue / 4 if self.red_min is None else self.red_min
            hi = 3 * self.queue / 4 if self.red_max is None else self.red_max
            if not 0 < lo < hi <= self.queue:
                raise ValueError(f"sim: RED needs 0 < min < max <= queue {self.queue}, got "
                                 f"{lo:g}, {hi:g}")
            if self.red_p is not None and not 0 < self.red_p <= 1:
                raise ValueError(f"sim: RED's maximum probability must be in (0, 1], got "
                                 f"{self.red_p}")
            if self.red_wlog is not None and not 0 <= self.red_wlog <= 30:
                raise ValueError(f"sim: RED's weight exponent must be 0..30, got "
                                 f"{self.red_wlog}")
        if self.recovery not in RECOVERY_TYPES:
            raise ValueError(f"sim: recovery must be one of {', '.join(RECOVERY_TYPES)}, got "
                             f"{self.recovery!r}")
        if self.sample < 0:
            raise ValueError(f"sim: latency sampling must be >= 0, got {self.sample}")
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
    #: the sender's port (0: ns-3 picks one)
    src_port: int = 0


@dataclass(frozen=True)
class SimEntry:
    """One switch's plan entry for one destination host: its mode (a select mode or
    'forward') and the neighbours its choices lead to, in the plan's order."""

    dst: str
    mode: str
    peers: tuple[str, ...]


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
    #: "pinned" (static routes per flow) or "plan" (every switch holds ``tables``)
    forwarding: str = "pinned"
    #: plan forwarding: switch -> its entries, one per destination host
    tables: dict[str, list[SimEntry]] = field(default_factory=dict)

    def link_addr(self, link: int, end: int) -> str:
        """The address of one end of a link (.1 for a, .2 for b of its /30)."""
        net = ipaddress.IPv4Network(self.links[link].subnet)
        return str(net.network_address + 1 + end)

    def addr_of(self, node: str, peer: str) -> str:
        """``node``'s address on its link to ``peer``."""
        i, end = self.ends[node][peer]
        return self.link_addr(i, end)

    def host_peer(self, host: str) -> str:
        """The switch on a host's link (the simulator's hosts have one: ns3run refuses more)."""
        return next(iter(self.ends[host]))

    def host_addr(self, host: str) -> str:
        """A host's own address: the one on its link."""
        return self.addr_of(host, self.host_peer(host))

    def link_between(self, a: str, b: str) -> int:
        """Index of the link joining a and b."""
        return self.ends[a][b][0]


def spray_mode(plan: Plan) -> str | None:
    """The plan's per-packet mode (rnd, rr, cnt), or None for per-flow forwarding."""
    sprays = plan.modes() & SPRAY_MODES
    if len(sprays) > 1:
        raise ValueError(f"sim: plan mixes spray modes {sorted(sprays)}")
    return next(iter(sprays), None)


def _five_tuple(src_addr: str, dst_addr: str, index: int, rng: random.Random) -> dict[str, Any]:
    return {"src_ip": src_addr, "src_port": rng.randrange(32768, 61000),
            "dst_ip": dst_addr, "dst_port": BASE_PORT + index}


def _hash_paths(topo: Topology, plan: Plan, src: str, dst: str,
                ft: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The switches the plan's per-switch hash sends a flow's data (5-tuple ``ft``) and
    its ACKs (the reversed tuple) through."""
    back = {"src_ip": ft["dst_ip"], "src_port": ft["dst_port"], "dst_ip": ft["src_ip"],
            "dst_port": ft["src_port"]}
    return (tuple(walk(topo, plan, src, dst, hash_select(ft))),
            tuple(walk(topo, plan, dst, src, hash_select(back))))


def plan_tables(topo: Topology, plan: Plan) -> dict[str, list[SimEntry]]:
    """Every switch's plan entry for every host, as neighbours; ValueError (one line) for a
    plan the simulator's router cannot carry (path labels, per-input-port entries)."""
    tables: dict[str, list[SimEntry]] = {}
    for sw in topo.switches():
        sp = plan.switches[sw]
        if any(m.label or m.in_port for m in sp.table):
            raise ValueError(f"sim: the plan {plan.routing} matches path labels or input "
                             f"ports at {sw}; plan forwarding takes destination-only plans")
        out = []
        for h in topo.hosts():
            act = sp.lookup("eth", topo.mac(h), 0, 0)
            if act is None:
                continue
            if act.op == "replicate" or act.pop or any(c.push for c in act.choices):
                raise ValueError(f"sim: the plan {plan.routing} replicates or pushes labels "
                                 f"at {sw}; plan forwarding takes unicast, unlabelled plans")
            mode = act.mode if act.op == "select" else "forward"
            out.append(SimEntry(h, mode, tuple(topo.ports(sw)[c.port][0]
                                               for c in act.choices)))
        tables[sw] = out
    return tables


def build(topo: Topology, plan: Plan, pairs: list[tuple[str, str]], cfg: SimConfig,
          rng: random.Random, forwarding: str | None = None) -> SimNet:
    """The simulation description of ``pairs`` (one long TCP flow each) on ``topo`` routed
    by ``plan``, forwarded ``pinned`` or by the ``plan`` (None: plan for sprays, pinned
    otherwise); ValueError (one line) when something cannot be simulated."""
    cfg.check()
    if not 0 < len(pairs) <= MAX_FLOWS:
        raise ValueError(f"sim: {len(pairs)} flows; the simulator takes 1..{MAX_FLOWS}")
    for s, d in pairs:
        if s == d or topo.is_switch(s) or topo.is_switch(d):
            raise ValueError(f"sim: flow {s}->{d} must join two different hosts")
    mode = spray_mode(plan)
    forwarding = forwarding or ("plan" if mode else "pinned")
    if forwarding not in FORWARDING:
        raise ValueError(f"sim: forwarding must be one of {', '.join(FORWARDING)}, got "
                         f"{forwarding!r}")
    if mode and forwarding == "pinned":
        raise ValueError(f"sim: the plan {plan.routing} sprays per packet; pinned paths "
                         "cannot: use plan forwarding")
    links: list[SimLink] = []
    ends: dict[str, dict[str, tuple[int, int]]] = {n.name: {} for n in topo}
    subnets = LINK_NET.subnets(new_prefix=30)
    rates = topo.link_rates(cfg.bw)
    for i, link in enumerate(topo.links()):
        links.append(SimLink(link.a, link.port_a, link.b, link.port_b, rates[(link.a, link.b)],
                             str(next(subnets))))
        if link.b in ends[link.a]:
            raise ValueError(f"sim: {link.a} and {link.b} are joined twice; static routes "
                             "name a next hop by address, one link per pair")
        ends[link.a][link.b] = (i, 0)
        ends[link.b][link.a] = (i, 1)
    net = SimNet([n.name for n in topo], set(topo.hosts()), links, [], mode is not None,
                 plan.routing, ends, forwarding)
    if forwarding == "plan":
        net.tables = plan_tables(topo, plan)
    flows = []
    for i, (src, dst) in enumerate(pairs):
        start = rng.uniform(0, cfg.start_jitter_s) if cfg.start_jitter_s else 0.0
        if forwarding == "plan":
            ft = _five_tuple(net.addr_of(src, topo.access_switch(src)),
                             net.addr_of(dst, topo.access_switch(dst)), i, rng)
            # per flow: the path the switches' hash will give it; a spray has none
            path, rev = (None, None) if mode else _hash_paths(topo, plan, src, dst, ft)
            flows.append(SimFlow(i, src, dst, path, rev, ft["src_ip"], ft["dst_ip"],
                                 BASE_PORT + i, start, ft["src_port"]))
            continue
        base = FLOW_NET.network_address + (i << (32 - FLOW_PREFIX))
        src_addr, dst_addr = str(base + 1), str(base + 2)
        path, rev = _hash_paths(topo, plan, src, dst, _five_tuple(src_addr, dst_addr, i, rng))
        flows.append(SimFlow(i, src, dst, path, rev, src_addr, dst_addr, BASE_PORT + i, start))
    net.flows = flows
    return net


def static_routes(net: SimNet) -> dict[str, list[tuple[str, str]]]:
    """Per-flow forwarding as static host routes: node -> [(destination address, peer to
    forward to)], for every switch on each flow's path (data to its destination address)
    and reverse path (ACKs to its source address).  Hosts need only their default route."""
    routes: dict[str, list[tuple[str, str]]] = {}
    if net.forwarding != "pinned":   # the switches' plan tables route every packet
        return routes
    for f in net.flows:
        if f.path is None or f.rev_path is None:
            continue
        for addr, hops, last in ((f.dst_addr, f.path, f.dst), (f.src_addr, f.rev_path, f.src)):
            nxt = list(hops[1:]) + [last]
            for here, peer in zip(hops, nxt):
                routes.setdefault(here, []).append((addr, peer))
    return routes


# -- multicast groups (orca) ------------------------------------------------------------------

@dataclass(frozen=True)
class SimHop:
    """One switch of a multicast tree: the neighbour the tree enters it from and the
    neighbours it sends a copy to (switches below it, member hosts), in port order."""

    switch: str
    parent: str
    children: tuple[str, ...]


@dataclass(frozen=True)
class SimGroup:
    """A multicast group as the simulator installs it: one static multicast route per switch
    of the tree (input device -> output devices), the source's default multicast route."""

    group: str
    src: str
    members: tuple[str, ...]
    hops: tuple[SimHop, ...]


def tree_hops(topo: Topology, src: str, members: list[str]) -> list[SimHop]:
    """The tree ``routing.multicast.tree_edges`` builds for the plan, per switch: (switch, the
    neighbour the tree enters from, the switches below it and the members on it)."""
    from routing.multicast import tree_edges
    children = tree_edges(topo, src, members)
    parent = {d: up for up, downs in children.items() for d in downs}
    return [SimHop(sw, parent.get(sw, src),
                   (*downs, *(m for m in members if topo.access_switch(m) == sw)))
            for sw, downs in children.items()]


def group_of_plan(topo: Topology, plan: Plan, group: str, src: str,
                  members: list[str]) -> SimGroup:
    """The group's entries as the plan holds them (``routing.multicast.add_group``): per
    switch, the input port its entry matches and the ports it forwards or replicates to,
    as neighbours; ValueError (one line) when a switch holds more than one entry for the
    group (the simulator's static routes take one input device a switch) or none at all."""
    from routing.multicast import group_mac
    mac = group_mac(group)
    hops = []
    for sw in topo.switches():
        entries = [(m, a) for m, a in plan.switches[sw].table.items() if m.dst == mac]
        if not entries:
            continue
        if len(entries) > 1 or not entries[0][0].in_port:
            raise ValueError(f"sim: the plan holds {len(entries)} entries for group {group} at "
                             f"{sw}; the simulator takes one per switch, keyed by input port")
        match, act = entries[0]
        if act.op not in ("forward", "replicate") or act.pop or any(c.push for c in act.choices):
            raise ValueError(f"sim: the plan's group entry at {sw} is {act.op!r} with labels; "
                             "the simulator replicates plain copies")
        ports = topo.ports(sw)
        hops.append(SimHop(sw, ports[match.in_port][0],
                           tuple(ports[c.port][0] for c in act.choices)))
    reached = {c for h in hops for c in h.children}
    missing = [m for m in members if m not in reached]
    if not hops or missing:
        raise ValueError(f"sim: the plan's tree for {group} does not reach "
                         f"{', '.join(missing) or 'anyone'}")
    return SimGroup(group, src, tuple(members), tuple(hops))


def reply_routes(net: SimNet, group: SimGroup) -> dict[str, list[tuple[str, str]]]:
    """Host routes to the group source's own address (where the members reply: to the
    source of what they received), per switch along each member's reverse path (its flow in
    ``net``, pinned as ACKs are); ValueError (one line) when two members' replies would
    leave one switch by different neighbours (a host route has one next hop)."""
    addr = net.host_addr(group.src)
    nxt: dict[str, str] = {}
    for m in group.members:
        f = next((f for f in net.flows if f.src == group.src and f.dst == m), None)
        if f is None or f.rev_path is None:
            raise ValueError(f"sim: no pinned flow {group.src}->{m} for the group's replies")
        for here, peer in zip(f.rev_path, [*f.rev_path[1:], group.src]):
            if nxt.setdefault(here, peer) != peer:
                raise ValueError(f"sim: replies to {group.src} leave {here} by {nxt[here]} "
                                 f"and {peer}; one host route cannot carry both")
    return {sw: [(addr, peer)] for sw, peer in nxt.items()}
