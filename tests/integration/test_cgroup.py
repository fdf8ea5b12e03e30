"""CPU caps for real (root only): a cap holds one busy process to its share of a core; a
capped orca run records its cgroup, removes it at teardown, after Ctrl-C, and `dcrepro
clean` removes it after a SIGKILL (the conftest fixture checks that no cgroup is left)."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulator import cgroup

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
BUSY = "import time\nend = time.monotonic() + 1.5\nwhile time.monotonic() < end: pass\n"


def _busy_cores(argv_wrap: list[str]) -> float:
    """Cores a 1.5 s busy loop got: its CPU time (wait4's rusage) over its wall time."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv_wrap)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0
    return (ru.ru_utime + ru.ru_stime) / (time.monotonic() - t0)


def test_a_cap_limits_one_busy_process():
    hier = cgroup.find_hierarchy()
    assert hier is not None, "no cpu controller on this machine"
    cap = cgroup.CpuCap(hier, f"test{os.getpid()}+busy")
    cap.create()
    try:
        cap.set(0.2)
        assert cap.read_limit() in ("2000 10000", "2000 10000\n")
        before = cap.stat()
        capped = _busy_cores(cgroup.wrap([sys.executable, "-c", BUSY], cap.procs_file, pin=0))
        after = cap.stat()
    finally:
        assert cgroup.remove(cap.path)
    assert not cap.path.exists() and not cgroup.leftovers()
    # the kernel throttled the loop, and held it under its 0.2 cores (plus the start-up's
    # share): a ceiling the kernel enforces, which a busy host can only push further down.
    # How much the loop got (> 0.1 cores) and that an uncapped loop gets more than twice as
    # much (the cap, not the machine, held it) depend on the host: measured by
    # bench/bench_test_criteria.py --checks cgroup
    assert after["nr_throttled"] > before["nr_throttled"]
    assert 0 < capped < 0.25, capped


def test_a_capped_orca_run_records_and_removes_its_cgroup(short_run):
    run = short_run("orca", "--runs", "1", "--workloads", "2", "--procs", "1,2",
                    "--base-mb", "0.3", "--sender-cpu", "0.1", "--sender-net", "away")
    config = json.loads((run / "config.json").read_text())
    where = config["runtime"]["run00_sender_cgroup"]["path"]
    assert where.startswith(str(cgroup.find_hierarchy().root / cgroup.PARENT))
    assert not Path(where).exists()
    rows = list(csv.DictReader(open(run / "transfers.csv")))
    assert {r["cpu_limit"] for r in rows if r["procs"] == "1"} == {"1000 10000"}
    assert {r["cpu_limit"] for r in rows if r["procs"] == "2"} == {"2000 10000"}
    for r in rows:   # every sending process held to 0.1 cores (its CPU from the first round)
        assert float(r["sender_cores"]) <= 0.1 * int(r["procs"]) * 1.15, r
        assert int(r["throttled_periods"]) > 0, r


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_a_stopped_capped_run_leaves_no_cgroup(tmp_path, how):
    p = subprocess.Popen([sys.executable, "-m", "dcrepro.cli", "run", "orca", "--runs", "1",
                          "--workloads", "4", "--procs", "1", "--base-mb", "0.3",
                          "--sender-cpu", "0.02", "--out", str(tmp_path)],
                         cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 120
    while not cgroup.leftovers() and time.monotonic() < end and p.poll() is None:
        time.sleep(0.2)
    assert cgroup.leftovers(), "the capped run made no cgroup"
    time.sleep(1.0)   # a sender in it
    p.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
    p.wait(timeout=60)
    if how == "sigkill":
        assert cgroup.leftovers()            # a killed run cannot clean up: `dcrepro clean`
        out = subprocess.run([sys.executable, "-m", "dcrepro.cli", "clean"], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
        assert "cgroup" in out.stdout + out.stderr, out.stdout + out.stderr
    assert not cgroup.leftovers()
