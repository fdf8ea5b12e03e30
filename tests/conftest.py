"""Shared test helpers: the golden-file switch and the root/OVS skip for integration tests."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    """Integration tests need root and a running Open vSwitch; say so instead of failing."""
    reason = None
    if os.geteuid() != 0:
        reason = "integration tests need root (sudo ./scripts/test.sh)"
    elif not shutil.which("ovs-vsctl") or subprocess.run(
            ["ovs-vsctl", "--timeout=5", "show"], capture_output=True).returncode != 0:
        reason = "Open vSwitch is not running (./setup.sh starts it)"
    if reason:
        for item in items:
            if "integration" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def golden():  # type: ignore[no-untyped-def]
    """compare(name, text): equal to tests/golden/name, or rewrite it with UPDATE_GOLDEN=1."""
    def compare(name: str, text: str) -> None:
        path = GOLDEN / name
        if os.environ.get("UPDATE_GOLDEN") == "1":
            path.write_text(text)
        assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
        assert text == path.read_text(), f"{name} differs from its golden file"
    return compare
