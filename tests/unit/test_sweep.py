"""dcrepro sweep and run-one without a network: the grid, the manifest and run ids, resume
after an interruption or a failure, one launch at a time per run, suspect runs kept as
invalid, a changed sweep or code version refused, and the summary table."""
from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path

import pytest

from dcrepro import cli
from dcrepro.sweep import (
    BUSY,
    parse_grid,
    points,
    read_manifest,
    run_id,
    run_one,
    run_sweep,
    state,
    write_manifest,
)
from experiments.orca import experiment as orca
from harness.params import typed
from store import read_csv

ARGS = ["sweep", "orca", "--backend", "model", "--quick", "--grid", "bw=20/50",
        "--grid", "pace=0.5/0.95"]


def test_grid_values_are_typed_and_checked():
    grid = parse_grid(["bw=10/20", "runs=2", "dataplane=bpf/ovs"], orca.PARAMS.defaults())
    assert grid == {"bw": [10.0, 20.0], "runs": [2], "dataplane": ["bpf", "ovs"]}
    for bad, msg in (("nosuch=1", "unknown parameter"), ("bw=fast", "not a float"),
                     ("bw", "KEY=VALUE"), ("bw=1/1", "given twice")):
        with pytest.raises(ValueError, match=msg):
            parse_grid([bad], orca.PARAMS.defaults())
    pts = points({"a": 0, "bw": 1.0, "runs": 1}, {"bw": [1.0, 2.0], "runs": [1, 2]})
    assert [p["label"] for p in pts] == ["bw=1.0,runs=1", "bw=1.0,runs=2", "bw=2.0,runs=1",
                                         "bw=2.0,runs=2"]
    assert pts[3]["params"] == {"a": 0, "bw": 2.0, "runs": 2}


def test_run_ids_are_stable_and_name_experiment_parameters_and_code():
    a = run_id("orca", {"bw": 1.0, "seed": 1}, "abc")
    assert a == run_id("orca", {"seed": 1, "bw": 1.0}, "abc")
    assert len({a, run_id("orca", {"bw": 2.0, "seed": 1}, "abc"),
                run_id("grin", {"bw": 1.0, "seed": 1}, "abc"),
                run_id("orca", {"bw": 1.0, "seed": 1}, "abd")}) == 4


@pytest.mark.slow   # four model runs and a sweep launched twice: about 3 s
def test_sweep_runs_every_point_then_resumes_only_what_is_missing(tmp_path, capsys):
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "s"]) == 0
    sweep = tmp_path / "sweeps" / "s"
    header, lines = read_manifest(sweep / "manifest.jsonl")
    assert header["experiment"] == "orca" and len(lines) == 4
    assert all(state(sweep, x["run_id"]) == "complete" for x in lines)
    assert lines[0]["command"].startswith("dcrepro run orca --") and \
        " --topo orca,receivers=" in lines[0]["command"]
    summary = (sweep / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("bw,pace,run_id,flagged,workload")
    quick = typed(orca, orca.PARAMS.defaults() | orca.QUICK)
    assert len(summary) == 1 + 4 * len(orca._cases(quick, 0))
    # again: nothing to do
    capsys.readouterr()
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "s"]) == 0
    assert "4 already finished, 0 to run" in capsys.readouterr().err
    # a run that is gone (deleted, or never finished) is the only one redone
    (sweep / "runs" / lines[2]["run_id"]).rename(tmp_path / "gone")
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "s"]) == 0
    assert "3 already finished, 1 to run" in capsys.readouterr().err
    assert state(sweep, lines[2]["run_id"]) == "complete"


def test_plan_only_then_run_one_per_line(tmp_path, capsys):
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "p", "--plan-only"]) == 0
    manifest = tmp_path / "sweeps" / "p" / "manifest.jsonl"
    _, lines = read_manifest(manifest)
    assert not (tmp_path / "sweeps" / "p" / "runs").exists()
    rid = lines[1]["run_id"]
    assert cli.main(["run-one", str(manifest), rid]) == 0
    assert cli.main(["run-one", str(manifest), rid]) == 0
    assert "already complete" in capsys.readouterr().out
    assert [state(manifest.parent, x["run_id"]) for x in lines] == [
        "missing", "complete", "missing", "missing"]
    assert cli.main(["run-one", str(manifest), "nosuchrun"]) == 2


