"""dcrepro rerun without a network: the parameters come back exactly, bad folders are one
line and exit 2, and differences in code or machine are named."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcrepro import cli
from dcrepro.rerun import differences, params_of


def _model_run(tmp_path: Path) -> Path:
    assert cli.main(["run", "orca", "--backend", "model", "--workloads", "1,2",
                     "--procs", "1,2", "--runs", "1", "--bw", "20", "--out",
                     str(tmp_path / "a")]) == 0
    return next((tmp_path / "a" / "orca").iterdir())


def test_rerun_repeats_the_run_with_its_parameters(tmp_path, capsys):
    first = _model_run(tmp_path)
    assert cli.main(["rerun", str(first), "--out", str(tmp_path / "b")]) == 0
    second = next((tmp_path / "b" / "orca").iterdir())
    old, new = (json.loads((d / "config.json").read_text()) for d in (first, second))
    assert new["params"] == old["params"] and new["params"]["bw"] == 20.0
    assert new["rerun_of"]["run_id"] == old["run_id"]
    assert (second / "transfers.csv").read_text() == (first / "transfers.csv").read_text()


def test_rerun_with_a_fresh_seed_keeps_every_other_parameter(tmp_path):
    """A replication (issue #52): the flags from the folder, not from prose; only the seed."""
    first = _model_run(tmp_path)
    assert cli.main(["rerun", str(first), "--seed", "7", "--out", str(tmp_path / "b")]) == 0
    second = next((tmp_path / "b" / "orca").iterdir())
    old, new = (json.loads((d / "config.json").read_text()) for d in (first, second))
    assert new["params"] == {**old["params"], "seed": 7} and old["params"]["seed"] != 7
    assert (new["rerun_of"]["seed_was"], new["rerun_of"]["seed"]) == (old["params"]["seed"], 7)


def test_rerun_into_the_same_results_root_by_default(tmp_path):
    first = _model_run(tmp_path)
    assert cli.main(["rerun", str(first)]) == 0
    assert len(list((tmp_path / "a" / "orca").iterdir())) == 2


@pytest.mark.parametrize("edit,msg", [
    (lambda c: c["params"].update(nosuch=1), "does not know: nosuch"),
    (lambda c: c.update(experiment="nope"), "unknown experiment 'nope'"),
    (lambda c: c["params"].update(pace=7.0), "--pace"),
])
def test_bad_run_folders_are_one_line_errors(tmp_path, capsys, edit, msg):
    run = _model_run(tmp_path)
    config = json.loads((run / "config.json").read_text())
    edit(config)
    (run / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    assert cli.main(["rerun", str(run)]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_a_folder_without_config_is_refused(tmp_path, capsys):
    assert cli.main(["rerun", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_missing_parameters_get_defaults_and_are_reported(tmp_path):
    run = _model_run(tmp_path)
    config = json.loads((run / "config.json").read_text())
    del config["params"]["members"]
    (run / "config.json").write_text(json.dumps(config))
    got = params_of(run, cli.EXPERIMENTS)
    assert got["params"]["members"] == 4
    assert differences(got, got["environment"], {**got["git"], "dirty": False}) == [
        "parameter members was not recorded; using today's default 4"]


def test_differences_name_code_and_machine():
    config = {"git": {"commit": "a" * 40, "dirty": False},
              "environment": {"cpus": 2, "versions": {"kernel": "6.1"}}}
    got = differences(config, {"cpus": 4, "versions": {"kernel": "6.1"}},
                      {"commit": "b" * 40, "dirty": True})
    assert got == ["code: commit aaaaaaaaaaaa -> bbbbbbbbbbbb",
                   "code: the working tree has uncommitted changes",
                   "machine: cpus 2 -> 4"]
    assert differences(config, config["environment"], config["git"]) == []
