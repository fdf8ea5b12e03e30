"""Pure flow model of GRIN's hop-count study (paper 003, section 5.1).

GRIN wires spare server ports to neighbouring servers ("horizontal" links) so
a server can borrow its neighbours' idle uplinks. Section 5.1 asks how much of
the capacity this opens up is reachable when paths are restricted to ``n``
horizontal hops on each side of the switch (``h_n`` routing).

Reading of the paper that this module implements (paraphrased, section 5.1):

* Topology: "racks of computers connected to a single, sufficiently large
  switch", the whole setup "represented as a directed graph", six racks of
  twenty servers, GRIN degree 1 to 6. Each server has one uplink to its rack's
  ToR; the ToRs hang off one non-blocking core, so the ToR<->core links get
  capacity ``servers_per_rack`` (never a bottleneck: a "sufficiently large
  switch" has no oversubscription). The paper's remark that "total flow values
  can be larger than 120 (the total number of uplinks)" because some
  connections run over horizontal links only confirms that server uplinks and
  GRIN links are the only bottlenecks. Every link is full duplex with unit
  capacity per direction.
* Objective: "we use GLPK to solve the maximum multi-commodity flow problem,
  which gives the optimal solution and is a hard upper bound on usable
  capacity", reported as the *total flow* (Fig. 5 discussion). So the LPs
  here maximise the SUM of the connection rates, with no per-connection
  demand and no fairness constraint (not the maximum concurrent flow).
* Paths: a path has a first horizontal segment (source to the server whose
  uplink it uses), the core, and a second horizontal segment (downlink server
  to destination); once in the core there is no reason to bounce via another
  server, so a path crosses the switch at most once. ``h_n`` keeps paths whose
  horizontal segments have at most ``n`` hops each. A path that never touches
  the switch is the two segments joined at a server, so under ``h_n`` it may
  have up to ``2n`` hops (for ``h1``: ``s -> x -> t`` is "one horizontal hop
  after the source and one before the destination", and GRIN's addressing can
  route it: ``t``'s secondary address facing ``x`` carries ``x``'s server id).
* Path sampling ("alternative evaluation procedure"): for each connection up
  to 16 paths drawn at random without replacement from the complete ``h_n``
  path set, the direct path always among them; then every chosen path, in
  ascending order of length, gets the largest flow it can: the least residual
  capacity among its links ("path segments"), which then fills the whole path.
  Length is the number of horizontal links, except that a path made of a
  single horizontal link has length zero. Interpretations (documented at
  :func:`sampled_flow`): "up to 16" counts the direct path; the fill order
  is global over all connections' paths, ties broken at random (seeded).

Unspecified in the paper and chosen here (the patterns are ``topos.traffic``'s):
the group size of group traffic (4, which divides 10/30/50/70 % of 120
servers), that "random" traffic has each active server open one connection to
a uniformly random other active server, and that the all-to-all cap of 20
connections per server (which the paper applied to its EC2 runs) means each
active server sends to the next ``min(20, n-1)`` active servers in a random
cyclic order, so every server both initiates and receives exactly that many
connections.

Nodes are server ids ``0..N-1`` (server ``i`` is in rack ``i // s``),
ToRs ``("tor", r)`` and the core ``"core"``; a path is a tuple of nodes.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import scipy.optimize
import scipy.sparse as sp

from topos.overlay import grin_overlay
from topos.traffic import GROUP_SIZE
from topos.traffic import make as make_traffic

__all__ = [
    "CORE",
    "PATTERNS",
    "GrinTopology",
    "grin_overlay",
    "grin_topology",
    "active_servers",
    "pattern_options",
    "hn_paths",
    "path_length",
    "max_flow_edge",
    "max_flow_path_set",
    "max_flow_hn",
    "sampled_flow",
    "InstanceResult",
    "evaluate_instance",
    "HopInstance",
    "hop_instances",
    "HopRow",
    "hop_count_table",
    "summarize",
]

Node = Hashable
Path = tuple[Node, ...]
#: a path among servers only (over horizontal links): a Path whose nodes are all servers
Segment = tuple[int, ...]
Connection = tuple[int, int]

CORE = "core"
#: the section 5.1 patterns, by their topos.traffic names
PATTERNS = ("permutation", "random", "group", "all-to-all")
A2A_CAP = 20  # concurrent connections per server in the paper's all-to-all runs
N_PATHS = 16  # paths per connection in the paper's sampling procedure
_LP_METHOD = "highs"
# Above this many path columns the explicit path LP is slow to build in Python
# and to solve (path LPs are massively degenerate for simplex); "auto" then
# uses the equivalent compact formulation, which the unit tests check agrees.
_AUTO_MAX_COLUMNS = 60_000


def _tor(rack: int) -> Node:
    return ("tor", rack)


# ------------------------------------------------------------------ topology


class GrinTopology:
    """Racks of servers under one non-blocking switch, plus GRIN (horizontal) links.

    ``grin_links`` are undirected server pairs; every link of the model (server
    uplink, GRIN link, ToR<->core link) becomes two directed edges.
    """

    def __init__(
        self,
        racks: int,
        servers_per_rack: int,
        grin_links: Iterable[tuple[int, int]],
        tor_uplink: float | None = None,
        placement: str = "custom",
    ) -> None:
        if racks < 1 or servers_per_rack < 1:
            raise ValueError("need at least one rack and one server per rack, got "
                             f"{racks}x{servers_per_rack}")
        self.racks = racks
        self.servers_per_rack = servers_per_rack
        self.n_servers = racks * servers_per_rack
        # "Sufficiently large switch": by default the ToR uplink carries all of
        # its servers at once, so it can never be the bottleneck.
        self.tor_uplink = float(servers_per_rack if tor_uplink is None else tor_uplink)
        self.placement = placement
        links: set[tuple[int, int]] = set()
        for a, b in grin_links:
            if not (0 <= a < self.n_servers and 0 <= b < self.n_servers):
                raise ValueError(f"GRIN link ({a}, {b}) names a server outside "
                                 f"0..{self.n_servers - 1}")
            if a == b:
                raise ValueError(f"GRIN link ({a}, {b}) is a self-loop")
            key = (min(a, b), max(a, b))
            if key in links:
                raise ValueError(f"duplicate GRIN link {key}")
            links.add(key)
        self.grin_links: tuple[tuple[int, int], ...] = tuple(sorted(links))
        nbrs: list[list[int]] = [[] for _ in range(self.n_servers)]
        for a, b in self.grin_links:
            nbrs[a].append(b)
            nbrs[b].append(a)
        self.neighbours: tuple[tuple[int, ...], ...] = tuple(tuple(sorted(n)) for n in nbrs)

        edges: list[tuple[Node, Node]] = []
        caps: list[float] = []

        def add(a: Node, b: Node, cap: float) -> None:
            edges.extend([(a, b), (b, a)])
            caps.extend([cap, cap])

        for srv in range(self.n_servers):
            add(srv, _tor(self.rack_of(srv)), 1.0)
        for r in range(racks):
            add(_tor(r), CORE, self.tor_uplink)
        for a, b in self.grin_links:
            add(a, b, 1.0)
        self.edges: tuple[tuple[Node, Node], ...] = tuple(edges)
        self.capacity = np.asarray(caps, dtype=float)
        self.edge_index: dict[tuple[Node, Node], int] = {e: i for i, e in enumerate(self.edges)}

    @property
    def non_blocking(self) -> bool:
        """Whether ToR uplinks can carry every server of the rack at once."""
        return self.tor_uplink >= self.servers_per_rack

    def rack_of(self, server: int) -> int:
        return server // self.servers_per_rack

    def degree(self, server: int) -> int:
        return len(self.neighbours[server])

    def fabric(self, u: int, v: int) -> Path:
        """Switch nodes between server u's uplink and server v's downlink."""
        ru, rv = self.rack_of(u), self.rack_of(v)
        return (_tor(ru),) if ru == rv else (_tor(ru), CORE, _tor(rv))

    def path_edges(self, path: Sequence[Node]) -> list[int]:
        """Edge indices of a node path (KeyError if a hop is not a link)."""
        return [self.edge_index[(a, b)] for a, b in zip(path, path[1:])]

    def to_networkx(self) -> nx.DiGraph:
        """The directed graph with a ``capacity`` attribute per edge."""
        g = nx.DiGraph()
        for (a, b), c in zip(self.edges, self.capacity):
            g.add_edge(a, b, capacity=float(c))
        return g

    def __repr__(self) -> str:
        return (f"GrinTopology({self.racks}x{self.servers_per_rack}, "
                f"{len(self.grin_links)} GRIN links, "
                f"placement={self.placement!r}, tor_uplink={self.tor_uplink:g})")


def grin_topology(
    racks: int,
    servers_per_rack: int,
    degree: int,
    *,
    placement: str = "rack",
    seed: int = 0,
    tor_uplink: float | None = None,
) -> GrinTopology:
    """The section 5.1 network (racks on one big switch) with a GRIN overlay."""
    links = grin_overlay(racks, servers_per_rack, degree, placement, seed)
    return GrinTopology(racks, servers_per_rack, links, tor_uplink=tor_uplink, placement=placement)


# ------------------------------------------------------------------- traffic


def active_servers(n_servers: int, active_pct: float, rng: random.Random) -> list[int]:
    """A random ``active_pct`` % of the servers (at least two), sorted."""
    if not 0 < active_pct <= 100:
        raise ValueError(f"active percentage must be in (0, 100], got {active_pct}")
    n = max(2, round(n_servers * active_pct / 100))
    if n > n_servers:
        raise ValueError(f"need two active servers, topology has {n_servers}")
    return sorted(rng.sample(range(n_servers), n))


def pattern_options(pattern: str, *, group_size: int = GROUP_SIZE,
                    a2a_cap: int = A2A_CAP) -> dict[str, int]:
    """The ``topos.traffic.make`` options of a section 5.1 pattern (group size, all-to-all
    cap); the others take none."""
    return {"group": {"size": group_size}, "all-to-all": {"cap": a2a_cap}}.get(pattern, {})


# --------------------------------------------------------------------- paths


def _max_hops(topo: GrinTopology, hops: int | None) -> int:
    """Segment hop limit; ``None`` (unrestricted) means as long as a simple path can be."""
    if hops is None:
        return max(topo.n_servers - 1, 0)
    if hops < 0:
        raise ValueError(f"hop limit must be >= 0 or None, got {hops}")
    return hops


class _Paths:
    """Cached h_n path pieces of one topology.

    A segment from s is a simple horizontal path starting at s (``(s,)`` is
    the empty one); a segment into t is one from t reversed. Paths through the
    switch join a segment from the source and one into the destination with
    disjoint nodes; horizontal-only paths have at most ``2n`` hops.
    """

    def __init__(self, topo: GrinTopology, hops: int | None) -> None:
        self.topo = topo
        self.n = _max_hops(topo, hops)
        self._from: dict[int, list[Segment]] = {}
        self._horiz: dict[int, dict[int, list[Segment]]] = {}

    def _simple_paths(self, src: int, limit: int) -> list[Segment]:
        out: list[Segment] = []
        stack: list[Segment] = [(src,)]
        nbrs = self.topo.neighbours
        while stack:  # iterative DFS: deterministic order, no recursion limit
            p = stack.pop()
            out.append(p)
            if len(p) - 1 < limit:
                for x in reversed(nbrs[p[-1]]):
                    if x not in p:
                        stack.append(p + (x,))
        return out

    def segments_from(self, s: int) -> list[Segment]:
        if s not in self._from:
            self._from[s] = self._simple_paths(s, self.n)
        return self._from[s]

    def segments_into(self, t: int) -> list[Segment]:
        return [p[::-1] for p in self.segments_from(t)]

    def horizontal(self, s: int, t: int) -> list[Segment]:
        if s not in self._horiz:
            by_end: dict[int, list[Segment]] = {}
            for p in self._simple_paths(s, min(2 * self.n, max(self.topo.n_servers - 1, 0))):
                if len(p) > 1:
                    by_end.setdefault(p[-1], []).append(p)
            self._horiz[s] = by_end
        return self._horiz[s].get(t, [])

    def join(self, seg1: Segment, seg2: Segment) -> Path | None:
        """seg1 + switch + seg2, or None when the result would not be a simple path."""
        if set(seg1).intersection(seg2):
            return None
        return seg1 + self.topo.fabric(seg1[-1], seg2[0]) + seg2

    def direct(self, s: int, t: int) -> Path:
        return (s,) + self.topo.fabric(s, t) + (t,)

    def all_paths(self, s: int, t: int) -> list[Path]:
        """Direct path first, then switch paths, then horizontal-only paths."""
        out = []
        into = self.segments_into(t)
        for a in self.segments_from(s):
            for b in into:
                p = self.join(a, b)
                if p is not None:
                    out.append(p)
        out.extend(self.horizontal(s, t))
        return out

    def sample(self, s: int, t: int, k: int, rng: random.Random) -> list[Path]:
        """Up to k distinct random paths other than the direct one, uniformly."""
        if k <= 0:
            return []
        segs1 = self.segments_from(s)
        segs2 = self.segments_into(t)
        horiz = self.horizontal(s, t)
        n_pairs = len(segs1) * len(segs2)
        total = n_pairs + len(horiz)
        if total <= max(64, 8 * k):
            rest = self.all_paths(s, t)[1:]
            return rng.sample(rest, min(k, len(rest)))
        # Rejection sampling over (segment pair | horizontal path) indices is
        # uniform over the valid paths without listing them all; index 0 is
        # the direct path (both segments empty).
        chosen: dict[int, Path] = {}
        for _ in range(200 * k):
            i = rng.randrange(1, total)
            if i in chosen:
                continue
            if i < n_pairs:
                p = self.join(segs1[i // len(segs2)], segs2[i % len(segs2)])
                if p is None:
                    continue
            else:
                p = horiz[i - n_pairs]
            chosen[i] = p
            if len(chosen) == k:
                return list(chosen.values())
        # Mostly invalid pairs (tiny racks): fall back to the full list.
        rest = self.all_paths(s, t)[1:]
        return rng.sample(rest, min(k, len(rest)))


def hn_paths(topo: GrinTopology, src: int, dst: int, hops: int | None) -> list[Path]:
    """All ``h_hops`` paths from src to dst (``None``: no hop limit), direct path first."""
    if src == dst:
        raise ValueError(f"connection from server {src} to itself")
    return _Paths(topo, hops).all_paths(src, dst)


def path_length(topo: GrinTopology, path: Sequence[Node]) -> int:
    """Paper's sampling length: horizontal links, but 0 for a single-link path."""
    def server(v: Node) -> bool:
        return isinstance(v, (int, np.integer))

    horizontal = sum(1 for a, b in zip(path, path[1:]) if server(a) and server(b))
    return 0 if len(path) == 2 and horizontal == 1 else horizontal


