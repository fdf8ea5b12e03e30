"""Two run folders of the same draws, repetition by repetition (issue #54).

Quick mode draws the reference folder's networks (docs/notebook/2026-12-04-quick-draws.md),
and a check of a shorter window runs the same draws twice, so two folders of one experiment
can be compared pair by pair: for every claim with a per-repetition statistic (its
``samples``), in every condition both folders judge, the statistic of each repetition that
the fidelity check trusts in both, A's and B's mean with their 95 % intervals, and the
paired difference B - A with its own.  It judges nothing: a notebook writes its criterion
before the runs and reads these numbers.

Usage::

    python -m studies.paired A_FOLDER B_FOLDER [--headline]

prints one line per claim and condition (``--headline``: the headline claims only).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from analysis.claims import Claim, Missing, Run
from analysis.intervals import Interval, mean_interval
from store import registry


@dataclass(frozen=True)
class Paired:
    """One claim's statistic in one condition over the repetitions both folders trust."""
    key: str
    condition: str
    reps: tuple[str, ...]
    a: Interval
    b: Interval
    diff: Interval


def repetitions(run: Run) -> list[str]:
    """The repetition ids of a folder's flows.csv, in order, the flagged ones left out
    (None from flagged_reps: a reason about the whole folder, so none is trusted)."""
    flagged = run.flagged_reps()
    if flagged is None:
        return []
    ids = dict.fromkeys(str(int(r["run"])) for r in run.table("flows.csv")
                        if str(r.get("run", "")).isdigit())
    return [r for r in ids if r not in flagged]


def per_rep(claim: Claim, run: Run, cond: str, reps: list[str],
            every: list[str]) -> dict[str, float]:
    """Repetition id -> the claim's statistic on that repetition alone (a repetition whose
    statistic is missing is left out)."""
    assert claim.samples is not None
    out = {}
    for rep in reps:
        one = run.without(set(every) - {rep})
        try:
            got = claim.samples([one], cond).values
        except Missing:
            continue
        if len(got) == 1:
            out[rep] = float(got[0])
    return out


def paired(a_path: Path, b_path: Path, headline_only: bool = False) -> list[Paired]:
    """Every claim with samples, in every condition of A's, paired over both folders'
    trusted repetitions (ValueError, one line, when the folders are not of one experiment)."""
    a, b = Run.open(a_path), Run.open(b_path)
    if a.experiment != b.experiment:
        raise ValueError(f"{a_path} is {a.experiment}, {b_path} is {b.experiment}: pairs "
                         "need one experiment")
    a_reps, b_reps = repetitions(a), repetitions(b)
    a_all = list(dict.fromkeys(str(int(r["run"])) for r in a.table("flows.csv")
                               if str(r.get("run", "")).isdigit()))
    b_all = list(dict.fromkeys(str(int(r["run"])) for r in b.table("flows.csv")
                               if str(r.get("run", "")).isdigit()))
    both = [r for r in a_reps if r in b_reps]
    out = []
    for claim in registry.claims(a.experiment):
        if claim.samples is None or (headline_only and not claim.headline):
            continue
        if not (claim.accepts(a.params) and claim.accepts(b.params)):
            continue
        conds = (claim.conditions([a]) if claim.conditions else [claim.condition]) or [""]
        for cond in conds:
            xa = per_rep(claim, a, cond, both, a_all)
            xb = per_rep(claim, b, cond, both, b_all)
            reps = tuple(r for r in both if r in xa and r in xb)
            if len(reps) < 2:
                continue
            out.append(Paired(claim.key, cond, reps,
                              mean_interval([xa[r] for r in reps]),
                              mean_interval([xb[r] for r in reps]),
                              mean_interval([xb[r] - xa[r] for r in reps])))
    return out


def _iv(x: Interval) -> str:
    return f"{x.mean:.4g} [{x.lo:.4g}, {x.hi:.4g}]"


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--headline"]
    if len(args) != 2:
        print("usage: python -m studies.paired A_FOLDER B_FOLDER [--headline]",
              file=sys.stderr)
        return 2
    try:
        rows = paired(Path(args[0]), Path(args[1]), "--headline" in argv)
    except ValueError as exc:
        print(f"paired: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print("paired: no claim with a per-repetition statistic has two repetitions both "
              "folders trust", file=sys.stderr)
        return 1
    for p in rows:
        name = p.key + (f" [{p.condition}]" if p.condition else "")
        print(f"{name}: n={len(p.reps)} (repetitions {','.join(p.reps)}); A {_iv(p.a)}; "
              f"B {_iv(p.b)}; B-A {_iv(p.diff)}; half of A's half-width "
              f"{(p.a.hi - p.a.lo) / 4:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
