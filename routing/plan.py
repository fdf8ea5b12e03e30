"""A routing plan: per switch, a small dataplane-neutral table, as plain comparable data.

Both dataplanes translate from it (controller/ofplan.py to OpenFlow 1.3 for Open vSwitch,
dataplanes/bpf/plan.py to the maps of the tc-BPF switch), and routing/walk.py interprets it, so
a golden file shows what every switch does whatever carries it.

Match: what a packet is looked up by on one switch
  kind     "eth": ``dst`` is the destination MAC; "arp": ``dst`` is the target IPv4 address
           of an ARP request (requests are routed to their target, never flooded)
  label    0 = untagged, 1..4094 = carries that path label (an 802.1Q VLAN id),
           LABEL_ANY = any labelled packet
  in_port  0 = any input port, else only packets that entered on that port
Lookup order (the same on both dataplanes and in the interpreter): (in_port, label), then
(any port, label), then, for a labelled packet only, (any port, LABEL_ANY).  A miss drops.

Action: what happens to a matching packet
  pop      strip the path label first
  op       "forward": the one choice; "select": one of the choices, by ``mode``;
           "replicate": a copy to every choice (multicast)
  mode     "hash": a hash of the 5-tuple with the switch's own seed (per flow, no
           polarization); "rnd": random per packet; "rr": round robin per flow (the next
           choice after the flow's last one); "cnt": the choice whose port has sent the
           fewest bytes
  choices  (port, push): output port, and a label to push on the way out (0 = none)
"""
from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

LABEL_ANY = 0xFFFF
MAX_LABEL = 4094
MAX_CHOICES = 16
SELECT_MODES = ("hash", "rnd", "rr", "cnt")
#: the select modes that choose per packet, not per flow
SPRAY_MODES = frozenset({"rnd", "rr", "cnt"})
OPS = ("forward", "select", "replicate")


def switch_seed(name: str) -> int:
    """Per-switch hash seed: stable across processes (CRC32, never Python's hash())."""
    return zlib.crc32(name.encode()) & 0xFFFF


@dataclass(frozen=True, order=True)
class Match:
    """The lookup key of one table entry (see the module text)."""

    dst: str
    kind: str = "eth"
    label: int = 0
    in_port: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("eth", "arp"):
            raise ValueError(f"match kind must be eth or arp, got {self.kind!r}")
        if not (0 <= self.label <= MAX_LABEL or self.label == LABEL_ANY):
            raise ValueError(f"label {self.label} out of range")
        if not 0 <= self.in_port < 0xFFFF:
            raise ValueError(f"in_port {self.in_port} out of range")


@dataclass(frozen=True, order=True)
class Choice:
    """One output: a port, and a path label to push (0 = none)."""

    port: int
    push: int = 0


@dataclass(frozen=True)
class Action:
    """What a matching packet does (see the module text); build with the class methods."""

    op: str
    choices: tuple[Choice, ...]
    mode: str = ""
    pop: bool = False

    def __post_init__(self) -> None:
        n = len(self.choices)
        if self.op not in OPS:
            raise ValueError(f"unknown action {self.op!r}")
        if not 1 <= n <= MAX_CHOICES:
            raise ValueError(f"{self.op}: {n} choices (1..{MAX_CHOICES})")
        if self.op == "forward" and (n != 1 or self.mode):
            raise ValueError("forward takes exactly one choice and no mode")
        if self.op == "select" and (self.mode not in SELECT_MODES or n < 2):
            raise ValueError(f"select needs a mode in {SELECT_MODES} and 2+ choices")
        if self.op == "replicate" and self.mode:
            raise ValueError("replicate takes no mode")

    @staticmethod
    def forward(port: int, push: int = 0, pop: bool = False) -> Action:
        """Send to one port."""
        return Action("forward", (Choice(port, push),), pop=pop)

    @staticmethod
    def select(choices: Iterable[Choice], mode: str = "hash", pop: bool = False) -> Action:
        """One of several choices by ``mode``; a single choice degenerates to forward."""
        cs = tuple(choices)
        if len(cs) == 1:
            return Action("forward", cs, pop=pop)
        return Action("select", cs, mode, pop)

    @staticmethod
    def replicate(choices: Iterable[Choice], pop: bool = False) -> Action:
        """A copy to every choice."""
        return Action("replicate", tuple(choices), pop=pop)

    def to_json(self) -> dict[str, Any]:
        """Compact form: out = ports, or [port, label] where a label is pushed."""
        d: dict[str, Any] = {"op": self.op}
        if self.mode:
            d["mode"] = self.mode
        if self.pop:
            d["pop"] = True
        d["out"] = [[c.port, c.push] if c.push else c.port for c in self.choices]
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Action:
        """Inverse of to_json."""
        cs = tuple(Choice(*o) if isinstance(o, list) else Choice(o) for o in d["out"])
        return Action(d["op"], cs, d.get("mode", ""), bool(d.get("pop", False)))


