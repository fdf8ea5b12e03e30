"""Fault handling that needs no network: watched waits, report errors, coverage, statuses."""
import json
import os
import subprocess
import sys
import time

import pytest

from emulator.proc import Interrupted, RunError, exit_code, how_ended
from harness import runfolder
from harness.bwmng import check_coverage, coverage_note, coverage_problems
from harness.bwmng import series_by_interface as read
from harness.traffic import read_report, snapshot_miss, wait_iperf


def _proc(script: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script])


def test_client_failure_is_named_with_its_exit_status(tmp_path):
    c, s = _proc("import sys; sys.exit(3)"), _proc("import time; time.sleep(5)")
    try:
        with pytest.raises(RunError, match=r"client h1->h2 \(pid \d+\) ended with exit status 3"):
            wait_iperf([("h1->h2", c, s)], 10, tmp_path)
    finally:
        s.kill()
        s.wait()


def test_killed_server_surfaces_within_a_second(tmp_path):
    c, s = _proc("import time; time.sleep(30)"), _proc("import time; time.sleep(30)")
    t0 = time.monotonic()
    s.kill()
    try:
        with pytest.raises(RunError, match="server of h1->h2 .* signal SIGKILL"):
            wait_iperf([("h1->h2", c, s)], 60, tmp_path)
        assert time.monotonic() - t0 < 1.5
    finally:
        c.kill()
        c.wait()


def test_dead_measurement_process_and_dead_dataplane_fail_the_wait(tmp_path):
    c, s = _proc("import time; time.sleep(30)"), _proc("import time; time.sleep(30)")
    bwm = _proc("import sys; sys.exit(0)")
    bwm.wait()
    try:
        with pytest.raises(RunError, match=r"bwm-ng \(pid \d+\) ended with exit status 0"):
            wait_iperf([("a->b", c, s)], 60, tmp_path, watch=[("bwm-ng", bwm)])

        def dead() -> None:
            raise RunError("switch daemon died")
        with pytest.raises(RunError, match="switch daemon died"):
            wait_iperf([("a->b", c, s)], 60, tmp_path, alive=dead)
    finally:
        for p in (c, s):
            p.kill()
            p.wait()


def test_finished_transfers_pass(tmp_path):
    pairs = [(f"t{i}", _proc("pass"), _proc("pass")) for i in range(3)]
    wait_iperf(pairs, 30, tmp_path, watch=[("bwm-ng", _proc("import time; time.sleep(3)"))])


def test_a_missed_snapshot_says_when_the_machine_came_too_late():
    late = [{"began_s": 65.04}, {"began_s": 65.23}]
    msg = snapshot_miss(late, ["a->b", "c->d", "e->f", "g->h"], 30)
    assert msg.startswith("no socket snapshot (2 looks, 65.04-65.23 s after the first client "
                          "started) found the connection of 4 flows (e.g. a->b, c->d, e->f)")
    assert "after the 30-s flows had ended" in msg and "lower --bw" in msg
    # a look in time that still missed a flow is the flow's problem, not the machine's
    msg = snapshot_miss([{"began_s": 3.1}, {"began_s": 65.0}], ["a->b"], 30)
    assert "had ended" not in msg


def test_iperf_report_errors_name_host_port_and_file(tmp_path):
    bad = tmp_path / "iperf-server-h2.json"
    bad.write_text(json.dumps({"error": "the client has unexpectedly closed the connection"}))
    with pytest.raises(RunError, match=r"server on h2:5201 .*unexpectedly closed.*iperf-server-h2"):
        read_report(bad, "server on h2:5201 (from h1)")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    with pytest.raises(RunError, match="no readable JSON report in .*empty.json"):
        read_report(empty, "client h1 -> h2:5201")
    assert read_report(_write(tmp_path / "ok.json", {"end": {}}), "x") == {"end": {}}


def _write(path, obj):
    path.write_text(json.dumps(obj))
    return path


