"""What the pure tests beside the integration tier cost it, with the lowest priority set on
their threads only (nice 19 inside a session of their own) against on their session's
scheduling group as well (scripts/test.sh since 2026-12-02).  Prints figures, asserts
nothing.  Root; nothing else running.

    sudo .venv/bin/python bench/bench_test_schedule.py [--rounds 2] [FILE ...]

With autogroups on (kernel.sched_autogroup_enabled=1, this kernel's default) CFS shares the
CPU between sessions first, each at its group's nice; a thread's own nice counts only
inside its session.  So ``setsid nice -n 19 pytest`` competes with the integration tier's
sessions (each emulated host starts one) as an equal.  Per round, both ways one after the
other (the order alternating between rounds): the integration tests FILE... (default:
test_emulation.py and test_cc.py, about 150 s alone) with the fast tier started beside them
in a session of its own, as scripts/test.sh starts it.  Reports each way's integration
wall time and the fast tier's, and the median over rounds.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = str(REPO / ".venv" / "bin" / "python")
DEFAULT = ["tests/integration/test_emulation.py", "tests/integration/test_cc.py"]
#: the way scripts/test.sh starts the pure tests: a session of their own, nice 19, and the
#: session group's nice (0: this kernel's default for a new session; 19: test.sh's)
START = ("import os, signal, sys, contextlib\n"
         "with contextlib.suppress(OSError), open('/proc/self/autogroup', 'w') as f: "
         "f.write(sys.argv[1])\n"
         "os.execv(sys.executable, [sys.executable, '-m', 'pytest', *sys.argv[2:]])")


def one(group_nice: int, files: list[str]) -> tuple[float, float]:
    """(integration wall s, fast tier wall s) with the fast tier's group at ``group_nice``."""
    base = Path(f"/tmp/dcrepro-bench-schedule-{group_nice}")
    shutil.rmtree(base, ignore_errors=True)
    env = {**os.environ, "DCREPRO_STATE_DIR": str(base / "state")}
    t0 = time.monotonic()
    pure = subprocess.Popen(["setsid", "nice", "-n", "19", PY, "-c", START, str(group_nice),
                             "-m", "fast", "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
                             "--basetemp", str(base / "tmp")],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    ended: list[float] = []         # when the fast tier ended, whichever ends first
    waiter = threading.Thread(target=lambda: (pure.wait(timeout=1800),
                                              ended.append(time.monotonic() - t0)))
    waiter.start()
    integ = subprocess.run([PY, "-m", "pytest", "-m", "integration", "-q", "-p",
                            "no:cacheprovider", *files], cwd=REPO, capture_output=True,
                           text=True, timeout=1800)
    t_int = time.monotonic() - t0
    waiter.join(timeout=1800)
    t_pure = ended[0] if ended else float("nan")
    last = (integ.stdout.strip().splitlines() or ["?"])[-1]
    print(f"  group nice {group_nice:2d}: integration {t_int:6.1f} s ({last}); "
          f"fast tier beside it {t_pure:6.1f} s", flush=True)
    return t_int, t_pure


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("files", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_test_schedule: needs root (the integration tests)", file=sys.stderr)
        return 2
    got: dict[int, list[tuple[float, float]]] = {0: [], 19: []}
    for r in range(args.rounds):
        print(f"round {r + 1}", flush=True)
        for nice in ((0, 19) if r % 2 == 0 else (19, 0)):
            got[nice].append(one(nice, args.files))
    print("\nmedian over rounds | integration (s) | fast tier beside it (s)")
    for nice, label in ((0, "threads at nice 19 only (before)"),
                        (19, "and their session's group at nice 19 (now)")):
        print(f"{label} | {statistics.median(x for x, _ in got[nice]):.1f} | "
              f"{statistics.median(y for _, y in got[nice]):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
