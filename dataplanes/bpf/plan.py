"""Plan -> entries of the tc-BPF switch's maps, and a model of the program's lookup (pure).

The layouts are those of dataplanes/bpf/switch.bpf.c (dataplanes/bpf/switch.py defines the
tuples and packs them); here they stay tuples, so that a unit test can check the translation
against the plan interpreter (routing/walk.py) without root, as controller/ofplan.py does
for OpenFlow.
"""
from __future__ import annotations

import socket
from collections.abc import Callable

from routing.plan import LABEL_ANY, Choice, Plan, SwitchPlan
from topos.base import Topology

from .switch import (
    ACT_FORWARD,
    ACT_REPLICATE,
    KIND_ARP,
    KIND_ETH,
    MODES,
    PORT_HOST,
    PORT_IN_RULES,
    FibAction,
    FibKey,
)


def mac_bytes(mac: str) -> bytes:
    """'00:00:00:01:02:03' -> 6 bytes."""
    out = bytes(int(x, 16) for x in mac.split(":"))
    if len(out) != 6:
        raise ValueError(f"bad MAC {mac!r}")
    return out


def fib_key(sw: SwitchPlan, kind: str, dst: str, label: int, in_port: int) -> FibKey:
    """The map key of one plan match on switch ``sw``."""
    if kind == "arp":
        return FibKey(sw.sid, in_port, label, KIND_ARP, socket.inet_aton(dst) + b"\0\0")
    return FibKey(sw.sid, in_port, label, KIND_ETH, mac_bytes(dst))


def fib_entries(plan: Plan) -> dict[FibKey, FibAction]:
    """Every fib map entry of the network (all switches share one map, keyed by switch id)."""
    out: dict[FibKey, FibAction] = {}
    for sw in plan.switches.values():
        groups: dict[tuple[Choice, ...], int] = {}
        for m, act in sw.table.items():
            group = groups.setdefault(act.choices, len(groups) + 1)
            out[fib_key(sw, m.kind, m.dst, m.label, m.in_port)] = FibAction(
                ACT_REPLICATE if act.op == "replicate" else ACT_FORWARD,
                MODES.get(act.mode, 0), int(act.pop), group,
                tuple(c.port for c in act.choices), tuple(c.push for c in act.choices))
    return out


def in_port_rules(sw: SwitchPlan) -> bool:
    """Does the switch's table match on the input port anywhere (multicast trees do)?"""
    return any(m.in_port for m in sw.table)


def port_entries(plan: Plan, topo: Topology,
                 ifindex: Callable[[str], int]) -> tuple[dict[int, tuple[int, int, int, int]],
                                                         dict[tuple[int, int], int]]:
    """ports map (ifindex -> (switch id, port, seed, flags)) and egress map ((switch id,
    port) -> ifindex) for every switch port; ``ifindex(name)`` resolves interface names.
    flags: PORT_HOST where the port faces a host (latency sampling starts and ends there),
    PORT_IN_RULES on every port of a switch whose table matches on the input port (only
    then does the program look the input port up: simulate's ``in_rules``)."""
    ports: dict[int, tuple[int, int, int, int]] = {}
    egress: dict[tuple[int, int], int] = {}
    for sw in plan.switches.values():
        in_rules = PORT_IN_RULES if in_port_rules(sw) else 0
        for port, (peer, _) in topo.ports(sw.name).items():
            idx = ifindex(f"{sw.name}-eth{port}")
            ports[idx] = (sw.sid, port, sw.seed,
                          in_rules | (0 if topo.is_switch(peer) else PORT_HOST))
            egress[(sw.sid, port)] = idx
    return ports, egress


def simulate(fib: dict[FibKey, FibAction], sw: int, in_port: int, label: int, kind: int,
             addr: bytes, choose: Callable[[int], int],
             in_rules: bool = True) -> list[tuple[int, int]]:
    """What the program does with a packet: (out port, label on the way out) per copy;
    [] = dropped.  Mirrors the C lookup order; ``choose(n)`` stands in for the mode;
    ``in_rules``: the port's PORT_IN_RULES flag (without it the in_port lookup is skipped)."""
    act = (fib.get(FibKey(sw, in_port, label, kind, addr)) if in_rules and in_port else None) \
        or fib.get(FibKey(sw, 0, label, kind, addr))
    if act is None and label:
        act = fib.get(FibKey(sw, 0, LABEL_ANY, kind, addr))
    if act is None or not act.ports:
        return []
    base = 0 if act.pop else label
    idx = range(len(act.ports)) if act.kind == ACT_REPLICATE else \
        [choose(len(act.ports)) if len(act.ports) > 1 else 0]
    return [(act.ports[i], act.push[i] or base) for i in idx]