def test_bwm_coverage_detects_a_measurement_that_stopped_early(tmp_path):
    path = tmp_path / "bwm.csv"
    rows = [f"{100 + i * 0.5:.1f},s1-eth1,1000,1000,0\n" for i in range(20)]  # 100 .. 109.5
    path.write_text("".join(rows))
    check_coverage(path, read(path), ["s1-eth1"], 101, 109, 0.5)
    with pytest.raises(RunError, match=r"sampled s1-eth1 only partly \(0.0-8.5 s of 16.0 s"):
        check_coverage(path, read(path), ["s1-eth1"], 101, 117, 0.5)
    with pytest.raises(RunError, match=r"sampled s1-eth2 only partly \(none of 8.0 s"):
        check_coverage(path, read(path), ["s1-eth1", "s1-eth2"], 101, 109, 0.5)
    # where bwm-ng is only the cross-check, the same gap is a named suspect reason
    problems = coverage_problems(read(path), {"s1-eth1": (101, 109), "s1-eth2": (101, 109)},
                                 101, 109, 0.5)
    assert problems == {"s1-eth2": "none of 8.0 s"}
    assert "1 interface(s) only partly, e.g. s1-eth2" in coverage_note(problems)
    assert coverage_note({}) is None


def test_bwm_coverage_takes_a_late_sample_as_covering_the_time_since_the_last(tmp_path):
    """bwm-ng on a busy machine samples late (a 2.3 s gap at a 6 s window's end, fairness
    2026-11-28): its next sample still covers that time, so the window is covered; a sample
    spanning more than half the window is a stalled meter."""
    path = tmp_path / "bwm.csv"
    # window 101-107: no sample in its last 2.3 s (the rule before counted only samples
    # inside the window, 104.7 < 107 - 2, and failed it); 107.2 covers 104.7-107.2
    times = [100, 101, 102, 103.5, 104.7, 107.2, 108]
    path.write_text("".join(f"{t},s1-eth1,1000,1000,0\n" for t in times))
    assert coverage_problems(read(path), ["s1-eth1"], 101, 107, 0.5) == {}
    path.write_text("".join(f"{t},s1-eth1,1000,1000,0\n" for t in (100, 101, 105, 108)))
    assert coverage_problems(read(path), ["s1-eth1"], 101, 107, 0.5) == {
        "s1-eth1": "one sample spans 4.0 s of a 6.0 s window"}
    path.write_text("".join(f"{t},s1-eth1,1000,1000,0\n" for t in (100, 101, 102, 103)))
    assert coverage_problems(read(path), ["s1-eth1"], 101, 107, 0.5) == {"s1-eth1": "0.0-2.0 s of 6.0 s"}


def test_a_partial_measurement_makes_the_fidelity_report_suspect():
    from analysis.fidelity import report
    fid = report({"h1": 9.0}, {"h1": 9.2}, 10.0, {"measurement_note": "bwm-ng partly"})
    assert fid["suspect"] and fid["reasons"] == ["bwm-ng partly"]
    assert not report({"h1": 9.0}, {"h1": 9.2}, 10.0, {"cpu_saturated_share": 0.0})["suspect"]


def test_exit_codes_follow_the_signal():
    import signal
    assert exit_code(KeyboardInterrupt()) == 130
    assert exit_code(Interrupted(signal.SIGTERM)) == 143
    p = _proc("import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    p.wait()
    assert how_ended(p) == "signal SIGTERM"


def test_a_killed_runs_folder_is_marked_killed(tmp_path, monkeypatch):
    monkeypatch.setattr(runfolder, "LIVE_DIR", tmp_path / "live")
    folder = runfolder.RunFolder(tmp_path / "res", "permutation", {"seed": 1})
    assert (tmp_path / "live" / f"{folder.id}.json").exists()
    assert runfolder.mark_killed_runs() == []  # this process is alive: left alone
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    marker = tmp_path / "live" / f"{folder.id}.json"
    m = json.loads(marker.read_text())
    marker.write_text(json.dumps({**m, "pid": dead.pid}))
    assert runfolder.mark_killed_runs() == [f"marked run {folder.path.resolve()} killed"]
    status = json.loads((folder.path / "status.json").read_text())
    assert status["status"] == "killed" and f"pid {dead.pid}" in status["error"]
    assert not marker.exists()
    folder2 = runfolder.RunFolder(tmp_path / "res", "permutation", {"seed": 2})
    folder2.set_status("ok")
    assert not (tmp_path / "live" / f"{folder2.id}.json").exists()
    assert os.getpid() == json.loads((folder2.path / "status.json").read_text())["pid"]


@pytest.mark.slow   # a model run in a fresh interpreter: its imports alone take a second
def test_model_runs_never_import_mininet(tmp_path):
    code = ("import sys; from dcrepro.cli import main; "
            "rc = main(['run', 'permutation', '--backend', 'model', '--topo', 'fattree,k=4', "
            f"'--runs', '1', '--out', {str(tmp_path)!r}]); "
            "assert rc == 0, rc; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('mininet', 'os_ken')]; "
            "assert not bad, bad")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-1500:] + p.stderr[-1500:]


