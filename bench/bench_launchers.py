"""Per-run overhead of each sweep launcher against the local one, on the same short runs.

Run (root for Slurm's daemons): .venv/bin/python bench/bench_launchers.py [RUNS]  (default 8)

The runs are model-backend orca runs (``orca --backend model --quick``, a grid over seeds,
about 1.5 s each as a process): the launchers' overhead does not depend on what a run does,
and model runs need no emulation lock.  Every engine runs the same grid in a fresh sweep
folder.  Per run: the median time between consecutive runs becoming complete (the
fingerprint.json written just before each run's final rename; the first run counts from
the launch).  ``local`` runs every run inside one process; ``run-one loop`` starts one
``dcrepro run-one`` process a run (what every other engine does, so its extra cost is the
process start); ``parallel`` is GNU parallel with ``-S :``; ``slurm`` a one-node Slurm
cluster started for the bench (skipped when Slurm is not installed).  Goal: at most 2 s of
overhead a run.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from criteria import integration

from dcrepro.sweep import read_manifest

REPO = Path(__file__).resolve().parent.parent
DCREPRO = [str(REPO / ".venv" / "bin" / "dcrepro")]
RUN = ["orca", "--backend", "model", "--quick"]
GOAL_S = 2.0


def sweep(out: Path, name: str, runs: int, *extra: str, env: dict | None = None) -> float:
    """One launch of a fresh sweep (model runs); its median seconds per run."""
    grid = "seed=" + "/".join(str(i) for i in range(1, runs + 1))
    t0 = time.time()
    subprocess.run([*DCREPRO, "sweep", *RUN, "--grid", grid, "--out", str(out), "--name",
                    name, *extra], check=True, capture_output=True, env=env, timeout=600)
    return per_run(out / "sweeps" / name, t0)


def per_run(sweep_dir: Path, t0: float) -> float:
    """Median gap between consecutive completions (the first from the launch)."""
    ends = sorted(f.stat().st_mtime for f in (sweep_dir / "runs").glob("*/fingerprint.json"))
    gaps = [b - a for a, b in zip([t0, *ends], ends)]
    return statistics.median(gaps)


def runone_loop(out: Path, runs: int) -> float:
    """Plan, then one `dcrepro run-one` process per run, one after the other."""
    grid = "seed=" + "/".join(str(i) for i in range(1, runs + 1))
    subprocess.run([*DCREPRO, "sweep", *RUN, "--grid", grid, "--out", str(out), "--name",
                    "loop", "--plan-only"], check=True, capture_output=True, timeout=120)
    manifest = out / "sweeps" / "loop" / "manifest.jsonl"
    t0 = time.time()
    for line in read_manifest(manifest)[1]:
        subprocess.run([*DCREPRO, "run-one", str(manifest), line["run_id"]], check=True,
                       capture_output=True, timeout=120)
    return per_run(manifest.parent, t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=int, nargs="?", default=8, help="runs per launcher")
    runs = ap.parse_args().runs
    out = Path(tempfile.mkdtemp(prefix="dcrepro-bench-launch-"))
    results: dict[str, float] = {}
    results["local"] = sweep(out, "local", runs)
    results["run-one loop"] = runone_loop(out, runs)
    results["parallel -S :"] = sweep(out, "parallel", runs, "--engine", "parallel")
    slurmnode = integration("slurmnode")
    if slurmnode.missing_programs():
        print(f"slurm: skipped (not installed: {', '.join(slurmnode.missing_programs())})")
    else:
        with slurmnode.SlurmNode() as node:
            results["slurm (1 node)"] = sweep(out, "slurm", runs, "--engine", "slurm",
                                              env=node.env)
    print(f"{runs} model-backend runs (orca --backend model --quick) per launcher; "
          "median seconds per run")
    print(f"{'launcher':<16}{'s/run':>8}{'overhead vs local':>20}")
    for name, s in results.items():
        over = s - results["local"]
        flag = "" if name == "local" else ("  ok" if over <= GOAL_S else f"  > {GOAL_S} s goal")
        print(f"{name:<16}{s:>8.2f}{over:>+20.2f}{flag}")
    subprocess.run(["rm", "-rf", str(out)], check=False)


if __name__ == "__main__":
    main()
