"""studies/paired.py: two folders of the same draws compared repetition by repetition."""
from pathlib import Path

import pytest

from analysis import paired as core
from studies import paired

REF = Path(__file__).resolve().parents[2] / "results" / "reference"
PERMUTATION = REF / "permutation" / "20261201T182650Z-4406fd"
FAIRNESS = REF / "fairness" / "20261201T184410Z-fa056b"
pytestmark = pytest.mark.fast


def test_a_folder_paired_with_itself_differs_by_nothing_and_keeps_its_verdicts_mean():
    rows = {p.key: p for p in core.paired(PERMUTATION, PERMUTATION, headline_only=True)}
    p = rows["mptcp-mean"]
    assert len(p.reps) == 10 and p.diff.mean == 0 and p.diff.lo == p.diff.hi == 0
    # the per-repetition statistics are the verdict's: its mean, 1.42 (claims.md)
    assert p.a == p.b and round(p.a.mean, 2) == 1.42
    assert "fig4-ratio-lia" in rows


def test_folders_of_two_experiments_are_refused_in_one_line(capsys):
    assert paired.main([str(PERMUTATION), str(FAIRNESS)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "need one experiment" in err


def test_bad_arguments_print_the_usage(capsys):
    assert paired.main([str(PERMUTATION)]) == 2
    assert capsys.readouterr().err.startswith("usage: python -m studies.paired")
    assert paired.main([str(PERMUTATION), "/nonexistent"]) == 2
    assert "not a dcrepro run folder" in capsys.readouterr().err


def test_a_flagged_repetition_is_left_out_of_the_pairs(tmp_path):
    import json
    import shutil
    copy = tmp_path / "run"
    shutil.copytree(FAIRNESS, copy)
    cfg = json.loads((copy / "config.json").read_text())
    cfg["suspect"] = ["run 3 jellyfish mptcp: busy-link dequeue gaps within 10 %: 80%"]
    (copy / "config.json").write_text(json.dumps(cfg))
    p = {p.key: p for p in core.paired(FAIRNESS, copy, headline_only=True)}["mean"]
    assert "3" not in p.reps and len(p.reps) == 9
