"""Jellyfish (Singla et al., NSDI 2012): a degree-bounded random graph among ToR switches.

Every switch has ``ports`` ports; hosts take some of them and the rest are wired as a random
graph.  Switch ``s{i}`` has DPID i+1; its n-th host is ``h{i}_{n}`` with IP
``10.{i>>8}.{i&255}.{n+2}`` and MAC ``00:00:00:{i>>8}:{i&255}:{n+2}``, so every identity follows
from the indices.  All randomness comes from one ``random.Random(seed)`` and every random choice
is made from a sorted list, so a spec gives the same graph in any process (neither hash
randomisation nor set order can leak in).
"""
from __future__ import annotations

import random
from collections import Counter

import networkx as nx

from .base import EXTRA_ADDR_BASE, Topology, TopologyError, mac_from_octets

# Switch i has IP second octet i >> 8, which must stay below EXTRA_ADDR_BASE.
MAX_SWITCHES = EXTRA_ADDR_BASE << 8
# Host n of a switch has last octet n + 2 (no .0 and no .1, as in the fat tree's 10.p.s.h).
MAX_HOSTS_PER_SWITCH = 253
# Rejection-sampling attempts before enumerating the remaining pairs (see _random_open_pair).
_TRIES = 32

Fabric = dict[int, set[int]]  # switch index -> indices of its switch neighbours


