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
from analysis.fidelity import load_calibration, report
from harness.common import add_backend, add_shared, run_rng, transports
from harness.params import FlowParams
from harness.runfolder import RunFolder
from harness.session import Session, judge, session
from harness.trace import trace_flows
from harness.traffic import BASE_PORT, Flow, check_subflows, loss_fields, run_iperf
from model.network import lp_bounds, rates_on_paths, route_by_hash, synthetic_subflows
from topos.traffic import permutation

NAME = "permutation"
HELP = "random permutation traffic, TCP vs MPTCP, normalized throughput vs rank of flow"
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`000_…` Fig. 4/5: TCP vs MPTCP under ECMP on a k=4 fat tree; iperf3 vs bwm-ng')
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/permutation-sweep.sh"


@dataclass(frozen=True)
class PermutationParams(FlowParams):
    """The parameters of one permutation run (their flags: add_arguments)."""

    topo: str = "fattree,k=4"
    routing: str = "ecmp"
    runs: int = 8
    transport: str = "tcp,mptcp"
    subflows: int = 8
    backend: str = "emulated"


PARAMS = PermutationParams
#: name -> default (the flags' help and the README's view)
DEFAULTS = PARAMS.defaults()
QUICK: dict[str, Any] = {"duration": 15.0, "trim": 3.0, "runs": 2}


def add_arguments(p: Any) -> None:
    """Shared flags plus --backend."""
    add_shared(p, DEFAULTS, QUICK)
    add_backend(p)


def _row(run: int, transport: str, src: str, dst: str, bw: float, **rates: float) -> dict:
    row: dict[str, Any] = {"run": run, "transport": transport, "src": src, "dst": dst}
    for name, mbps in rates.items():
        row[f"{name}_mbps"] = round(mbps, 4)
    for name, mbps in rates.items():
        row[f"norm_{name}"] = round(mbps / bw, 5)
    return row


def drive(s: Session, pairs: dict[str, str], params: PermutationParams, run_dir: Path,
          run: int, calibration: dict | None) -> tuple[list[dict], list[dict]]:
    """Each transport over the same permutation on one network: rows and fidelity reports."""
    emu = s.emu
    rows, reports = [], []
    bw = params.bw
    for i, transport in enumerate(transports(params)):
        if transport == "mptcp":
            emu.configure_mptcp(params.subflows)
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
        fid = report({f.src: f.iperf_mbps for f in flows}, model, bw,
                     meas["cpu_saturated_share"], calibration, meas["emulator_loss_share"],
                     meas["dequeue_gaps"], meas["measurement_note"],
                     tcp_limits=meas["tcp_limits"])
        fid.update(run=run, transport=transport, cpu_mean=meas["cpu_mean"], **shortfall,
                   restarts=meas["restarts"],
                   **loss_fields(meas), cpu_busy_s=meas["cpu_busy_s"],
                   cpu_us_per_packet_hop=meas["cpu_us_per_packet_hop"])
        reports.append(fid)
        for f in flows:
            rows.append({**_row(run, transport, f.src, f.dst, bw, iperf=f.iperf_mbps,
                                bwm=f.bwm_mbps, model=model[f.src]),
                         "subflows": len(f.subflows), "cpu_mean": meas["cpu_mean"],
                         "cpu_saturated_share": meas["cpu_saturated_share"]})
    return rows, reports


def model_drive(topo: topos.Topology, plan: routing.Plan, pairs: dict[str, str],
                params: PermutationParams, run: int, rng: Any) -> list[dict]:
    """The model backend: hash-chosen paths through the plan, max-min rates on them."""
    rows = []
    for transport in transports(params):
        n = params.subflows if transport == "mptcp" else 1
        routed = route_by_hash(topo, plan, pairs, synthetic_subflows(topo, pairs, n, rng))
        model = rates_on_paths(topo, params.bw, pairs, routed)
        rows += [{**_row(run, transport, s, d, params.bw, model=model[s]), "subflows": n}
                 for s, d in pairs.items()]
    return rows


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
        pairs = dict(permutation(topo.hosts(), rng))
        run_dir = folder.path / f"run{r:02d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "permutation.json").write_text(json.dumps(pairs, indent=1))
        folder.log.info("run %d: %s, %s, %s backend", r, topo.spec, plan.routing,
                        params.backend)
        bounds[f"run{r:02d}"] = lp_bounds(topo, plan, pairs, params.bw)
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
