"""The launchers without a cluster: what is handed out (manifest minus complete), the GNU
parallel command line and the Slurm job script, fake runners in place of parallel and
Slurm, bad inputs refused before anything starts, and collect refusing to mix machines."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcrepro import cli, launch
from dcrepro.launch import (
    Options,
    Slurm,
    parallel_argv,
    run_process,
    slurm_script,
    todo,
    write_ids,
)
from dcrepro.sweep import points, read_manifest, state, write_manifest

ARGS = ["sweep", "orca", "--backend", "model", "--quick", "--grid", "seed=1/2/3"]


def _plan(tmp_path: Path, name: str = "s") -> tuple[Path, list[dict]]:
    assert cli.main([*ARGS, "--out", str(tmp_path), "--name", name, "--plan-only"]) == 0
    manifest = tmp_path / "sweeps" / name / "manifest.jsonl"
    return manifest, read_manifest(manifest)[1]


def _run_one_in_process(command: str, rid: str) -> int:
    """What a job does: the run-one command the engine was given, for one run id."""
    argv = [a for a in shlex.split(command) if a != "{}"]   # parallel's placeholder
    return cli.main(argv[argv.index("run-one"):] + [rid])


def _done(sweep: Path, rid: str, cpu: str = "A", dataplane: str = "bpf",
          suspect: list[str] | None = None) -> None:
    """A finished run folder as run-one leaves it (complete, or invalid when suspect)."""
    run = sweep / "runs" / (f"{rid}.invalid" if suspect else rid)
    run.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"status": "ok", "suspect": suspect or []}))
    (run / "summary.csv").write_text(f"metric,value\nmbps,{len(rid)}\n")
    (run / "fingerprint.json").write_text(json.dumps({
        "host": "h", "kernel": "6.1", "cpu_model": cpu, "cores": 4, "dataplane": dataplane,
        "python": "3.11", "iperf3": "3.12", "ovs": "3.1"}))


def test_only_missing_runs_are_handed_out_and_invalid_ones_when_asked(tmp_path):
    sweep = tmp_path / "sw"
    lines = write_manifest(sweep, "exp", points({"x": 0}, {"x": [1, 2, 3, 4]}), "code")
    _done(sweep, lines[0]["run_id"])
    _done(sweep, lines[2]["run_id"], suspect=["CPU busy"])
    assert [state(sweep, x["run_id"]) for x in lines] == ["complete", "missing", "invalid",
                                                           "missing"]
    assert todo(sweep, lines) == [lines[1], lines[3]]
    pending = todo(sweep, lines, redo_flagged=True)
    assert pending == [lines[1], lines[2], lines[3]]
    assert write_ids(sweep, pending).read_text().split() == [x["run_id"] for x in pending]


def test_parallel_command_line():
    argv = parallel_argv(["/v/bin/dcrepro", "run-one", "/s/manifest.jsonl"], Path("/s/ids"),
                         Path("/s/parallel.joblog"), None, 3)
    assert argv[:4] == ["parallel", "--will-cite", "--jobs", "1"]
    assert argv[argv.index("--sshlogin") + 1] == ":"
    assert argv[argv.index("--joblog") + 1] == "+/s/parallel.joblog"
    assert argv[argv.index("--retries") + 1] == "3"
    assert argv[argv.index("--termseq") + 1].startswith("INT,30000,TERM")
    assert argv[argv.index("--arg-file") + 1] == "/s/ids"
    assert argv[-1] == "/v/bin/dcrepro run-one /s/manifest.jsonl {}"
    hosts = parallel_argv(["d"], Path("i"), Path("j"), Path("/h/hosts"), 1)
    assert hosts[hosts.index("--sshloginfile") + 1] == "/h/hosts" and "--sshlogin" not in hosts


def test_slurm_job_script(tmp_path):
    sweep = tmp_path / "sweeps" / "orca-seed=1_2"
    sweep.mkdir(parents=True)
    ids = write_ids(sweep, [{"run_id": r} for r in ("aaa", "bbb", "ccc")])
    text = slurm_script(sweep, ["/v/bin/dcrepro", "run-one", f"{sweep}/manifest.jsonl"], ids,
                        3, 2)
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert [x for x in lines if x.startswith("#SBATCH")] == [
        "#SBATCH --job-name=dcrepro-orca-seed=1_2", "#SBATCH --array=0-2%2",
        "#SBATCH --exclusive", "#SBATCH --nodes=1",
        f"#SBATCH --output={sweep}/slurm/%A_%a.out"]
    assert lines[-1] == f"exec /v/bin/dcrepro run-one {sweep}/manifest.jsonl \"$run_id\""
    # task i runs line i+1 of missing.txt
    script = sweep / "job.sh"
    script.write_text(text.replace("exec /v/bin/dcrepro", "exec echo"))
    out = subprocess.run(["bash", str(script)], env={"SLURM_ARRAY_TASK_ID": "1", "PATH":
                                                     "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=10, check=True).stdout
    assert out.split() == ["run-one", f"{sweep}/manifest.jsonl", "bbb"]


def test_parallel_launch_hands_out_what_is_missing_then_nothing(tmp_path, capsys):
    manifest, lines = _plan(tmp_path)
    assert cli.main(["run-one", str(manifest), lines[1]["run_id"]]) == 0
    given: list[list[str]] = []

    def runner(argv, timeout, tick, say) -> int:
        ids = Path(argv[argv.index("--arg-file") + 1]).read_text().split()
        given.append(ids)
        assert argv[argv.index("--jobs") + 1] == "1"
        return sum(_run_one_in_process(argv[-1], rid) != 0 for rid in ids)

    code = cli._code_version()
    assert launch.launch("parallel", manifest, code, Options(), runner=runner) == 0
    assert given == [[lines[0]["run_id"], lines[2]["run_id"]]]
    assert all(state(manifest.parent, x["run_id"]) == "complete" for x in lines)
    assert (manifest.parent / "summary.csv").exists()
    assert launch.launch("parallel", manifest, code, Options(), runner=runner) == 0
    assert len(given) == 1                      # nothing missing: parallel not started
    assert "3 already finished, 0 to run" in (manifest.parent / "progress.log").read_text()


class FakeSlurm(Slurm):
    """Runs the array's tasks in-process at submission; the queue is then empty."""

    def __init__(self, interrupt: bool = False) -> None:
        self.scripts: list[str] = []
        self.cancelled: list[str] = []
        self.interrupt = interrupt

    def submit(self, script: Path) -> str:
        text = script.read_text()
        self.scripts.append(text)
        if not self.interrupt:
            ids = Path(text.split("p\" ")[1].split(")")[0]).read_text().split()
            command = text.splitlines()[-1].removeprefix("exec ").removesuffix(' "$run_id"')
            for rid in ids:
                assert _run_one_in_process(command, rid) == 0
        return "42"

    def queued(self, job: str) -> bool:
        if self.interrupt and not self.cancelled:
            raise KeyboardInterrupt
        return False

    def cancel(self, job: str) -> None:
        self.cancelled.append(job)


