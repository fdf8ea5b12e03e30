"""Fault campaign: random fault x phase on short real runs, both dataplanes (root).  Prints a
table, asserts nothing.

    sudo .venv/bin/python bench/bench_faults.py [--trials 30] [--seed 1]
        [--dataplanes bpf,ovs] [--out DIR]

Each trial starts a k=4 TCP permutation (``dcrepro run permutation --runs 1 --duration 10``),
waits for its phase (bring-up: the run folder exists; traffic: every iperf3 client runs;
after traffic: the clients have ended, the run traces, tears down and models; plotting:
status ``measured``), injects one fault, and records:

* exit code, and seconds from the fault to the exit;
* the final status and its one-line error (for a SIGKILLed dcrepro: the status the next run
  gave it);
* whether that is correct: SIGINT -> 130 ``interrupted``, SIGTERM -> 143 ``interrupted``,
  SIGKILL of dcrepro -> ``killed`` once the next run started, a dead component -> 1
  ``failed`` naming it; a fault that landed after the data and figures were complete may end
  ``ok`` (exit 0);
* leftovers (veths, bridges, processes, bpffs mounts of dcrepro) after the run, or, for a
  SIGKILLed dcrepro, after the next run (which removes them);
* whether the next run (6 s of traffic) succeeded.  After ``ovs-vswitchd`` was killed the
  next run is preceded by ``./setup.sh``, which restarts it (said in the table).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dataplane.registry import BPFFS_DIR, machine_leftovers  # noqa: E402
from dataplane.sysinfo import vswitchd_pid  # noqa: E402

CLEAN = {"bridges": [], "veths": [], "procs": [], "bpffs": []}
PHASES = ("bring-up", "traffic", "after traffic", "plotting")
CLIENTS = 16                       # a k=4 permutation


def cli() -> list[str]:
    """The dcrepro command line (DCREPRO may name another one, as for the sweeps)."""
    return os.environ.get("DCREPRO", "").split() or [sys.executable, "-m", "experiments.cli"]


def pids(pattern: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True,
                         timeout=10).stdout
    return [int(x) for x in out.split() if int(x) != os.getpid()]


def start(out: Path, dataplane: str, duration: str = "10") -> subprocess.Popen:
    return subprocess.Popen([*cli(), "run", "permutation", "--runs", "1", "--duration",
                             duration, "--trim", "2", "--transport", "tcp", "--dataplane",
                             dataplane, "--out", str(out)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(p: subprocess.Popen, timeout: float) -> tuple[str, bool]:
    """Wait (bounded) for a run to exit; a run that hangs is killed with its whole process
    group and reaped.  Returns its output and whether it hung."""
    try:
        return p.communicate(timeout=timeout)[0] or "", False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        return p.communicate(timeout=30)[0] or "", True


def run_folder(out: Path) -> Path | None:
    found = list(out.glob("permutation/*/status.json"))
    return found[0].parent if found else None


def status(run: Path | None) -> dict[str, Any]:
    try:
        return json.loads((run / "status.json").read_text()) if run else {}
    except (OSError, ValueError):
        return {}


def wait_phase(p: subprocess.Popen, out: Path, phase: str, timeout: float = 120) -> bool:
    """Poll (bounded) until the run is in ``phase``; False if it ended first."""
    deadline = time.monotonic() + timeout
    seen_clients = False
    while time.monotonic() < deadline:
        if p.poll() is not None:
            return False
        run = run_folder(out)
        if phase == "bring-up" and run is not None:
            return True
        n = len(pids("iperf3 -c"))
        seen_clients = seen_clients or n >= CLIENTS
        if phase == "traffic" and n >= CLIENTS:
            return True
        if phase == "after traffic" and seen_clients and n == 0:
            return True
        if phase == "plotting" and status(run).get("status") == "measured":
            return True
        time.sleep(0.02)
    return False


def _kill_first(pattern: str) -> Callable[[subprocess.Popen], str]:
    def act(_p: subprocess.Popen) -> str:
        found = pids(pattern)
        if not found:
            return ""
        os.kill(found[0], signal.SIGKILL)
        return f"pid {found[0]}"
    return act


def _signal_dcrepro(sig: int) -> Callable[[subprocess.Popen], str]:
    def act(p: subprocess.Popen) -> str:
        os.kill(p.pid, sig)
        return f"pid {p.pid}"
    return act


def _kill_vswitchd(_p: subprocess.Popen) -> str:
    pid = vswitchd_pid()
    if not pid:
        return ""
    os.kill(pid, signal.SIGKILL)
    return f"pid {pid}"


def _unmount_bpf_pins(_p: subprocess.Popen) -> str:
    """Take away the BPF switch's pinned program and maps (a crashed `clean` could)."""
    mounts = [l.split()[1] for l in Path("/proc/mounts").read_text().splitlines()
              if l.split()[2] == "bpf" and l.split()[1].startswith(str(BPFFS_DIR))
              and "+qgap" not in l.split()[1]]
    if not mounts:
        return ""
    subprocess.run(["umount", "-l", mounts[0]], check=False, timeout=10)
    return mounts[0]


