"""Routing strategies: each turns a Topology into a Plan.

Two families cover every strategy:
* per-hop (``st``, ``ecmp``): each switch forwards by destination MAC to one, or a hash-chosen
  one, of its next hops toward the destination's access switch;
* path-pinning (``hashed``, ``ksp``): the ingress switch picks one whole path per flow by a
  hash of the 5-tuple and tags the packet with that path's label (a VLAN id, scoped per egress
  switch); transit switches forward by (label, destination).  Arbitrary paths on arbitrary
  graphs need this: per-destination rules cannot express two flows to the same host taking
  different routes through the same switch.

Hashing is OVS's Nicira ``multipath`` over the symmetric L3+L4 fields, computed by the switch
when the flow's first packet is translated and cached per flow, so there is no controller
round trip and nothing can time out.  Each switch uses its own hash basis (CRC32 of its name),
so consecutive hops decide independently (no ECMP polarization).
"""
from __future__ import annotations

import zlib
from typing import Callable, Iterable

import networkx as nx

from topos.base import Topology

from .plan import OFPVID_PRESENT, TABLE_MAIN, TABLE_SELECT, Plan, SwitchPlan

PRIO_LABEL, PRIO_ARP, PRIO_DST = 200, 150, 100
ETH_TYPE_ARP = 0x0806
MAX_LABEL = 4094


def hash_basis(switch: str) -> int:
    """Per-switch multipath basis: stable across processes (CRC32, never Python's hash())."""
    return zlib.crc32(switch.encode()) & 0xFFFF


def _empty_plan(topo: Topology, routing: str) -> Plan:
    return Plan(topo.spec, routing,
                {s: SwitchPlan(s, topo.node(s).dpid or 0) for s in topo.switches()})


class _Selector:
    """Allocates next-hop sets on one switch and emits the hash-select rules for them."""

    def __init__(self, sp: SwitchPlan) -> None:
        self.sp = sp
        self.groups: dict[tuple[tuple[tuple, ...], ...], int] = {}

    def actions(self, choices: list[list[list]]) -> list[list]:
        """Actions that run one of ``choices`` (action lists) chosen by the flow's hash."""
        if len(choices) == 1:
            return choices[0]
        key = tuple(tuple(tuple(a) for a in c) for c in choices)
        gid = self.groups.get(key)
        if gid is None:
            gid = self.groups[key] = len(self.groups) + 1
            for i, choice in enumerate(choices):
                self.sp.add(TABLE_SELECT, PRIO_DST, {"reg1": gid, "reg0": i}, choice)
        return [["set_reg", 1, gid],
                ["multipath", hash_basis(self.sp.name), len(choices), 0],
                ["resubmit", TABLE_SELECT]]


def _deliver_local(topo: Topology, plan: Plan) -> None:
    """Local delivery, plus ARP: every request is routed like unicast toward its target.

    dcrepro runs use static ARP, but plain ``mn --controller remote`` users need ARP; routing
    a request along the leftmost shortest-path tree to the owner of ``arp_tpa`` answers it
    without flooding, so the multipath fabric cannot loop it.
    """
    g = topo.switch_graph()
    for dst, hosts in _hosts_by_switch(topo).items():
        dist = nx.single_source_shortest_path_length(g, dst)
        # next hop toward dst: computed once per destination switch, shared by its hosts
        toward = {s: min(topo.port(s, n) for n in g.neighbors(s)
                         if dist.get(n, -1) == dist[s] - 1)
                  for s in topo.switches() if s != dst and s in dist}
        for h in hosts:
            node = topo.node(h)
            port = topo.port(dst, h)
            plan.switches[dst].add(TABLE_MAIN, PRIO_DST, {"eth_dst": node.mac},
                                   [["output", port]])
            arp = {"eth_type": ETH_TYPE_ARP, "arp_tpa": node.ip}
            plan.switches[dst].add(TABLE_MAIN, PRIO_ARP, arp, [["output", port]])
            for s, out in toward.items():
                plan.switches[s].add(TABLE_MAIN, PRIO_ARP, arp, [["output", out]])


def _hosts_by_switch(topo: Topology) -> dict[str, list[str]]:
    """Access switch -> its hosts, in topology order."""
    out: dict[str, list[str]] = {}
    for h in topo.hosts():
        out.setdefault(topo.access_switch(h), []).append(h)
    return out


