"""A routing plan: per switch, the exact OpenFlow rules to install, as plain comparable data.

The vocabulary is deliberately small and maps 1:1 onto OpenFlow 1.3 + two Nicira extensions
(controller/ofmsg.py), so a golden file shows exactly what a switch will hold:

match keys:  eth_dst, vlan_vid (OpenFlow encoding: 0 = untagged, 0x1000|vid = tagged), reg0, reg1,
             eth_type + arp_tpa (ARP requests are routed to their target, never flooded)
actions:     ["output", port]            forward
             ["push_vlan", vid]          tag with a path label (push 802.1Q + set vid)
             ["pop_vlan"]                remove the path label
             ["set_reg", reg, value]     remember which next-hop set a hash selects from
             ["multipath", basis, n, reg] reg := hash(5-tuple, basis) mod n  (Nicira multipath)
             ["resubmit", table]         continue in another table
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: table 0 forwards; table 1 maps (next-hop set, hash value) to actions
TABLE_MAIN, TABLE_SELECT = 0, 1
OFPVID_PRESENT = 0x1000
ACTIONS = {"output": 1, "push_vlan": 1, "pop_vlan": 0, "set_reg": 2, "multipath": 3,
           "resubmit": 1}
MATCH_KEYS = {"eth_dst", "vlan_vid", "reg0", "reg1", "eth_type", "arp_tpa", "in_port"}


@dataclass(frozen=True)
class Rule:
    """One flow entry. ``match`` and ``actions`` are tuples so rules compare and hash."""

    table: int
    priority: int
    match: tuple[tuple[str, Any], ...]
    actions: tuple[tuple[Any, ...], ...]

    @staticmethod
    def make(table: int, priority: int, match: dict[str, Any], actions: list[list[Any]]) -> "Rule":
        """Build a Rule from dict/list literals, checking the vocabulary."""
        for key in match:
            if key not in MATCH_KEYS:
                raise ValueError(f"unknown match key {key}")
        for act in actions:
            if act[0] not in ACTIONS or len(act) - 1 != ACTIONS[act[0]]:
                raise ValueError(f"bad action {act}")
        # JSON turns (value, mask) tuples into lists; keep them hashable
        items = ((k, tuple(v) if isinstance(v, list) else v) for k, v in match.items())
        return Rule(table, priority, tuple(sorted(items)),
                    tuple(tuple(a) for a in actions))

    def to_json(self) -> dict[str, Any]:
        """Plain-dict form used in plan.json."""
        match = {k: list(v) if isinstance(v, tuple) else v for k, v in self.match}
        return {"table": self.table, "priority": self.priority, "match": match,
                "actions": [list(a) for a in self.actions]}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Rule":
        """Inverse of to_json."""
        return Rule.make(d["table"], d["priority"], d["match"], d["actions"])


@dataclass
class SwitchPlan:
    """Everything one switch must hold."""

    name: str
    dpid: int
    rules: list[Rule] = field(default_factory=list)

    def add(self, table: int, priority: int, match: dict[str, Any], actions: list[list[Any]]) -> None:
        """Append a rule (see Rule.make)."""
        self.rules.append(Rule.make(table, priority, match, actions))


@dataclass
class Plan:
    """The routing plan of a whole network plus the paths it pins (for tracing and the model)."""

    topology: str
    routing: str
    switches: dict[str, SwitchPlan]
    #: for path-pinning strategies: paths[ingress][egress] = list of switch-name lists
    paths: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)

    def by_dpid(self) -> dict[int, SwitchPlan]:
        """Switch plans keyed by DPID, as the controller sees switches."""
        return {sp.dpid: sp for sp in self.switches.values()}

    def rule_count(self) -> int:
        """Total number of rules over all switches."""
        return sum(len(sp.rules) for sp in self.switches.values())

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict; rules sorted so equal plans serialise identically."""
        return {
            "topology": self.topology,
            "routing": self.routing,
            "switches": {
                name: {"dpid": sp.dpid,
                       "rules": [r.to_json() for r in sorted(
                           sp.rules, key=lambda r: (r.table, -r.priority, repr(r.match)))]}
                for name, sp in sorted(self.switches.items())},
            "paths": self.paths,
        }

    def dumps(self) -> str:
        """Stable JSON text, one rule per line (golden files compare this, diffs stay readable)."""
        d = self.to_json()
        out = ["{", f' "topology": {json.dumps(d["topology"])},',
               f' "routing": {json.dumps(d["routing"])},',
               f' "paths": {json.dumps(d["paths"], sort_keys=True)},', ' "switches": {']
        names = list(d["switches"])
        for i, name in enumerate(names):
            sw = d["switches"][name]
            rules = ",\n".join("   " + json.dumps(r, sort_keys=True) for r in sw["rules"])
            out.append(f'  {json.dumps(name)}: {{"dpid": {sw["dpid"]}, "rules": [\n{rules}\n  ]}}'
                       + ("," if i < len(names) - 1 else ""))
        out += [" }", "}"]
        return "\n".join(out) + "\n"

    @staticmethod
    def loads(text: str) -> "Plan":
        """Parse a plan written by dumps()."""
        d = json.loads(text)
        switches = {name: SwitchPlan(name, s["dpid"], [Rule.from_json(r) for r in s["rules"]])
                    for name, s in d["switches"].items()}
        return Plan(d["topology"], d["routing"], switches, d.get("paths", {}))