def test_a_different_sweep_or_code_version_is_refused(tmp_path, capsys):
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", "s", "--plan-only"]) == 0
    capsys.readouterr()
    assert cli.main(["sweep", "orca", "--backend", "model", "--quick", "--grid", "bw=20",
                     "--out", str(tmp_path), "--name", "s"]) == 2
    err = capsys.readouterr().err
    assert "holds a different sweep" in err and err.count("\n") == 1
    manifest = tmp_path / "sweeps" / "s" / "manifest.jsonl"
    header, lines = read_manifest(manifest)
    manifest.write_text("".join(json.dumps(x) + "\n" for x in
                                [{**header, "code": "0123456789ab"}, *lines]))
    assert cli.main(["run-one", str(manifest), lines[0]["run_id"]]) == 2
    assert "planned with code 0123456789ab" in capsys.readouterr().err


def test_every_point_is_validated_before_anything_runs(tmp_path, capsys):
    assert cli.main(["sweep", "orca", "--backend", "model", "--grid", "pace=0.5/2",
                     "--out", str(tmp_path)]) == 2
    assert "--pace" in capsys.readouterr().err
    assert not (tmp_path / "sweeps").exists()


def _fake(tmp_path: Path, values: list[int]) -> tuple[Path, list[dict]]:
    sweep = tmp_path / "sw"
    lines = write_manifest(sweep, "exp", points({"x": 0}, {"x": values}), "code")
    return sweep, lines


def _ok_run(where: Path, suspect: list[str] | None = None) -> None:
    run = where / "exp" / "r"
    run.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"status": "ok", "suspect": suspect or []}))


def test_an_interrupted_run_stops_the_sweep_and_the_next_launch_continues(tmp_path):
    sweep, lines = _fake(tmp_path, [1, 2, 3])
    calls: list[int] = []

    def execute(params, where: Path) -> int:
        calls.append(params["x"])
        if params["x"] == 2 and calls.count(2) == 1:
            (where / "exp" / "r").mkdir(parents=True)   # Ctrl-C during the second run
            return 130
        _ok_run(where)
        return 0

    assert run_sweep(sweep, "exp", lines, execute) == 130
    assert calls == [1, 2]
    assert run_sweep(sweep, "exp", lines, execute) == 0
    assert calls == [1, 2, 2, 3]
    assert "interrupted; run the same command again" in (sweep / "progress.log").read_text()
    assert len(list((sweep / "work").iterdir())) == 1     # the interrupted attempt's record


def test_a_sweep_s_eta_is_tqdm_s_and_its_start_lines_still_parse(tmp_path):
    """The ETA after the first point is tqdm's format ('00:05'), the same as the run's own
    progress line, and a start line that carries it is still read as a start."""
    from dcrepro.sweep import started_not_ended
    sweep, lines = _fake(tmp_path, [1, 2, 3])

    def execute(params, where: Path) -> int:
        _ok_run(where)
        return 0

    assert run_sweep(sweep, "exp", lines, execute) == 0
    log = (sweep / "progress.log").read_text()
    starts = [ln for ln in log.splitlines() if "(" in ln and "ETA" in ln]
    assert len(starts) == 2 and all(re.search(r", ETA \d\d:\d\d$", ln) for ln in starts)
    # cut after a start with its ETA: that point is the one left open
    cut = log[:log.index(starts[-1]) + len(starts[-1])] + "\n"
    (sweep / "progress.log").write_text(cut)
    assert started_not_ended(sweep / "progress.log") == {lines[2]["run_id"]}


