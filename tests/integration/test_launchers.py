"""The sweep launchers for real (root): GNU parallel on this machine with one run killed
mid-emulation and relaunched, and a real one-node Slurm (munged, slurmctld, slurmd started
here and stopped after) running an emulated array one run at a time and a model array."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcrepro.launch import Slurm, run_array, runone_command, slurm_script, write_ids
from dcrepro.sweep import read_manifest, state

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # tests/ is no package: the cluster helper is imported by path
    sys.path.insert(0, str(HERE))
from slurmnode import SlurmNode, leftovers, missing_programs  # noqa: E402

# the slow tier (GNU parallel and a one-node Slurm: real work, no measurement of the host);
# root for the emulated runs they launch
pytestmark = [pytest.mark.slow, pytest.mark.root]
REPO = HERE.parents[1]
DCREPRO = [sys.executable, "-m", "dcrepro.cli"]
#: the cheapest emulated run: two hosts, one 3-s TCP flow with a 2-s window (about 6 s with
#: set-up); these tests check the launchers' bookkeeping, not the run's figures.  (A 1-s
#: window, --duration 2 --trim 0.5, ended in "min() arg is an empty sequence" in the fidelity
#: checks once bwm-ng sampled an interface only partly: a harness bug to fix elsewhere)
TINY = ["permutation", "--topo", "fattree,k=2", "--runs", "1", "--duration", "3", "--trim",
        "0.5", "--transport", "tcp"]


def _sweep(out: Path, name: str, grid: str, *extra: str, args: list[str] | None = None,
           **kw) -> subprocess.Popen:
    return subprocess.Popen([*DCREPRO, "sweep", *(args or TINY), "--grid", grid, "--out",
                             str(out), "--name", name, *extra], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def _finish(p: subprocess.Popen, timeout: float = 180) -> tuple[int, str]:
    out, _ = p.communicate(timeout=timeout)
    return p.returncode, out


def _stamps(sweep: Path) -> dict[str, float]:
    """Run id -> mtime of every finished run's fingerprint (written once, just before its
    rename), a flagged one's (kept as ``<id>.invalid``) too."""
    return {f.parent.name.removesuffix(".invalid"): f.stat().st_mtime
            for f in (sweep / "runs").glob("*/fingerprint.json")}


