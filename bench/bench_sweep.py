"""Sweep overhead: wall time of a `dcrepro sweep` divided by the traffic time it holds, minus 1.

Traffic time is nominal: for every run of the sweep, repetitions x topologies x the
traffic duration (fairness runs two topologies; other experiments one).  Everything else,
bring-up, pings, tracing, teardown, figures, the sweep's own bookkeeping and the resume
check, is overhead.  Needs root (emulated runs); one emulation at a time.

    sudo .venv/bin/python bench/bench_sweep.py                      # fairness, 2 seeds
    sudo .venv/bin/python bench/bench_sweep.py --runs 8 --duration 60   # the default run

Prints one line per sweep point and the overall figure; also times a second launch of
the same sweep (everything complete: the resume check alone).
"""
from __future__ import annotations

import argparse
import json
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
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:], sep="\n")
        print(f"sweep failed with exit {p.returncode}")
        return 1
    t1 = time.monotonic()
    again = subprocess.run(argv, capture_output=True, text=True)
    resume = time.monotonic() - t1
    sweep = out / "sweeps" / "bench"
    lines = [json.loads(x) for x in (sweep / "manifest.jsonl").read_text().splitlines()][1:]
    traffic = 0.0
    for x in lines:
        prm = x["params"]
        topos = 2 if args.experiment == "fairness" else 1
        traffic += prm["runs"] * topos * prm["duration"]
    print(f"{args.experiment} sweep: {len(lines)} points, {wall:.0f} s wall for "
          f"{traffic:.0f} s of traffic: overhead {wall / traffic - 1:.1%} (goal <= 15 %)")
    print(f"second launch (all complete, exit {again.returncode}): {resume:.1f} s")
    print(f"sweep folder: {sweep}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
