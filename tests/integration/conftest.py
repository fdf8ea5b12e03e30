"""Every integration test starts on a clean machine and must leave it clean."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from emulator.cleanup import clean_all, machine_leftovers
from emulator.proc import pid_alive
from emulator.registry import STATE_DIR

CLEAN = {"bridges": [], "veths": [], "procs": [], "bpffs": [], "struct_ops": [],
         "cgroups": []}
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_before_and_after(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Refuse a dirty machine; fail a test whose teardown left anything behind.  For the
    tests that build networks (integration, and slow tests that emulate); a slow test here
    that emulates nothing (the Slurm array of model runs) runs beside the integration tier
    (scripts/test.sh), which this check would take for a dirty machine."""
    if not (request.node.get_closest_marker("integration")
            or request.node.get_closest_marker("emulates")):
        yield
        return
    foreign = _foreign_runs()
    assert not foreign, ("another dcrepro run is live on this machine (" + "; ".join(foreign)
                         + "): the integration tier needs the machine alone")
    assert machine_leftovers() == CLEAN, f"dirty machine before the test: {machine_leftovers()}"
    yield
    left = machine_leftovers()
    foreign = _foreign_runs()
    assert not foreign, ("another dcrepro run is live on this machine (" + "; ".join(foreign)
                         + "): the integration tier needs the machine alone; nothing was "
                         "cleaned")
    if left != CLEAN:
        _sweep(left)  # this test fails; the ones after it must still start clean
    assert left == CLEAN, f"teardown left {left}"
    assert not list(STATE_DIR.glob("*.json")), "run registry not cleared"


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether process ``pid`` is ``ancestor`` or below it (parents read from /proc)."""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _foreign_runs() -> list[str]:
    """Runs recorded by a live process that this test session did not start (a user's run
    or another suite's): never swept, since sweeping them would break that run."""
    out = []
    for path in STATE_DIR.glob("*.json"):
        try:
            state = json.loads(path.read_text())
            pid = int(state.get("pid", -1))
        except (OSError, ValueError, TypeError):
            continue
        if pid_alive(pid) and not _descends_from(pid, os.getpid()):
            out.append(f"run {state.get('run')}, pid {pid}")
    return out


def _sweep(left: dict[str, list[str]]) -> None:
    """Remove what a failed test left: recorded runs, then the leftover processes by pid."""
    clean_all(force=True)
    for line in left["procs"]:
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except (ValueError, ProcessLookupError):
            pass


@pytest.fixture
def short_run(tmp_path: Path) -> Callable[..., Path]:
    """run(experiment, *flags, files=()): `dcrepro run` as a user starts it, into tmp_path;
    asserts it exited 0 with status ok and wrote ``files``; returns its run folder."""
    def run(experiment: str, *flags: str, files: Sequence[str] = ()) -> Path:
        # no repeat of a repetition this loaded machine's timing flagged: it would add rows
        # to the tables these tests count (tests/unit/test_repeats.py tests repeats)
        once = () if "--repeat-flagged" in flags else ("--repeat-flagged", "0")
        p = subprocess.run([sys.executable, "-m", "dcrepro.cli", "run", experiment, *flags,
                            *once, "--out", str(tmp_path)],
                           cwd=REPO, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert p.returncode == 0, p.stdout + p.stderr
        folder = next((tmp_path / experiment).iterdir())
        assert json.loads((folder / "status.json").read_text())["status"] == "ok"
        for f in files:
            assert (folder / f).exists(), f
        return folder
    return run
