"""A pure interpreter of plans: follows one packet through the rule tables, switch by switch.

It executes exactly the vocabulary the controller installs (routing/plan.py), so tests can
check reachability, loop freedom and path choice of a plan without a switch, and the flow
model can route flows the way the plan would.  ``select(switch, n)`` stands in for the
switch's multipath hash: it returns the index (0..n-1) chosen at ``switch``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from topos.base import Topology

from .plan import OFPVID_PRESENT, TABLE_MAIN, Plan, Rule

Select = Callable[[str, int], int]
ETH_TYPE_IP, ETH_TYPE_ARP = 0x0800, 0x0806


class WalkError(RuntimeError):
    """The packet was dropped, looped, or left the network at the wrong host."""


@dataclass
class Packet:
    """The header fields the plan can match on, plus OVS registers."""

    eth_dst: str
    eth_type: int = ETH_TYPE_IP
    arp_tpa: str | None = None
    vlan: int | None = None
    regs: dict[int, int] = field(default_factory=dict)


def _matches(rule: Rule, pkt: Packet) -> bool:
    for key, want in rule.match:
        if key == "eth_dst" and pkt.eth_dst != want:
            return False
        if key == "eth_type" and pkt.eth_type != want:
            return False
        if key == "arp_tpa" and pkt.arp_tpa != want:
            return False
        if key == "vlan_vid":
            have = 0 if pkt.vlan is None else OFPVID_PRESENT | pkt.vlan
            value, mask = (want if isinstance(want, tuple) else (want, 0x1FFF))
            if have & mask != value & mask:
                return False
        if key.startswith("reg") and pkt.regs.get(int(key[3:]), 0) != want:
            return False
        if key == "in_port":
            raise WalkError("in_port matches are not used by dcrepro plans")
    return True


def lookup(rules: list[Rule], table: int, pkt: Packet) -> Rule | None:
    """The highest-priority matching rule of ``table`` (None = table miss = drop)."""
    best = None
    for rule in _candidates(rules, table, pkt):
        if _matches(rule, pkt) and (best is None or rule.priority > best.priority):
            best = rule
    return best


_INDEX: dict[int, tuple[list[Rule], int, dict[tuple[int, Any], list[Rule]]]] = {}
_INDEX_MAX = 512  # switches; a k=16 fat tree has 320


def _candidates(rules: list[Rule], table: int, pkt: Packet) -> list[Rule]:
    # Index a switch's rules by (table, eth_dst) once: large plans (k=16: 650k rules) would
    # otherwise be scanned linearly at every hop.  Keyed by list identity, rebuilt if the
    # list object or its length changes; rules for another eth_dst or ARP target never match.
    entry = _INDEX.get(id(rules))
    if entry is None or entry[0] is not rules or entry[1] != len(rules):
        if len(_INDEX) >= _INDEX_MAX:
            _INDEX.clear()  # the cache pins rule lists: keep it to about one large plan
        index: dict[tuple[int, Any], list[Rule]] = {}
        for r in rules:
            m = dict(r.match)
            key = m.get("eth_dst") or (("arp", m["arp_tpa"]) if "arp_tpa" in m else None)
            index.setdefault((r.table, key), []).append(r)
        entry = _INDEX[id(rules)] = (rules, len(rules), index)
    idx = entry[2]
    arp = idx.get((table, ("arp", pkt.arp_tpa)), []) if pkt.arp_tpa else []
    return idx.get((table, pkt.eth_dst), []) + arp + idx.get((table, None), [])


def _execute(switch: str, rules: list[Rule], actions: tuple, pkt: Packet,
             select: Select, depth: int = 0) -> int | None:
    """Run an action list; return the output port (None if none was output)."""
    if depth > 4:
        raise WalkError(f"{switch}: resubmit recursion")
    out = None
    for act in actions:
        op = act[0]
        if op == "output":
            if out is not None:
                raise WalkError(f"{switch}: more than one output")
            out = act[1]
        elif op == "push_vlan":
            pkt.vlan = act[1]
        elif op == "pop_vlan":
            pkt.vlan = None
        elif op == "set_reg":
            pkt.regs[act[1]] = act[2]
        elif op == "multipath":
            _, _basis, n, reg = act
            choice = select(switch, n)
            if not 0 <= choice < n:
                raise WalkError(f"select returned {choice} for {n} choices")
            pkt.regs[reg] = choice
        elif op == "resubmit":
            rule = lookup(rules, act[1], pkt)
            if rule is None:
                raise WalkError(f"{switch}: miss in table {act[1]}")
            got = _execute(switch, rules, rule.actions, pkt, select, depth + 1)
            if got is not None:
                if out is not None:
                    raise WalkError(f"{switch}: more than one output")
                out = got
        else:
            raise WalkError(f"unknown action {act}")
    return out


def walk(topo: Topology, plan: Plan, src: str, dst: str, select: Select,
         eth_type: int = ETH_TYPE_IP) -> list[str]:
    """Switches a packet from host ``src`` to host ``dst`` crosses; raises WalkError."""
    d = topo.node(dst)
    pkt = Packet(eth_dst=d.mac if eth_type == ETH_TYPE_IP else "ff:ff:ff:ff:ff:ff",
                 eth_type=eth_type, arp_tpa=d.ip if eth_type == ETH_TYPE_ARP else None)
    here = topo.access_switch(src)
    path: list[str] = []
    while True:
        if here in path:
            raise WalkError(f"loop {src}->{dst}: {path + [here]}")
        path.append(here)
        rules = plan.switches[here].rules
        pkt.regs = {}
        rule = lookup(rules, TABLE_MAIN, pkt)
        if rule is None:
            raise WalkError(f"{src}->{dst} dropped at {here} (no rule for {pkt})")
        port = _execute(here, rules, rule.actions, pkt, select)
        if port is None:
            raise WalkError(f"{src}->{dst}: rule at {here} outputs nothing")
        nxt, _ = topo.ports(here)[port]
        if not topo.is_switch(nxt):
            if nxt != dst:
                raise WalkError(f"{src}->{dst} delivered to {nxt}")
            if pkt.vlan is not None:
                raise WalkError(f"{src}->{dst} delivered with VLAN {pkt.vlan} still on")
            return path
        here = nxt


def first_choice(_switch: str, _n: int) -> int:
    """A select() that always takes the first choice."""
    return 0


def all_paths(topo: Topology, plan: Plan, src: str, dst: str,
              limit: int = 4096) -> set[tuple[str, ...]]:
    """Every switch path the plan can give src->dst over all hash outcomes (enumerated)."""
    found: set[tuple[str, ...]] = set()
    stack: list[list[int]] = [[]]
    while stack and len(found) < limit:
        script = stack.pop()
        pos = [0]
        branch: list[tuple[int, int]] = []

        def select(_s: str, n: int, script: list[int] = script) -> int:
            i = pos[0]
            pos[0] += 1
            if i < len(script):
                return script[i]
            branch.append((i, n))
            return 0
        found.add(tuple(walk(topo, plan, src, dst, select)))
        # every undecided choice point beyond the script spawns its alternatives
        for i, n in branch:
            for alt in range(1, n):
                stack.append(script + [0] * (i - len(script)) + [alt])
    return found

