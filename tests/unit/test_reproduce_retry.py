"""scripts/reproduce.sh's sweep loop, run as it is on two stand-in sweeps: a sweep that fails
once is run again and said; one that fails twice fails the reproduction with its run
folder's own error; Ctrl-C stops at once."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.fast


def _loop() -> str:
    text = (REPO / "scripts" / "reproduce.sh").read_text()
    return text[text.index("# why a sweep failed"):text.index('rm -f "$try"\n')] + 'rm -f "$try"\n'


def _sweep(repo: Path, name: str, body: str) -> str:
    """A stand-in sweep script: `body` runs in the repository."""
    script = repo / "standin" / name
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!/usr/bin/env bash\ncd {repo}\n{body}\n")
    script.chmod(0o755)
    return f"standin/{name}"


def _failed_folder(name: str, error: str) -> str:
    """Shell lines that make a run folder ending `failed` with `error`, as dcrepro does."""
    status = json.dumps({"status": "failed", "error": error})
    return (f"mkdir -p results/{name}/20300101T000000Z-$RANDOM && "
            f"echo '{status}' > $(ls -d results/{name}/2030* | tail -n1)/status.json")


def _run(repo: Path, sweeps: list[str]) -> subprocess.CompletedProcess[str]:
    (repo / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    py = repo / ".venv" / "bin" / "python"
    if not py.exists():
        py.symlink_to(sys.executable)
    listed = " ".join(f'"{s}"' for s in sweeps)
    script = (f"set -uo pipefail\ncd {repo}\nmode=(--quick)\nsweeps=({listed})\nstamp=$(mktemp)\n"
              f"{_loop()}\nprintf 'again=%s\\n' \"${{again[@]}}\"\n"
              "printf 'failed=%s\\n' \"${failed[@]}\"\n")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def test_a_sweep_that_fails_once_runs_again_and_one_that_fails_twice_fails(tmp_path):
    once = _sweep(tmp_path, "once.sh", f'if [ ! -e {tmp_path}/ran ]; then touch {tmp_path}/ran; '
                  f'{_failed_folder("one", "wait for iperf3 timed out")}; exit 1; fi; '
                  'echo passed-once')
    twice = _sweep(tmp_path, "twice.sh", f'{_failed_folder("two", "teardown left x")}; exit 1')
    done = _run(tmp_path, [once, twice])
    out = done.stdout.splitlines()
    assert out.count("=== standin/once.sh --quick") == 2 and "passed-once" in out
    assert out.count("=== standin/twice.sh --quick") == 2
    again = [x for x in out if x.startswith("again=")]
    failed = [x for x in out if x.startswith("failed=")]
    assert len(again) == 2 and len(failed) == 1
    assert "once.sh" in again[0] and "failed: wait for iperf3 timed out" in again[0]
    assert "twice.sh" in again[1]
    assert "twice.sh" in failed[0] and "failed: teardown left x" in failed[0]
    assert "running it once more" in done.stderr and "failed again" in done.stderr


def test_a_failure_without_a_run_folder_points_at_the_sweeps_lines(tmp_path):
    bad = _sweep(tmp_path, "bad.sh", "echo broken >&2; exit 3")
    done = _run(tmp_path, [bad])
    failed = [x for x in done.stdout.splitlines() if x.startswith("failed=")]
    assert failed == ["failed=standin/bad.sh: no run folder says why; see the lines of the "
                      "sweep above"]


def test_ctrl_c_stops_without_a_second_attempt(tmp_path):
    stopped = _sweep(tmp_path, "stopped.sh", "exit 130")
    after = _sweep(tmp_path, "after.sh", "echo after-ran")
    done = _run(tmp_path, [stopped, after])
    assert done.returncode == 130
    assert done.stdout.count("=== standin/stopped.sh") == 1 and "after-ran" not in done.stdout
