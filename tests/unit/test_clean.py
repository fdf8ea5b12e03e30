"""`dcrepro clean`'s look for orphan bridges: a database that is down is no failure, one that
lives and does not answer is (pure code: ovs-vsctl and the pid file are faked)."""
import subprocess

import pytest

import emulator.cc as cc
from emulator import cleanup, registry


@pytest.mark.parametrize("alive,failed", [(False, False), (True, True)])
def test_an_unanswering_ovsdb_fails_clean_only_while_its_process_lives(
        tmp_path, monkeypatch, alive, failed):
    ovs_run = tmp_path / "openvswitch"
    ovs_run.mkdir()
    (ovs_run / "db.sock").touch()    # a crashed ovsdb-server leaves its socket behind
    # a pid that lives (this test's parent) or one above the kernel's pid limit
    (ovs_run / "ovsdb-server.pid").write_text(str(__import__("os").getppid() if alive
                                                  else 2 ** 22 + 1))
    monkeypatch.setattr(cleanup, "OVS_RUN", ovs_run)
    monkeypatch.setattr(registry, "STATE_DIR", tmp_path / "state")
    (tmp_path / "state").mkdir()
    monkeypatch.setattr(cleanup, "_run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", ""))
    monkeypatch.setattr(registry, "bpf_mounts", lambda: [])
    monkeypatch.setattr(cc, "orphan_struct_ops", lambda live: [])
    import emulator.cgroup as cgroup
    monkeypatch.setattr(cgroup, "leftovers", lambda: [])
    done = cleanup.clean_all()
    assert any(line.startswith(cleanup.NOT_DONE) for line in done) is failed, done
    assert any("orphan bridges" in line for line in done), done


def test_a_sysctl_changed_during_the_run_is_restored_and_named():
    """Issue #56: a root congestion control changed during a run went back without a word."""
    from emulator.emulation import restore_sysctls
    now = {"net.ipv4.tcp_congestion_control": "cubic", "net.core.dev_weight": "16"}
    written: list[tuple[str, str]] = []
    lines = restore_sysctls({"net.ipv4.tcp_congestion_control": "bbr", "net.core.dev_weight": "64"},
                            {"net.ipv4.tcp_congestion_control": "lia", "net.core.dev_weight": "16"},
                            read=now.__getitem__, write=lambda n, v: written.append((n, v)))
    assert written == [("net.ipv4.tcp_congestion_control", "bbr"), ("net.core.dev_weight", "64")]
    assert len(lines) == 1 and "was cubic" in lines[0] and "not the lia this run set" in lines[0]
    assert "restored to bbr" in lines[0]


def test_bridges_a_dead_database_keeps_are_one_line(monkeypatch):
    """Issue #56: after a dead ovsdb-server the run's cause came after 22 warning lines, one
    per bridge; the cause is one, so is the line (and it still says nothing was done)."""
    monkeypatch.setattr(cleanup, "_run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", ""))
    monkeypatch.setattr(cleanup, "list_bridges", lambda: None)
    import emulator.sysinfo as sysinfo
    monkeypatch.setattr(sysinfo, "vswitchd_pid", lambda: 0)
    lines = cleanup.delete_bridges([f"{i}_0_1" for i in range(20)])
    assert lines == [f"{cleanup.NOT_DONE} delete 20 bridge(s) (0_0_1 ... 19_0_1): Open vSwitch's "
                     "database (ovsdb-server) does not answer"]


def test_a_version_probe_is_no_leftover(monkeypatch):
    """Any run's environment report runs `iperf3 --version`; one that a model run of the
    pure tests made beside the integration tier failed an integration test's teardown as a
    leftover (CI of 7ccda0d).  A leftover server, client or meter still counts."""
    import emulator.cgroup as cgroup
    procs = "30110 iperf3 --version\n30111 iperf3 -s -p 5201 -1\n30112 bwm-ng -o csv\n"

    def run(argv, **_):
        return subprocess.CompletedProcess(argv, 0, procs if argv[0] == "pgrep" else "", "")
    monkeypatch.setattr(cleanup, "_run", run)
    monkeypatch.setattr(registry, "bpf_mounts", lambda: [])
    monkeypatch.setattr(cgroup, "leftovers", lambda: [])
    monkeypatch.setattr(cc, "registered_struct_ops", lambda: [])
    assert cleanup.machine_leftovers()["procs"] == ["30111 iperf3 -s -p 5201 -1",
                                                    "30112 bwm-ng -o csv"]