# ----------------------------------------------------------------------- LPs


def _solve_max(c_len: int, A_ub: sp.csr_matrix, b_ub: np.ndarray,
               objective: np.ndarray, A_eq: sp.csr_matrix | None = None) -> float:
    """Maximise objective @ x subject to A_ub x <= b_ub, A_eq x = 0, x >= 0."""
    if c_len == 0:
        return 0.0
    b_eq = None if A_eq is None else np.zeros(A_eq.shape[0])
    res = scipy.optimize.linprog(-objective, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                                 bounds=(0, None), method=_LP_METHOD)
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed (status {res.status}): {res.message}")
    return float(-res.fun)


def _distinct(conns: Iterable[Connection]) -> list[Connection]:
    """Connections without repeats: for the total-flow objective a repeat adds nothing."""
    out = list(dict.fromkeys((int(s), int(t)) for s, t in conns))
    for s, t in out:
        if s == t:
            raise ValueError(f"connection from server {s} to itself")
    return out


def max_flow_edge(topo: GrinTopology, conns: Sequence[Connection]) -> float:
    """Maximum total multi-commodity flow over all paths (edge-based LP).

    Commodities are aggregated per source: with a total-flow objective and no
    demands, a source's flow may end at any of its destinations, and any
    single-source flow decomposes into paths to them. Flow cycles and walks
    crossing the switch twice can be short-cut onto fewer links; on a
    non-blocking fabric this never needs more ToR uplink capacity (a ToR never
    forwards more than its servers send), so the value equals the best flow
    over paths that cross the switch at most once, as the paper's paths do.
    """
    conns = _distinct(conns)
    if not conns:
        return 0.0
    nodes: list[Node] = list(range(topo.n_servers)) + [_tor(r) for r in range(topo.racks)] + [CORE]
    nid = {v: i for i, v in enumerate(nodes)}
    tail = np.array([nid[a] for a, _ in topo.edges])
    head = np.array([nid[b] for _, b in topo.edges])
    n_nodes, n_edges = len(nodes), len(topo.edges)
    dests: dict[int, list[int]] = {}
    for s, t in conns:
        dests.setdefault(s, []).append(t)

    eq_r, eq_c, eq_v, ub_r, ub_c = [], [], [], [], []
    z_cols: list[np.ndarray] = []
    col = 0
    for k, (s, ts) in enumerate(dests.items()):
        base = k * (n_nodes - 1)

        def row(v: np.ndarray, s: int = s, base: int = base) -> np.ndarray:
            return base + np.where(v < s, v, v - 1)  # no conservation row at the source

        keep = np.flatnonzero(head != s)  # flow back into the source is useless
        cols = col + np.arange(len(keep))
        out_of_src = tail[keep] == s
        eq_r += [row(head[keep]), row(tail[keep][~out_of_src])]
        eq_c += [cols, cols[~out_of_src]]
        eq_v += [np.ones(len(keep)), -np.ones(int((~out_of_src).sum()))]
        ub_r.append(keep)
        ub_c.append(cols)
        col += len(keep)
        # Delivered flow z[s, t] leaves the network at t.
        tz = np.array(ts)
        zc = col + np.arange(len(tz))
        eq_r.append(row(tz))
        eq_c.append(zc)
        eq_v.append(-np.ones(len(tz)))
        z_cols.append(zc)
        col += len(tz)
    n_rows_eq = len(dests) * (n_nodes - 1)
    A_eq = sp.csr_matrix((np.concatenate(eq_v), (np.concatenate(eq_r), np.concatenate(eq_c))),
                         shape=(n_rows_eq, col))
    ub_r_a, ub_c_a = np.concatenate(ub_r), np.concatenate(ub_c)
    A_ub = sp.csr_matrix((np.ones(len(ub_r_a)), (ub_r_a, ub_c_a)), shape=(n_edges, col))
    objective = np.zeros(col)
    objective[np.concatenate(z_cols)] = 1.0
    return _solve_max(col, A_ub, topo.capacity, objective, A_eq)


