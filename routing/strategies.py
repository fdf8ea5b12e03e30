"""Routing strategies: each turns a Topology into a dataplane-neutral Plan (routing/plan.py).

Two families cover every strategy:
* per-hop (``st``, ``ecmp``): each switch forwards by destination MAC to one, or a hash-chosen
  one, of its next hops toward the destination's access switch;
* path-pinning (``hashed``, ``ksp``): the ingress switch picks one whole path per flow by a
  hash of the 5-tuple and tags the packet with that path's label (a VLAN id, scoped per egress
  switch); transit switches forward by (label, destination).  Arbitrary paths on arbitrary
  graphs need this: per-destination rules cannot express two flows to the same host taking
  different routes through the same switch.

Hashing is done by the switch itself, per flow, with the switch's own seed (CRC32 of its
name), so consecutive hops decide independently (no ECMP polarization), there is no
controller round trip and nothing can time out.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import networkx as nx

from topos.base import Topology

from .plan import LABEL_ANY, MAX_LABEL, Action, Choice, Match, Plan, SwitchPlan, switch_seed


def _empty_plan(topo: Topology, routing: str) -> Plan:
    return Plan(topo.spec, routing,
                {s: SwitchPlan(s, topo.node(s).dpid or 0, i + 1, switch_seed(s))
                 for i, s in enumerate(topo.switches())})


def _deliver_local(topo: Topology, plan: Plan) -> None:
    """Local delivery, plus ARP: every request is routed like unicast toward its target.

    dcrepro runs use static ARP, but plain ``mn --controller remote`` users need ARP; routing
    a request along the leftmost shortest-path tree to the owner of its target address
    answers it without flooding, so the multipath fabric cannot loop it.
    """
    g = topo.switch_graph()
    for dst, hosts in _hosts_by_switch(topo).items():
        dist = nx.single_source_shortest_path_length(g, dst)
        # next hop toward dst: computed once per destination switch, shared by its hosts
        toward = {s: Action.forward(min(topo.port(s, n) for n in g.neighbors(s)
                                        if dist.get(n, -1) == dist[s] - 1))
                  for s in topo.switches() if s != dst and s in dist}
        for h in hosts:
            local = Action.forward(topo.port(dst, h))
            plan.switches[dst].add(Match(topo.mac(h)), local)
            plan.switches[dst].add(Match(topo.ip(h), "arp"), local)
            for s, act in toward.items():
                plan.switches[s].add(Match(topo.ip(h), "arp"), act)


def _hosts_by_switch(topo: Topology) -> dict[str, list[str]]:
    """Access switch -> its hosts, in topology order."""
    out: dict[str, list[str]] = {}
    for h in topo.hosts():
        out.setdefault(topo.access_switch(h), []).append(h)
    return out


def per_hop(topo: Topology, routing: str, pick: Callable[[list[int]], list[int]],
            mode: str = "hash") -> Plan:
    """Destination-based forwarding over shortest paths; ``pick`` narrows the next-hop ports,
    ``mode`` says how a switch chooses among several."""
    plan = _empty_plan(topo, routing)
    g = topo.switch_graph()
    _deliver_local(topo, plan)
    for dst_sw, hosts in _hosts_by_switch(topo).items():
        dist = nx.single_source_shortest_path_length(g, dst_sw)
        for s in topo.switches():
            if s == dst_sw:
                continue
            if s not in dist:
                raise ValueError(f"{routing}: {s} cannot reach {dst_sw}")
            ports = sorted(topo.port(s, n) for n in g.neighbors(s)
                           if dist.get(n, -1) == dist[s] - 1)
            action = Action.select((Choice(p) for p in pick(ports)), mode)
            for h in hosts:
                plan.switches[s].add(Match(topo.mac(h)), action)
    return plan


def plan_st(topo: Topology, **_: object) -> Plan:
    """Spanning-tree-like: always the leftmost (lowest-port) shortest next hop, RipL style."""
    return per_hop(topo, "st", lambda ports: ports[:1])


def plan_ecmp(topo: Topology, **_: object) -> Plan:
    """Per-hop ECMP: hash each flow over every equal-cost next hop, independently per switch."""
    return per_hop(topo, "ecmp", lambda ports: ports)


def plan_spray(topo: Topology, mode: str = "rr", **_: object) -> Plan:
    """Packet-level spraying (004_...): every switch picks among all equal-cost next hops
    per packet: ``rnd`` at random, ``rr`` round robin per flow (the choice after the flow's
    last), ``cnt`` the next hop whose port has sent the fewest bytes."""
    return per_hop(topo, f"spray,mode={mode}", lambda ports: ports, mode=mode)


def pinned(topo: Topology, routing: str,
           paths_for: Callable[[nx.Graph, str, str], list[list[str]]]) -> Plan:
    """Path-pinning plan: the ingress hashes each flow onto one of ``paths_for(g, src, dst)``."""
    plan = _empty_plan(topo, routing)
    g = topo.switch_graph()
    _deliver_local(topo, plan)
    edge = sorted({topo.access_switch(h) for h in topo.hosts()}, key=topo.switches().index)
    for dst in edge:
        dst_hosts = [h for h in topo.hosts() if topo.access_switch(h) == dst]
        macs = [topo.mac(h) for h in dst_hosts]
        # the egress switch strips any label before delivering to its own hosts
        for h in dst_hosts:
            plan.switches[dst].add(Match(topo.mac(h), label=LABEL_ANY),
                                   Action.forward(topo.port(dst, h), pop=True))
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
                choices.append(Choice(topo.port(path[0], path[1]), label))
                for here, nxt in zip(path[1:-1], path[2:]):
                    hop = Action.forward(topo.port(here, nxt))
                    for mac in macs:
                        plan.switches[here].add(Match(mac, label=label), hop)
            act = Action.select(choices, "hash")
            for mac in macs:
                plan.switches[src].add(Match(mac), act)
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
