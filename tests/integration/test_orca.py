"""A short real orca run on each dataplane (root only): every round delivered, the sender's
link carries one copy in multicast and one per receiver in unicast, figures drawn."""
from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("dataplane", ["bpf", "ovs"])
def test_short_orca_run(dataplane, short_run):
    run = short_run("orca", "--runs", "1", "--workloads", "1,2", "--procs", "1,2",
                    "--base-mb", "0.3", "--dataplane", dataplane,
                    files=("transfers.csv", "rounds.csv", "receivers.csv", "summary.csv",
                           "claims.md", "exec_time.png", "send_cdf.png", "wait_cdf.png",
                           "procs.png", "run00/group.json", "run00/x2-unicast-p2/sender.json"))
    transfers = list(csv.DictReader(open(run / "transfers.csv")))
    assert [(t["workload"], t["mode"], t["procs"]) for t in transfers] == [
        ("1", "multicast", "1"), ("1", "unicast", "1"), ("2", "multicast", "1"),
        ("2", "unicast", "1"), ("2", "unicast", "2")]
    for t in transfers:
        copies = float(t["copies"])
        assert (copies <= 1.05) if t["mode"] == "multicast" else (4.0 <= copies <= 4.2), t
        # link-bound at 95 % pace: never faster than the link allows
        assert float(t["total_s"]) >= 0.99 * float(t["bound_s"]), t
    receivers = list(csv.DictReader(open(run / "receivers.csv")))
    assert len(receivers) == 5 * 4 * 33
    assert all(r["complete"] == "True" for r in receivers)
    mc = {t["workload"]: float(t["total_s"]) for t in transfers if t["mode"] == "multicast"}
    uni = {t["workload"]: float(t["total_s"]) for t in transfers
           if t["mode"] == "unicast" and t["procs"] == "1"}
    # unicast is slower at every workload; not by a fixed factor: at 0.3 MB x 33 rounds the
    # per-round waits are as long as the data time, and multicast's (it waits for all four
    # receivers every round) are the longer ones (CI 2026-11-27, ovs with the CPUs kept
    # awake: unicast 0.57 s against its 0.41-s bound, multicast 0.29 s against 0.10 s).
    # Whether this host keeps multicast's waits below unicast's extra data time is a
    # measurement: bench/bench_test_criteria.py --checks orca-bpf,orca-ovs.  What cannot
    # depend on the host: unicast's time is at least its own link bound (checked above for
    # every transfer), and that bound is four times multicast's
    assert all(mc[w] > 0 and uni[w] > 0 for w in ("1", "2")), (uni, mc)
    bound = {(t["workload"], t["mode"]): float(t["bound_s"]) for t in transfers
             if t["procs"] == "1"}
    assert all(bound[(w, "unicast")] > 3.9 * bound[(w, "multicast")] for w in ("1", "2")), bound


def test_relative_out_from_another_folder(tmp_path):
    """A newcomer's command: the installed `dcrepro`, a relative --out, started from a
    folder that is neither the repository nor the results root (the apps run elsewhere)."""
    where = tmp_path / "elsewhere"
    where.mkdir()
    p = subprocess.run([str(REPO / ".venv/bin/dcrepro"), "run", "orca", "--runs", "1",
                        "--workloads", "1", "--procs", "1", "--base-mb", "0.3",
                        "--out", "rel/results"],
                       cwd=where, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    run = next((where / "rel" / "results" / "orca").iterdir())
    assert json.loads((run / "status.json").read_text())["status"] == "ok"
    assert (run / "run00" / "x1-multicast-p1" / "sender.json").exists()
    assert not (REPO / "rel").exists() and not (where / "results").exists()
