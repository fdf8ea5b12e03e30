"""Every integration test starts on a clean machine and must leave it clean."""
from __future__ import annotations

import pytest

from dataplane.registry import STATE_DIR, machine_leftovers

CLEAN = {"bridges": [], "veths": [], "procs": [], "bpffs": []}


@pytest.fixture(autouse=True)
def clean_before_and_after():  # type: ignore[no-untyped-def]
    """Refuse a dirty machine; fail a test whose teardown left anything behind."""
    assert machine_leftovers() == CLEAN, f"dirty machine before the test: {machine_leftovers()}"
    yield
    left = machine_leftovers()
    assert left == CLEAN, f"teardown left {left}"
    assert not list(STATE_DIR.glob("*.json")), "run registry not cleared"
