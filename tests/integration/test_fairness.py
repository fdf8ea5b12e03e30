"""The fairness experiment on real Mininet / Open vSwitch / MPTCP (root only)."""
from __future__ import annotations

import json
import math
import subprocess

import pytest

import routing
import topos
from experiments.fairness import experiment as fairness
from experiments.fairness.figures import plot_fairness
from harness import traffic
from harness.common import checked
from harness.runfolder import RunFolder
from harness.session import observe, session
from harness.trace import trace_flow
from routing.walk import all_paths
from store import cell, read_csv

pytestmark = pytest.mark.integration


def _bridges() -> list[str]:
    return subprocess.run(["ovs-vsctl", "--timeout=10", "list-br"], capture_output=True,
                          text=True).stdout.split()


def test_all_pairs_ping_on_seeded_jellyfish_with_ksp(tmp_path):
    topo = topos.build("jellyfish,switches=20,ports=4,hosts=16,seed=7")
    plan = routing.make_plan(topo, "ksp,k=4")
    # (session takes typed parameters, as every run has them: harness.params)
    params = fairness.PARAMS(bw=15.0, queue=100, cc="cubic", dataplane="bpf")
    with session(topo, plan, params, tmp_path, "t-fair-ping") as s:   # (it pings all)
        assert s.emu.ping_all() == []
    assert s.facts["bringup_s"] > 0 and s.facts["teardown_s"] > 0
    assert not [b for b in _bridges() if b.startswith("s")], "bridges left behind"


def test_short_fairness_run_writes_folder_figures_and_subflows_spread(tmp_path):
    # 5 Mb/s: at the default 15 Mb/s, MPTCP on k=4 loads both cores so much that reading the
    # sockets of 16 hosts takes 6 s, longer than this short run leaves (what is checked
    # here does not depend on the rate)
    # (repeat_flagged 0: one repetition's rows, whatever this machine's timing flags)
    params = checked(fairness, dict(fairness.PARAMS.defaults(), quick=False, runs=1,
                                    duration=6.0, trim=1.0, bw=5.0, repeat_flagged=0))
    traced: dict[str, dict[str, list[tuple[str, ...]]]] = {}
    possible: dict[str, dict[str, int]] = {}
    nsub: dict[str, dict[str, int]] = {}

    def trace(emu, label, flows):  # type: ignore[no-untyped-def]
        # Trace each connection's subflows through the real switches (ofproto/trace) until
        # two different paths show up; a connection the plan gives one path only is traced
        # in full and excluded below (its subflows cannot spread).
        traced[label], possible[label], nsub[label] = {}, {}, {}
        for f in flows:
            nsub[label][f.src] = len(f.subflows)
            n = len(all_paths(emu.topo, emu.plan, f.src, f.dst))
            possible[label][f.src] = n
            seen: list[tuple[str, ...]] = []
            for sub in f.subflows:
                seen.append(tuple(trace_flow(emu, f.src, f.dst, sub)))
                if n > 1 and len(set(seen)) > 1:
                    break
            traced[label][f.src] = seen

    folder = RunFolder(tmp_path, "fairness", params)
    with observe(trace):
        fairness.run(params, folder)
    folder.set_status("ok")
    run = folder.path
    config = json.loads((run / "config.json").read_text())
    figs = {f.name for f in plot_fairness(run, config)}
    assert {"rank.png", "path_lengths.png", "utilisation.png", "iperf_vs_bwm.png",
            "rank_vs_model.png"} <= figs
    for f in ("summary.csv", "flows.csv", "links.csv", "fidelity.csv", "path_lengths.csv",
              "run00/networks.json", "run00/fattree/mptcp/flows.json",
              "run00/jellyfish/mptcp/flows.json",
              "run00/jellyfish/plan.json", "run00/jellyfish/mptcp/bwm.csv"):
        assert (run / f).exists(), f
    rows = read_csv(run / "flows.csv")
    assert len(rows) == 32 and all(float(r["norm_bwm"]) > 0 for r in rows)
    assert config["runtime"]["run00-jellyfish"]["spec"].startswith("jellyfish,switches=20")
    links = read_csv(run / "links.csv")
    assert {r["layer"] for r in links} >= {"agg-core", "tor-tor"}
    for label in ("fattree", "jellyfish"):
        recorded = json.loads((run / f"run00/{label}/mptcp/flows.json").read_text())
        assert len(recorded) == 16
        # subflows come from one ss snapshot during traffic; a few join late under loss
        assert sum(len(f["subflows"]) for f in recorded) >= \
            (1 - traffic.MAX_MISSING_SUBFLOWS) * 16 * 8
        # eligible: all subflows on one path would have probability <= 1/32 under uniform
        # hashing (n possible paths, m subflows: n^-(m-1)); connections under one access
        # switch have one possible path and are left out
        eligible = {s: p for s, p in traced[label].items()
                    if possible[label][s] ** (nsub[label][s] - 1) >= 32}
        assert len(eligible) >= 8, f"{label}: too few multipath connections {eligible}"
        single = [s for s, p in eligible.items() if len(set(p)) < 2]
        # typically 8 subflows over 4 paths (4^-7) or 2 paths (fat-tree intra-pod, 2^-7);
        # at most one connection on a single path is tolerated per topology
        assert len(single) <= 1, (label, single, traced[label])
        # the datapath's own paths, and every subflow's rate and path length from them
        paths = json.loads((run / f"run00/{label}/mptcp/paths.json").read_text())
        assert len(paths) == sum(len(f["subflows"]) for f in recorded)
    subs = read_csv(run / "subflows.csv")
    assert len(subs) >= (1 - traffic.MAX_MISSING_SUBFLOWS) * 2 * 16 * 8
    # a subflow without samples in its window (restarted, or joined late) has no rate: an
    # empty cell
    rated = [cell(s["mbps"]) for s in subs if not math.isnan(cell(s["mbps"]))]
    assert len(rated) >= 0.9 * len(subs) and sum(rated) > 0
    assert all(int(s["links"]) == len(s["path"].split(">")) + 1 for s in subs)
    assert "subflows.png" in figs