def test_slurm_launch_submits_one_array_of_the_missing_runs(tmp_path):
    manifest, lines = _plan(tmp_path)
    assert cli.main(["run-one", str(manifest), lines[0]["run_id"]]) == 0
    slurm = FakeSlurm()
    code = cli._code_version()
    assert launch.launch("slurm", manifest, code, Options(concurrency=2), slurm=slurm) == 0
    assert "#SBATCH --array=0-1%2" in slurm.scripts[0]
    assert (manifest.parent / "missing.txt").read_text().split() == [
        lines[1]["run_id"], lines[2]["run_id"]]
    assert all(state(manifest.parent, x["run_id"]) == "complete" for x in lines)
    assert launch.launch("slurm", manifest, code, Options(), slurm=slurm) == 0
    assert len(slurm.scripts) == 1              # nothing missing: nothing submitted


def test_ctrl_c_cancels_the_slurm_array(tmp_path):
    manifest, _ = _plan(tmp_path)
    slurm = FakeSlurm(interrupt=True)
    with pytest.raises(KeyboardInterrupt):
        launch.launch("slurm", manifest, cli._code_version(), Options(), slurm=slurm)
    assert slurm.cancelled == ["42"]
    assert "interrupted" in (manifest.parent / "progress.log").read_text()


def test_ctrl_c_and_timeout_stop_the_launcher_process_group(tmp_path):
    said: list[str] = []
    t0 = time.monotonic()
    assert run_process(["bash", "-c", "sleep 60"], 0.3, lambda: None, said.append) == 124
    assert "launch timeout" in said[0]

    def tick() -> None:
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_process(["bash", "-c", "sleep 60"], 60, tick, said.append)
    assert time.monotonic() - t0 < 20


def test_another_code_version_is_refused_before_anything_is_handed_out(tmp_path, capsys):
    manifest, _ = _plan(tmp_path)
    capsys.readouterr()
    rc = launch.launch("parallel", manifest, "0123456789ab", Options(),
                       runner=lambda *a: pytest.fail("started"))
    assert rc == 2
    err = capsys.readouterr().err
    assert "planned with code" in err and err.count("\n") == 1


