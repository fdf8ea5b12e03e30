"""Does quick mode's lower link rate change 000's TCP mean?  An ns-3 check (issue #54 part 2).

The permutation headlines' denominator, the mean over the TCP flows of goodput / the link's
payload ceiling (ECMP on fattree,k=4, quick mode's 12-s flows with 3 s trimmed at each end),
simulated on the same seed-derived permutations in three configurations:

  A  quick's scale: 5 Mb/s, minimum RTO 200 ms (Linux's; what the emulation runs)
  B  the paper's rate: 15 Mb/s, minimum RTO 200 ms
  C  quick's rate with the timer scaled alike: 5 Mb/s, minimum RTO 600 ms
  D  A's image at the paper's rate, every time divided by 3: 15 Mb/s, 4-s flows, 1 s
     trimmed, minimum RTO 67 ms (added after A-C's results, to find the cause)

and the paired differences A - B, C - B and A - D with their Student-t 95 % intervals.  The
criterion, written before the runs (docs/notebook/2026-12-03-scaled-rate-ns3.md): quick's
scale carries the paper rate's statistic when A - B's interval lies within +-0.05.

    .venv/bin/python bench/bench_scaled_rate.py [--runs 5] [--seed 1] [--configs ABCD]

(ns-3 is deterministic: a configuration run alone gives the numbers it gives beside the
others; the differences are printed for the pairs whose both ends ran.)

Needs ns-3 (./setup.sh --with-sim); no root, no emulation (CPU only, deterministic).
"""
from __future__ import annotations

import argparse
import logging
import tempfile
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from analysis.intervals import mean_interval
from experiments.permutation.experiment import PermutationParams, workload
from harness.backends.sim import SimBackend

#: name -> (link rate Mb/s, minimum RTO or None for Linux's 200 ms, flow time, trim)
CONFIGS = {"A quick 5 Mb/s, RTO 200 ms": (5.0, None, 12.0, 3.0),
           "B paper 15 Mb/s, RTO 200 ms": (15.0, None, 12.0, 3.0),
           "C quick 5 Mb/s, RTO 600 ms": (5.0, "600ms", 12.0, 3.0),
           "D A/3 in time: 15 Mb/s, 4-s flows, RTO 67 ms": (15.0, "67ms", 4.0, 1.0)}
BAND = 0.05


def tcp_mean(bw: float, rto_min: str | None, duration: float, trim: float, rep: int,
             seed: int, out: Path) -> float:
    """One repetition's mean normalized TCP goodput in ns-3."""
    params = PermutationParams(backend="sim", bw=bw, transport="tcp", cc="reno",
                               duration=duration, trim=trim, runs=1, seed=seed)
    w = replace(workload(params, rep), rto_min=rto_min)
    folder = SimpleNamespace(log=logging.getLogger("bench"), record=lambda *_: None,
                             network_done=lambda *_: None)
    (m,) = SimBackend(params, folder).run(w, out)     # type: ignore[arg-type]
    return sum(f.goodput_mbps for f in m.flows) / len(m.flows) / m.ceiling_mbps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--configs", default="ABCD", help="which of A, B, C, D to run")
    args = ap.parse_args()
    got: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scaled-") as tmp:
        for name, (bw, rto, duration, trim) in CONFIGS.items():
            if name[0] not in args.configs.upper():
                continue
            got[name] = [tcp_mean(bw, rto, duration, trim, r, args.seed,
                                  Path(tmp) / f"{bw}-{rto}-{duration}-{r}")
                         for r in range(args.runs)]
            iv = mean_interval(got[name])
            print(f"{name}: per repetition {', '.join(f'{x:.4f}' for x in got[name])}; "
                  f"mean {iv.mean:.4f} [{iv.lo:.4f}, {iv.hi:.4f}]", flush=True)
    by = {name[0]: xs for name, xs in got.items()}
    for x, y in ("AB", "CB", "AD"):
        if x not in by or y not in by:
            continue
        label, xs = f"{x} - {y}", by[x]
        iv = mean_interval([p - q for p, q in zip(xs, by[y])])
        inside = -BAND <= iv.lo and iv.hi <= BAND
        print(f"{label}: {iv.mean:+.4f} [{iv.lo:+.4f}, {iv.hi:+.4f}], n={len(xs)}: "
              f"{'within' if inside else 'not within'} +-{BAND}")


if __name__ == "__main__":
    main()