def per_hop(topo: Topology, routing: str, pick: Callable[[list[int]], list[int]]) -> Plan:
    """Destination-based forwarding over shortest paths; ``pick`` narrows the next-hop ports."""
    plan = _empty_plan(topo, routing)
    g = topo.switch_graph()
    _deliver_local(topo, plan)
    selectors = {s: _Selector(sp) for s, sp in plan.switches.items()}
    for dst_sw, hosts in _hosts_by_switch(topo).items():
        dist = nx.single_source_shortest_path_length(g, dst_sw)
        for s in topo.switches():
            if s == dst_sw:
                continue
            if s not in dist:
                raise ValueError(f"{routing}: {s} cannot reach {dst_sw}")
            ports = sorted(topo.port(s, n) for n in g.neighbors(s)
                           if dist.get(n, -1) == dist[s] - 1)
            actions = selectors[s].actions([[["output", p]] for p in pick(ports)])
            for h in hosts:
                plan.switches[s].add(TABLE_MAIN, PRIO_DST, {"eth_dst": topo.node(h).mac},
                                     actions)
    return plan


def plan_st(topo: Topology, **_: object) -> Plan:
    """Spanning-tree-like: always the leftmost (lowest-port) shortest next hop, RipL style."""
    return per_hop(topo, "st", lambda ports: ports[:1])


def plan_ecmp(topo: Topology, **_: object) -> Plan:
    """Per-hop ECMP: hash each flow over every equal-cost next hop, independently per switch."""
    return per_hop(topo, "ecmp", lambda ports: ports)


def pinned(topo: Topology, routing: str,
           paths_for: Callable[[nx.Graph, str, str], list[list[str]]]) -> Plan:
    """Path-pinning plan: the ingress hashes each flow onto one of ``paths_for(g, src, dst)``."""
    plan = _empty_plan(topo, routing)
    g = topo.switch_graph()
    _deliver_local(topo, plan)
    edge = sorted({topo.access_switch(h) for h in topo.hosts()}, key=topo.switches().index)
    selectors = {s: _Selector(sp) for s, sp in plan.switches.items()}
    for dst in edge:
        dst_hosts = [h for h in topo.hosts() if topo.access_switch(h) == dst]
        macs = [topo.node(h).mac for h in dst_hosts]
        # the egress switch strips any label before delivering to its own hosts
        for h in dst_hosts:
            plan.switches[dst].add(TABLE_MAIN, PRIO_LABEL,
                                   {"eth_dst": topo.node(h).mac,
                                    "vlan_vid": [OFPVID_PRESENT, OFPVID_PRESENT]},
                                   [["pop_vlan"], ["output", topo.port(dst, h)]])
        label = 0
        for src in edge:
            if src == dst:
                continue
            paths = paths_for(g, src, dst)
            if not paths:
                raise ValueError(f"{routing}: no path from {src} to {dst}")
            plan.paths.setdefault(src, {})[dst] = paths
            choices = []
            for path in paths:
                label += 1
                if label > MAX_LABEL:
                    raise ValueError(f"{routing}: more than {MAX_LABEL} paths end at {dst}")
                choices.append([["push_vlan", label], ["output", topo.port(path[0], path[1])]])
                for here, nxt in zip(path[1:-1], path[2:]):
                    for mac in macs:
                        plan.switches[here].add(
                            TABLE_MAIN, PRIO_LABEL,
                            {"eth_dst": mac, "vlan_vid": OFPVID_PRESENT | label},
                            [["output", topo.port(here, nxt)]])
            act = selectors[src].actions(choices)
            for mac in macs:
                plan.switches[src].add(TABLE_MAIN, PRIO_DST, {"eth_dst": mac, "vlan_vid": 0}, act)
    return plan


def _ordered(topo_paths: Iterable[list[str]], g: nx.Graph) -> list[list[str]]:
    return sorted(topo_paths, key=lambda p: (len(p), p))


def plan_hashed(topo: Topology, **_: object) -> Plan:
    """RipL 'hashed': one whole shortest path per flow, chosen at the ingress by 5-tuple hash."""
    return pinned(topo, "hashed",
                  lambda g, s, d: _ordered(nx.all_shortest_paths(g, s, d), g))


def k_shortest_paths(g: nx.Graph, src: str, dst: str, k: int) -> list[list[str]]:
    """The k shortest loop-free paths (Yen, via networkx), shortest first, ties by name."""
    out: list[list[str]] = []
    for path in nx.shortest_simple_paths(g, src, dst):
        out.append(path)
        if len(out) == k:
            break
    return sorted(out, key=lambda p: (len(p), p))


def plan_ksp(topo: Topology, k: int = 8, **_: object) -> Plan:
    """k-shortest-path routing (Jellyfish): flows hashed over the k shortest paths at ingress."""
    return pinned(topo, f"ksp,k={k}", lambda g, s, d: k_shortest_paths(g, s, d, k))