def _sweep_rc(tmp_path: Path, *extra: str) -> int:
    return cli.main([*ARGS, "--out", str(tmp_path / "o"), *extra])


def test_bad_launch_inputs_stop_with_one_line_and_nothing_started(tmp_path, capsys,
                                                                  monkeypatch):
    with pytest.raises(SystemExit) as exc:
        cli.main([*ARGS, "--engine", "nosuch"])
    assert exc.value.code == 2
    assert "invalid choice: 'nosuch'" in capsys.readouterr().err
    hosts = tmp_path / "hosts"
    real_which = launch.shutil.which
    monkeypatch.setattr(launch.shutil, "which",
                        lambda n: "/usr/bin/" + n if n == "parallel" else real_which(n))
    for text, extra, msg in (
            (":\nnosuchhost.invalid\n", ["--engine", "parallel"], "nosuchhost.invalid"),
            ("4/:\n", ["--engine", "parallel"], "drop the job count"),
            ("# nobody\n", ["--engine", "parallel"], "no hosts"),
            (":\n", ["--engine", "local"], "--hosts is for --engine parallel"),
            (":\n", ["--engine", "parallel", "--retries", "0"], "--retries must be >= 1")):
        hosts.write_text(text)
        assert _sweep_rc(tmp_path, *extra, "--hosts", str(hosts)) == 2, text
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, err
    assert _sweep_rc(tmp_path, "--engine", "parallel", "--hosts", str(tmp_path / "no")) == 2
    assert "cannot read it" in capsys.readouterr().err
    monkeypatch.setattr(launch.shutil, "which", lambda n: None)
    assert _sweep_rc(tmp_path, "--engine", "slurm") == 2
    err = capsys.readouterr().err
    assert "sbatch not found" in err and err.count("\n") == 1
    assert not (tmp_path / "o" / "sweeps").exists()     # no manifest, nothing started


def test_collect_refuses_to_mix_machines_unless_told(tmp_path, capsys):
    sweep = tmp_path / "sw"
    lines = write_manifest(sweep, "exp", points({"x": 0}, {"x": [1, 2, 3, 4, 5]}), "code")
    for x, cpu in zip(lines, ("A", "B", "A", "A")):
        _done(sweep, x["run_id"], cpu=cpu)
    _done(sweep, lines[4]["run_id"], suspect=["CPU busy"])
    (sweep / "summary.csv").write_text("stale\n")
    assert cli.main(["collect", str(sweep)]) == 2
    err = capsys.readouterr().err
    assert err == ("dcrepro: error: cpu_model differs: A (4 runs) vs B (1 run); pass --mixed "
                   "to accept\n")
    assert not (sweep / "summary.csv").exists()          # no stale summary left
    # every run finished (one flagged): the summary has all five, the flagged one marked
    assert cli.main(["collect", str(sweep), "--mixed"]) == 0
    out = capsys.readouterr().out
    assert "mixed machines" in out and "1 flagged run included, marked in column flagged" in out
    rows = (sweep / "summary.csv").read_text().splitlines()
    assert rows[0] == "x,run_id,flagged,machine_cpu_model,metric,value" and len(rows) == 6
    assert rows[-1].split(",")[2] == "CPU busy" and rows[1].split(",")[2] == ""


def test_a_grid_parameter_may_differ_between_runs(tmp_path, capsys):
    sweep = tmp_path / "sw"
    lines = write_manifest(sweep, "exp", points({"x": 0}, {"dataplane": ["bpf", "ovs"]}),
                           "code")
    for i, x in enumerate(lines):
        _done(sweep, x["run_id"], dataplane=x["values"]["dataplane"])
        (sweep / "runs" / x["run_id"] / "summary.csv").write_text(f"metric,value\nmbps,{i}\n")
    assert cli.main(["collect", str(sweep)]) == 0
    # collect ends as a local sweep does: the summary and the comparison figure
    out = capsys.readouterr().out
    assert f"figure: {sweep / 'compare.png'}" in out, out
    assert (sweep / "compare.png").stat().st_size > 10_000
    assert cli.main(["collect", str(tmp_path / "nosweep")]) == 2


def test_run_one_writes_the_machine_fingerprint(tmp_path):
    manifest, lines = _plan(tmp_path)
    assert cli.main(["run-one", str(manifest), lines[0]["run_id"]]) == 0
    fp = json.loads((manifest.parent / "runs" / lines[0]["run_id"] / "fingerprint.json")
                    .read_text())
    assert fp["python"] == ".".join(map(str, sys.version_info[:3]))
    assert fp["cores"] >= 1 and fp["kernel"] and fp["cpu_model"]
    assert fp["dataplane"] is None and fp["iperf3"] is None     # a model run needs neither