def max_flow_path_set(topo: GrinTopology, path_sets: Sequence[Sequence[Sequence[Node]]]) -> float:
    """Maximum total flow when connection i may use only the paths in path_sets[i] (path LP)."""
    columns = [topo.path_edges(p) for paths in path_sets for p in paths]
    return _path_lp(topo, columns)


def _path_lp(topo: GrinTopology, columns: Sequence[Sequence[int]],
             objective: np.ndarray | None = None, A_eq: sp.csr_matrix | None = None) -> float:
    """LP with one column per edge list; capacity rows on every edge."""
    n = len(columns)
    lens = np.fromiter((len(c) for c in columns), dtype=np.int64, count=n)
    rows = np.fromiter(itertools.chain.from_iterable(columns), dtype=np.int64,
                       count=int(lens.sum()))
    cols = np.repeat(np.arange(n), lens)
    A_ub = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(topo.edges), n))
    return _solve_max(n, A_ub, topo.capacity, np.ones(n) if objective is None else objective, A_eq)


def _count_columns(pp: _Paths, conns: Sequence[Connection]) -> int:
    """Upper estimate of the path LP's columns (segment pairs + horizontal paths)."""
    return sum(len(pp.segments_from(s)) * len(pp.segments_from(t)) + len(pp.horizontal(s, t))
               for s, t in conns)


