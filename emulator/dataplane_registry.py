"""The dataplane registry, one line each (``--dataplane NAME``): name -> "module:Class";
and the checks of a dataplane against what a run needs, which name the registered ones
that would do.

A dataplane is one folder of dataplanes/ holding a subclass of emulator.dataplane.Dataplane;
adding one is that folder and one line here (tests/unit/test_new_dataplane.py shows it).
Classes are imported by name, so the emulator imports no dataplane and a run imports only
the one it uses.  ``auto`` is resolved once, at the door (``resolve``): the first
registered dataplane this machine can run, in the order below (bpf first: its measured
fidelity is the better one, docs/measured.md).
"""
from __future__ import annotations

import importlib

from routing.plan import Plan

from .dataplane import Dataplane

REGISTRY: dict[str, str] = {
    "bpf": "dataplanes.bpf.dataplane:BpfDataplane",
    "ovs": "dataplanes.ovs.dataplane:OvsDataplane",
}


def dataplane_class(name: str) -> type[Dataplane]:
    """The class registered as ``name`` (KeyError if none is)."""
    module, cls = REGISTRY[name].split(":")
    found = getattr(importlib.import_module(module), cls)
    assert issubclass(found, Dataplane), found
    return found


def default_name() -> str:
    """The first registered dataplane this machine can run."""
    for name in REGISTRY:
        if not dataplane_class(name).unavailable():
            return name
    raise ValueError("no dataplane can run on this machine: " + "; ".join(
        f"{n}: {dataplane_class(n).unavailable()}" for n in REGISTRY))


def parse(spec: str) -> tuple[str, dict[str, str]]:
    """'bpf,socket=keep' -> ('bpf', {'socket': 'keep'}).  ValueError (one line) on an
    unknown name, option or value, and on 'auto' (resolve it first)."""
    name, *rest = [x.strip() for x in str(spec).split(",")]
    if name not in REGISTRY:
        raise ValueError(f"--dataplane must be one of {', '.join(REGISTRY)} or auto "
                         f"(optionally with options, e.g. bpf,socket=keep), got '{spec}'")
    known = dataplane_class(name).options
    opts: dict[str, str] = {}
    for item in rest:
        key, eq, value = item.partition("=")
        if not eq or key not in known or value not in known[key]:
            hint = "; ".join(f"{k}={'|'.join(v)}" for k, v in known.items()) or "none"
            raise ValueError(f"--dataplane {spec!r}: {name} takes no option {item!r} "
                             f"(its options: {hint})")
        opts[key] = value
    return name, opts


def resolve(spec: str) -> str:
    """The spec with 'auto' replaced by default_name() (options kept), checked."""
    name, _, rest = str(spec).partition(",")
    if name.strip() == "auto":
        spec = default_name() + ("," + rest if rest else "")
    parse(spec)
    return spec


def make(spec: str) -> Dataplane:
    """A dataplane by spec (name[,option=value...]), 'auto' resolved."""
    name, opts = parse(resolve(spec))
    return dataplane_class(name)(**opts)


def capabilities() -> dict[str, frozenset[str]]:
    """Every registered dataplane's capabilities (for the README's experiment table)."""
    return {name: dataplane_class(name).capabilities for name in REGISTRY}


def other_than(name: str, needs: list[str]) -> str:
    """A registered dataplane that carries ``needs`` (for error messages)."""
    for cand in REGISTRY:
        if cand != name and set(needs) <= dataplane_class(cand).carries:
            return cand
    return "(none carries it)"


def providing(needs: set[str]) -> str:
    """The registered dataplanes that offer every capability in ``needs``, comma-separated."""
    return ", ".join(n for n in REGISTRY if needs <= dataplane_class(n).capabilities)


def check_modes(dp: Dataplane, routing: str, modes: set[str]) -> None:
    """Raise ValueError (one line, before anything is built) if routing needs more than
    ``dp`` carries, naming a dataplane that carries it."""
    missing = sorted(modes - dp.carries)
    if missing:
        raise ValueError(f"routing '{routing}' needs {', '.join(missing)}, which the "
                         f"{dp.name} dataplane cannot carry; use --dataplane "
                         f"{other_than(dp.name, missing)}")


def check_needs(dp: Dataplane, who: str, needs: frozenset[str] | set[str]) -> None:
    """Raise ValueError (one line) if ``who`` needs capabilities ``dp`` lacks, naming the
    dataplanes that offer them."""
    missing = sorted(set(needs) - dp.capabilities)
    if missing:
        raise ValueError(f"{who} needs {', '.join(missing)}, which the {dp.name} "
                         f"dataplane does not offer; use --dataplane "
                         f"{providing(set(needs)) or '(none offers it)'}")


def check_plan(dp: Dataplane, plan: Plan) -> None:
    """check_modes for a built plan."""
    check_modes(dp, plan.routing, plan.modes())
