"""Routing registry: ``make_plan(topo, "ecmp")`` -> Plan.  Adding a strategy = its function
in routing/strategies.py and one entry in _REGISTRY here."""
from __future__ import annotations

from collections.abc import Callable, Mapping

from topos.base import Topology
from topos.spec import Param, Spec, describe, parse_spec, positive_int

from . import strategies
from .plan import Action, Choice, Match, Plan, SwitchPlan

_REGISTRY: dict[str, tuple[Callable[..., Plan], Mapping[str, Param],
                           Callable[[Spec], set[str]]]] = {
    # name: (plan function, spec parameters, the plan ops / select modes it uses: a
    # dataplane must carry all of them)
    "st": (strategies.plan_st, {}, lambda _s: {"forward"}),
    "ecmp": (strategies.plan_ecmp, {}, lambda _s: {"forward", "hash"}),
    "hashed": (strategies.plan_hashed, {}, lambda _s: {"forward", "hash"}),
    "ksp": (strategies.plan_ksp, {"k": Param(int, 8, "paths per switch pair", positive_int,
                                             "> 0")}, lambda _s: {"forward", "hash"}),
    "spray": (strategies.plan_spray, {"mode": Param(
        str, "rr", "per-packet choice: rnd (random), rr (round robin per flow), cnt (least "
        "bytes sent on the port)", lambda m: m in ("rnd", "rr", "cnt"), "rnd, rr or cnt")},
        lambda s: {"forward", s["mode"]}),
}
SCHEMAS = {name: schema for name, (_, schema, _) in _REGISTRY.items()}


def parse(text: str) -> Spec:
    """Parse a routing spec such as ``ksp,k=4``; raises SpecError."""
    return parse_spec(text, SCHEMAS, "routing")


def make_plan(topo: Topology, spec: str | Spec) -> Plan:
    """The routing plan for ``topo`` under ``spec``."""
    parsed = parse(spec) if isinstance(spec, str) else spec
    fn, _, _ = _REGISTRY[parsed.name]
    plan = fn(topo, **parsed.params)
    plan.routing = str(parsed)
    return plan


def modes(spec: str | Spec) -> set[str]:
    """Plan ops and select modes the strategy needs, known before any plan is built."""
    parsed = parse(spec) if isinstance(spec, str) else spec
    return _REGISTRY[parsed.name][2](parsed)


def help_text() -> str:
    """Registered strategies with their keys and defaults."""
    return describe(SCHEMAS)


__all__ = ["SCHEMAS", "Action", "Choice", "Match", "Plan", "SwitchPlan", "help_text",
           "make_plan", "modes", "parse"]
