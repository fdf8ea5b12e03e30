"""Typed, frozen parameters of one run: what an experiment's ``run`` receives.

Each experiment declares its parameters as a frozen dataclass derived from ``Params``, one
typed field with its default per parameter (``PARAMS``), and its quick overrides
(``QUICK``).  ``typed`` turns a mapping (flags resolved by the CLI, a sweep manifest line, a
rerun's config.json) into an instance of it, strictly: an unknown name or a value of the
wrong type is a one-line ValueError, a missing one takes its default.  An int is accepted
where a float is declared (``--bw 10``); nothing else is coerced.

Code reads parameters as attributes (``params.bw``), which the type checker sees.  The
instance is also a read-only mapping (``dict(params)`` is what config.json records).
``check`` raises a one-line ValueError on a bad value, before anything is built: each class
checks the fields it declares, after its bases have checked theirs (a topology or routing
spec before them, as a run's checks have always begun with the network).
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
import types
import typing
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import routing
import topos
from emulator import cc as ccs
from emulator import dataplane_registry
from emulator.emulation import SOFTIRQ_BATCH, check_idle_cpus
from emulator.rcvlowat import check as check_rcvlowat
from emulator.shaping import LinkSpec
from topos.base import DEFAULT_BW

#: an experiment's --quick overrides (``QUICK``): parameter name -> value, of the flag's type.
#: Its ``seed`` is the root seed of the reference folder that judges the experiment's headline
#: claims, so quick's repetitions draw that folder's first networks and a quick verdict that
#: differs from the reference's is the machine's, not the draw's
#: (docs/notebook/2026-12-04-quick-draws.md; tests/unit/test_registry.py holds them equal)
Quick = dict[str, str | float]


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

    def check(self) -> None:
        """ValueError (one line, for the user) on a bad value; see the module text."""

    def backend_name(self) -> str:
        """The backend the run uses: its ``backend`` where the class declares one (an
        experiment, or SimParams), else emulated (an experiment without --backend only
        emulates)."""
        return str(getattr(self, "backend", "emulated"))

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

    bw: float = DEFAULT_BW
    queue: int = 100
    burst: str = "default"
    aqm: str = "droptail"
    shaper: str = "htb"
    runs: int = 1
    seed: int = 1
    #: repetitions that host timing alone flagged, run again (harness.common.repetitions)
    repeat_flagged: int = 2
    dataplane: str = "auto"
    idle_cpus: str = "auto"
    softirq_batch: int = SOFTIRQ_BATCH

    def check(self) -> None:
        super().check()
        link = LinkSpec(self.bw, self.queue, self.burst, self.aqm, self.shaper)
        if link.aqm_spec.active and self.backend_name() == "model":
            raise ValueError(f"--aqm {link.aqm}: the flow model has no queues; AQM applies "
                             "to emulated runs only")
        if link.aqm_spec.active:
            dataplane_registry.check_needs(dataplane_registry.make(self.dataplane),
                                           f"--aqm {link.aqm}", {"aqm"})
        if self.runs < 1:
            raise ValueError(f"--runs must be >= 1, got {self.runs}")
        if self.repeat_flagged < 0:
            raise ValueError(f"--repeat-flagged must be >= 0, got {self.repeat_flagged}")
        dataplane_registry.make(self.dataplane)       # a bad spec: one line
        check_idle_cpus(self.idle_cpus)
        if self.idle_cpus == "spin" and self.backend_name() != "emulated":
            raise ValueError("--idle-cpus spin keeps the emulation's CPUs awake: use it with "
                             "--backend emulated")
        if not 0 <= self.softirq_batch <= 10000:
            raise ValueError(f"--softirq-batch must be 0 (the kernel's own) or 1..10000 "
                             f"packets, got {self.softirq_batch}")


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

    def check(self) -> None:
        super().check()
        if self.duration <= 0:
            raise ValueError(f"--duration must be > 0, got {self.duration}")
        if not 0 <= 2 * self.trim < self.duration:
            raise ValueError(f"--trim {self.trim} leaves no measurement window in "
                             f"--duration {self.duration}")
        check_cc(self.cc)
        for name, what, value in (("wmem", "send", self.wmem), ("rmem", "receive", self.rmem)):
            if value:
                parse_buffers(name, value)
                if self.backend_name() != "emulated":
                    raise ValueError(f"--{name} sets the emulated hosts' {what} buffers: use "
                                     "it with --backend emulated")
        if self.rcvlowat:
            check_rcvlowat(self.rcvlowat)
            if self.backend_name() != "emulated":
                raise ValueError("--rcvlowat changes when the emulated hosts' receivers wake: "
                                 "use it with --backend emulated")


@dataclasses.dataclass(frozen=True)
class SimParams(Params):
    """... and the ns-3 backend's knobs (``--backend sim`` only; the emulator refuses them):
    link propagation delay, each flow's start jitter, per-packet jitter.  Named first among
    the bases (SimFlowParams below) so that its fields come after the network's and the
    flows' in the flags and config.json."""

    backend: str = "emulated"
    delay_us: float = 0.0
    jitter: float = 0.0
    pkt_jitter_us: float = 0.0


