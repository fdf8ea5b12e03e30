"""Multicast trees for the Orca reproduction (001_da816e6d87c9a0a9.txt): one source, static
members, replication in the network.

A group is an IPv4 address in 224.0.0.0/4; its frames carry the RFC 1112 MAC (01:00:5e +
the low 23 bits of the address), so a plan entry matches the group like any destination
MAC.  The tree is the union of shortest switch paths from the source's access switch to
every member's access switch, chosen deterministically (breadth-first, neighbours in port
order), so it never loops and every member gets exactly one copy.  Each switch on the tree
holds one entry, keyed by the port the tree enters by: a copy arriving anywhere else (a
loop, a stray frame) matches nothing and is dropped.  Membership is static (no IGMP
snooping): it comes from the experiment's group definition, and the entries are installed
with the rest of the plan, before any traffic.
"""
from __future__ import annotations

import ipaddress
from collections import deque

from topos.base import Topology

from .plan import Action, Choice, Match, Plan


def group_mac(group: str) -> str:
    """The Ethernet address of IPv4 multicast group ``group`` (RFC 1112, section 6.4)."""
    addr = ipaddress.IPv4Address(group)
    if not addr.is_multicast:
        raise ValueError(f"{group} is not an IPv4 multicast address (224.0.0.0/4)")
    low = int(addr) & 0x7FFFFF
    return f"01:00:5e:{low >> 16:02x}:{(low >> 8) & 0xFF:02x}:{low & 0xFF:02x}"


def tree_edges(topo: Topology, src: str, members: list[str]) -> dict[str, list[str]]:
    """switch -> the switches below it on the tree (the root is the source's access switch);
    only switches that lead to a member are kept."""
    if not members:
        raise ValueError("a multicast group needs at least one member")
    unknown = [m for m in [src, *members] if m not in topo.hosts()]
    if unknown:
        raise ValueError(f"not hosts of {topo.spec}: {', '.join(unknown)}")
    if src in members:
        raise ValueError(f"the source {src} cannot be a member of its own group")
    root = topo.access_switch(src)
    parent: dict[str, str | None] = {root: None}
    todo = deque([root])
    while todo:  # breadth-first, neighbours in port order: deterministic shortest paths
        here = todo.popleft()
        for peer in topo.neighbors(here):
            if topo.is_switch(peer) and peer not in parent:
                parent[peer] = here
                todo.append(peer)
    children: dict[str, list[str]] = {}
    for m in members:
        sw = topo.access_switch(m)
        if sw not in parent:
            raise ValueError(f"{m} cannot be reached from {src}")
        children.setdefault(sw, [])
        while parent[sw] is not None:
            up = parent[sw]
            assert up is not None
            if sw not in children.setdefault(up, []):
                children[up].append(sw)
            sw = up
    return children


def add_group(topo: Topology, plan: Plan, group: str, src: str, members: list[str]) -> None:
    """Add the tree of ``group`` (source ``src``, static ``members``) to ``plan``."""
    mac = group_mac(group)
    children = tree_edges(topo, src, members)
    root = topo.access_switch(src)
    enters = {root: topo.port(root, src)}
    for up, downs in children.items():
        for d in downs:
            enters[d] = topo.port(d, up)
    for sw, in_port in enters.items():
        outs = [topo.port(sw, d) for d in children.get(sw, [])]
        outs += [topo.port(sw, m) for m in members if topo.access_switch(m) == sw]
        outs = sorted(set(outs))
        act = Action.forward(outs[0]) if len(outs) == 1 else \
            Action.replicate(Choice(p) for p in outs)
        plan.switches[sw].add(Match(mac, "eth", 0, in_port), act)