def _compact_lp(topo: GrinTopology, pp: _Paths, conns: Sequence[Connection]) -> float:
    """h_n maximum total flow, with segment flows instead of whole paths.

    Columns: x[s, seg] (source s up a segment from s and its end's uplink),
    y[t, seg] (a downlink and a segment into t), g[c] (core flow of
    connection c, tied by sum_seg x[s] = sum_{c from s} g[c] and likewise for
    y) and one column per horizontal-only path. The non-blocking core lets any
    up-going unit of s meet any down-going unit of any of s's connections, so
    a solution splits into segment pairs; a pair sharing a server short-cuts
    to a horizontal-only path of at most 2n hops, which h_n allows. Hence the
    optimum equals the path LP's, with far fewer columns.
    """
    if not topo.non_blocking:
        raise ValueError("the compact h_n formulation needs non-blocking ToR uplinks; "
                         "use formulation='path'")
    ei = topo.edge_index
    srcs = list(dict.fromkeys(s for s, _ in conns))
    dsts = list(dict.fromkeys(t for _, t in conns))
    src_row = {s: i for i, s in enumerate(srcs)}
    dst_row = {t: len(srcs) + i for i, t in enumerate(dsts)}
    columns: list[list[int]] = []
    eq: list[tuple[int, int, float]] = []  # (row, column, value)
    obj: list[float] = []

    def horiz_edges(seg: Segment) -> list[int]:
        return [ei[(a, b)] for a, b in zip(seg, seg[1:])]

    for s in srcs:
        for seg in pp.segments_from(s):
            eq.append((src_row[s], len(columns), 1.0))
            columns.append(horiz_edges(seg) + [ei[(seg[-1], _tor(topo.rack_of(seg[-1])))]])
            obj.append(0.0)
    for t in dsts:
        for seg in pp.segments_into(t):
            eq.append((dst_row[t], len(columns), 1.0))
            columns.append([ei[(_tor(topo.rack_of(seg[0])), seg[0])]] + horiz_edges(seg))
            obj.append(0.0)
    for s, t in conns:
        eq += [(src_row[s], len(columns), -1.0), (dst_row[t], len(columns), -1.0)]
        columns.append([])
        obj.append(1.0)
        for p in pp.horizontal(s, t):
            columns.append(horiz_edges(p))
            obj.append(1.0)
    r, c, v = zip(*eq)
    A_eq = sp.csr_matrix((v, (r, c)), shape=(len(srcs) + len(dsts), len(columns)))
    return _path_lp(topo, columns, np.asarray(obj), A_eq)