@dataclasses.dataclass(frozen=True)
class SimFlowParams(SimParams, FlowParams):
    """Long TCP flows that ns-3 runs too (harness.simrun.sim_config reads these): the
    network's, the flows' and the simulator's knobs, in that order."""


# -- checks of one value: the classes' own, and those of the fields that several experiments
#    declare, each with its own default (topo, routing, transport, subflows) ---------------

def check_topo(spec: str) -> None:
    """--topo: a topology spec that builds."""
    topos.build(spec)   # built, not only parsed: too few hosts is bad input


def check_routing(spec: str, dataplane: str) -> None:
    """--routing: a routing spec whose modes ``dataplane`` carries."""
    dataplane_registry.check_modes(dataplane_registry.make(dataplane), str(routing.parse(spec)),
                                   routing.modes(spec))


def transports(spec: str) -> list[str]:
    """The transport list of a run (--transport)."""
    return [t.strip() for t in spec.split(",")]


def check_transport(spec: str, lowat: int) -> None:
    """--transport: tcp, mptcp or both; and ``lowat`` (--rcvlowat, given with it) only
    where there is no MPTCP."""
    bad = [t for t in transports(spec) if t not in ("tcp", "mptcp")]
    if bad:
        raise ValueError(f"--transport: unknown {bad}; use tcp, mptcp or tcp,mptcp")
    if lowat and "mptcp" in spec.split(","):
        raise ValueError("--rcvlowat applies to TCP flows (an MPTCP connection wakes its "
                         "reader by its own socket, not by its subflows'): use it with "
                         "--transport tcp")


def check_subflows(n: int) -> None:
    """--subflows: MPTCP subflows per connection."""
    if not 1 <= n <= 8:
        raise ValueError(f"--subflows must be 1..8 (upstream MPTCP limit), got {n}")


def parse_buffers(name: str, value: str) -> tuple[int, int, int]:
    """--wmem's or --rmem's 'MIN,DEFAULT,MAX' bytes (net.ipv4.tcp_wmem's or tcp_rmem's three
    values); one-line ValueError unless they are three whole numbers from 4096 up, in that
    order."""
    try:
        vals = tuple(int(v) for v in value.split(","))
    except ValueError:
        vals = ()
    if len(vals) != 3 or vals[0] < 4096 or not vals[0] <= vals[1] <= vals[2]:
        raise ValueError(f"--{name} wants MIN,DEFAULT,MAX bytes (whole numbers, 4096 <= MIN "
                         f"<= DEFAULT <= MAX), got {value!r}")
    return vals[0], vals[1], vals[2]


def check_cc(cc: str) -> None:
    """The congestion control can run here: built in, one of dcrepro's BPF controls
    (emulator/cc.py, registered for the run), or a module modprobe could load."""
    if not cc.replace("_", "").isalnum():
        raise ValueError(f"--cc {cc!r} is not a congestion control name")
    runnable = ccs.runnable()
    if cc in runnable:
        return
    try:
        loadable = subprocess.run(["modprobe", "-n", "-q", f"tcp_{cc}"], capture_output=True,
                                  timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        loadable = False
    if not loadable:
        why = ""
        if cc in ccs.BPF_CCS:
            why = f" (dcrepro's BPF {cc} cannot be registered: {ccs.bpf_cc_unavailable()})"
        raise ValueError(f"--cc {cc}: not available on this machine{why}; it can run "
                         f"{ccs.describe(runnable)}")


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


_RTO = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|us)$")


def rto_min_ms(text: Any) -> float | None:
    """--rto-min: '2ms' -> 2.0, None/'' -> None (kernel default); ValueError on anything
    else."""
    if text in (None, "", "default", "none"):
        return None
    m = _RTO.match(str(text).strip())
    if not m:
        raise ValueError(f"--rto-min must look like 2ms, 0.2s or 500us, got {text!r}")
    ms = float(m.group(1)) * {"ms": 1.0, "s": 1000.0, "us": 0.001}[m.group(2)]
    if not 1 <= ms <= 1000:
        raise ValueError(f"--rto-min must be between 1ms and 1s, got {text!r}")
    return ms
