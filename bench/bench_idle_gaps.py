"""Do idle CPUs, or niced work beside a run, make the dequeue gaps late?  The busy-link gap
check with and without a busy loop per core (root).  Prints figures, asserts nothing.

    .venv/bin/python bench/bench_idle_gaps.py [--topo fattree,k=4] [--bw 5] [--seeds 3]
        [--duration 12] [--variants idle,spinner,nice] [--lock /tmp/dcrepro-heavy.lock]

On this machine (a microVM, cpuidle driver "none": an idle core halts until an interrupt)
runs at 30-50 % CPU failed the 95 % gap criterion more often than saturated ones.  The
hypothesis: a core that halted takes long to wake for the HTB watchdog's timer, so a
dequeue comes late.  Each seed runs the same TCP-ECMP permutation (``dcrepro run permutation
--transport tcp --runs 1``) twice, without and with one ``SCHED_IDLE`` busy loop per core
(it runs only when nothing else wants the core, so it takes no CPU from the emulation, but
the core never halts); the variants alternate by seed.  Per run, from its fidelity.json:
the share of full-size busy-link gaps within 10 %, their p1/p99 ratios and the CPU (with the
spinner the CPU sampler counts it as busy: the CPU column is then meaningless).
Reading, fixed before the first run: the hypothesis is supported when, for every seed, the
run with the spinner has the larger share, and the medians differ by at least one point.

Variant ``nice`` (session 14): one ``nice -n 19`` busy loop per core, as a niced job beside
the emulation (a test suite, a simulation) would be; the CPU figures count niced time as
free, and the run records its share (``cpu_nice_share``).  Reading, fixed before its first
run: niced work beside a run explains quiet runs failing the gap check when, for every
seed, the run with it has the smaller share, the medians differ by at least one point and
the niced variant's median is below the 95 % criterion.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from emulator.proc import RunError, held_lock, run_group

REPO = Path(__file__).resolve().parent.parent
SPIN = "while :; do :; done"


#: variant -> how its busy loop runs (none for idle)
LOOPS = {"idle": None, "spinner": ["chrt", "--idle", "0"], "nice": ["nice", "-n", "19"]}


def spinners(procs: list[subprocess.Popen], how: list[str]) -> None:
    """One busy loop pinned to each core, run as ``how`` says (SCHED_IDLE or niced), added to
    ``procs`` as each starts (so that the caller stops the ones that started if a later one
    fails)."""
    for cpu in sorted(os.sched_getaffinity(0)):
        procs.append(subprocess.Popen(["taskset", "-c", str(cpu), *how, "sh", "-c", SPIN]))


def one(args: argparse.Namespace, seed: int, variant: str, out: Path) -> dict[str, Any]:
    """One run; its gap figures, or {'failed': why}."""
    cmd = [str(REPO / ".venv/bin/dcrepro"), "run", "permutation", "--topo", args.topo,
           "--transport", "tcp", "--runs", "1", "--seed", str(seed), "--duration",
           str(args.duration), "--trim", "3", "--bw", str(args.bw), "--out", str(out)]
    procs: list[subprocess.Popen] = []
    # the lock first, then the busy loops: they must not load whatever holds the lock
    try:
        with held_lock(args.lock, args.lock_wait):
            try:
                how = LOOPS[variant]
                if how:
                    spinners(procs, how)
                p = run_group(cmd, 600, str(REPO))
            finally:
                for s in procs:
                    s.kill()
                    s.wait(timeout=10)
    except RunError as e:      # the lock not had in time, or the run timed out
        return {"failed": [str(e)]}
    runs = sorted((out / "permutation").iterdir()) if (out / "permutation").exists() else []
    if p.returncode != 0 or not runs:
        return {"failed": (p.stderr or p.stdout).strip().splitlines()[-1:]}
    rep = json.loads((runs[-1] / "fidelity.json").read_text())["reports"][0]
    g = (rep.get("dequeue_gaps") or {}).get("full_size") or {}
    return {"within_10pct": g.get("within_10pct"), "samples": g.get("samples"),
            "p1": g.get("p1_ratio"), "p99": g.get("p99_ratio"), "cpu": rep.get("cpu_mean"),
            "nice_share": rep.get("cpu_nice_share"), "steal_share": rep.get("cpu_steal_share")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topo", default="fattree,k=4")
    ap.add_argument("--bw", type=float, default=5.0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=12.0)
    ap.add_argument("--variants", default="idle,spinner",
                    help=f"comma list of {', '.join(LOOPS)}")
    ap.add_argument("--lock", default=None)
    ap.add_argument("--lock-wait", type=float, default=7200.0,
                    help="seconds to wait for --lock before giving up")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    if not variants or any(v not in LOOPS for v in variants):
        ap.error(f"--variants: choose from {', '.join(LOOPS)}")
    got: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        for seed in range(1, args.seeds + 1):
            order = variants if seed % 2 else list(reversed(variants))
            for name in order:
                r = one(args, seed, name, Path(tmp) / f"{name}-{seed}")
                print(json.dumps({"seed": seed, "variant": name, **r}), flush=True)
                if r.get("within_10pct") is not None:
                    got[name].append(r["within_10pct"])
    for name, xs in got.items():
        if xs:
            print(f"{name}: full-size gaps within 10 %: median {statistics.median(xs):.4f} "
                  f"over {len(xs)} runs (min {min(xs):.4f}, max {max(xs):.4f})")


if __name__ == "__main__":
    main()