class Jellyfish(Topology):
    """Random regular-ish graph of ``switches`` ToRs with ``ports`` ports, ``hosts`` hosts.

    Host j sits on switch j % switches (round robin), so per-switch host counts differ by at
    most one and the lowest-numbered switches take the extra hosts; the random graph is
    symmetric in switch labels, so which switches those are does not matter.  With 16 hosts on
    20 switches, s0..s15 get one host and s16..s19 none (the paper's k=4 fat-tree comparison).

    Guarantee after construction (and after ``expand``), N[s] = s and its neighbours: (1) any
    two switches that still have a free port are neighbours; (2) no switch w with >= 2 free
    ports has a link (u, v) with u, v outside N[w]; (3) no two switches a, b with a free port
    each have a link (x, y) with x outside N[a] and y outside N[b].  (3) goes beyond the paper,
    which would strand such a pair.  An odd number of free ports leaves one port unused; in
    practice nothing else is left.  The leftovers are reported in ``free_ports``.
    """

    def __init__(self, switches: int = 20, ports: int = 4, hosts: int = 16, seed: int = 0,
                 grow: int = 0) -> None:
        super().__init__()
        self.spec = (f"jellyfish,switches={switches},ports={ports},hosts={hosts},"
                     f"seed={seed},grow={grow}")
        _check_params(switches, ports, hosts, grow)
        self.switch_ports: int = ports
        self.seed: int = seed
        #: unused ports per switch (every switch listed, 0 when full)
        self.free_ports: dict[str, int] = {}
        # Note: random.Random(-s) == random.Random(s) for ints, so negative seeds alias.
        rng = random.Random(seed)
        on_switch = [len(range(i, hosts, switches)) for i in range(switches)]
        adj: Fabric = {i: set() for i in range(switches)}
        free = {i: ports - on_switch[i] for i in range(switches)}
        _complete(adj, free, rng)
        if not _connected(adj):
            raise TopologyError(f"jellyfish: switches={switches},ports={ports},hosts={hosts} "
                                f"is disconnected for seed {seed}; try another seed or more ports")
        for i in range(switches):
            self._add_tor(i)
        placed = [(j % switches, j // switches) for j in range(hosts)]
        for i, n in placed:
            self._add_rack_host(i, n)
        # Host links first, so a switch's hosts take ports 1..h and its fabric links follow.
        for i, n in placed:
            self.add_link(f"s{i}", f"h{i}_{n}")
        for u, v in _edges(adj):
            self.add_link(f"s{u}", f"s{v}")
        self._refresh_free()
        if grow:
            self.expand(rng, grow)

    # -- growth ---------------------------------------------------------------------------
    def expand(self, rng: random.Random, count: int = 1, hosts_per_switch: int = 0) -> list[str]:
        """Add ``count`` switches one at a time, as in the paper's incremental expansion.

        A new switch gets ``hosts_per_switch`` hosts; its other ports go first to switches that
        still have a free port, then, while it has >= 2 free ports, it is spliced into a
        uniformly random link (u, v) with u, v not yet its neighbours: (u, v) becomes u-new-v.
        Returns the new switch names.  ``spec`` records only the constructor's ``grow``.
        """
        ports = self.switch_ports
        first = len(self.switches())
        if count < 0:
            raise TopologyError(f"jellyfish: cannot expand by {count} switches")
        if ports - hosts_per_switch < 2 or hosts_per_switch < 0:
            raise TopologyError(f"jellyfish: a new switch with {ports} ports and "
                                f"{hosts_per_switch} hosts needs >= 2 free ports to join a link")
        _check_addresses(first + count,
                         [(first + count - 1, hosts_per_switch - 1)] if hosts_per_switch else [])
        return [self._expand_one(rng, hosts_per_switch) for _ in range(count)]

    def _expand_one(self, rng: random.Random, hosts_per_switch: int) -> str:
        new = len(self.switches())
        adj: Fabric = {self.node(s).index: set() for s in self.switches()}
        for u, v in self._fabric_links():
            adj[u].add(v)
            adj[v].add(u)
        old = set(_edges(adj))
        free = {i: self.free_ports[f"s{i}"] for i in adj}
        adj[new], free[new] = set(), self.switch_ports - hosts_per_switch
        # The generic completion, so leftover free ports elsewhere are used too and the
        # class invariant (see the class docstring) holds again afterwards.
        _complete(adj, free, rng)
        if not _connected(adj):  # splicing cannot disconnect; kept as a cheap safety net
            raise TopologyError(f"jellyfish: expansion to s{new} left the fabric disconnected")
        name = self._add_tor(new)
        for n in range(hosts_per_switch):
            self.add_link(name, self._add_rack_host(new, n))
        edges = set(_edges(adj))
        # Removals first, so the ports they free are reused by the new links.
        for u, v in sorted(old - edges):
            self.remove_link(f"s{u}", f"s{v}")
        for u, v in sorted(edges - old):
            self.add_link(f"s{u}", f"s{v}")
        self._refresh_free()
        return name

    # -- helpers --------------------------------------------------------------------------
    def _add_tor(self, i: int) -> str:
        return self.add_switch(f"s{i}", i + 1, layer="tor")

    def _add_rack_host(self, i: int, n: int) -> str:
        octets = (i >> 8, i & 0xFF, n + 2)
        return self.add_host(f"h{i}_{n}", "10.{}.{}.{}".format(*octets),
                             mac_from_octets(*octets), switch=i)

    def _fabric_links(self) -> list[tuple[int, int]]:
        out = []
        for link in self.links():
            if self.is_switch(link.a) and self.is_switch(link.b):
                u, v = self.node(link.a).index, self.node(link.b).index
                out.append((min(u, v), max(u, v)))
        return sorted(out)

    def _refresh_free(self) -> None:
        self.free_ports = {s: self.switch_ports - len(self.ports(s)) for s in self.switches()}


def _check_params(switches: int, ports: int, hosts: int, grow: int) -> None:
    """Reject, before anything is built, every request that cannot give a connected fabric."""
    where = f"jellyfish: switches={switches},ports={ports},hosts={hosts}"
    if switches < 2:
        raise TopologyError(f"{where}: needs at least 2 switches")
    if ports < 1:
        raise TopologyError(f"{where}: needs at least 1 port per switch")
    if hosts < 0 or grow < 0:
        raise TopologyError(f"{where},grow={grow}: hosts and grow must be >= 0")
    if hosts > switches * ports:
        raise TopologyError(f"{where}: {hosts} hosts do not fit on {switches * ports} ports")
    fullest = -(-hosts // switches)  # round robin: s0 carries the most hosts
    if fullest >= ports:
        raise TopologyError(f"{where}: s0 gets {fullest} hosts on its {ports} ports, leaving it "
                            "no fabric port (necessarily disconnected); use more ports")
    spare = switches * ports - hosts
    if spare // 2 < switches - 1:
        raise TopologyError(f"{where}: {spare} free ports give at most {spare // 2} links, "
                            f"fewer than the {switches - 1} needed to connect {switches} switches")
    if grow and ports < 2:
        raise TopologyError(f"{where}: grow needs >= 2 ports per switch to splice new switches")
    # The longest host name is the last host's or the top host of the last hosted switch.
    last = min(hosts, switches) - 1
    top = [((hosts - 1) % switches, (hosts - 1) // switches),
           (last, len(range(last, hosts, switches)) - 1)] if hosts else []
    _check_addresses(switches + grow, top)


def _check_addresses(switches: int, top_hosts: list[tuple[int, int]]) -> None:
    """Names and addresses derive from indices; refuse sizes where they would not fit.

    ``top_hosts`` holds the (switch, n) of the hosts with the longest names and largest n.
    """
    if switches > MAX_SWITCHES:
        raise TopologyError(f"jellyfish: at most {MAX_SWITCHES} switches (IP 10.(i>>8).(i&255).x)")
    for i, n in top_hosts:
        if n + 1 > MAX_HOSTS_PER_SWITCH:
            raise TopologyError(f"jellyfish: at most {MAX_HOSTS_PER_SWITCH} hosts per switch")
        if len(f"h{i}_{n}") > 9:
            raise TopologyError(f"jellyfish: host name h{i}_{n} would exceed 9 characters; "
                                "use fewer switches or hosts")


def _complete(adj: Fabric, free: dict[int, int], rng: random.Random) -> None:
    """Use up free ports in place as the paper does; see the class docstring for the result.

    Link uniformly random non-adjacent pairs of switches with free ports; when none is left,
    splice a random switch with >= 2 free ports into a random link not touching its
    neighbourhood, else rewire a link to a stranded pair of neighbours; after each move go back
    to linking (a removed link can re-open a pair); stop when no move applies.
    """
    while True:
        pair = _random_open_pair(adj, free, rng)
        if pair is not None:
            a, b = pair
            adj[a].add(b)
            adj[b].add(a)
            free[a] -= 1
            free[b] -= 1
        elif not _random_splice(adj, free, rng) and not _random_rewire(adj, free, rng):
            return


def _random_open_pair(adj: Fabric, free: dict[int, int],
                      rng: random.Random) -> tuple[int, int] | None:
    """A uniformly random pair of distinct non-adjacent switches that both have a free port."""
    open_ = [s for s in sorted(free) if free[s] > 0]
    if len(open_) < 2:
        return None
    # Rejection sampling is exactly uniform over eligible pairs and cheap while most pairs are
    # eligible; enumerating afterwards is also uniform, so the mixture stays uniform.
    for _ in range(_TRIES):
        a, b = rng.choice(open_), rng.choice(open_)
        if a != b and b not in adj[a]:
            return a, b
    pairs = [(a, b) for k, a in enumerate(open_) for b in open_[k + 1:] if b not in adj[a]]
    return rng.choice(pairs) if pairs else None


def _random_splice(adj: Fabric, free: dict[int, int], rng: random.Random) -> bool:
    """Replace a random link (u, v) by u-w-v for a random switch w with >= 2 free ports."""
    links = _edges(adj)
    options = []
    for w in sorted(free):
        if free[w] >= 2:
            near = adj[w] | {w}
            usable = [(u, v) for u, v in links if u not in near and v not in near]
            if usable:
                options.append((w, usable))
    if not options:
        return False
    w, usable = rng.choice(options)
    u, v = rng.choice(usable)
    adj[u].remove(v)
    adj[v].remove(u)
    adj[u].add(w)
    adj[v].add(w)
    adj[w] |= {u, v}
    free[w] -= 2
    return True


def _random_rewire(adj: Fabric, free: dict[int, int], rng: random.Random) -> bool:
    """Replace a random link (x, y) by a-x and b-y for neighbours a, b with a free port each.

    Not in the paper, whose construction strands such a pair; it keeps the path x-a-b-y, so
    connectivity is preserved, and it lets every spec use all but at most one port in practice.
    """
    links = _edges(adj)
    options = []
    open_ = [s for s in sorted(free) if free[s] > 0]
    for k, a in enumerate(open_):
        for b in open_[k + 1:]:
            near_a, near_b = adj[a] | {a}, adj[b] | {b}
            usable = [(x, y) for u, v in links for x, y in ((u, v), (v, u))
                      if x not in near_a and y not in near_b]
            if usable:
                options.append((a, b, usable))
    if not options:
        return False
    a, b, usable = rng.choice(options)
    x, y = rng.choice(usable)
    adj[x].remove(y)
    adj[y].remove(x)
    adj[a].add(x)
    adj[x].add(a)
    adj[b].add(y)
    adj[y].add(b)
    free[a] -= 1
    free[b] -= 1
    return True


def _edges(adj: Fabric) -> list[tuple[int, int]]:
    return sorted((u, v) for u in adj for v in adj[u] if u < v)


def _connected(adj: Fabric) -> bool:
    start = min(adj)
    seen, todo = {start}, [start]
    while todo:
        for nxt in adj[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return len(seen) == len(adj)


def path_length_distribution(topo: Topology, max_hops: int = 6) -> dict[int, float]:
    """Fraction of ordered host pairs whose shortest path has exactly h links, h = 1..max_hops.

    A path counts its two host links plus the switch-to-switch hops between the access
    switches; key ``max_hops + 1`` collects longer (and unreachable) pairs.  Any Topology.
    """
    if max_hops < 1:
        raise TopologyError(f"max_hops={max_hops} must be >= 1")
    hosts = topo.hosts()
    if len(hosts) < 2:
        raise TopologyError("path lengths need at least two hosts")
    on_switch = Counter(topo.access_switch(h) for h in hosts)
    graph = topo.switch_graph()
    counts = dict.fromkeys(range(1, max_hops + 2), 0)
    for a in sorted(on_switch):
        dist = nx.single_source_shortest_path_length(graph, a)
        for b in sorted(on_switch):
            pairs = on_switch[a] * (on_switch[b] - (a == b))
            if pairs:
                links = dist[b] + 2 if b in dist else max_hops + 1
                counts[min(links, max_hops + 1)] += pairs
    total = len(hosts) * (len(hosts) - 1)
    return {h: c / total for h, c in counts.items()}
