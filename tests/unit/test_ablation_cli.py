"""The labelled ablations' command lines (fairness, permutation): bad arguments are one-line
errors with exit status 2 (no network)."""
import pytest

from studies import fairness_ablation as fairness
from studies import permutation_ablation as permutation


@pytest.mark.parametrize("module", [fairness, permutation], ids=["fairness", "permutation"])
def test_bad_arguments_are_one_line_errors(module, tmp_path, capsys):
    assert module.main([str(tmp_path)]) == 2
    assert module.main([str(tmp_path), f"x={tmp_path}"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("has no flows.csv")