def test_a_run_held_by_another_launch_is_not_run_twice(tmp_path):
    sweep, lines = _fake(tmp_path, [1])
    (sweep / "runs").mkdir()
    with open(sweep / "runs" / f".{lines[0]['run_id']}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        rc, what = run_one(sweep, lines[0], "exp", lambda p, w: pytest.fail("ran twice"))
    assert rc == BUSY and "another launch" in what


def test_a_suspect_run_is_kept_as_invalid_and_redone_only_when_asked(tmp_path):
    """Issue #56 part 4: completion and trust are separate.  A flagged run finished: the
    next launch does not redo it (an OVS sweep, whose every run carries the switch's usual
    loss, could otherwise never complete); --redo-flagged does."""
    sweep, lines = _fake(tmp_path, [1])
    rc, what = run_one(sweep, lines[0], "exp", lambda p, w: _ok_run(w, ["CPU"]) or 0)
    assert rc == 0 and what.startswith("invalid")
    assert state(sweep, lines[0]["run_id"]) == "invalid"
    rc, what = run_one(sweep, lines[0], "exp", lambda p, w: pytest.fail("redone"))
    assert rc == 0 and what == "already finished, flagged"
    rc, what = run_one(sweep, lines[0], "exp", lambda p, w: _ok_run(w) or 0, redo_flagged=True)
    assert what == "complete" and state(sweep, lines[0]["run_id"]) == "complete"


def test_a_sweep_of_flagged_runs_completes_with_a_marked_summary(tmp_path):
    sweep, lines = _fake(tmp_path, [1, 2])
    assert run_sweep(sweep, "exp", lines, lambda p, w: _ok_run(w, ["lost 0.4 %"]) or 0) == 0
    rows = read_csv(sweep / "summary.csv")
    assert [r["flagged"] for r in rows] == ["lost 0.4 %", "lost 0.4 %"]
    calls: list[int] = []
    assert run_sweep(sweep, "exp", lines, lambda p, w: calls.append(1) or 0) == 0
    assert calls == [] and "2 runs, 2 already finished, 0 to run" in \
        (sweep / "progress.log").read_text()


def test_a_resumed_sweep_counts_in_the_whole_manifest_and_closes_the_killed_point(tmp_path):
    """progress.log after a kill: the point that was running has a start and no end; the
    next launch says so, and numbers the remaining points by their place in the manifest."""
    from dcrepro.sweep import point, started_not_ended
    log = tmp_path / "progress.log"
    log.write_text("2026-11-24T10:00:00 2 runs, 0 already complete, 2 to run\n"
                   "2026-11-24T10:00:01 [1/2] seed=1 (r1)\n"
                   "2026-11-24T10:00:09 [1/2] seed=1: complete in 8 s\n"
                   "2026-11-24T10:00:09 [2/2] seed=2 (r2), ETA 0m08s\n")
    assert started_not_ended(log) == {"r2"}
    lines = [{"run_id": "r1", "label": "seed=1"}, {"run_id": "r2", "label": "seed=2"}]
    assert point(lines[1], lines) == "[2/2]"
    assert started_not_ended(tmp_path / "none.log") == set()


def test_a_second_launch_of_a_running_sweep_refuses_and_touches_nothing(tmp_path, capsys):
    """Issue #56 part 5: while one launch runs the sweep, a second one says who runs it, in
    one line, exits BUSY, and neither writes progress.log nor calls the point dead."""
    from dcrepro.sweep import BUSY
    sweep, lines = _fake(tmp_path, [1, 2])
    second: list[int] = []

    def execute(params, where: Path) -> int:
        if params["x"] == 1:          # the second launch, while the first runs point 1
            before = (sweep / "progress.log").read_text()
            second.append(run_sweep(sweep, "exp", lines, lambda p, w: 0))
            assert (sweep / "progress.log").read_text() == before
        _ok_run(where)
        return 0

    assert run_sweep(sweep, "exp", lines, execute) == 0
    assert second == [BUSY]
    err = [x for x in capsys.readouterr().err.splitlines() if "being run by another" in x]
    assert len(err) == 1 and f"pid {os.getpid()}" in err[0]
    assert "ended without a result" not in (sweep / "progress.log").read_text()