def test_client_error_in_its_json_fails_at_once_unless_it_never_connected(tmp_path):
    report = tmp_path / "client.json"
    report.write_text(json.dumps({"error": "unable to connect to server: Connection timed out"}))
    c, s = _proc("pass"), _proc("import time; time.sleep(30)")
    t0 = time.monotonic()
    with pytest.raises(RunError, match="client a->b: unable to connect"):
        wait_iperf([("a->b", c, s)], 60, tmp_path, reports={"a->b": report})
    assert time.monotonic() - t0 < 2
    s.kill()
    s.wait()
    c, s = _proc("pass"), _proc("import time; time.sleep(30)")
    got = wait_iperf([("a->b", c, s)], 60, tmp_path, reports={"a->b": report},
                     may_not_connect=True)
    assert got == {"a->b"} and s.poll() is not None, "its server is stopped"
    report.write_text(json.dumps({"error": "the server is busy running a test"}))
    c, s = _proc("pass"), _proc("import time; time.sleep(30)")
    with pytest.raises(RunError, match="server is busy"):
        wait_iperf([("a->b", c, s)], 60, tmp_path, reports={"a->b": report},
                   may_not_connect=True)
    s.kill()
    s.wait()


def test_a_refused_second_emulation_names_the_run_that_holds_the_lock(tmp_path, monkeypatch):
    import types

    from emulator import emulation
    from emulator.proc import RunError
    monkeypatch.setattr(emulation, "STATE_DIR", tmp_path)
    first = types.SimpleNamespace(run_id="20261124T100000Z-aaaaaa", _lock_fh=None)
    second = types.SimpleNamespace(run_id="20261124T100001Z-bbbbbb", _lock_fh=None)
    emulation.Emulation._lock(first)
    try:
        with pytest.raises(RunError, match=r"run 20261124T100000Z-aaaaaa, pid \d+"):
            emulation.Emulation._lock(second)
        assert second._lock_fh is None
    finally:
        first._lock_fh.close()
    emulation.Emulation._lock(second)          # free again: the next run takes it
    second._lock_fh.close()


def test_a_zombie_is_not_alive():
    """`dcrepro clean` must not report killing a process that had already ended."""
    from emulator.proc import pid_alive
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while pid_alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)   # ends at once; unreaped it stays a zombie
    assert not pid_alive(child.pid) and os.path.exists(f"/proc/{child.pid}")
    child.wait()
    assert pid_alive(os.getpid())


def _toy(run):
    import dataclasses
    import types

    from harness.params import Params

    @dataclasses.dataclass(frozen=True)
    class DiskfullParams(Params):
        backend: str = "model"
        seed: int = 1
    mod = types.ModuleType("diskfull")
    mod.NAME, mod.PARAMS, mod.run = "diskfull", DiskfullParams, run
    return mod