def max_flow_hn(
    topo: GrinTopology, conns: Sequence[Connection], hops: int | None, formulation: str = "auto"
) -> float:
    """Maximum total flow over h_hops paths.

    ``formulation="path"``: one LP column per h_n path of each connection
    (the textbook path formulation). ``"compact"``: the equivalent segment
    formulation of :func:`_compact_lp` (non-blocking fabric only). ``"auto"``:
    path unless it would exceed ``_AUTO_MAX_COLUMNS`` (60k) columns, e.g. h2
    at degree 6 on 6x20 servers with 70 % active, or all-to-all with many
    active servers.
    """
    conns = _distinct(conns)
    pp = _Paths(topo, hops)
    if formulation == "auto":
        big = topo.non_blocking and _count_columns(pp, conns) > _AUTO_MAX_COLUMNS
        formulation = "compact" if big else "path"
    if formulation == "compact":
        return _compact_lp(topo, pp, conns)
    if formulation != "path":
        raise ValueError(f"unknown formulation {formulation!r}; expected path, compact or auto")
    return _path_lp(topo, [topo.path_edges(p) for s, t in conns for p in pp.all_paths(s, t)])


# ------------------------------------------------------------ path sampling


def sampled_flow(
    topo: GrinTopology,
    conns: Sequence[Connection],
    hops: int | None,
    n_paths: int = N_PATHS,
    seed: int = 0,
) -> float:
    """Total flow of the paper's path-sampling estimate (section 5.1).

    Each connection keeps its direct path plus up to ``n_paths - 1`` others
    drawn uniformly without replacement from its complete h_n path set (we
    read "up to 16 paths ..., the direct path is always included" as 16 in
    total). All chosen paths, of all connections, are then filled one by one
    in ascending :func:`path_length`, ties in random (seeded) order: each gets
    the least residual capacity along its links, which is then subtracted.
    Repeated connections each get their own paths (they are separate flows).
    """
    if n_paths < 1:
        raise ValueError(f"need at least one path per connection, got {n_paths}")
    rng = random.Random(seed)
    pp = _Paths(topo, hops)
    chosen: list[tuple[int, float, list[int]]] = []
    for s, t in conns:
        if s == t:
            raise ValueError(f"connection from server {s} to itself")
        for p in [pp.direct(s, t)] + pp.sample(s, t, n_paths - 1, rng):
            chosen.append((path_length(topo, p), rng.random(), topo.path_edges(p)))
    chosen.sort(key=lambda x: (x[0], x[1]))
    residual = topo.capacity.copy()
    total = 0.0
    for _, _, edges in chosen:
        idx = np.asarray(edges)
        room = float(residual[idx].min())
        if room > 0:
            residual[idx] -= room
            total += room
    return total


