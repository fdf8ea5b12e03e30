"""Permutation traffic on a fat tree: TCP vs MPTCP under ECMP (the Jellyfish reproduction's
sanity figure, Fig. 4 of 000_b87022286e416fdf.txt, and its iperf-vs-bwm-ng check, Fig. 5).

Emulated runs trace every (sub)flow through the switches and compare each flow with the
flow model on its traced paths (fidelity report).  ``--backend model`` skips the emulator:
paths are chosen through the same plan by a seeded hash, rates come from the model, so
networks far beyond one machine (e.g. ``--topo fattree,k=16``) take seconds.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import routing
import topos
from analysis.fidelity import load_calibration, model_is_exact, report
from harness.common import add_backend, add_shared, run_rng, transports
from harness.params import FlowParams, SimParams
from harness.runfolder import RunFolder
from harness.session import Session, judge, session
from harness.simrun import check_sim, sim_config, simulate_flows
from harness.trace import trace_flows
from harness.traffic import BASE_PORT, Flow, check_subflows, loss_fields, run_iperf
from model.network import (
    lp_bounds,
    rates_on_paths,
    route_by_hash,
    synthetic_subflows,
    tcp_like_rates_on_paths,
)
from topos.traffic import pairing, permutation

NAME = "permutation"
HELP = "random permutation traffic, TCP vs MPTCP, normalized throughput vs rank of flow"
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`000_…` Fig. 4/5: TCP vs MPTCP under ECMP on a k=4 fat tree; iperf3 vs bwm-ng')
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/permutation-sweep.sh"


@dataclass(frozen=True)
class PermutationParams(SimParams, FlowParams):
    """The parameters of one permutation run (their flags: add_arguments)."""

    topo: str = "fattree,k=4"
    routing: str = "ecmp"
    runs: int = 8
    transport: str = "tcp,mptcp"
    subflows: int = 8
    pattern: str = "permutation"


PARAMS = PermutationParams
BACKENDS = ("emulated", "model", "sim")
QUICK: dict[str, Any] = {"duration": 12.0, "trim": 3.0, "runs": 2}
#: --pattern: who sends to whom.  "pairing" is an ablation: half the hosts send, the other
#: half receive, so no access link carries one flow's data and another's ACKs (in a
#: permutation every host does both); the paper's figure is the permutation.
PATTERNS = {"permutation": permutation, "pairing": pairing}


def add_arguments(p: Any) -> None:
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
    if params.backend == "sim" and "mptcp" in transports(params):
        raise ValueError("--backend sim: mainline ns-3 has no MPTCP; use --transport tcp")


def _row(run: int, transport: str, src: str, dst: str, bw: float,
         **rates: float) -> dict[str, Any]:
    row: dict[str, Any] = {"run": run, "transport": transport, "src": src, "dst": dst}
    for name, mbps in rates.items():
        row[f"{name}_mbps"] = round(mbps, 4)
    for name, mbps in rates.items():
        row[f"norm_{name}"] = round(mbps / bw, 5)
    return row


def drive(s: Session, pairs: dict[str, str], params: PermutationParams, run_dir: Path,
          run: int, calibration: dict[str, Any] | None
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each transport over the same permutation on one network: rows and fidelity reports."""
    emu = s.emu
    rows, reports = [], []
    bw = params.bw
    for i, transport in enumerate(transports(params)):
        if transport == "mptcp":
            s.facts.update(emu.configure_mptcp(params.subflows))
        flows = [Flow(src, dst) for src, dst in pairs.items()]
        s.flows += flows
        out = run_dir / transport
        # each flow its own port; each transport its own range on the shared network
        meas = run_iperf(emu, flows, transport, params.duration, params.trim, out,
                         port=BASE_PORT + i * len(flows), subflows=params.subflows)
        shortfall = check_subflows(flows, params.subflows) if transport == "mptcp" else {}
        (out / "flows.json").write_text(json.dumps(
            [{"src": f.src, "dst": f.dst, "subflows": f.subflows} for f in flows], indent=1))
        traced = trace_flows(emu, flows)
        (out / "paths.json").write_text(json.dumps(traced, indent=1))
        model = rates_on_paths(emu.topo, bw, pairs, traced)
        fid = report({f.src: f.iperf_mbps for f in flows}, model, bw, meas, calibration,
                     model_bound=model_is_exact(transport))
        fid.update(run=run, transport=transport, cpu_mean=meas["cpu_mean"], **shortfall,
                   restarts=meas["restarts"], subflow_wait=meas["subflow_wait"],
                   **loss_fields(meas), cpu_busy_s=meas["cpu_busy_s"],
                   cpu_us_per_packet_hop=meas["cpu_us_per_packet_hop"],
                   stack_counters=meas["stack_counters"])
        reports.append(fid)
        for f in flows:
            # acked: the senders' bytes acked (every subflow's, tcp_info) over the window
            # in absolute time, beside iperf3's goodput and bwm-ng's wire bytes; MPTCP: the
            # connections' own counters too (data acked at the sender, data taken in order
            # at the receiver: mptcp_info), which say where subflow bytes and iperf3 differ
            rows.append({**_row(run, transport, f.src, f.dst, bw, iperf=f.iperf_mbps,
                                bwm=f.bwm_mbps, acked=f.acked_mbps,
                                msk_acked=f.msk_acked_mbps, msk_received=f.msk_received_mbps,
                                model=model[f.src]),
                         "subflows": len(f.subflows), "cpu_mean": meas["cpu_mean"],
                         "cpu_saturated_share": meas["cpu_saturated_share"]})
    return rows, reports


