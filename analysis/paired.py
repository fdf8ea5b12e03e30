"""Two run folders of the same draws, repetition by repetition (issue #54).

Quick mode draws the reference folder's networks (docs/notebook/2026-12-04-quick-draws.md),
and a check of a shorter window runs the same draws twice, so two folders of one experiment
can be compared pair by pair: for a claim with a per-repetition statistic (its ``samples``),
in one condition, the statistic of each repetition that the fidelity check trusts in both,
A's and B's mean with their 95 % intervals, and the paired difference B - A with its own.
It judges nothing: ``dcrepro report``'s screen says whether each difference's interval
contains 0, and a notebook writes its own criterion before its runs.  The command line is
``python -m studies.paired A B [--headline]``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from store import registry

from .claims import Claim, Missing, Run, rep_id
from .intervals import Interval, mean_interval

#: the fewest pairs a difference is given for
MIN_PAIRS = 2


@dataclass(frozen=True)
class Paired:
    """One claim's statistic in one condition over the repetitions both folders trust."""
    key: str
    condition: str
    reps: tuple[str, ...]
    a: Interval
    b: Interval
    diff: Interval
    #: each folder's flow length and trim ('12 s, trim 3 s'; '' where it has none): where
    #: they differ, a difference may be the window's rather than the machine's
    windows: tuple[str, str] = ("", "")

    @property
    def same_window(self) -> bool:
        return self.windows[0] == self.windows[1]


def window(run: Run) -> str:
    """A folder's flows' length and trim in words, '' when its parameters have none."""
    d, trim = run.params.get("duration"), run.params.get("trim")
    return f"{float(d):g} s, trim {float(trim):g} s" if d is not None and trim is not None \
        else ""


def rep_ids(run: Run) -> list[str]:
    """Every repetition id of a folder's flows.csv, in order ('08' and '8' alike)."""
    return list(dict.fromkeys(rep_id(r["run"]) for r in run.table("flows.csv")
                              if str(r.get("run", "")).isdigit()))


def trusted(run: Run) -> list[str]:
    """Its repetition ids the fidelity check trusts (none when a reason names no single
    repetition: then the whole folder is in doubt)."""
    flagged = run.flagged_reps()
    return [] if flagged is None else [r for r in rep_ids(run) if r not in flagged]


def per_rep(claim: Claim, run: Run, cond: str, reps: list[str]) -> dict[str, float]:
    """Repetition id -> the claim's statistic on that repetition alone (a repetition whose
    statistic is missing is left out)."""
    assert claim.samples is not None
    every = set(rep_ids(run))
    out = {}
    for rep in reps:
        try:
            got = claim.samples([run.without(every - {rep})], cond).values
        except Missing:
            continue
        if len(got) == 1:
            out[rep] = float(got[0])
    return out


def pair(claim: Claim, a: Run, b: Run, cond: str) -> Paired | None:
    """The claim's statistic in ``cond`` over the repetitions both folders trust, or None
    with fewer than MIN_PAIRS (or no per-repetition statistic)."""
    if claim.samples is None:
        return None
    b_ok = set(trusted(b))
    both = [r for r in trusted(a) if r in b_ok]
    xa, xb = per_rep(claim, a, cond, both), per_rep(claim, b, cond, both)
    reps = tuple(r for r in both if r in xa and r in xb)
    if len(reps) < MIN_PAIRS:
        return None
    return Paired(claim.key, cond, reps, mean_interval([xa[r] for r in reps]),
                  mean_interval([xb[r] for r in reps]),
                  mean_interval([xb[r] - xa[r] for r in reps]), (window(a), window(b)))


def paired(a_path: Path, b_path: Path, headline_only: bool = False) -> list[Paired]:
    """Every claim with samples that both folders can judge, in every condition of A's
    (ValueError, one line, when the folders are not of one experiment)."""
    a, b = Run.open(a_path), Run.open(b_path)
    if a.experiment != b.experiment:
        raise ValueError(f"{a_path} is {a.experiment}, {b_path} is {b.experiment}: pairs "
                         "need one experiment")
    out = []
    for claim in registry.claims(a.experiment):
        if claim.samples is None or (headline_only and not claim.headline):
            continue
        if not (claim.accepts(a.params) and claim.accepts(b.params)):
            continue
        conds = (claim.conditions([a]) if claim.conditions else [claim.condition]) or [""]
        out += [p for cond in conds if (p := pair(claim, a, b, cond)) is not None]
    return out