#: fault -> (action, dataplanes it applies to, phases it applies to, expected ending)
FAULTS: dict[str, tuple[Callable[[subprocess.Popen], str], tuple[str, ...], tuple[str, ...],
                        str]] = {
    "SIGINT dcrepro": (_signal_dcrepro(signal.SIGINT), ("bpf", "ovs"), PHASES, "interrupted"),
    "SIGTERM dcrepro": (_signal_dcrepro(signal.SIGTERM), ("bpf", "ovs"), PHASES,
                        "interrupted"),
    "SIGKILL dcrepro": (_signal_dcrepro(signal.SIGKILL), ("bpf", "ovs"), PHASES, "killed"),
    "SIGKILL iperf3 client": (_kill_first("iperf3 -c"), ("bpf", "ovs"), ("traffic",),
                              "failed"),
    "SIGKILL iperf3 server": (_kill_first("iperf3 -s -1"), ("bpf", "ovs"), ("traffic",),
                              "failed"),
    "SIGKILL bwm-ng": (_kill_first("bwm-ng -o csv"), ("bpf", "ovs"), ("traffic",), "failed"),
    "SIGKILL controller": (_kill_first("controller.launch --plan"), ("ovs",), ("traffic",),
                           "failed"),
    "SIGKILL ovs-vswitchd": (_kill_vswitchd, ("ovs",), ("traffic",), "failed"),
    "unmount BPF pins": (_unmount_bpf_pins, ("bpf",), ("traffic",), "failed"),
}
EXIT = {"SIGINT dcrepro": 130, "SIGTERM dcrepro": 143, "SIGKILL dcrepro": -9}


def trial(fault: str, phase: str, dataplane: str, rng: random.Random, root: Path
          ) -> dict[str, Any]:
    """One run, one fault: what happened."""
    act, _, _, expected = FAULTS[fault]
    out = Path(tempfile.mkdtemp(prefix="trial-", dir=root))
    p = start(out, dataplane)
    row: dict[str, Any] = {"fault": fault, "phase": phase, "dataplane": dataplane}
    if not wait_phase(p, out, phase):
        finish(p, 120)
        row.update(note="the run ended before the phase", exit=p.returncode)
        return row
    if phase == "traffic":
        time.sleep(rng.uniform(0.5, 3.0))
    phase_seen = status(run_folder(out)).get("status", "-")
    t = time.monotonic()
    victim = act(p)
    _, hung = finish(p, 180)
    if hung:
        row["hung"] = True
    took = time.monotonic() - t
    run = run_folder(out)
    st = status(run)
    row.update(victim=victim or "(not found)", status_at_fault=phase_seen, exit=p.returncode,
               fault_to_exit_s=round(took, 2), status=st.get("status"),
               error=(st.get("error") or "")[:140])
    left = machine_leftovers()
    if fault == "SIGKILL ovs-vswitchd":
        subprocess.run([str(REPO / "setup.sh")], capture_output=True, timeout=300, check=False)
        row["note"] = "setup.sh restarted ovs-vswitchd before the next run"
    nxt = start(root / "next", dataplane, duration="6")
    ntext, _ = finish(nxt, 180)
    row["next_run_ok"] = nxt.returncode == 0
    if nxt.returncode != 0:
        row["note"] = f"next run: {(ntext or '').strip().splitlines()[-1:]}"
    if fault == "SIGKILL dcrepro":
        st = status(run)
        row["status"] = st.get("status")
        row["error"] = (st.get("error") or "")[:140]
        left = machine_leftovers()           # the next run removes a killed run's leftovers
    row["leftovers"] = sum(len(v) for v in left.values())
    ok_after_completion = p.returncode == 0 and row["status"] == "ok" and \
        phase_seen in ("measured", "ok")
    if expected == "killed":
        correct = row["status"] == "killed" and p.returncode == -9
    elif expected == "interrupted":
        correct = (row["status"] == "interrupted" and p.returncode == EXIT[fault]) \
            or ok_after_completion
    else:
        correct = row["status"] == "failed" and p.returncode == 1 and "\n" not in row["error"]
    row["correct"] = bool(correct) and not row.get("hung")
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dataplanes", default="bpf,ovs")
    ap.add_argument("--out", default=None, help="folder for the trials' runs (default: temp)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_faults: needs root", file=sys.stderr)
        return 2
    if machine_leftovers() != CLEAN:
        print(f"bench_faults: the machine is not clean: {machine_leftovers()}", file=sys.stderr)
        return 2
    root = Path(args.out or tempfile.mkdtemp(prefix="dcrepro-faults-"))
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    dps = args.dataplanes.split(",")
    combos = [(f, ph, dp) for f, (_, fdps, phs, _) in FAULTS.items() for dp in dps
              if dp in fdps for ph in phs]
    # every combination once (shuffled), then random ones, up to --trials
    plan = rng.sample(combos, len(combos))[:args.trials]
    plan += [rng.choice(combos) for _ in range(args.trials - len(plan))]
    print(f"bench_faults: {len(plan)} trials of {len(combos)} combinations; runs in {root}")
    cols = ("fault", "phase", "dataplane", "status_at_fault", "exit", "fault_to_exit_s",
            "status", "correct", "leftovers", "next_run_ok", "error")
    print(" | ".join(cols))
    rows = []
    for fault, phase, dp in plan:
        row = trial(fault, phase, dp, rng, root)
        rows.append(row)
        print(" | ".join(str(row.get(c, "")) for c in cols)
              + (f" | {row['note']}" if row.get("note") else ""), flush=True)
    (root / "faults.json").write_text(json.dumps(rows, indent=1))
    done = [r for r in rows if "correct" in r]
    fast = [r for r in done if r["fault_to_exit_s"] <= 30]
    print(f"\ncorrect ending: {sum(r['correct'] for r in done)}/{len(done)}; zero leftovers: "
          f"{sum(r['leftovers'] == 0 for r in done)}/{len(done)}; next run ok: "
          f"{sum(r['next_run_ok'] for r in done)}/{len(done)}; fault to exit <= 30 s: "
          f"{len(fast)}/{len(done)} (median "
          f"{sorted(r['fault_to_exit_s'] for r in done)[len(done) // 2] if done else '-'} s); "
          f"ok with incomplete data: "
          f"{sum(r['status'] == 'ok' and r['status_at_fault'] not in ('measured', 'ok') for r in done)}")
    print(f"rows: {root / 'faults.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
