"""The pure parts of emulator/cgroup.py: where the cpu controller is, the limit's files,
cpu.stat, names; and the registry's bookkeeping of a run's cgroups (on a fake tree)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator import cgroup, cleanup, registry

HYBRID = """\
tmpfs /sys/fs/cgroup tmpfs rw 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""
UNIFIED = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n"


def test_v2_with_cpu_wins_else_the_v1_cpu_controller():
    assert cgroup.pick_hierarchy(UNIFIED, {"/sys/fs/cgroup": "cpuset cpu io memory"}) == \
        cgroup.Hierarchy(Path("/sys/fs/cgroup"), 2)
    # this project's machines: cpu is bound to v1, the v2 mount has only hugetlb
    assert cgroup.pick_hierarchy(HYBRID, {"/sys/fs/cgroup/unified": "hugetlb"}) == \
        cgroup.Hierarchy(Path("/sys/fs/cgroup/cpu"), 1)
    assert cgroup.pick_hierarchy(UNIFIED, {"/sys/fs/cgroup": "memory"}) is None
    assert cgroup.pick_hierarchy("", {}) is None


@pytest.mark.parametrize("cores,expect", [
    (0.2, (2000, 10_000)), (1.0, (10_000, 10_000)), (2.0, (20_000, 10_000)),
    (0.05, (1000, 20_000)),            # below 1 ms a period: the period grows instead
    (0.001, (1000, 1_000_000)),
])
def test_quota_keeps_the_kernels_limits(cores, expect):
    assert cgroup.quota(cores) == expect


@pytest.mark.parametrize("cores", [0, -1, 0.0005])
def test_impossible_caps_are_one_line_errors(cores, one_line_error):
    with one_line_error():
        cgroup.quota(cores)


def test_limit_files_per_version():
    assert cgroup.limit_files(2, 0.5) == {"cpu.max": "5000 10000"}
    assert list(cgroup.limit_files(1, 0.5).items()) == [("cpu.cfs_period_us", "10000"),
                                                        ("cpu.cfs_quota_us", "5000")]
    assert cgroup.limit_files(2, None) == {"cpu.max": "max"}
    assert cgroup.limit_files(1, None) == {"cpu.cfs_quota_us": "-1"}


def test_stat_in_both_versions():
    v1 = "nr_periods 10\nnr_throttled 4\nthrottled_time 2000000000\nnr_bursts 0\n"
    v2 = ("usage_usec 5\nuser_usec 3\nsystem_usec 2\nnr_periods 10\nnr_throttled 4\n"
          "throttled_usec 2000000\n")
    want = {"nr_periods": 10, "nr_throttled": 4, "throttled_s": 2.0}
    assert cgroup.parse_stat(v1, 1) == want
    assert cgroup.parse_stat(v2, 2) == want


def test_names_and_the_wrapper():
    assert cgroup.run_of("20261126T1-abc-0+sender") == "20261126T1-abc-0"
    with pytest.raises(ValueError):
        cgroup.CpuCap(cgroup.Hierarchy(Path("/x"), 1), "../escape")
    argv = cgroup.wrap(["python", "-m", "x"], "/cg/cgroup.procs")
    assert argv[:2] == ["sh", "-c"] and argv[3:] == ["/cg/cgroup.procs", "python", "-m", "x"]
    assert 'exec "$@"' in argv[2]


def _fake_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cgroup hierarchy as plain folders (rmdir of an empty folder works the same)."""
    root = tmp_path / "cpu"
    root.mkdir()
    monkeypatch.setattr(cgroup, "find_hierarchy", lambda: cgroup.Hierarchy(root, 1))
    return root


def test_a_cap_is_created_and_set_and_removed_with_its_parent(tmp_path, monkeypatch):
    root = _fake_tree(tmp_path, monkeypatch)
    cap = cgroup.CpuCap(cgroup.Hierarchy(root, 1), "run1+sender")
    cap.create()
    cap.set(0.3)
    assert (cap.path / "cpu.cfs_quota_us").read_text() == "3000"
    assert cap.read_limit() == "3000 10000"
    for f in ("cpu.cfs_quota_us", "cpu.cfs_period_us"):    # a real cgroup's files go with it
        (cap.path / f).unlink()
    (cap.path / "cgroup.procs").write_text("")
    (cap.path / "cgroup.procs").unlink()
    assert cgroup.remove(cap.path)
    assert not (root / cgroup.PARENT).exists()
    with pytest.raises(ValueError, match="not one of dcrepro's"):
        cgroup.remove(tmp_path / "elsewhere" / "x")


def test_clean_removes_recorded_and_orphan_cgroups_only(tmp_path, monkeypatch):
    root = _fake_tree(tmp_path, monkeypatch)
    parent = root / cgroup.PARENT
    for name in ("dead+sender", "orphan+sender", "alive+sender"):
        (parent / name).mkdir(parents=True)
    monkeypatch.setattr(registry, "STATE_DIR", tmp_path / "state")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "dead.json").write_text(json.dumps(
        {"run": "dead", "pid": 2 ** 22 + 1, "cgroups": [str(parent / "dead+sender")]}))
    (tmp_path / "state" / "alive.json").write_text(json.dumps(
        {"run": "alive", "pid": __import__("os").getppid(), "cgroups": []}))
    monkeypatch.setattr(cleanup, "_run", lambda *a, **k: __import__("subprocess")
                        .CompletedProcess(a, 1, "", ""))
    monkeypatch.setattr(registry, "bpf_mounts", lambda: [])
    import emulator.cc as cc
    monkeypatch.setattr(cc, "orphan_struct_ops", lambda live: [])
    done = cleanup.clean_all()
    assert f"removed cgroup {parent / 'dead+sender'}" in done
    assert f"removed orphan cgroup {parent / 'orphan+sender'}" in done
    assert (parent / "alive+sender").is_dir()
