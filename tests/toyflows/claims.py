"""Toy long-flow claims: one field of flows.csv, whatever view wrote it."""
from __future__ import annotations

from typing import Any

from analysis.claims import Claim, Outcome, need_rows, num


def mean_goodput(runs: Any, _cond: Any) -> Outcome:
    got = [num(r, "norm_goodput") for r in need_rows(runs, "flows.csv")]
    mean = sum(got) / len(got)
    return Outcome(f"{mean:.2f} of the link", mean > 0.3)


def _never(runs: Any, _cond: Any) -> Outcome:
    return Outcome(f"{len(runs)} run", False)


CLAIMS = [
    Claim(experiment="toyflows", key="moves", text="flows get a share of their links",
          source="000_toy.txt", paper="> 0.3", criterion="mean norm_goodput > 0.3",
          reason="a test", measure=mean_goodput),
    Claim(experiment="toyflows", key="never", text="a claim that fails", source="000_toy.txt",
          paper="-", criterion="never", reason="a test", measure=_never),
]