# ------------------------------------------------------------- the table


@dataclass(frozen=True)
class InstanceResult:
    """One topology + traffic matrix: optimum, h1/h2 LP and sampled total flows."""

    connections: int
    opt: float
    h1: float
    h2: float
    sampled_h1: float
    sampled_h2: float
    seconds: float

    def ratio(self, attr: str) -> float:
        """``attr`` (h1, h2, sampled_h1, sampled_h2) over the optimum; 1.0 when the optimum
        is 0 (nothing can flow, so nothing is missed)."""
        value: float = getattr(self, attr)
        return value / self.opt if self.opt > 0 else 1.0


def evaluate_instance(
    topo: GrinTopology,
    conns: Sequence[Connection],
    *,
    n_paths: int = N_PATHS,
    seed: int = 0,
    formulation: str = "auto",
) -> InstanceResult:
    """All five section 5.1 measurements for one network and traffic matrix."""
    t0 = time.perf_counter()
    opt = max_flow_edge(topo, conns)
    h1 = max_flow_hn(topo, conns, 1, formulation)
    h2 = max_flow_hn(topo, conns, 2, formulation)
    s1 = sampled_flow(topo, conns, 1, n_paths, seed)
    s2 = sampled_flow(topo, conns, 2, n_paths, seed)
    return InstanceResult(len(conns), opt, h1, h2, s1, s2, time.perf_counter() - t0)


