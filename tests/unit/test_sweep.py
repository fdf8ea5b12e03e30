"""dcrepro sweep without a network: the grid, resume after an interruption or a failure,
a changed sweep refused, and the summary table (model backend and a fake runner)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import cli, orca
from experiments.sweep import parse_grid, point_dir, points, run_sweep

ARGS = ["sweep", "orca", "--backend", "model", "--quick", "--grid", "bw=20/50",
        "--grid", "pace=0.5/0.95"]


def _runs(sweep: Path) -> list[Path]:
    return sorted(sweep.glob("points/*/orca/*"))


def test_grid_values_are_typed_and_checked():
    grid = parse_grid(["bw=10/20", "runs=2", "dataplane=bpf/ovs"], orca.DEFAULTS)
    assert grid == {"bw": [10.0, 20.0], "runs": [2], "dataplane": ["bpf", "ovs"]}
    for bad, msg in (("nosuch=1", "unknown parameter"), ("bw=fast", "not a float"),
                     ("bw", "KEY=VALUE"), ("bw=1/1", "given twice")):
        with pytest.raises(ValueError, match=msg):
            parse_grid([bad], orca.DEFAULTS)
    pts = points({"a": 0, "bw": 1.0, "runs": 1}, {"bw": [1.0, 2.0], "runs": [1, 2]})
    assert [p["label"] for p in pts] == ["bw=1.0,runs=1", "bw=1.0,runs=2", "bw=2.0,runs=1",
                                         "bw=2.0,runs=2"]
    assert pts[3]["params"] == {"a": 0, "bw": 2.0, "runs": 2}


def test_sweep_runs_every_point_then_resumes_only_what_is_missing(tmp_path, capsys):
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "s"]) == 0
    sweep = tmp_path / "sweeps" / "s"
    first = _runs(sweep)
    assert len(first) == 4
    summary = (sweep / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("bw,pace,run_dir,workload")
    assert len(summary) == 1 + 4 * len(orca._cases(orca.DEFAULTS | orca.QUICK, 0))
    # again: nothing to do
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "s"]) == 0
    assert _runs(sweep) == first
    # one point's run failed: only that point runs again
    status = first[2] / "status.json"
    status.write_text(json.dumps({**json.loads(status.read_text()), "status": "failed"}))
    capsys.readouterr()
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "s"]) == 0
    assert "3 already complete, 1 to run" in capsys.readouterr().err
    assert len(_runs(sweep)) == 5


def test_a_different_sweep_under_the_same_name_is_refused(tmp_path, capsys):
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "s"]) == 0
    capsys.readouterr()
    assert cli.main(["sweep", "orca", "--backend", "model", "--quick", "--grid", "bw=20",
                     "--out", str(tmp_path), "--name", "s"]) == 2
    err = capsys.readouterr().err
    assert "holds a different sweep" in err and err.count("\n") == 1


def test_every_point_is_validated_before_anything_runs(tmp_path, capsys):
    assert cli.main(["sweep", "orca", "--backend", "model", "--grid", "pace=0.5/2",
                     "--out", str(tmp_path)]) == 2
    assert "--pace" in capsys.readouterr().err
    assert not (tmp_path / "sweeps").exists()


def test_an_interrupted_point_stops_the_sweep_and_the_rerun_continues(tmp_path):
    pts = points({"x": 0}, {"x": [1, 2, 3]})
    calls: list[int] = []

    def execute(params, where: Path) -> int:
        calls.append(params["x"])
        if params["x"] == 2 and calls.count(2) == 1:
            return 130                       # Ctrl-C during the second point
        run = where / "exp" / f"r{len(calls)}"
        run.mkdir(parents=True)
        (run / "status.json").write_text(json.dumps({"status": "ok"}))
        return 0

    sweep = tmp_path / "sw"
    sweep.mkdir()
    assert run_sweep(sweep, "exp", pts, execute) == 130
    assert calls == [1, 2]
    assert run_sweep(sweep, "exp", pts, execute) == 0
    assert calls == [1, 2, 2, 3]
    assert all((point_dir(sweep, p) / "exp").exists() for p in pts)
    assert "interrupted; run the same command again" in (sweep / "progress.log").read_text()
