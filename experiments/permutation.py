"""Permutation traffic on a fat tree: TCP vs MPTCP under ECMP (the Jellyfish reproduction's
sanity figure, Fig. 4 of 000_b87022286e416fdf.txt, and its iperf-vs-bwm-ng check, Fig. 5)."""
from __future__ import annotations

import json
from typing import Any

import routing
import topos

from .common import add_shared, derangement, run_rng, transports
from .runfolder import RunFolder
from .runtime import Emulation, LinkSpec, RunError
from .traffic import BASE_PORT, Flow, configure_mptcp, run_iperf

NAME = "permutation"
HELP = "random permutation traffic, TCP vs MPTCP, normalized throughput vs rank of flow"
DEFAULTS: dict[str, Any] = {
    "topo": "fattree,k=4", "routing": "ecmp", "bw": 10.0, "queue": 100, "duration": 60.0,
    "trim": 5.0, "runs": 8, "seed": 1, "transport": "tcp,mptcp", "subflows": 8, "cc": "cubic"}
QUICK: dict[str, Any] = {"duration": 15.0, "trim": 3.0, "runs": 2}


def add_arguments(p: Any) -> None:
    """Flags of this experiment (only shared ones)."""
    add_shared(p, DEFAULTS, QUICK)


def check_subflows(flows: list[Flow], wanted: int) -> None:
    """Fail unless every MPTCP connection really runs the requested number of subflows."""
    short = [f"{f.src}->{f.dst}: {len(f.subflows)}" for f in flows if len(f.subflows) < wanted]
    if short:
        raise RunError(f"MPTCP established fewer than {wanted} subflows on "
                       f"{len(short)} connections ({', '.join(short[:4])})")


def drive(emu: Emulation, pairs: dict[str, str], params: dict[str, Any], run_dir: Any,
          run: int) -> list[dict[str, Any]]:
    """Run each transport over the same permutation on one network; return per-flow rows."""
    rows = []
    for i, transport in enumerate(transports(params)):
        if transport == "mptcp":
            configure_mptcp(emu, params["subflows"])
        flows = [Flow(s, d) for s, d in pairs.items()]
        out = run_dir / transport
        meas = run_iperf(emu, flows, transport, params["duration"], params["trim"], out,
                         port=BASE_PORT + i)
        if transport == "mptcp":
            check_subflows(flows, params["subflows"])
        (out / "flows.json").write_text(json.dumps(
            [{"src": f.src, "dst": f.dst, "subflows": f.subflows} for f in flows], indent=1))
        for f in flows:
            rows.append({"run": run, "transport": transport, "src": f.src, "dst": f.dst,
                         "iperf_mbps": round(f.iperf_mbps, 4), "bwm_mbps": round(f.bwm_mbps, 4),
                         "norm_iperf": round(f.iperf_mbps / params["bw"], 5),
                         "norm_bwm": round(f.bwm_mbps / params["bw"], 5),
                         "subflows": len(f.subflows), "cpu_mean": meas["cpu_mean"],
                         "cpu_saturated_share": meas["cpu_saturated_share"]})
    return rows


def run(params: dict[str, Any], folder: RunFolder) -> None:
    """All repetitions: fresh permutation per repetition, same network for both transports."""
    from analysis.summaries import write_permutation_summary

    rows: list[dict[str, Any]] = []
    link = LinkSpec(params["bw"], params["queue"])
    for r in range(params["runs"]):
        rng = run_rng(params["seed"], r)
        topo = topos.build(params["topo"])
        plan = routing.make_plan(topo, params["routing"])
        pairs = derangement(topo.hosts(), rng)
        run_dir = folder.path / f"run{r:02d}"
        folder.log.info("run %d: %s, %s, permutation %s", r, topo.spec, plan.routing, pairs)
        with Emulation(topo, plan, link, run_dir, f"{folder.id}-{r}", cc=params["cc"]) as emu:
            failed = emu.ping_all()
            if failed:
                raise RunError(f"{len(failed)} host pairs unreachable, e.g. {failed[:3]}")
            facts = emu.facts_dict()
            rows += drive(emu, pairs, params, run_dir, r)
            facts["qdisc_after"] = emu.verify_qdiscs()
            folder.record(f"run{r:02d}", facts)
        (run_dir / "permutation.json").write_text(json.dumps(pairs, indent=1))
        write_permutation_summary(folder.path, rows, params)