@dataclass(frozen=True)
class HopRow:
    """One (degree, pattern, active %) cell: means over seeds, ratios mean and worst."""

    degree: int
    pattern: str
    active_pct: float
    seeds: int
    connections: float
    opt: float
    h1: float
    h2: float
    sampled_h1: float
    sampled_h2: float
    h1_ratio: float
    h1_ratio_worst: float
    h2_ratio: float
    h2_ratio_worst: float
    sampled_h1_ratio: float
    sampled_h1_ratio_worst: float
    sampled_h2_ratio: float
    sampled_h2_ratio_worst: float
    seconds: float


def _row(degree: int, pattern: str, pct: float, res: list[InstanceResult]) -> HopRow:
    def ratios(attr: str) -> np.ndarray:
        return np.array([r.ratio(attr) for r in res])

    def mean(attr: str) -> float:
        return float(np.mean([getattr(r, attr) for r in res]))

    rs = {a: ratios(a) for a in ("h1", "h2", "sampled_h1", "sampled_h2")}
    return HopRow(
        degree, pattern, pct, len(res), mean("connections"), mean("opt"), mean("h1"), mean("h2"),
        mean("sampled_h1"), mean("sampled_h2"),
        float(rs["h1"].mean()), float(rs["h1"].min()),
        float(rs["h2"].mean()), float(rs["h2"].min()),
        float(rs["sampled_h1"].mean()), float(rs["sampled_h1"].min()),
        float(rs["sampled_h2"].mean()), float(rs["sampled_h2"].min()),
        float(sum(r.seconds for r in res)),
    )


@dataclass(frozen=True)
class HopInstance:
    """One instance of the section 5.1 grid: its seed and cell, the number of active
    servers, and what :func:`evaluate_instance` found."""

    seed: int
    degree: int
    pattern: str
    active_pct: float
    active: int
    result: InstanceResult


def hop_instances(
    racks: int = 6,
    servers_per_rack: int = 20,
    degrees: Sequence[int] = (1, 2, 3, 4, 5, 6),
    patterns: Sequence[str] = PATTERNS,
    active_pcts: Sequence[float] = (10, 30, 50, 70),
    seeds: Sequence[int] = (0, 1, 2),
    *,
    placement: str = "rack",
    n_paths: int = N_PATHS,
    group_size: int = GROUP_SIZE,
    a2a_cap: int = A2A_CAP,
    formulation: str = "auto",
) -> Iterator[HopInstance]:
    """The section 5.1 instances, one at a time, degree by pattern by active share by seed
    (the seeds of one cell in a row).

    Seed i draws the overlay, the active servers, the traffic matrix and the sampled
    paths: the same seed gives the same instance whichever grid it is part of.
    """
    for degree in degrees:
        for pattern in patterns:
            for pct in active_pcts:
                for seed in seeds:
                    topo = grin_topology(racks, servers_per_rack, degree,
                                         placement=placement, seed=seed)
                    rng = random.Random(f"grin-traffic-{seed}-{pattern}-{pct}")
                    act = active_servers(topo.n_servers, pct, rng)
                    conns = make_traffic(pattern, act, rng, **pattern_options(
                        pattern, group_size=group_size, a2a_cap=a2a_cap))
                    assert isinstance(conns, list), "GRIN's patterns are unicast pairs"
                    yield HopInstance(seed, degree, pattern, pct, len(act),
                                      evaluate_instance(topo, conns, n_paths=n_paths,
                                                        seed=seed, formulation=formulation))


