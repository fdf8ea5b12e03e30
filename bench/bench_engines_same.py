"""The same sweep through every launcher gives the same summary table.

Runs one fairness sweep (model backend: deterministic, so the tables must be equal cell
for cell; an emulated sweep would differ by measurement noise only) with ``--engine
local``, ``parallel`` (this machine, ``-S :``) and ``slurm`` (a one-node cluster started
for the purpose, tests/integration/slurmnode.py), each into its own results folder, and
compares the three summary.csv files (run ids, grid values and every number).

    sudo .venv/bin/python bench/bench_engines_same.py [--grid seed=1/2/3/4] [--runs 8]
    sudo .venv/bin/python bench/bench_engines_same.py --emulated --grid seed=1/2 --runs 2
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from criteria import integration

REPO = Path(__file__).resolve().parents[1]


def sweep(out: Path, engine: str, grid: list[str], runs: int, env: dict | None,
          extra: list[str]) -> float:
    argv = [str(REPO / ".venv" / "bin" / "dcrepro"), "sweep", "fairness", "--runs",
            str(runs), "--out", str(out), "--name", "same", "--engine", engine,
            *[x for g in grid for x in ("--grid", g)], *extra]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"{engine}: exit {p.returncode}\n{p.stderr[-1500:]}")
    return time.monotonic() - t0


def table(out: Path) -> list[dict[str, str]]:
    with open(out / "sweeps" / "same" / "summary.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", action="append", default=None)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--emulated", action="store_true",
                    help="emulated quick runs instead of the model: the same runs and rows, "
                         "numbers differing by measurement noise (printed)")
    args = ap.parse_args()
    extra = ["--quick"] if args.emulated else ["--backend", "model"]
    grid = args.grid or ["seed=1/2/3/4"]
    slurmnode = integration("slurmnode")
    if slurmnode.missing_programs():
        print(f"needs {', '.join(slurmnode.missing_programs())}: sudo ./setup.sh --with-slurm")
        return 2
    base = Path(tempfile.mkdtemp(prefix="bench-engines-"))
    took, tables = {}, {}
    for engine in ("local", "parallel"):
        took[engine] = sweep(base / engine, engine, grid, args.runs, None, extra)
        tables[engine] = table(base / engine)
    with slurmnode.SlurmNode() as node:
        took["slurm"] = sweep(base / "slurm", "slurm", grid, args.runs, node.env, extra)
        tables["slurm"] = table(base / "slurm")
    ref = tables["local"]
    print(f"fairness sweep, {'emulated (quick)' if args.emulated else 'model backend'}, "
          f"grid {' '.join(grid)}, --runs {args.runs}: {len(ref)} summary rows")
    ok = True
    key = ("run_id", "topology", "run", "measure")
    for engine in ("local", "parallel", "slurm"):
        if not args.emulated:
            same = tables[engine] == ref
            what = "identical to local" if same else "DIFFERS from local"
        else:   # the same runs and rows; the numbers are two measurements of one run
            same = [tuple(r[k] for k in key) for r in tables[engine]] == \
                [tuple(r[k] for k in key) for r in ref]
            diffs = sorted(abs(float(a["mean"]) - float(b["mean"])) / float(b["mean"])
                           for a, b in zip(tables[engine], ref) if float(b["mean"]))
            what = (f"same runs and rows as local: {same}; mean throughput differs by "
                    f"median {diffs[len(diffs) // 2]:.1%}, at most {diffs[-1]:.1%}"
                    if diffs else f"same runs and rows as local: {same}")
        ok &= same
        print(f"  {engine:8s} {took[engine]:6.1f} s  summary.csv {what}")
    print(f"results under {base}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
