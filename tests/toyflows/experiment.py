"""Toy long flows (tests/unit/test_new_experiment.py): a seeded permutation on a fat tree,
one TCP flow per host.  It says its traffic once (``workload``) and has no backend code:
the emulator, ns-3 and the flow model each run it (harness/backends/) and write the same
flows.csv columns."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import routing
import topos
from harness.common import add_backend, add_shared, run_rng
from harness.params import SimFlowParams, check_topo
from harness.runfolder import RunFolder
from harness.simrun import check_sim
from harness.workload import FlowSpec, Phase, Workload, check_transports, flow_rows, make
from store import write_csv
from topos.traffic import permutation

NAME = "toyflows"
HELP = "toy long-flow experiment of the workload test"
PAPER = "none (a test)"


@dataclass(frozen=True)
class ToyFlowsParams(SimFlowParams):
    topo: str = "fattree,k=4"
    routing: str = "ecmp"
    duration: float = 6.0
    trim: float = 1.0

    def check(self) -> None:
        check_topo(self.topo)
        super().check()


PARAMS = ToyFlowsParams
BACKENDS = ("emulated", "model", "sim")
QUICK: dict[str, Any] = {}


def add_arguments(p: Any) -> None:
    add_shared(p, PARAMS, QUICK)
    add_backend(p, BACKENDS)


def validate(params: ToyFlowsParams) -> None:
    check_sim(params)
    check_transports(params.backend, ["tcp"])


def workload(params: ToyFlowsParams, rep: int) -> Workload:
    """Repetition ``rep``: a fresh permutation, one TCP phase."""
    rng = run_rng(params.seed, rep)
    topo = topos.build(params.topo)
    flows = tuple(FlowSpec(s, d) for s, d in permutation(topo.hosts(), rng))
    return Workload(topo, routing.make_plan(topo, params.routing), params.bw,
                    (Phase("tcp", flows),), params.duration, params.trim, params.seed, rep,
                    rng)


def run(params: ToyFlowsParams, folder: RunFolder) -> None:
    backend = make(params, folder)
    rows: list[dict[str, object]] = []
    for r in range(params.runs):
        w = workload(params, r)
        for m in backend.run(w, folder.path / f"run{r:02d}"):
            rows += flow_rows(w, m)
    write_csv(folder.path / "flows.csv", rows)
