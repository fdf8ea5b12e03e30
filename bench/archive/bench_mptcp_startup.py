"""MPTCP start-up, run after run (root): consecutive MPTCP-8 fairness runs, each a fat tree
and a Jellyfish of 16 hosts with 16 MPTCP connections of 8 subflows.  Prints figures,
asserts nothing.

    .venv/bin/python bench/archive/bench_mptcp_startup.py [--runs 50] [--duration 8] [--trim 3]

Per run: exit code, status, the connections started again because they were short of
subflows or lost their control connection during set-up (``restarts`` in config.json), and
the subflows still missing after that.  At the end: runs that failed at start-up (and
why), restarts per run, and the longest streak of runs without a start-up failure.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STARTUP_WORDS = ("subflows", "unable to receive parameters", "control socket",
                 "no socket snapshot")


def one(out: Path, seed: int, duration: float, trim: float) -> dict:
    p = subprocess.run([str(REPO / ".venv/bin/dcrepro"), "run", "fairness", "--runs", "1",
                        "--seed", str(seed), "--duration", str(duration), "--trim", str(trim),
                        "--out", str(out)], capture_output=True, text=True, timeout=900)
    runs = sorted((out / "fairness").glob("*/config.json"))
    config = json.loads(runs[-1].read_text()) if runs else {}
    status = json.loads((runs[-1].parent / "status.json").read_text()) if runs else {}
    facts = [v for v in (config.get("runtime") or {}).values() if isinstance(v, dict)]
    restarts = sum(len(f.get("restarts") or {}) for f in facts)
    missing = sum(int(f.get("subflows_missing") or 0) for f in facts)
    err = status.get("error") or (p.stderr.strip().splitlines() or [""])[-1]
    startup = p.returncode != 0 and any(w in err for w in STARTUP_WORDS)
    return {"seed": seed, "exit": p.returncode, "status": status.get("status"),
            "restarts": restarts, "subflows_missing": missing, "startup_failure": startup,
            "error": err[:160] if p.returncode else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--trim", type=float, default=3.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="dcrepro-mptcp-"))
    print(f"bench_mptcp_startup: {args.runs} fairness runs (MPTCP-8, fat tree + Jellyfish), "
          f"{args.duration:g} s each, out {root}", flush=True)
    rows, streak, best = [], 0, 0
    for i in range(args.runs):
        r = one(root, i + 1, args.duration, args.trim)
        rows.append(r)
        streak = 0 if r["startup_failure"] else streak + 1
        best = max(best, streak)
        print(f"  run {i + 1}: exit {r['exit']} {r['status']}, restarts {r['restarts']}, "
              f"subflows missing {r['subflows_missing']}"
              + (f", START-UP FAILURE: {r['error']}" if r["startup_failure"] else
                 (f", failed: {r['error']}" if r["exit"] else "")), flush=True)
    (root / "mptcp_startup.json").write_text(json.dumps(rows, indent=1))
    fails = [r for r in rows if r["startup_failure"]]
    other = [r for r in rows if r["exit"] and not r["startup_failure"]]
    restarts = sorted(r["restarts"] for r in rows)
    print(f"start-up failures: {len(fails)} of {len(rows)} runs; other failures: {len(other)}; "
          f"longest streak without a start-up failure: {best}; connections restarted per "
          f"run: median {restarts[len(restarts) // 2] if restarts else '-'}, max "
          f"{restarts[-1] if restarts else '-'} (of 32); subflows still missing: "
          f"{sum(r['subflows_missing'] for r in rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
