"""Bridge between topologies/plans and the flow model: capacities, link lists, synthetic
flows routed through a plan the way the switches would (a seeded hash per hop).

The switch's own hash function is not reproduced: ``hash_select`` is a stable CRC32 of the
switch name and 5-tuple, so the *distribution* of path choices matches the plan while the
individual choices differ from the datapath's; traced paths of emulated runs show the
datapath's actual choices.
"""
from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from routing.plan import Plan
from routing.walk import all_paths, walk
from topos.base import Topology

from .flowmodel import (
    alpha_fair_rates,
    connection_rates,
    goodput_capacity,
    max_concurrent_flow,
    max_concurrent_flow_graph,
)

Link = tuple[str, str]


def capacities(topo: Topology, bw: float) -> dict[Link, float]:
    """Payload goodput of every directed link (both directions of every topology link)."""
    return {ends: goodput_capacity(rate) for ends, rate in topo.link_rates(bw).items()}


def path_links(src: str, switches: Sequence[str], dst: str) -> list[Link]:
    """Directed links of a host-to-host path given by its switches."""
    nodes = [src, *switches, dst]
    return list(zip(nodes[:-1], nodes[1:]))


def hash_select(five_tuple: dict[str, Any]) -> Callable[[str, int], int]:
    """A select(switch, n) that hashes the 5-tuple per switch (stable across processes)."""
    key = f"{five_tuple['src_ip']}:{five_tuple['src_port']}>" \
          f"{five_tuple['dst_ip']}:{five_tuple['dst_port']}"
    return lambda switch, n: zlib.crc32(f"{switch}|{key}".encode()) % n


def synthetic_subflows(topo: Topology, pairs: dict[str, str], subflows: int,
                       rng: random.Random, dst_port: int = 5201
                       ) -> dict[str, list[dict[str, Any]]]:
    """5-tuples the emulator would use: subflow i leaves from extra address i-1 of the host."""
    out = {}
    for src, dst in pairs.items():
        ips = [topo.node(src).ip, *topo.extra_ips(src, subflows - 1)]
        out[src] = [{"src_ip": ip, "src_port": rng.randrange(32768, 61000),
                     "dst_ip": topo.node(dst).ip, "dst_port": dst_port} for ip in ips]
    return out


def route_by_hash(topo: Topology, plan: Plan, pairs: dict[str, str],
                  tuples: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Path of every subflow through ``plan`` chosen by hash_select (same shape as traces)."""
    routed = []
    for src, dst in pairs.items():
        for ft in tuples[src]:
            routed.append({"src": src, "dst": dst, "five_tuple": ft,
                           "path": walk(topo, plan, src, dst, hash_select(ft))})
    return routed


def rates_on_paths(topo: Topology, bw: float, pairs: dict[str, str],
                   routed: list[dict[str, Any]], mode: str = "independent") -> dict[str, float]:
    """Model rate (Mb/s) of every connection, keyed by source host, on the given paths."""
    conns: dict[str, list[list[Link]]] = {src: [] for src in pairs}
    for r in routed:
        conns[r["src"]].append(path_links(r["src"], r["path"], r["dst"]))
    missing = [s for s, paths in conns.items() if not paths]
    if missing:
        raise ValueError(f"no path recorded for connections from {missing[:4]}")
    srcs = list(conns)
    rates = connection_rates(capacities(topo, bw), [conns[s] for s in srcs], mode=mode)
    return {s: float(r) for s, r in zip(srcs, rates)}


def tcp_like_rates_on_paths(topo: Topology, bw: float, pairs: dict[str, str],
                            routed: list[dict[str, Any]], alpha: float = 1.0,
                            coupled: bool = False) -> dict[str, float]:
    """As rates_on_paths, under alpha-fairness (flowmodel.alpha_fair_rates: TCP-like
    sharing, uncoupled subflows or, ``coupled``, each connection's total)."""
    conns: dict[str, list[list[Link]]] = {src: [] for src in pairs}
    for r in routed:
        conns[r["src"]].append(path_links(r["src"], r["path"], r["dst"]))
    srcs = list(conns)
    rates = alpha_fair_rates(capacities(topo, bw), [conns[s] for s in srcs], alpha, coupled)
    return {s: float(r) for s, r in zip(srcs, rates)}


def split_rates(topo: Topology, bw: float, shares: dict[str, dict[tuple[str, ...], float]],
                dsts: dict[str, str]) -> dict[str, float]:
    """Max-min fair rate (Mb/s) of every connection when each one is split over its paths in
    fixed shares (per-packet spraying: ``routing.walk.split``), keyed by source host.

    Progressive filling with weights: a connection at rate r loads link l with r times the
    share of its packets that cross l, so it stops growing when any link it uses fills.
    """
    caps = capacities(topo, bw)
    weight: dict[str, dict[Link, float]] = {}
    for src, by_path in shares.items():
        w: dict[Link, float] = {}
        for path, share in by_path.items():
            for link in path_links(src, path, dsts[src]):
                w[link] = w.get(link, 0.0) + share
        weight[src] = w
    rate = {s: 0.0 for s in shares}
    used = {link: 0.0 for link in caps}
    active = set(shares)
    while active:
        load: dict[Link, float] = {}
        for s in active:
            for link, x in weight[s].items():
                load[link] = load.get(link, 0.0) + x
        step, full = min(((caps[l] - used[l]) / x, l) for l, x in load.items() if x > 0)
        step = max(step, 0.0)
        for s in active:
            rate[s] += step
        for link, x in load.items():
            used[link] += x * step
        # every link within a relative 1e-9 of full freezes the connections that cross it
        full_links = {l for l in load if caps[l] - used[l] <= 1e-9 * caps[l]} | {full}
        active -= {s for s in active if full_links & weight[s].keys()}
    return rate


def lp_bounds(topo: Topology, plan: Plan, pairs: dict[str, str], bw: float,
              max_hosts: int = 128) -> dict[str, Any]:
    """Optimal common rate (normalized to bw) over the routing's paths and over all paths."""
    if len(topo.hosts()) > max_hosts:
        return {"skipped": f"more than {max_hosts} hosts"}
    caps = capacities(topo, bw)
    allowed = [[path_links(s, p, d) for p in sorted(all_paths(topo, plan, s, d))]
               for s, d in pairs.items()]
    return {"routing_paths": round(max_concurrent_flow(caps, allowed) / bw, 4),
            "any_paths": round(max_concurrent_flow_graph(caps, list(pairs.items())) / bw, 4)}
