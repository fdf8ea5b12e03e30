"""Faults during real runs: each ends as a clear, correctly marked, clean run (root only).

Every test starts a short k=4 permutation, kills one component once traffic runs, and
asserts the exit code, the final status, the one-line cause, that it surfaced during the run
(not at its end), and (the autouse fixture) that nothing is left behind.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulator.emulation import BROKEN_FOUND
from emulator.sysinfo import vswitchd_answers, vswitchd_pid, wait_subflows

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
#: the run lasts 20 s: a fault noticed only when the traffic ends would exit 19 s or more
#: after it.  Measured from the fault to the exit, teardown included (2026-12-01, 12 faults
#: in two runs of this file under flock, 2 cores): 0.30-1.95 s; bench/bench_test_criteria.py --checks
#: fault-surface measures it against the old SURFACE_S + 5 = 8 s criterion.  15 s is 7x the
#: largest seen and still proves the run did not wait for the end of its traffic
DURING_RUN_S = 15.0


def _start(tmp_path: Path, dataplane: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "dcrepro.cli", "run", "permutation", "--runs", "1",
         "--duration", "20", "--trim", "1", "--transport", "tcp", "--dataplane", dataplane,
         "--out", str(tmp_path), *extra], cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _wait_traffic(p: subprocess.Popen, tmp_path: Path, clients: int = 16,
                  transport: str = "tcp") -> Path:
    """Poll (bounded) until every client of the k=4 permutation has been started."""
    deadline = time.monotonic() + 90
    while len(list(tmp_path.glob(f"permutation/*/run00/{transport}/iperf-client-*.json"))) \
            < clients \
            or len(_pids("iperf3 -c")) < clients:
        assert p.poll() is None, p.stdout.read()
        assert time.monotonic() < deadline, "traffic did not start"
        time.sleep(0.1)
    return next((tmp_path / "permutation").iterdir())


def _pids(pattern: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _ends_failed(p: subprocess.Popen, run: Path, t_kill: float, *needles: str) -> str:
    out, _ = p.communicate(timeout=60)
    took = time.monotonic() - t_kill
    assert p.returncode == 1, out
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed", status
    for n in needles:
        assert n in status["error"], (n, status["error"])
    assert "\n" not in status["error"]
    # the whole teardown is inside `took`; the cause itself surfaces within one poll
    print(f"{took:.2f} s from the fault to the exit: {status['error']}")
    assert took < DURING_RUN_S, f"{took:.1f} s from the fault to the exit"
    return status["error"]


#: a component killed during traffic: dataplane, its command line (pgrep -f), what the
#: run's one-line error must say ({pid}: the victim's)
KILLED = {
    "iperf3-client-bpf": ("bpf", "iperf3 -c", ("iperf3 client", "(pid {pid})", "signal SIGKILL")),
    "iperf3-client-ovs": ("ovs", "iperf3 -c", ("iperf3 client", "(pid {pid})", "signal SIGKILL")),
    "bwm-ng": ("bpf", "bwm-ng -o csv", ("bwm-ng (pid {pid}) ended with signal SIGKILL",)),
    "controller": ("ovs", "controller.launch --plan",
                   ("os-ken controller", "pid {pid}", "signal SIGKILL")),
}


@pytest.mark.parametrize("killed", [
    pytest.param(k, marks=pytest.mark.ovs) if KILLED[k][0] == "ovs" else k for k in KILLED])
def test_killed_component_fails_the_run_at_once_with_its_cause(killed, tmp_path):
    dataplane, command, needles = KILLED[killed]
    p = _start(tmp_path, dataplane)
    run = _wait_traffic(p, tmp_path)
    victim = _pids(command)[0]
    t = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    _ends_failed(p, run, t, *(n.format(pid=victim) for n in needles))


def _restart_ovs() -> None:
    subprocess.run([str(REPO / "setup.sh")], capture_output=True, timeout=300, check=True)
    assert vswitchd_answers()


@pytest.mark.ovs
def test_dead_switch_daemon_is_named_during_and_before_a_run(tmp_path):
    p = _start(tmp_path / "during", "ovs")
    run = _wait_traffic(p, tmp_path / "during")
    victim = vswitchd_pid()
    assert victim
    try:
        t = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        _ends_failed(p, run, t, f"ovs-vswitchd (pid {victim}) died")
        # before a run: refused at bring-up with the same cause, quickly, nothing left
        t = time.monotonic()
        q = _start(tmp_path / "before", "ovs")
        out, _ = q.communicate(timeout=60)
        assert q.returncode == 1 and "ovs-vswitchd) is not answering" in out, out
        assert time.monotonic() - t < DURING_RUN_S   # refused at bring-up, not after
    finally:
        _restart_ovs()


def _switch_port() -> str:
    """One switch-to-switch port of the running network: a veth with both ends in this
    namespace (a host link has its peer in the host's namespace)."""
    links = json.loads(subprocess.run(["ip", "-j", "link", "show", "type", "veth"],
                                      capture_output=True, text=True, timeout=10).stdout)
    return sorted(l["ifname"] for l in links if "link_netnsid" not in l
                  and "-eth" in l["ifname"])[-1]


def test_a_deleted_link_is_named_at_once(tmp_path):
    """`ip link del` of a switch-to-switch veth: the kernel's link event makes the next watch
    look, and the run fails naming the link (on bpf the teardown takes about 0.1 s)."""
    p = _start(tmp_path, "bpf")
    run = _wait_traffic(p, tmp_path)
    victim = _switch_port()
    t = time.monotonic()
    subprocess.run(["ip", "link", "del", victim], check=True, timeout=10)
    # deleting one end deletes the pair: the error may name either end's interface, and
    # names both switches of the link ("link 3_3_1 port 4 (to 4_2_2) is gone: ...")
    error = _ends_failed(p, run, t, "is gone", victim.split("-")[0])
    assert error.startswith("link "), error
    # the moment of detection is in the log, before the teardown (bench_faults times it)
    assert f"{BROKEN_FOUND}{error}" in (run / "log.txt").read_text()


#: a queue fault: the tc command, what the one-line error says after "was"
QUEUE_FAULTS = {"deleted": (["qdisc", "del", "dev", "{intf}", "root"],
                            "deleted during the run: its root qdisc"),
                "changed": (["qdisc", "change", "dev", "{intf}", "handle", "10:", "pfifo",
                             "limit", "5"], "changed during the run: its qdisc pfifo 10:")}


@pytest.mark.parametrize("fault", QUEUE_FAULTS)
def test_a_deleted_or_changed_queue_is_named_at_once(fault, tmp_path):
    """`tc qdisc del dev <port> root` (or its pfifo's limit changed) a few seconds into the
    traffic: the kernel's qdisc event fails the run at the next watch, naming the link and
    the interface, where the read-back after the traffic used to find it.  The bound is
    DURING_RUN_S, as for a deleted link: a host-independent proof that the run did not wait
    for the end of its traffic.  How soon it ends is a measurement (bench/bench_faults.py,
    docs/faults.md: 0.32-0.45 s on bpf, 2026-12-02), not this test's criterion."""
    argv, says = QUEUE_FAULTS[fault]
    p = _start(tmp_path, "bpf")
    run = _wait_traffic(p, tmp_path)
    victim = _switch_port()
    sw, port = victim.split("-eth")
    time.sleep(2.0)     # into the traffic, not at its start: the watch is armed long before
    t = time.monotonic()
    subprocess.run(["tc", *(a.format(intf=victim) for a in argv)], check=True, timeout=10)
    error = _ends_failed(p, run, t, f"the queue of link {sw} port {port} (to ",
                         f"was {says}", f"on {victim}")
    if fault == "changed":
        assert error.endswith(" -> 5"), error     # "limit 100 -> 5"
    assert f"{BROKEN_FOUND}{error}" in (run / "log.txt").read_text()


def test_an_mptcp_connection_that_loses_its_subflows_flags_the_run(tmp_path):
    """`ip mptcp endpoint flush` in one sending host a few seconds into an MPTCP run: the
    kernel closes that host's extra subflows, and its connection goes on over one path.
    The run ends ok (its data is complete) but flagged, naming the connection and when
    (issue #56 part 1: it used to end ok and unflagged)."""
    # 10 s, not 20: the run is not killed, so it runs to its end; the flush comes 2-3 s in
    p = _start(tmp_path, "bpf", "--transport", "mptcp", "--subflows", "4", "--duration", "10")
    run = _wait_traffic(p, tmp_path, transport="mptcp")
    client = _pids("iperf3 -c")[0]
    # the extra subflows joined (0.1-1 s after the client started), then two seconds more:
    # the 1-s trim is over and at least two of the window's 0.5-s samples saw all four
    # before the flush (one more second was too few: in a CI run on 2026-12-03 the joins
    # came early, the flush landed on the window's first sample and nothing was seen lost)
    assert wait_subflows(client, 4, timeout=30), "the 4 subflows did not join in 30 s"
    time.sleep(2.0)
    subprocess.run(["nsenter", "-t", str(client), "-n", "ip", "mptcp", "endpoint", "flush"],
                   check=True, timeout=10)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, out
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "ok", status
    lost = [x for x in status["suspect"] if "lost subflows inside their window" in x]
    assert lost and "single-path from then on" in lost[0], status["suspect"]
    print(lost[0])


def test_sigkilled_run_is_marked_killed_by_the_next_run(tmp_path):
    p = _start(tmp_path, "bpf")
    run = _wait_traffic(p, tmp_path)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    assert json.loads((run / "status.json").read_text())["status"] == "running"
    # the next run can be the smallest one, a flow-model run (2 s, not an emulated run's 8):
    # any run as root marks dead runs as it starts (dcrepro/cli.py _execute)
    q = subprocess.run([sys.executable, "-m", "dcrepro.cli", "run", "permutation", "--backend",
                        "model", "--runs", "1", "--topo", "fattree,k=2", "--out",
                        str(tmp_path / "next")], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert q.returncode == 0, q.stdout + q.stderr
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "killed" and f"pid {p.pid}" in status["error"], status
    assert f"marked run {run.resolve()} killed" in q.stderr
    # the killed run's network is still up (a model run builds none): clean removes it, and
    # the fixture checks that nothing is left
    c = subprocess.run([sys.executable, "-m", "dcrepro.cli", "clean"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert c.returncode == 0 and "nothing to clean" not in c.stdout + c.stderr, c