def test_a_full_disk_during_a_run_ends_in_one_line_and_a_status_written_later(
        tmp_path, monkeypatch, capsys):
    import errno

    from dcrepro import cli

    monkeypatch.setattr(runfolder, "LIVE_DIR", tmp_path / "live")

    def run(params, folder):
        # the disk fills: the run's own write fails, and so would status.json
        monkeypatch.setattr(runfolder.RunFolder, "set_status", _enospc)
        raise OSError(errno.ENOSPC, "No space left on device", str(folder.path / "x.csv"))

    def _enospc(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    assert cli._execute(_toy(run), {"seed": 1}, tmp_path / "out") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("dcrepro: run failed: no space left on the device of ")
    assert "Traceback" not in "\n".join(err) and len(err) == 3, err
    assert "status.json could not be written" in err[2]
    monkeypatch.undo()
    monkeypatch.setattr(runfolder, "LIVE_DIR", tmp_path / "live")
    # room again: the next look writes the status the run knew, not "killed"
    (run_dir,) = (tmp_path / "out" / "diskfull").iterdir()
    assert json.loads((run_dir / "status.json").read_text())["status"] == "running"
    assert runfolder.mark_killed_runs() == [f"marked run {run_dir.resolve()} failed"]
    assert not list((tmp_path / "live").iterdir())
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "failed" and "no space left" in status["error"]


def test_too_little_free_space_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    import types

    from dcrepro import cli
    monkeypatch.setattr(cli.os, "statvfs",
                        lambda p: types.SimpleNamespace(f_bavail=10, f_frsize=4096))
    with pytest.raises(ValueError, match=r"0 MB free, a emulated run needs about 200 MB"):
        cli._check_writable(tmp_path / "r")
    assert list((tmp_path / "r").iterdir()) == []


def test_an_exiting_process_is_not_alive(monkeypatch):
    """A SIGKILLed ovs-vswitchd stays in /proc, in state D with PF_EXITING, for seconds while
    it closes its sockets: the run must be told it died at once (CI: 10 s late)."""
    import io

    from emulator import proc
    line = {"flags": 0x400140}

    def fake_open(path, mode="r"):  # type: ignore[no-untyped-def]
        state = b"D" if line["flags"] & proc.PF_EXITING else b"S"
        return io.BytesIO(b"4242 (ovs-vswitchd) " + state + b" 1 1 1 0 -1 "
                          + str(line["flags"]).encode() + b" 0 0 0")
    monkeypatch.setattr(proc.os, "kill", lambda pid, sig: None)
    monkeypatch.setattr(proc, "open", fake_open, raising=False)
    assert proc.pid_alive(4242)
    line["flags"] = 0x40054c     # as read 0.05 s after the SIGKILL
    assert not proc.pid_alive(4242)


def test_a_long_command_past_its_timeout_is_stopped_with_its_whole_group():
    """emulator.proc.run_group: a command's children (a `dcrepro run` under `flock`) stop
    with it when the timeout passes; subprocess.run's timeout would leave them running."""
    import subprocess
    import time

    from emulator.proc import run_group
    marker = f"sleep 31.{time.time_ns() % 1000}"
    t = time.monotonic()
    try:
        run_group(["bash", "-c", f"{marker} & {marker}"], 0.5, grace=2)
        raise AssertionError("no RunError")
    except RunError as e:
        assert "no end within 0.5 s" in str(e)
    assert time.monotonic() - t < 5
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert left == "", left
    assert run_group(["echo", "hi"], 5).stdout == "hi\n"


def test_a_held_lock_is_waited_for_only_so_long(tmp_path):
    """emulator.proc.held_lock: a free lock is taken and released with the block; one another
    process holds fails in one line once the wait is over, and nothing ran."""
    import fcntl

    from emulator.proc import RunError, held_lock
    path = str(tmp_path / "heavy.lock")
    with held_lock(path, 0):
        pass
    ran = []
    with open(path, "a") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(RunError, match="still held by another job after 0 s"):
            with held_lock(path, 0):
                ran.append(1)
    assert ran == []
    with held_lock(path, 0):      # released by its holder: free again
        ran.append(2)
    with held_lock(None, 0):      # no lock asked for
        ran.append(3)
    assert ran == [2, 3]


def test_a_ledger_left_half_saved_is_taken_or_dropped(tmp_path, monkeypatch):
    """A run that died between writing its ledger's .tmp and renaming it: the clean takes a
    whole .tmp as the ledger (its owner is dead), drops a torn one, and leaves alone the
    .tmp of a live run and one written in the last seconds (a save in progress)."""
    import json

    from emulator import registry

    monkeypatch.setattr(registry, "STATE_DIR", tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "r1-0.tmp").write_text(json.dumps({"run": "r1-0", "pid": dead.pid,
                                                   "veths": ["v1"]}))
    (tmp_path / "r2-0.tmp").write_text('{"run": "r2-0", "pi')
    (tmp_path / "r3-0.tmp").write_text(json.dumps({"run": "r3-0", "pid": os.getppid()}))
    (tmp_path / "r4-0.tmp").write_text('{"run": "r4-0", "pi')     # a save in progress
    old = time.time() - 60
    for name in ("r1-0", "r2-0", "r3-0"):
        os.utime(tmp_path / f"{name}.tmp", (old, old))
    done = registry.adopt_partial_saves()
    assert json.loads((tmp_path / "r1-0.json").read_text())["veths"] == ["v1"]
    assert not (tmp_path / "r1-0.tmp").exists() and not (tmp_path / "r2-0.tmp").exists()
    assert (tmp_path / "r3-0.tmp").exists() and not (tmp_path / "r3-0.json").exists()
    assert (tmp_path / "r4-0.tmp").exists()
    assert len(done) == 2, done


def test_a_figure_that_fails_is_one_line_and_a_traceback_in_the_log(run_folder, monkeypatch,
                                                                   capsys):
    """Issue #56 part 2: `dcrepro plot` (and a run's own plotting) says what failed in one
    line naming log.txt, where the traceback is; whatever the exception's type."""
    import analysis
    from dcrepro import cli
    path = run_folder("outcast", {"summary.csv": []})

    def broken(run_dir):
        return {}["series.csv"]            # a KeyError deep in a figure
    monkeypatch.setattr(analysis, "plot_and_judge", broken)
    assert cli.main(["plot", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("dcrepro: error: KeyError: 'series.csv'")
    assert str(path / "log.txt") in err
    log = (path / "log.txt").read_text()
    assert "figures failed: KeyError" in log and "Traceback (most recent call last)" in log


def test_a_full_registry_disk_is_named_and_leaves_no_record(tmp_path, monkeypatch):
    """Issue #56 part 7: ENOSPC on /run/dcrepro names that place, not the run folder's disk,
    and the failed save leaves no partial record behind."""
    import errno
    from pathlib import Path

    from dcrepro.cli import full_place, no_space
    from emulator import registry as reg
    monkeypatch.setattr(reg, "STATE_DIR", tmp_path)
    real = Path.write_text

    def full(self, text, *a, **k):
        if self.suffix == ".tmp":
            real(self, "", *a, **k)                       # the file exists, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, text, *a, **k)
    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError) as info:
        reg.Registry("r1")
    assert no_space(info.value) and full_place(info.value, Path("/elsewhere")) == tmp_path
    assert list(tmp_path.iterdir()) == []


def test_the_plain_mininet_controller_names_a_bad_spec_in_one_line(capsys):
    """Issue #56 part 8: `python -m controller.launch --topo <bad>` (docs/mininet.md) exits 2
    with argparse's one error line, not a traceback."""
    from controller.launch import main
    for argv, words in ((["--topo", "fattree,k=3"], "k=3 is invalid"),
                        (["--topo", "fattree,k=4", "--routing", "bogus"], "unknown routing")):
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith("controller.launch: error: ")
        assert words in err


def test_clean_names_only_what_it_removed(tmp_path):
    """Issue #56 part 8: a recorded bpffs that is not there any more is not 'removed'; one
    that is there is (an empty directory stands in for the mount)."""
    from emulator.cleanup import clean_state
    there = tmp_path / "run1+qgap"
    there.mkdir()
    done = clean_state({"bpffs": [str(tmp_path / "gone+qgap"), str(there)]})
    assert done == [f"removed bpffs {there}"] and not there.exists()
