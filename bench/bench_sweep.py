"""Sweep overhead: wall time of a `dcrepro sweep` divided by the traffic time it holds, minus 1.

Traffic time is nominal: for every run of the sweep, repetitions x topologies x the
traffic duration (fairness runs two topologies; other experiments one).  Everything else,
bring-up, pings, tracing, teardown, figures, the sweep's own bookkeeping and the resume
check, is overhead.  Needs root (emulated runs); one emulation at a time.

    sudo .venv/bin/python bench/bench_sweep.py                      # fairness, 2 seeds
    sudo .venv/bin/python bench/bench_sweep.py --runs 8 --duration 60   # the default run

Prints one line per sweep point (its wall time from the sweep's progress.log), the
overall figure and the figure over complete points; then times a second launch of the
same sweep (complete points skipped, failed ones run again).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DCREPRO = [str(REPO / ".venv" / "bin" / "dcrepro")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--experiment", default="fairness")
    ap.add_argument("--grid", action="append", default=None,
                    help="grid items (default: seed=1/2)")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--extra", default="", help="more flags for the sweep, one string")
    args = ap.parse_args()
    grid = args.grid or ["seed=1/2"]
    out = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    argv = [*DCREPRO, "sweep", args.experiment, "--runs", str(args.runs), "--duration",
            str(args.duration), "--out", str(out), "--name", "bench",
            *[x for g in grid for x in ("--grid", g)], *args.extra.split()]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t0
    sweep = out / "sweeps" / "bench"
    lines = [json.loads(x) for x in (sweep / "manifest.jsonl").read_text().splitlines()][1:]
    topos = 2 if args.experiment == "fairness" else 1
    traffic = {x["label"]: x["params"]["runs"] * topos * x["params"]["duration"]
               for x in lines}
    # per point, from the sweep's own log: "[n/N] LABEL: complete in S s"
    took: dict[str, tuple[str, float]] = {}
    for line in (sweep / "progress.log").read_text().splitlines():
        m = re.search(r"\] (\S+): (.+) in (\d+) s$", line)
        if m:
            took[m.group(1)] = (m.group(2), float(m.group(3)))
    done_wall = done_traffic = 0.0
    for label, secs in traffic.items():
        what, spent = took.get(label, ("not run", float("nan")))
        print(f"  {label}: {what}, {spent:.0f} s for {secs:.0f} s of traffic"
              + (f" ({spent / secs - 1:+.1%})" if what == "complete" else ""))
        if what == "complete":
            done_wall += spent
            done_traffic += secs
    print(f"{args.experiment} sweep (exit {p.returncode}): {len(lines)} points, {wall:.0f} s "
          f"wall for {sum(traffic.values()):.0f} s of traffic: overhead "
          f"{wall / sum(traffic.values()) - 1:.1%}")
    if done_traffic:
        print(f"complete points only: {done_wall:.0f} s for {done_traffic:.0f} s of traffic: "
              f"overhead {done_wall / done_traffic - 1:.1%} (goal <= 15 %)")
    t1 = time.monotonic()
    again = subprocess.run(argv, capture_output=True, text=True)
    resume = time.monotonic() - t1
    print(f"second launch (exit {again.returncode}; complete points are skipped, the others "
          f"run again): {resume:.1f} s")
    print(f"sweep folder: {sweep}")
    return 0 if p.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
