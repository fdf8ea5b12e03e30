"""`dcrepro clean`'s look for orphan bridges: a database that is down is no failure, one that
lives and does not answer is (pure code: ovs-vsctl and the pid file are faked)."""
import subprocess

import pytest

import emulator.cc as cc
from emulator import registry


@pytest.mark.parametrize("alive,failed", [(False, False), (True, True)])
def test_an_unanswering_ovsdb_fails_clean_only_while_its_process_lives(
        tmp_path, monkeypatch, alive, failed):
    ovs_run = tmp_path / "openvswitch"
    ovs_run.mkdir()
    (ovs_run / "db.sock").touch()    # a crashed ovsdb-server leaves its socket behind
    # a pid that lives (this test's parent) or one above the kernel's pid limit
    (ovs_run / "ovsdb-server.pid").write_text(str(__import__("os").getppid() if alive
                                                  else 2 ** 22 + 1))
    monkeypatch.setattr(registry, "OVS_RUN", ovs_run)
    monkeypatch.setattr(registry, "STATE_DIR", tmp_path / "state")
    (tmp_path / "state").mkdir()
    monkeypatch.setattr(registry, "_run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", ""))
    monkeypatch.setattr(registry, "bpf_mounts", lambda: [])
    monkeypatch.setattr(cc, "orphan_struct_ops", lambda live: [])
    import emulator.cgroup as cgroup
    monkeypatch.setattr(cgroup, "leftovers", lambda: [])
    done = registry.clean_all()
    assert any(line.startswith(registry.NOT_DONE) for line in done) is failed, done
    assert any("orphan bridges" in line for line in done), done
