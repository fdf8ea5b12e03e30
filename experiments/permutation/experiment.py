"""Permutation traffic on a fat tree: TCP vs MPTCP under ECMP (the Jellyfish reproduction's
sanity figure, Fig. 4 of 000_b87022286e416fdf.txt, and its iperf-vs-bwm-ng check, Fig. 5).

The traffic is said once (``workload``); each backend runs it (harness/backends/): the
emulator traces every (sub)flow through the switches and compares each flow with the flow
model on its traced paths (fidelity report); ``--backend model`` chooses the paths through
the same plan by a seeded hash and takes the model's rates, so networks far beyond one
machine (e.g. ``--topo fattree,k=16``) take seconds; ``--backend sim`` runs ns-3.
"""
from __future__ import annotations

import json
from argparse import ArgumentParser
from dataclasses import dataclass

import routing
import topos
from harness.common import add_backend, add_shared, repetitions, run_rng
from harness.params import (
    Quick,
    SimFlowParams,
    check_routing,
    check_subflows,
    check_topo,
    check_transport,
    transports,
)
from harness.plan import RunPlan, network, repeat
from harness.runfolder import RunFolder
from harness.simrun import check_sim
from harness.workload import FlowSpec, Phase, Workload, check_transports, flow_rows, make
from model.network import lp_bounds
from store import Row
from topos.traffic import pairing, permutation

NAME = "permutation"
HELP = "random permutation traffic, TCP vs MPTCP, normalized throughput vs rank of flow"
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`000_…` Fig. 4/5: TCP vs MPTCP under ECMP on a k=4 fat tree; iperf3 vs bwm-ng')
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/permutation-sweep.sh"


@dataclass(frozen=True)
class PermutationParams(SimFlowParams):
    """The parameters of one permutation run (their flags: add_arguments)."""

    topo: str = "fattree,k=4"
    routing: str = "ecmp"
    runs: int = 8
    transport: str = "tcp,mptcp"
    subflows: int = 8
    pattern: str = "permutation"

    def check(self) -> None:
        check_topo(self.topo)       # first: a run's checks begin with the network
        check_routing(self.routing, self.dataplane)
        super().check()
        check_transport(self.transport, self.rcvlowat)
        check_subflows(self.subflows)


PARAMS = PermutationParams
BACKENDS = ("emulated", "model", "sim")
#: quick mode runs the 5 repetitions its headline claims need (analysis.claims:
#: Claim.repetitions), so that they can be decided, not only shown (issue #54): 158 s on 2
#: cores against 64 s for two (2026-12-03, `scripts/permutation-sweep.sh --quick --runs 5`)
QUICK: Quick = {"duration": 12.0, "trim": 3.0, "runs": 5, "seed": 2}
#: --pattern: who sends to whom.  "pairing" is an ablation: half the hosts send, the other
#: half receive, so no access link carries one flow's data and another's ACKs (in a
#: permutation every host does both); the paper's figure is the permutation.
PATTERNS = {"permutation": permutation, "pairing": pairing}


def add_arguments(p: ArgumentParser) -> None:
    """Shared flags plus --backend and --pattern."""
    add_shared(p, PARAMS, QUICK)
    add_backend(p, BACKENDS)
    p.add_argument("--pattern", default=None, choices=list(PATTERNS),
                   help="permutation: every host sends to one and receives from one (the "
                        "paper's); pairing: half the hosts send to the other half, so data "
                        "and ACKs never share an access link (default: permutation)")


def validate(params: PermutationParams) -> None:
    """One-line ValueError for what the chosen backend cannot do."""
    check_sim(params)
    if params.pattern not in PATTERNS:
        raise ValueError(f"--pattern must be one of {', '.join(PATTERNS)}")
    check_transports(params.backend, transports(params.transport))


def workload(params: PermutationParams, rep: int) -> Workload:
    """Repetition ``rep``: a fresh permutation (or pairing) of the hosts, each transport a
    phase over the same pairs on the same network."""
    rng = run_rng(params.seed, rep)
    topo = topos.build(params.topo)
    plan = routing.make_plan(topo, params.routing)
    flows = tuple(FlowSpec(s, d) for s, d in PATTERNS[params.pattern](topo.hosts(), rng))
    phases = tuple(Phase(t, flows, params.subflows if t == "mptcp" else 1)  # type: ignore[arg-type]
                   for t in transports(params.transport))
    return Workload(topo, plan, params.bw, phases, params.duration, params.trim, params.seed,
                    rep, rng)


def run(params: PermutationParams, folder: RunFolder) -> None:
    """All repetitions: fresh permutation per repetition, same network for both transports."""
    from analysis.summaries import write_permutation_summary

    rows: list[Row] = []
    reports: list[Row] = []
    bounds: Row = {}
    backend = make(params, folder)
    for r in repetitions(params, folder):
        w = workload(params, r)
        pairs = w.phases[0].pairs()
        run_dir = folder.path / f"run{r:02d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "permutation.json").write_text(json.dumps(pairs, indent=1))
        folder.log.info("run %d: %s, %s, %s backend", r, w.topo.spec, w.plan.routing,
                        params.backend)
        bounds[f"run{r:02d}"] = lp_bounds(w.topo, w.plan, pairs, params.bw)
        for m in backend.run(w, run_dir):
            rows += flow_rows(w, m)
            reports += [dict(m.report)] if m.report is not None else []
    write_permutation_summary(folder.path, rows, params, reports=reports)
    (folder.path / "fidelity.json").write_text(json.dumps(
        {"lp_bounds_normalized": bounds, "reports": reports}, indent=1))


def plan(params: PermutationParams) -> RunPlan:
    """What a run does (harness/plan.py): --runs networks, one phase per transport on each;
    every host sends (a pairing: half of them), one flow each."""
    topo = topos.build(params.topo)
    phases = len(transports(params.transport))
    flows = len(topo.hosts()) // (2 if params.pattern == "pairing" else 1)
    return repeat(params.runs, [network(params.topo, phases, phases * params.duration, flows,
                                        flows, params.bw, topo)],
                  f"one network, {phases} phase(s): {params.transport}")