def _runone_pids(rid: str) -> list[int]:
    """The python process(es) of `dcrepro run-one ... RID` (not a shell wrapping it)."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"run-one" in argv and rid.encode() in argv and b"python" in argv[0]:
            pids.append(int(proc.name))
    return pids


@pytest.mark.emulates
def test_parallel_relaunch_redoes_only_the_run_killed_mid_emulation(tmp_path):
    # two runs: the first completes, the second is killed mid-emulation
    p = _sweep(tmp_path, "par", "seed=1/2", "--engine", "parallel")
    sweep = tmp_path / "sweeps" / "par"
    deadline = time.monotonic() + 120
    while not (sweep / "manifest.jsonl").exists():
        assert p.poll() is None and time.monotonic() < deadline, p.stdout.read()
        time.sleep(0.2)
    _, lines = read_manifest(sweep / "manifest.jsonl")
    victim = lines[1]["run_id"]
    # kill the second run once its network carries traffic (an iperf3 client result file
    # exists only after the client started)
    while not list(sweep.glob(f"work/{victim}-*/permutation/*/run00/tcp")) \
            or not _runone_pids(victim):
        assert p.poll() is None and time.monotonic() < deadline, p.stdout.read()
        time.sleep(0.1)
    for pid in _runone_pids(victim):
        os.kill(pid, signal.SIGTERM)
    rc, out = _finish(p)
    assert rc == 1, out                    # one job failed: the sweep is not complete
    # a finished run is complete, or invalid when its own fidelity checks flagged it (a busy
    # machine can); either way it was renamed into runs/, and the killed one was not
    first = [state(sweep, x["run_id"]) for x in lines]
    assert first[1] == "missing" and first[0] in {"complete", "invalid"}, first
    again = [x["run_id"] for x, s in zip(lines, first) if s == "missing"]   # flagged: finished
    before = _stamps(sweep)
    killed = json.loads(next(sweep.glob(f"work/{victim}-*/permutation/*/status.json"))
                        .read_text())
    assert killed["status"] == "interrupted", killed

    rc, out = _finish(_sweep(tmp_path, "par", "seed=1/2", "--engine", "parallel"))
    assert f"2 runs, {2 - len(again)} already finished, {len(again)} to run" in out, out
    final = [state(sweep, x["run_id"]) for x in lines]
    assert "missing" not in final, final
    assert rc == 0, out                  # every run finished (a flagged one too)
    after = _stamps(sweep)
    done = [x["run_id"] for x, s in zip(lines, first) if s != "missing"]
    assert {k: after[k] for k in done} == {k: before[k] for k in done}  # not redone
    jobs = [r.split("\t") for r in (sweep / "parallel.joblog").read_text().splitlines()
            if not r.startswith("Seq")]
    assert [j[-1].split()[-1] for j in jobs] == [x["run_id"] for x in lines] + again
    assert [int(j[6]) for j in jobs] == [0, 143] + [0] * len(again)   # 143: SIGTERM
    # summary.csv holds every finished run, a flagged one marked in column flagged
    # (dcrepro/sweep.write_summary), so a busy machine that flags every run still gets one
    rows = (sweep / "summary.csv").read_text().splitlines()
    assert len(rows) > 1 and ",flagged," in rows[0], rows


@pytest.fixture(scope="module")
def slurm():  # type: ignore[no-untyped-def]
    """A one-node Slurm cluster for this module; nothing of it is left running after."""
    if missing_programs() and os.geteuid() == 0:
        subprocess.run([str(REPO / "setup.sh"), "--with-slurm"], capture_output=True,
                       timeout=600, check=False)
    if missing_programs():
        pytest.skip(f"Slurm is not installed and could not be: {missing_programs()}")
    assert not leftovers(), f"slurm or munge already running: {leftovers()}"
    with SlurmNode() as node:
        yield node
    deadline = time.monotonic() + 15
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leftovers(), f"left running: {leftovers()}"


def _interval(run: Path) -> tuple[float, float]:
    """When a run folder's run started (its log's first line) and ended (fingerprint)."""
    first = (run / "log.txt").read_text().splitlines()[0]
    stamp, ms = first[:23].split(",")
    start = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(ms) / 1000
    return start, (run / "fingerprint.json").stat().st_mtime


@pytest.mark.emulates
def test_slurm_array_runs_one_at_a_time_and_a_resubmission_redoes_nothing(slurm, tmp_path):
    # two runs at concurrency 1: enough to see the second start after the first ended
    rc, out = _finish(_sweep(tmp_path, "sl", "seed=1/2", "--engine", "slurm",
                             "--concurrency", "1", env=slurm.env), timeout=240)
    sweep = tmp_path / "sweeps" / "sl"
    header, lines = read_manifest(sweep / "manifest.jsonl")
    states = [state(sweep, x["run_id"]) for x in lines]
    assert set(states) <= {"complete", "invalid"}, (states, out)
    assert rc == 0, out                  # every run finished (a flagged one too)
    # Every run ended.  What follows is about complete runs, and whether this machine's
    # fidelity checks flag a 4-s two-host run is not (CI at f0e4a71 flagged one, at a 93.1 %
    # busy-link gap share): a run they flagged is taken as complete from here on.
    for x in lines:
        flagged = sweep / "runs" / f"{x['run_id']}.invalid"
        if flagged.is_dir():
            flagged.rename(sweep / "runs" / x["run_id"])
    spans = sorted(_interval(sweep / "runs" / x["run_id"]) for x in lines)
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end - 0.01, spans          # serial: the next began after the last
    assert len(list((sweep / "slurm").glob("*.out"))) == 2
    before = _stamps(sweep)

    # the whole array again, straight to sbatch: every task finds its run complete
    ids = write_ids(sweep, lines)
    script = sweep / "all.sh"
    script.write_text(slurm_script(sweep, runone_command(sweep / "manifest.jsonl", DCREPRO),
                                   ids, len(lines), 1))
    assert run_array(Slurm(), script, 120, lambda: None, print) == 0
    assert _stamps(sweep) == before
    outs = sorted((sweep / "slurm").glob("*.out"))
    assert len(outs) == 4
    assert sum("already complete" in f.read_text() for f in outs) == 2
    # and through dcrepro: nothing is missing, nothing is submitted
    rc, out = _finish(_sweep(tmp_path, "sl", "seed=1/2", "--engine", "slurm",
                             env=slurm.env))
    assert rc == 0 and "2 already finished, 0 to run" in out, out
    assert "submitted" not in out and len(list((sweep / "slurm").glob("*.out"))) == 4


def test_slurm_model_array_of_four_runs_two_at_a_time(slurm, tmp_path):
    rc, out = _finish(_sweep(tmp_path, "model", "seed=1/2/3/4", "--engine", "slurm",
                             "--concurrency", "2", args=["orca", "--backend", "model",
                                                         "--quick"], env=slurm.env))
    assert rc == 0, out
    sweep = tmp_path / "sweeps" / "model"
    _, lines = read_manifest(sweep / "manifest.jsonl")
    assert len(lines) == 4 and all(state(sweep, x["run_id"]) == "complete" for x in lines)
    assert "#SBATCH --array=0-3%2" in (sweep / "slurm-job.sh").read_text()
    rows = (sweep / "summary.csv").read_text().splitlines()
    assert rows[0].startswith("seed,run_id,") and len({r.split(",")[1] for r in rows[1:]}) == 4
