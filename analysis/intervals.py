"""How a claim is decided from repetitions: a 95 % interval for the statistic's mean, and a
three-way verdict against the claim's band.  Pure arithmetic, no run folders.

The method, fixed before any run is judged with it (docs/verdicts.md says why):

* one value per independent unit (a repetition: its own random draw, its own traffic), the
  claim's statistic computed inside it;
* the estimate is the mean of those values, its interval Student's t at 95 %, the textbook
  interval for a mean; with 5-10 units it keeps its coverage where a percentile bootstrap
  does not (its 95 % covers about 85-90 % at n = 5);
* **holds** when the interval lies inside the band, **does not hold** when it lies wholly
  outside, **inconclusive** when it straddles an edge, or when fewer units than the claim
  asked for were measured (one run decides nothing);
* a deterministic view (the flow model, ns-3 without jitter) gives one value however often
  it is run: its verdict is the value against the band, said to be one sample.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

LEVEL = 0.95
HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Band:
    """Where the claim's statistic must lie: [lo, hi]; an open side is +-inf (a paper's
    'at least' or 'at most').  ``digits``: the decimals its text shows by default (a band
    of small fractions, e.g. [0.0595, 0.0805], needs more than two)."""
    lo: float = -math.inf
    hi: float = math.inf
    digits: int = 2

    def __post_init__(self) -> None:
        if not self.lo <= self.hi:
            raise ValueError(f"band [{self.lo}, {self.hi}] is empty")

    def text(self, digits: int | None = None) -> str:
        """'[1.35, 1.65]', '>= 1.8' or '<= 0.5' (``digits`` decimals, else the band's)."""
        digits = self.digits if digits is None else digits
        if math.isinf(self.lo):
            return f"<= {self.hi:.{digits}f}"
        if math.isinf(self.hi):
            return f">= {self.lo:.{digits}f}"
        return f"[{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


@dataclass(frozen=True)
class Interval:
    """The mean of n unit values and its 95 % interval (lo = hi = the value when n = 1)."""
    mean: float
    lo: float
    hi: float
    n: int
    deterministic: bool = False


def mean_interval(values: Sequence[float], deterministic: bool = False) -> Interval:
    """The mean of ``values`` with Student's t 95 % interval.  A deterministic view's
    values are one sample (they must agree; their first is taken)."""
    xs = [float(x) for x in values]
    if not xs or any(x != x for x in xs):
        raise ValueError("an interval needs at least one value and no NaN")
    if deterministic:
        return Interval(xs[0], xs[0], xs[0], 1, deterministic=True)
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return Interval(mean, mean, mean, 1)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    # imported here: scipy.stats costs about 0.5 s, and every dcrepro command imports the
    # claims (this module), most of them never asking for an interval
    from scipy import stats
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


#: the most units to_decide projects (beyond it: "more than")
DECIDE_MAX = 200


def to_decide(iv: Interval, band: Band) -> int | None:
    """About how many units would decide an interval that straddles an edge of ``band``, if
    their spread stayed this one: the fewest n whose Student half-width falls below the
    mean's distance to that edge.  None when no n up to DECIDE_MAX does (or the mean sits
    on the edge); a projection, not a promise: more units also move the mean."""
    if iv.deterministic or iv.n < 2:
        return None
    edges = [e for e in (band.lo, band.hi) if iv.lo < e < iv.hi]
    if not edges:
        return None
    gap = min(abs(iv.mean - e) for e in edges)
    from scipy import stats  # see mean_interval
    t_n = float(stats.t.ppf(0.5 + LEVEL / 2, iv.n - 1))
    sd = (iv.hi - iv.lo) / 2 * math.sqrt(iv.n) / t_n
    for n in range(iv.n + 1, DECIDE_MAX + 1):
        if float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * sd / math.sqrt(n) < gap:
            return n
    return None


def decide(iv: Interval, band: Band, needed: int) -> tuple[str, str]:
    """The verdict of an interval against a band, and why in a few words.  ``needed`` is
    the number of units the claim asked for before its runs (ignored for a deterministic
    view, whose one sample is all there is)."""
    if not iv.deterministic and iv.n < needed:
        return INCONCLUSIVE, f"{iv.n} of the {needed} repetitions a verdict needs"
    if band.lo <= iv.lo and iv.hi <= band.hi:
        return HOLDS, "the interval lies inside the band"
    if iv.hi < band.lo or iv.lo > band.hi:
        return FAILS, "the interval lies outside the band"
    return INCONCLUSIVE, "the interval straddles the band's edge"


# -- drawing intervals (the ablation studies' figures: studies/) --------------

def error_bars(ivs: Sequence[Interval | None]) -> list[list[float]]:
    """matplotlib's ``yerr`` (or ``xerr``) for intervals drawn about their means:
    [[mean - lo, ...], [hi - mean, ...]], never below 0 (the mean of equal values can differ
    from them in the last bit); 0 for a missing one."""
    return [[max(0.0, iv.mean - iv.lo) if iv else 0.0 for iv in ivs],
            [max(0.0, iv.hi - iv.mean) if iv else 0.0 for iv in ivs]]


def bars_words(ns: Sequence[int]) -> str:
    """What a figure's interval bars are, given the number of repetitions behind each:
    'bars: the Student-t 95 % interval of the mean over 5 repetitions' (or '5-10'), with
    '; one repetition: no interval' when some have one, or that alone when all do."""
    have = sorted(set(ns))
    many = [n for n in have if n > 1]
    if not many:
        return "one repetition: no interval"
    count = f"{many[0]}" if len(many) == 1 else f"{many[0]}-{many[-1]}"
    return (f"bars: the Student-t 95 % interval of the mean over {count} repetitions"
            + ("; one repetition: no interval" if have[0] < 2 else ""))


def bracket_text(iv: Interval, digits: int = 3) -> str:
    """'0.912 [0.880, 0.944]' (``digits`` decimals); the mean alone for one repetition."""
    if iv.n < 2:
        return f"{iv.mean:.{digits}f}"
    return f"{iv.mean:.{digits}f} [{iv.lo:.{digits}f}, {iv.hi:.{digits}f}]"
