"""Benchmark of the flow-level model on data-centre sized inputs.

Run: .venv/bin/python bench/bench_model.py
Prints one line per measurement: name, median seconds of 3 runs, mean rate
(fraction of a unit link; for max_concurrent_flow the lambda itself).
"""

import onecore  # noqa: F401 - first: one BLAS thread

# isort: split
import argparse
import random
import statistics
import time

import networkx as nx
import numpy as np

from model import (
    connection_rates,
    max_concurrent_flow,
    max_concurrent_flow_graph,
    maxmin_rates,
)
from topos.traffic import permutation

REPS = 3
SUBFLOWS = 8
GOAL_S = 10.0


def measure(name, fn, reps=REPS):
    """Run fn reps times; print and return (median seconds, mean rate)."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    mean = float(np.mean(out))
    print(f"{name:55s} {med:8.3f} s   mean rate {mean:.4f}", flush=True)
    return med, mean


def links_of(nodes):
    return [(nodes[i], nodes[i + 1]) for i in range(len(nodes) - 1)]


# --------------------------------------------------------------------- fat tree


class FatTree:
    """k-ary fat tree (k^3/4 hosts), unit capacity directed links both ways."""

    def __init__(self, k):
        self.k = k
        half = k // 2
        self.hosts = [("h", p, e, i) for p in range(k) for e in range(half) for i in range(half)]
        caps = {}

        def add(a, b):
            caps[(a, b)] = 1.0
            caps[(b, a)] = 1.0

        for p in range(k):
            for e in range(half):
                for i in range(half):
                    add(("h", p, e, i), ("e", p, e))
                for a in range(half):
                    add(("e", p, e), ("a", p, a))
            for a in range(half):
                for c in range(half):
                    add(("a", p, a), ("c", a, c))
        self.capacities = caps

    def random_shortest_path(self, src, dst, rng):
        """One uniformly random shortest path (as links) between two hosts."""
        _, p1, e1, _ = src
        _, p2, e2, _ = dst
        half = self.k // 2
        if (p1, e1) == (p2, e2):
            nodes = [src, ("e", p1, e1), dst]
        elif p1 == p2:
            a = rng.randrange(half)
            nodes = [src, ("e", p1, e1), ("a", p1, a), ("e", p1, e2), dst]
        else:
            a, c = rng.randrange(half), rng.randrange(half)
            nodes = [src, ("e", p1, e1), ("a", p1, a), ("c", a, c),
                     ("a", p2, a), ("e", p2, e2), dst]
        return links_of(nodes)


def bench_fat_tree(k, seed=1):
    rng = random.Random(seed)
    ft = FatTree(k)
    hosts = ft.hosts
    pairs = permutation(hosts, rng)
    single = [ft.random_shortest_path(s, d, rng) for s, d in pairs]
    multi = [[ft.random_shortest_path(s, d, rng) for _ in range(SUBFLOWS)] for s, d in pairs]
    caps = ft.capacities
    print(f"# k={k} fat tree: {len(hosts)} hosts, {len(caps)} directed links, "
          f"random permutation, {len(pairs)} flows")
    times = []
    times.append(measure(f"k={k} maxmin_rates (1 path/flow)",
                         lambda: maxmin_rates(caps, single))[0])
    times.append(measure(f"k={k} connection_rates independent (1 path)",
                         lambda: connection_rates(caps, [[p] for p in single]))[0])
    times.append(measure(f"k={k} connection_rates independent ({SUBFLOWS} subflows)",
                         lambda: connection_rates(caps, multi))[0])
    times.append(measure(f"k={k} max_concurrent_flow (1 path)",
                         lambda: max_concurrent_flow(caps, [[p] for p in single]))[0])
    times.append(measure(f"k={k} max_concurrent_flow ({SUBFLOWS} subflows)",
                         lambda: max_concurrent_flow(caps, multi))[0])
    return times, caps, pairs, multi


# -------------------------------------------------------------------- jellyfish


def bench_jellyfish(seed=1, switches=98, ports=14, servers_per_switch=7, kpaths=8):
    rng = random.Random(seed)
    degree = ports - servers_per_switch
    g = nx.random_regular_graph(degree, switches, seed=seed)
    caps = {}
    for u, v in g.edges:
        caps[(("s", u), ("s", v))] = 1.0
        caps[(("s", v), ("s", u))] = 1.0
    servers = [("h", s, i) for s in range(switches) for i in range(servers_per_switch)]
    for h in servers:
        caps[(h, ("s", h[1]))] = 1.0
        caps[(("s", h[1]), h)] = 1.0
    pairs = permutation(servers, rng)

    t0 = time.perf_counter()
    cache = {}

    def switch_paths(a, b):
        if (a, b) not in cache:
            if a == b:
                cache[(a, b)] = [[a]]
            else:
                gen = nx.shortest_simple_paths(g, a, b)
                cache[(a, b)] = [next(gen) for _ in range(kpaths)]
        return cache[(a, b)]

    single, multi = [], []
    for s, d in pairs:
        sw = switch_paths(s[1], d[1])
        full = [links_of([s] + [("s", x) for x in p] + [d]) for p in sw]
        shortest = [p for p in full if len(p) == len(full[0])]
        single.append(rng.choice(shortest))
        # 8 subflows on distinct paths (fewer when fewer exist, e.g. same switch).
        multi.append(full[:SUBFLOWS])
    print(f"# jellyfish: {switches} switches x {ports} ports, {len(servers)} servers, "
          f"{len(caps)} directed links, {len(pairs)} flows "
          f"(k={kpaths} paths computed in {time.perf_counter() - t0:.1f} s)")
    measure("jellyfish maxmin_rates (1 path/flow)", lambda: maxmin_rates(caps, single))
    measure("jellyfish connection_rates independent (1 path)",
            lambda: connection_rates(caps, [[p] for p in single]))
    measure(f"jellyfish connection_rates independent ({SUBFLOWS} subflows)",
            lambda: connection_rates(caps, multi))
    measure("jellyfish max_concurrent_flow (1 path)",
            lambda: max_concurrent_flow(caps, [[p] for p in single]))
    measure(f"jellyfish max_concurrent_flow ({SUBFLOWS} subflows)",
            lambda: max_concurrent_flow(caps, multi))
    measure(f"jellyfish connection_rates aggregate ({SUBFLOWS} subflows)",
            lambda: connection_rates(caps, multi, mode="aggregate"))


def main():
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    t_start = time.perf_counter()
    times, _, _, _ = bench_fat_tree(16)
    worst = max(times)
    print(f"# goal: k=16 permutation measurements <= {GOAL_S:.0f} s each on one core: "
          f"{'MET' if worst <= GOAL_S else 'NOT MET'} (slowest {worst:.3f} s)")
    bench_jellyfish()
    # Extra: the all-paths multicommodity LP on a k=8 fat tree (128 hosts).
    ft8 = FatTree(8)
    rng = random.Random(2)
    pairs8 = permutation(ft8.hosts, rng)
    print("# k=8 fat tree: 128 hosts, all-paths multicommodity LP")
    measure("k=8 max_concurrent_flow_graph (permutation)",
            lambda: max_concurrent_flow_graph(ft8.capacities, pairs8), reps=1)
    print(f"# total bench time {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
