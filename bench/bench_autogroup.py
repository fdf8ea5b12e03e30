"""What a raised nice buys a process beside many busy sessions (root).  Prints figures,
asserts nothing.

    sudo .venv/bin/python bench/bench_autogroup.py [--sessions 20] [--seconds 3] [--rounds 3]

With autogroups on (kernel.sched_autogroup_enabled=1, the default) CFS shares the CPU
between sessions first, each at its group's nice, and a thread's own nice only counts
inside its session.  A run's host processes each start a session of their own
(Emulation.popen), so this is the position of dcrepro's threads on a saturated machine.
The bench starts ``--sessions`` busy loops, each in a session of its own, and then, one
after another in a session of its own, a probe that spins for ``--seconds`` and reports the
CPU time it got, in three ways: nothing raised; its thread at nice CONTROL_NICE; its
session's group at CONTROL_NICE.  Medians over ``--rounds``.  (Runs raise neither: both
were tried and reverted, docs/measured.md "dcrepro's session".)
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from emulator.proc import install_signal_handlers, stop_all

#: the nice tried for dcrepro's own threads (c97ece6) and its session's group (b38e08d)
CONTROL_NICE = -10

#: the probe: raise as asked, spin, print its own CPU seconds
PROBE = """
import os, sys, time
how, nice, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if how == "thread":
    os.setpriority(os.PRIO_PROCESS, 0, nice)
elif how == "group":
    with open("/proc/self/autogroup", "w") as fh:
        fh.write(str(nice))
end = time.monotonic() + seconds
while time.monotonic() < end:
    pass
t = os.times()
print(t.user + t.system)
"""
WAYS = {"none": "nothing raised", "thread": f"thread at nice {CONTROL_NICE}",
        "group": f"session's group at nice {CONTROL_NICE}"}


def probe(how: str, seconds: float) -> float:
    """CPU seconds one probe got in ``seconds`` of wall time, raised ``how``."""
    p = subprocess.run([sys.executable, "-c", PROBE, how, str(CONTROL_NICE), str(seconds)],
                       capture_output=True, text=True, timeout=seconds + 60,
                       start_new_session=True, check=True)
    return float(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_autogroup: needs root (a negative nice)")
    enabled = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    install_signal_handlers()
    print(f"bench_autogroup: {args.sessions} busy sessions, {os.cpu_count()} CPUs, "
          f"autogroups {'on' if enabled == '1' else 'off'}; CPU seconds a probe got in "
          f"{args.seconds:g} s")
    hogs: list[subprocess.Popen] = []
    try:   # the loops are stopped however the block ends, also when one failed to start
        for _ in range(args.sessions):
            hogs.append(subprocess.Popen(["sh", "-c", "while :; do :; done"],
                                         start_new_session=True))
        got: dict[str, list[float]] = {how: [] for how in WAYS}
        for _ in range(args.rounds):
            for how in WAYS:
                got[how].append(probe(how, args.seconds))
    finally:
        stop_all(hogs)
    for how, label in WAYS.items():
        print(f"  {label}: {statistics.median(got[how]):.2f} "
              f"({', '.join(f'{v:.2f}' for v in got[how])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
