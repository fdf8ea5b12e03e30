"""Plan -> OpenFlow 1.3 rules for Open vSwitch, and a fake flow table to check them (pure).

A switch's plan table becomes flow entries in a small rule vocabulary that maps 1:1 onto
OpenFlow 1.3 plus two Nicira actions (controller/ofmsg.py makes the messages):

match keys:  eth_dst, vlan_vid (OpenFlow encoding: 0 = untagged, 0x1000|vid = tagged, a
             (value, mask) pair for "any tag"), in_port, reg0, reg1, eth_type + arp_tpa
actions:     ["output", port]             forward
             ["push_vlan", vid]           tag with a path label (push 802.1Q + set vid)
             ["pop_vlan"]                 remove the path label
             ["set_reg", reg, value]      remember which next-hop set a hash selects from
             ["multipath", basis, n, reg] reg := hash(5-tuple, basis) mod n (Nicira multipath)
             ["resubmit", table]          continue in another table
             ["group", id]                hand the packet to a group of type ALL

The plan's lookup order becomes priorities: ARP 300, (in_port, label) 250, (label) 200,
(any label) 100.  Hash selection uses Nicira ``multipath`` with the switch's seed as basis
and a second table mapping (next-hop set, hash value) to the choice: OpenFlow select groups
would share one hash basis on every switch of the userspace datapath (consecutive hops would
decide alike, polarizing ECMP) and a per-group basis needs OpenFlow 1.5.  Open vSwitch
cannot choose per packet, so only ``hash`` selection is carried (dataplane capabilities).
Replication (multicast trees) becomes an OpenFlow group of type ALL (``openflow_groups``):
one bucket per copy, each with its own push of a label, so a label pushed for one copy can
never leak into the next; identical copy sets on a switch share one group.
``simulate`` executes these rules like a switch does, so tests check the translation against
the plan interpreter (routing/walk.py), the way Faucet checks its messages.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from routing.plan import LABEL_ANY, Action, Choice, SwitchPlan

TABLE_MAIN, TABLE_SELECT = 0, 1
OFPVID_PRESENT = 0x1000
ETH_TYPE_ARP = 0x0806
PRIO_ARP, PRIO_IN_PORT, PRIO_EXACT, PRIO_ANY_LABEL = 300, 250, 200, 100
ACTIONS = {"output": 1, "push_vlan": 1, "pop_vlan": 0, "set_reg": 2, "multipath": 3,
           "resubmit": 1, "group": 1}
MATCH_KEYS = {"eth_dst", "vlan_vid", "reg0", "reg1", "eth_type", "arp_tpa", "in_port"}


class UnsupportedAction(ValueError):
    """The plan asks for something OpenFlow/Open vSwitch cannot do."""


@dataclass(frozen=True)
class Rule:
    """One flow entry. ``match`` and ``actions`` are tuples so rules compare and hash."""

    table: int
    priority: int
    match: tuple[tuple[str, Any], ...]
    actions: tuple[tuple[Any, ...], ...]

    @staticmethod
    def make(table: int, priority: int, match: dict[str, Any], actions: list[list[Any]]) -> Rule:
        """Build a Rule from dict/list literals, checking the vocabulary."""
        for key in match:
            if key not in MATCH_KEYS:
                raise ValueError(f"unknown match key {key}")
        for act in actions:
            if act[0] not in ACTIONS or len(act) - 1 != ACTIONS[act[0]]:
                raise ValueError(f"bad action {act}")
        items = ((k, tuple(v) if isinstance(v, list) else v) for k, v in match.items())
        return Rule(table, priority, tuple(sorted(items)), tuple(tuple(a) for a in actions))


@dataclass(frozen=True)
class Group:
    """An OpenFlow group of type ALL: every bucket gets its own copy of the packet."""

    group_id: int
    buckets: tuple[tuple[tuple[Any, ...], ...], ...]


def _replicate_ids(sp: SwitchPlan) -> dict[tuple[Choice, ...], int]:
    """Group id of every distinct replicate choice set, in table order (1, 2, ...)."""
    ids: dict[tuple[Choice, ...], int] = {}
    for m in sorted(sp.table):
        act = sp.table[m]
        if act.op == "replicate" and act.choices not in ids:
            ids[act.choices] = len(ids) + 1
    return ids


def openflow_groups(sp: SwitchPlan) -> list[Group]:
    """The groups of type ALL that ``openflow_rules(sp)`` refers to."""
    return [Group(gid, tuple(tuple(tuple(a) for a in _choice_actions(c.port, c.push))
                             for c in choices))
            for choices, gid in _replicate_ids(sp).items()]


def _vlan(label: int) -> Any:
    if label == LABEL_ANY:
        return (OFPVID_PRESENT, OFPVID_PRESENT)
    return OFPVID_PRESENT | label if label else 0


def _choice_actions(port: int, push: int) -> list[list[Any]]:
    return ([["push_vlan", push]] if push else []) + [["output", port]]


def openflow_rules(sp: SwitchPlan) -> list[Rule]:
    """The flow entries that make an Open vSwitch bridge behave as ``sp`` says."""
    rules: list[Rule] = []
    groups: dict[tuple[Choice, ...], int] = {}
    replicas = _replicate_ids(sp)

    def actions_for(act: Action) -> list[list[Any]]:
        head = [["pop_vlan"]] if act.pop else []
        if act.op == "forward":
            return head + _choice_actions(act.choices[0].port, act.choices[0].push)
        if act.op == "replicate":
            return head + [["group", replicas[act.choices]]]
        if act.mode != "hash":
            raise UnsupportedAction(f"Open vSwitch cannot select per packet ('{act.mode}'); "
                                    "use --dataplane bpf")
        gid = groups.get(act.choices)
        if gid is None:
            gid = groups[act.choices] = len(groups) + 1
            for i, c in enumerate(act.choices):
                rules.append(Rule.make(TABLE_SELECT, PRIO_EXACT, {"reg1": gid, "reg0": i},
                                       _choice_actions(c.port, c.push)))
        return head + [["set_reg", 1, gid], ["multipath", sp.seed, len(act.choices), 0],
                       ["resubmit", TABLE_SELECT]]

    for m in sorted(sp.table):
        act = sp.table[m]
        if m.kind == "arp":
            match: dict[str, Any] = {"eth_type": ETH_TYPE_ARP, "arp_tpa": m.dst}
            prio = PRIO_ARP
        else:
            match = {"eth_dst": m.dst, "vlan_vid": _vlan(m.label)}
            prio = PRIO_ANY_LABEL if m.label == LABEL_ANY else PRIO_EXACT
        if m.in_port:
            match["in_port"] = m.in_port
            prio = PRIO_IN_PORT if m.kind == "eth" else prio
        rules.append(Rule.make(TABLE_MAIN, prio, match, actions_for(act)))
    return rules


# -- a fake flow table: executes the rules the way Open vSwitch does -------------------------

@dataclass
class Packet:
    """The header fields the rules can match on, plus OVS registers."""

    eth_dst: str
    in_port: int
    eth_type: int = 0x0800
    arp_tpa: str | None = None
    vlan: int = 0
    regs: dict[int, int] = field(default_factory=dict)


def _matches(rule: Rule, pkt: Packet) -> bool:
    for key, want in rule.match:
        if key == "vlan_vid":
            have = OFPVID_PRESENT | pkt.vlan if pkt.vlan else 0
            value, mask = want if isinstance(want, tuple) else (want, 0x1FFF)
            if have & mask != value & mask:
                return False
        elif key.startswith("reg"):
            if pkt.regs.get(int(key[3:]), 0) != want:
                return False
        elif getattr(pkt, key) != want:
            return False
    return True


def simulate(rules: list[Rule], pkt: Packet, choose: Callable[[int], int],
             groups: list[Group] = ()) -> list[tuple[int, int]]:  # type: ignore[assignment]
    """(out port, VLAN id on the way out) of every copy the rules send; [] = dropped.

    ``choose(n)`` stands in for the multipath hash; ``groups`` are the switch's groups
    (a group action runs every bucket on its own copy of the packet).
    """
    by_id = {g.group_id: g for g in groups}

    def lookup(table: int) -> Rule | None:
        hits = [r for r in rules if r.table == table and _matches(r, pkt)]
        return max(hits, key=lambda r: r.priority) if hits else None

    def run(actions: tuple[tuple[Any, ...], ...], depth: int) -> list[tuple[int, int]]:
        if depth > 4:
            raise ValueError("resubmit recursion")
        out = []
        for act in actions:
            if act[0] == "output":
                out.append((act[1], pkt.vlan))
            elif act[0] == "push_vlan":
                pkt.vlan = act[1]
            elif act[0] == "pop_vlan":
                pkt.vlan = 0
            elif act[0] == "set_reg":
                pkt.regs[act[1]] = act[2]
            elif act[0] == "multipath":
                pkt.regs[act[3]] = choose(act[2])
            elif act[0] == "resubmit":
                rule = lookup(act[1])
                out += run(rule.actions, depth + 1) if rule else []
            elif act[0] == "group":
                saved = pkt.vlan
                for bucket in by_id[act[1]].buckets:   # KeyError: a group never defined
                    pkt.vlan = saved
                    out += run(bucket, depth + 1)
                pkt.vlan = saved
        return out

    rule = lookup(TABLE_MAIN)
    return run(rule.actions, 0) if rule else []