def _match_json(m: Match) -> dict[str, Any]:
    d: dict[str, Any] = {"dst": m.dst}
    if m.kind != "eth":
        d["kind"] = m.kind
    if m.label:
        d["label"] = "any" if m.label == LABEL_ANY else m.label
    if m.in_port:
        d["in_port"] = m.in_port
    return d


def _match_from_json(d: dict[str, Any]) -> Match:
    label = d.get("label", 0)
    return Match(d["dst"], d.get("kind", "eth"), LABEL_ANY if label == "any" else label,
                 d.get("in_port", 0))


@dataclass
class SwitchPlan:
    """Everything one switch holds: its table, and its identity on either dataplane."""

    name: str
    dpid: int
    sid: int           # small switch number, 1.. (the BPF switch's id)
    seed: int          # hash seed / OVS multipath basis
    table: dict[Match, Action] = field(default_factory=dict)

    def add(self, match: Match, action: Action) -> None:
        """Add an entry; the same match twice with a different action is a planning bug."""
        old = self.table.get(match)
        if old is not None and old != action:
            raise ValueError(f"{self.name}: conflicting entries for {match}: {old} vs {action}")
        self.table[match] = action

    def lookup(self, kind: str, dst: str, label: int, in_port: int) -> Action | None:
        """The action for a packet, in the documented fallback order (None = drop)."""
        t = self.table
        for key in (Match(dst, kind, label, in_port), Match(dst, kind, label, 0)):
            if key in t:
                return t[key]
        if label:
            return t.get(Match(dst, kind, LABEL_ANY, 0))
        return None


@dataclass
class Plan:
    """The routing plan of a whole network plus the paths it pins (for tracing and the model)."""

    topology: str
    routing: str
    switches: dict[str, SwitchPlan]
    #: for path-pinning strategies: paths[ingress][egress] = list of switch-name lists
    paths: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)

    def by_dpid(self) -> dict[int, SwitchPlan]:
        """Switch plans keyed by DPID, as the OpenFlow controller sees switches."""
        return {sp.dpid: sp for sp in self.switches.values()}

    def entry_count(self) -> int:
        """Total number of table entries over all switches."""
        return sum(len(sp.table) for sp in self.switches.values())

    def modes(self) -> set[str]:
        """Select modes and ops the plan uses (what a dataplane must be able to carry)."""
        out = set()
        for sp in self.switches.values():
            for act in sp.table.values():
                out.add(act.mode if act.op == "select" else act.op)
        return out

    @property
    def sprays(self) -> bool:
        """Whether a switch chooses a next hop per packet somewhere (rnd, rr, cnt)."""
        return bool(self.modes() & SPRAY_MODES)

    def dumps(self) -> str:
        """Stable JSON text, one entry per line (golden files compare it, diffs stay readable)."""
        out = ["{", f' "topology": {json.dumps(self.topology)},',
               f' "routing": {json.dumps(self.routing)},',
               f' "paths": {json.dumps(self.paths, sort_keys=True)},', ' "switches": {']
        names = sorted(self.switches)
        for i, name in enumerate(names):
            sp = self.switches[name]
            entries = ",\n".join(
                "   " + json.dumps([_match_json(m), sp.table[m].to_json()])
                for m in sorted(sp.table))
            out.append(f'  {json.dumps(name)}: {{"dpid": {sp.dpid}, "sid": {sp.sid}, '
                       f'"seed": {sp.seed}, "table": [\n{entries}\n  ]}}'
                       + ("," if i < len(names) - 1 else ""))
        out += [" }", "}"]
        return "\n".join(out) + "\n"

    @staticmethod
    def loads(text: str) -> Plan:
        """Parse a plan written by dumps()."""
        d = json.loads(text)
        switches = {}
        for name, s in d["switches"].items():
            sp = SwitchPlan(name, s["dpid"], s["sid"], s["seed"])
            for m, a in s["table"]:
                sp.add(_match_from_json(m), Action.from_json(a))
            switches[name] = sp
        return Plan(d["topology"], d["routing"], switches, d.get("paths", {}))