def hop_count_table(
    racks: int = 6,
    servers_per_rack: int = 20,
    degrees: Sequence[int] = (1, 2, 3, 4, 5, 6),
    patterns: Sequence[str] = PATTERNS,
    active_pcts: Sequence[float] = (10, 30, 50, 70),
    seeds: int = 3,
    *,
    placement: str = "rack",
    n_paths: int = N_PATHS,
    group_size: int = GROUP_SIZE,
    a2a_cap: int = A2A_CAP,
    formulation: str = "auto",
    on_row: Callable[[HopRow], None] | None = None,
) -> list[HopRow]:
    """Section 5.1 rows: h1 and h2 against the optimum, by LP and by path sampling.

    Each row aggregates the instances (:func:`hop_instances`) of seeds 0..seeds-1 of one
    (degree, pattern, active %) cell. ``on_row`` (if given) is called with each row as
    soon as it is done.
    """
    rows = []
    found = hop_instances(racks, servers_per_rack, degrees, patterns, active_pcts,
                          range(seeds), placement=placement, n_paths=n_paths,
                          group_size=group_size, a2a_cap=a2a_cap, formulation=formulation)
    for (degree, pattern, pct), cell in itertools.groupby(
            found, key=lambda x: (x.degree, x.pattern, x.active_pct)):
        row = _row(degree, pattern, pct, [x.result for x in cell])
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def summarize(rows: Sequence[HopRow], h2_tol: float = 0.01) -> dict[str, float]:
    """Headline numbers to set beside the paper's (section 5.1 text).

    Averages are over rows (each already a mean over seeds); worst values over
    every instance. ``h2_within`` is the fraction of rows whose mean h2 is
    within ``h2_tol`` of the optimum ("seldom more than 1 % below").
    """
    if not rows:
        return {}
    return {
        "h1_gap_mean": 1 - float(np.mean([r.h1_ratio for r in rows])),
        "h1_gap_worst": 1 - min(r.h1_ratio_worst for r in rows),
        "h2_gap_mean": 1 - float(np.mean([r.h2_ratio for r in rows])),
        "h2_gap_worst": 1 - min(r.h2_ratio_worst for r in rows),
        "h2_within": float(np.mean([r.h2_ratio >= 1 - h2_tol for r in rows])),
        "sampled_h1_gap_mean": 1 - float(np.mean([r.sampled_h1_ratio for r in rows])),
        "sampled_h2_gap_mean": 1 - float(np.mean([r.sampled_h2_ratio for r in rows])),
        "sampled_h1_better": float(np.mean([r.sampled_h1 >= r.sampled_h2 - 1e-9 for r in rows])),
    }


# ------------------------------------------------------- emulated networks


def network_of(topo: Any) -> GrinTopology:
    """The hop-count model of an emulated GRIN network (``topos.grin``), with servers at
    ``topo.model_index``: the racks on one switch (a fat tree's full-bisection fabric is
    one switch too), or for the multihomed baseline each ToR a rack of the model (servers
    on ToR 0, port hosts on the others) with uplink servers / (1 + extra)."""
    from topos.grin import Multihomed
    if isinstance(topo, Multihomed):
        s, m = topo.servers_per_rack, topo.extra
        links = [(topo.model_index(a), topo.port_host_index(b)) for a, b in topo.horizontal]
        return GrinTopology(topo.racks * (1 + m), s, links, tor_uplink=s / (1 + m),
                            placement="multihomed")
    return grin_topology(topo.racks, topo.servers_per_rack, topo.degree,
                         placement=topo.placement, seed=topo.seed)


def subflow_capacities(topo: Any, bw: float) -> dict[tuple[str, str], float]:
    """Payload capacity of every directed link an emulated network's subflow paths use
    (``topo.subflow_path``), the fat tree's one-node fabric included."""
    from topos.grin import FABRIC, GrinFatTree

    from .network import capacities
    caps = capacities(topo, bw)
    if isinstance(topo, GrinFatTree):
        for h in topo.servers:
            caps[(h, FABRIC)] = caps[(FABRIC, h)] = caps[(h, topo.access_switch(h))]
    return caps


def address_paths(topo: Any, subflows: Sequence[tuple[str, str]]) -> list[list[str]]:
    """The node path of each subflow (source address, destination address) on an emulated
    network that forwards by address (``topo.subflow_path``: through the servers that lend
    a horizontal link, then the fabric)."""
    return [list(topo.subflow_path(s, d)) for s, d in subflows]


def address_maxmin(topo: Any, bw: float,
                   subflows: dict[str, list[tuple[str, str]]]) -> dict[str, float]:
    """Per connection (its key -> its subflows by address): the sum of the max-min fair
    rates of independent subflows on their paths (Mb/s): what MPTCP without coupled
    congestion control reaches at best on those subflows."""
    from .flowmodel import maxmin_rates
    keys, paths = [], []
    for conn, subs in subflows.items():
        for nodes in address_paths(topo, subs):
            keys.append(conn)
            paths.append(list(zip(nodes[:-1], nodes[1:])))
    rates: Sequence[float] = list(maxmin_rates(subflow_capacities(topo, bw), paths)) \
        if paths else []
    out = {c: 0.0 for c in subflows}
    for c, r in zip(keys, rates):
        out[c] += float(r)
    return out
