"""Every committed reference run folder redraws its figures from its own tables (no root)."""
import shutil
from pathlib import Path

import pytest

import analysis

REFERENCE = Path(__file__).resolve().parents[2] / "results" / "reference"
FOLDERS = sorted(p.parent for p in REFERENCE.glob("*/*/status.json"))


@pytest.mark.parametrize("folder", FOLDERS, ids=[f"{p.parent.name}/{p.name}" for p in FOLDERS])
def test_reference_folder_redraws(folder, tmp_path):
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    for png in copy.glob("*.png"):
        png.unlink()
    figures = analysis.plot(copy)
    assert figures and all(f.exists() and f.stat().st_size > 10_000 for f in figures)


def test_there_is_a_reference_for_every_experiment():
    assert {p.parent.name for p in FOLDERS} >= {"permutation", "fairness", "outcast",
                                                "outcast-fattree"}
