"""Two run folders of one experiment and one seed, repetition by repetition: the command
line of analysis/paired.py (issue #54).

Usage::

    python -m studies.paired A_FOLDER B_FOLDER [--headline]

prints one line per claim with a per-repetition statistic and condition (``--headline``:
the headline claims only): A's and B's means over the repetitions both trust and the paired
difference B - A, each with its 95 % interval.
"""
from __future__ import annotations

import sys
from pathlib import Path

from analysis.intervals import Interval
from analysis.paired import paired


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