def model_drive(topo: topos.Topology, plan: routing.Plan, pairs: dict[str, str],
                params: PermutationParams, run: int, rng: Any) -> list[dict[str, Any]]:
    """The model backend: hash-chosen paths through the plan, max-min rates on them, and
    the TCP-like model's (proportional fairness: over independent subflows, as cubic's, and
    over each connection's total, as coupled LIA aims at)."""
    rows = []
    for transport in transports(params):
        n = params.subflows if transport == "mptcp" else 1
        routed = route_by_hash(topo, plan, pairs, synthetic_subflows(topo, pairs, n, rng))
        model = rates_on_paths(topo, params.bw, pairs, routed)
        tcp = tcp_like_rates_on_paths(topo, params.bw, pairs, routed)
        coupled = tcp_like_rates_on_paths(topo, params.bw, pairs, routed, coupled=True) \
            if n > 1 else tcp
        rows += [{**_row(run, transport, s, d, params.bw, model=model[s],
                         model_tcp=tcp[s], model_tcp_coupled=coupled[s]), "subflows": n}
                 for s, d in pairs.items()]
    return rows


def sim_drive(topo: topos.Topology, plan: routing.Plan, pairs: dict[str, str],
              params: PermutationParams, run: int, rng: Any,
              run_dir: Path) -> list[dict[str, Any]]:
    """The sim backend: the permutation's TCP flows in ns-3 on the plan's paths (pinned per
    flow, or sprayed per packet), beside the flow model's rate on the same paths."""
    cfg = sim_config(params, run)
    res = simulate_flows(topo, plan, list(pairs.items()), cfg, rng, run_dir / "tcp")
    sim_json = json.loads((run_dir / "tcp" / "sim.json").read_text())
    if plan.modes() & {"rnd"}:
        model = model_drive(topo, plan, pairs, params, run, rng)
        rates = {r["src"]: r["model_mbps"] for r in model}
    else:
        routed = [{"src": f["src"], "dst": f["dst"], "path": f["path"]}
                  for f in sim_json["flows"]]
        rates = rates_on_paths(topo, params.bw, pairs, routed)
    return [{**_row(run, "tcp", f.src, f.dst, params.bw, sim=f.goodput_mbps,
                    model=rates[f.src]), "subflows": 1, "sim_wall_s": round(res.wall_s, 2)}
            for f in res.flows]


def run(params: PermutationParams, folder: RunFolder) -> None:
    """All repetitions: fresh permutation per repetition, same network for both transports."""
    from analysis.summaries import write_permutation_summary

    rows: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []
    bounds: dict[str, Any] = {}
    emulated = params.backend == "emulated"
    calibration = load_calibration(folder.path, params.topo, params.bw,
                                   params.dataplane) if emulated else None
    for r in range(params.runs):
        rng = run_rng(params.seed, r)
        topo = topos.build(params.topo)
        plan = routing.make_plan(topo, params.routing)
        pairs = dict(PATTERNS[params.pattern](topo.hosts(), rng))
        run_dir = folder.path / f"run{r:02d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "permutation.json").write_text(json.dumps(pairs, indent=1))
        folder.log.info("run %d: %s, %s, %s backend", r, topo.spec, plan.routing,
                        params.backend)
        bounds[f"run{r:02d}"] = lp_bounds(topo, plan, pairs, params.bw)
        if params.backend == "sim":
            rows += sim_drive(topo, plan, pairs, params, r, rng, run_dir)
            folder.record(f"run{r:02d}", {"backend": "sim", "sim_wall_s": rows[-1]["sim_wall_s"]})
            continue
        if not emulated:
            rows += model_drive(topo, plan, pairs, params, r, rng)
            continue
        with session(topo, plan, params, run_dir, f"{folder.id}-{r}") as s:
            new_rows, new_reports = drive(s, pairs, params, run_dir, r, calibration)
        rows += new_rows
        reports += new_reports
        folder.record(f"run{r:02d}", s.facts)
        for fid in new_reports:
            judge(folder, fid, f"run {r} {fid['transport']}")
    write_permutation_summary(folder.path, rows, params, reports=reports)
    (folder.path / "fidelity.json").write_text(json.dumps(
        {"lp_bounds_normalized": bounds, "reports": reports}, indent=1))
