"""``dcrepro check`` for real (root): a real network, the calibration it stores, its lines,
its time bound, and a Ctrl-C in the middle that leaves nothing behind (the autouse fixture
of conftest.py checks the machine after)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.fidelity import calibration_key, load_calibration
from dcrepro import check
from emulator.dataplane_registry import resolve
from emulator.registry import STATE_DIR

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def _check(out: Path, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "dcrepro.cli", "check", "--out", str(out)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)  # type: ignore[call-overload]


def test_the_check_measures_stores_the_calibration_and_says_so_within_a_minute(tmp_path):
    """Its bound is check.BUDGET_S (the issue's "at most a minute"); on the 2-core reference
    VM it took 17 s (check.TOOK_S), so host load would have to make it 3.5 times slower.
    Then a Ctrl-C while its networks come up: exit 130, the machine clean."""
    start = time.monotonic()
    p = _check(tmp_path)
    out, err = p.communicate(timeout=3 * check.BUDGET_S)
    took = time.monotonic() - start
    assert p.returncode == 0, err
    assert took <= check.BUDGET_S, f"the check took {took:.0f} s"
    printed = out.splitlines()
    assert 5 <= len(printed) <= 6 and all(x.startswith("check: ") for x in printed), printed
    assert any(x.startswith(("check: fine: ", "check: busy: ", "check: slow: "))
               for x in printed), printed
    assert "min here" in printed[4], printed
    # stored as `dcrepro calibrate` stores it, under the key the quick runs look up
    dataplane = resolve("auto")
    stored = json.loads((tmp_path / "calibration.json").read_text())
    key = calibration_key(check.CHECK_TOPO, check.CHECK_BW, dataplane)
    assert list(stored) == [key]
    assert set(stored[key]) == {"utilisation", "payload_ceiling", "cpu_mean",
                                "emulator_loss_share", "flow", "cc", "duration", "trim",
                                "measured_utc", "kernel", "dataplane", "check_bringup_s"}
    # the check's own bring-up, which `run --dry-run` scales its estimate by
    assert 0 < stored[key]["check_bringup_s"] < 60, stored[key]
    assert 0 < stored[key]["utilisation"] <= 1.05
    assert f"reaches {stored[key]['utilisation']:.3f} of the link" in printed[2]
    run = tmp_path / "permutation" / "20260101T000000Z-abcdef"   # where a quick run sits
    assert load_calibration(run, check.CHECK_TOPO, check.CHECK_BW, dataplane) is not None

    # Ctrl-C once its first network is up (registered under /run/dcrepro)
    p = _check(tmp_path / "again", start_new_session=True)
    deadline = time.monotonic() + 30
    while not list(STATE_DIR.glob("check-*.json")):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert not (tmp_path / "again" / "calibration.json").exists()
