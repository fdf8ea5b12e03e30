"""Typed, frozen parameters of one run: what an experiment's ``run`` receives.

Each experiment declares its parameters as a frozen dataclass derived from ``Params``, one
typed field with its default per parameter (``PARAMS``), and its quick overrides
(``QUICK``).  ``typed`` turns a mapping (flags resolved by the CLI, a sweep manifest line, a
rerun's config.json) into an instance of it, strictly: an unknown name or a value of the
wrong type is a one-line ValueError, a missing one takes its default.  An int is accepted
where a float is declared (``--bw 10``); nothing else is coerced.

Code reads parameters as attributes (``params.bw``), which the type checker sees.  The
instance is also a read-only mapping (``dict(params)`` is what config.json records, and
code shared by every experiment reads ``params["bw"]`` from whichever it gets).
"""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

from emulator.emulation import SOFTIRQ_BATCH


@dataclasses.dataclass(frozen=True)
class Params(Mapping[str, Any]):
    """Base of every experiment's parameter dataclass: a frozen, typed, read-only mapping.
    ``quick``: the run was asked for with --quick (every experiment has it)."""

    quick: bool = False

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Name -> default of every parameter but ``quick`` (the flags' and README's view)."""
        return {f.name: f.default for f in dataclasses.fields(cls) if f.name != "quick"}

    @classmethod
    def types(cls) -> dict[str, tuple[type, bool]]:
        """Name -> (type, may be None) of every parameter, from the field annotations."""
        hints = typing.get_type_hints(cls)
        out: dict[str, tuple[type, bool]] = {}
        for name in cls._names():
            hint = hints[name]
            args = typing.get_args(hint)
            if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
                kinds = [a for a in args if a is not type(None)]
                if len(kinds) != 1 or len(args) != 2:
                    raise TypeError(f"{cls.__name__}.{name}: only 'T | None' unions are "
                                    f"parameters, got {hint}")
                out[name] = (kinds[0], True)
            else:
                out[name] = (hint, False)
        return out


@dataclasses.dataclass(frozen=True)
class NetworkParams(Params):
    """What every emulated experiment has: the links (rate, tail-drop queue, HTB burst, the
    switch ports' AQM, the shaper), the repetitions and their root seed, the dataplane, what
    idle CPUs do (``idle_cpus``: emulator.emulation.IDLE_CPUS), the kernel's softirq batch
    while the network is up (``softirq_batch``: emulator.emulation.SOFTIRQ_BATCH).  An
    experiment redeclares a field to change its default."""

    bw: float = 10.0
    queue: int = 100
    burst: str = "default"
    aqm: str = "droptail"
    shaper: str = "htb"
    runs: int = 1
    seed: int = 1
    dataplane: str = "auto"
    idle_cpus: str = "auto"
    softirq_batch: int = SOFTIRQ_BATCH


@dataclasses.dataclass(frozen=True)
class FlowParams(NetworkParams):
    """... and long-lived flows: how long each runs, what is trimmed from both ends of its
    measurement window, its TCP congestion control, the hosts' send and receive buffers
    (``wmem``, ``rmem``: net.ipv4.tcp_wmem and tcp_rmem as 'MIN,DEFAULT,MAX' bytes, '' = as
    the root namespace has it), and the TCP receivers' wake-up mark (``rcvlowat``: bytes,
    0 = off; emulator/rcvlowat.py)."""

    duration: float = 60.0
    trim: float = 5.0
    cc: str = "cubic"
    wmem: str = ""
    rmem: str = ""
    rcvlowat: int = 0


@dataclasses.dataclass(frozen=True)
class SimParams(Params):
    """... and the ns-3 backend's knobs (``--backend sim`` only; the emulator refuses them):
    link propagation delay, each flow's start jitter, per-packet jitter.  Named first among
    the bases (``class XParams(SimParams, FlowParams)``) so that its fields come after the
    network's and the flows' in the flags and config.json."""

    backend: str = "emulated"
    delay_us: float = 0.0
    jitter: float = 0.0
    pkt_jitter_us: float = 0.0


def params_class(mod: ModuleType) -> type[Params]:
    """The parameter dataclass an experiment module declares (``PARAMS``)."""
    cls = mod.PARAMS
    if not (isinstance(cls, type) and issubclass(cls, Params)):
        raise TypeError(f"{mod.NAME}: PARAMS must be a dataclass derived from "
                        "harness.params.Params")
    return cls


def param_types(mod: ModuleType) -> dict[str, type]:
    """Name -> type of every parameter of an experiment module ('quick' included)."""
    return {n: t for n, (t, _) in params_class(mod).types().items()}


def _check(experiment: str, name: str, value: Any, kind: type, nullable: bool) -> Any:
    if value is None and nullable:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and kind is not bool:
        ok = False
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise ValueError(f"{experiment}: parameter {name!r} must be {kind.__name__}"
                         f"{' or None' if nullable else ''}, got {value!r}")
    return value


def typed(mod: ModuleType, values: Mapping[str, Any]) -> Params:
    """``values`` as the experiment's frozen parameters (strict; see the module text)."""
    cls = params_class(mod)
    kinds = cls.types()
    unknown = sorted(set(values) - set(kinds))
    if unknown:
        raise ValueError(f"{mod.NAME}: unknown parameter{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(unknown)} (known: {', '.join(sorted(kinds))})")
    checked = {n: _check(mod.NAME, n, v, *kinds[n]) for n, v in values.items()}
    return cls(**checked)
