"""One repetition's traffic, said once, and what a backend measured of it (issue #53).

An experiment builds a ``Workload`` per repetition from its parameters: the network (topology
and routing plan), the link rate, the flows with their transports, the measurement window and
the seed.  A backend (``BACKENDS``: emulated, sim, model) runs it and returns a
``Measurement``: per flow, the goodput over the window and the paths it took, plus facts of
that backend.  Its fields are named once, so a claim reads ``goodput_mbps`` whatever view made
it; ``flow_rows`` writes them as flows.csv rows with fixed columns.

Pure: no emulator import here.  The emulated backend lives with the harness that drives the
emulator; this module names backends, it does not import them.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from routing.plan import Plan
from topos.base import Topology

Transport = Literal["tcp", "mptcp", "udp"]


@dataclass(frozen=True)
class FlowSpec:
    """One connection: who sends to whom, how, and from when (s after the window opens)."""
    src: str
    dst: str
    transport: Transport = "tcp"
    subflows: int = 1
    start: float = 0.0
    #: what the experiment calls it (a port group, a network), kept on its rows
    label: str = ""

    def __post_init__(self) -> None:
        if self.subflows < 1:
            raise ValueError(f"flow {self.src} -> {self.dst}: subflows must be at least 1")
        if self.transport != "mptcp" and self.subflows != 1:
            raise ValueError(f"flow {self.src} -> {self.dst}: {self.transport} has one path")


@dataclass(frozen=True)
class Workload:
    """Everything one repetition runs, whatever the backend."""
    topo: Topology
    plan: Plan
    bw: float                 # every link's rate, Mb/s (the topology's own where it sets one)
    flows: tuple[FlowSpec, ...]
    duration: float           # s of traffic
    trim: float               # s left out at each end of the window
    seed: int
    rep: int                  # the repetition's index
    #: the repetition's random stream (harness.common.run_rng), as the experiment left it
    #: after drawing the traffic: a backend's own draws (the model's port numbers) follow
    #: on it, so a ported experiment draws exactly what it drew before
    rng: random.Random = field(compare=False, repr=False, default_factory=random.Random)

    def __post_init__(self) -> None:
        if not self.flows:
            raise ValueError("a workload needs at least one flow")
        if not 0 <= 2 * self.trim < self.duration:
            raise ValueError(f"trim {self.trim:g} s leaves no window of {self.duration:g} s")


@dataclass(frozen=True)
class FlowResult:
    """What a backend measured of one flow."""
    spec: FlowSpec
    goodput_mbps: float
    #: the switches of every (sub)flow's path, in order
    paths: tuple[tuple[str, ...], ...] = ()
    retransmits: int | None = None
    #: the backend's further numbers, named once per backend (emulated: bwm, acked; model:
    #: model_tcp, model_tcp_coupled ...), written as <name>_mbps columns
    extra: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Measurement:
    """One backend's run of one workload."""
    backend: str
    flows: tuple[FlowResult, ...]
    #: the flow model's max-min rate of each flow on the paths the flows took (the
    #: fidelity comparison's reference; equal to goodput in the model view)
    model_mbps: tuple[float, ...]
    facts: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.model_mbps) != len(self.flows):
            raise ValueError("one model rate per flow")


class Backend(Protocol):
    """Runs a workload: the emulator, ns-3 or the flow model."""
    name: str

    def run(self, w: Workload, out: Path) -> Measurement: ...


#: backend name -> how to make it (filled by the modules that implement them)
BACKENDS: dict[str, Callable[[], Backend]] = {}


def register(name: str) -> Callable[[Callable[[], Backend]], Callable[[], Backend]]:
    def add(make: Callable[[], Backend]) -> Callable[[], Backend]:
        BACKENDS[name] = make
        return make
    return add


def flow_rows(w: Workload, m: Measurement) -> list[dict[str, object]]:
    """flows.csv rows of one measurement: the same columns whatever the backend."""
    rows: list[dict[str, object]] = []
    for f, model in zip(m.flows, m.model_mbps):
        rates = {"goodput": f.goodput_mbps, "model": model, **f.extra}
        row: dict[str, object] = {"run": w.rep, "transport": f.spec.transport,
                                  "src": f.spec.src, "dst": f.spec.dst,
                                  "label": f.spec.label, "backend": m.backend}
        row.update({f"{k}_mbps": round(v, 4) for k, v in rates.items()})
        row.update({f"norm_{k}": round(v / w.bw, 5) for k, v in rates.items()})
        row["subflows"] = max(len(f.paths), 1)
        rows.append(row)
    return rows
