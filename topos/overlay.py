"""GRIN's cabling (003_aa7e1801a46c453f.txt): which servers a degree-d overlay wires together.

One definition for the emulated topologies (topos/grin.py) and the hop-count model
(model/grin.py): servers are numbered 0..racks*servers-1, rack-major.
"""
from __future__ import annotations

import random

import networkx as nx

PLACEMENTS = ("rack", "cross")


def _regular_bipartite(s: int, k: int, rng: random.Random) -> list[tuple[int, int]]:
    """k-regular simple bipartite graph between two sets of s (local indices)."""
    pa = list(range(s))
    pb = list(range(s))
    rng.shuffle(pa)
    rng.shuffle(pb)
    # Distinct cyclic offsets give k disjoint perfect matchings: no duplicates.
    offsets = rng.sample(range(s), k)
    return [(pa[i], pb[(i + o) % s]) for o in offsets for i in range(s)]


def grin_overlay(
    racks: int, servers_per_rack: int, degree: int, placement: str = "rack", seed: int = 0
) -> list[tuple[int, int]]:
    """GRIN links of a ``degree``-regular overlay, deterministic for a seed.

    ``placement="rack"`` (the paper's baseline cabling) pairs servers inside
    their rack: a random ``degree``-regular graph per rack. ``"cross"`` wires
    each server to servers of the adjacent racks (racks on a ring):
    ``degree/2`` links to each side, or for odd degrees alternately
    ``degree//2 + 1`` and ``degree//2`` per rack pair (needs an even number of
    racks). Raises ValueError when no such overlay exists.
    """
    s, d = servers_per_rack, degree
    if d < 0:
        raise ValueError(f"GRIN degree must be >= 0, got {d}")
    rng = random.Random(seed)
    out: list[tuple[int, int]] = []
    if placement == "rack":
        if d >= s:
            raise ValueError(f"in-rack GRIN degree {d} needs more than {s} servers per rack")
        if (d * s) % 2:
            raise ValueError(f"in-rack GRIN degree {d} cannot be matched: {s} servers x {d} "
                             "ports is odd")
        for r in range(racks):
            g = nx.random_regular_graph(d, s, seed=rng.randrange(2**32))
            out.extend((r * s + a, r * s + b) for a, b in g.edges)
        return out
    if placement == "cross":
        if d == 0:
            return out
        if racks < 2:
            raise ValueError("cross-rack GRIN placement needs at least two racks")
        if racks == 2:
            if d > s:
                raise ValueError(f"cross-rack GRIN degree {d} exceeds the {s} servers of the "
                                 "other rack")
            return [(a, s + b) for a, b in _regular_bipartite(s, d, rng)]
        if d % 2 and racks % 2:
            raise ValueError(f"odd cross-rack GRIN degree {d} needs an even number of racks, "
                             f"got {racks}")
        # k[r] links per server between rack r and rack r+1 (mod racks).
        k = [d // 2 + (d % 2 if r % 2 == 0 else 0) for r in range(racks)]
        if max(k) > s:
            raise ValueError(f"cross-rack GRIN degree {d} needs at least {max(k)} servers per rack")
        for r in range(racks):
            q = (r + 1) % racks
            out.extend((r * s + a, q * s + b) for a, b in _regular_bipartite(s, k[r], rng))
        return out
    raise ValueError(f"unknown GRIN placement {placement!r}; expected one of {PLACEMENTS}")
