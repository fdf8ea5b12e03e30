"""Every integration test starts on a clean machine and must leave it clean."""
from __future__ import annotations

import os
import signal

import pytest

from emulator.registry import STATE_DIR, clean_all, machine_leftovers

CLEAN = {"bridges": [], "veths": [], "procs": [], "bpffs": [], "struct_ops": []}


@pytest.fixture(autouse=True)
def clean_before_and_after():  # type: ignore[no-untyped-def]
    """Refuse a dirty machine; fail a test whose teardown left anything behind."""
    assert machine_leftovers() == CLEAN, f"dirty machine before the test: {machine_leftovers()}"
    yield
    left = machine_leftovers()
    if left != CLEAN:
        _sweep(left)  # this test fails; the ones after it must still start clean
    assert left == CLEAN, f"teardown left {left}"
    assert not list(STATE_DIR.glob("*.json")), "run registry not cleared"


def _sweep(left: dict[str, list[str]]) -> None:
    """Remove what a failed test left: recorded runs, then the leftover processes by pid."""
    clean_all(force=True)
    for line in left["procs"]:
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except (ValueError, ProcessLookupError):
            pass
