"""Verdicts on intervals (analysis/intervals.py) and the claims that use them
(analysis/claims.py): the interval's arithmetic, the three-way rule, the repetitions a verdict
needs, deterministic views, flagged runs and the paper's regime."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis import claims as C
from analysis.intervals import (
    Band,
    Interval,
    bars_words,
    bracket_text,
    decide,
    error_bars,
    mean_interval,
)
from store import write_csv


def test_the_interval_is_students_t_at_95_percent():
    iv = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    # mean 3, s = sqrt(2.5), t(0.975, 4) = 2.776: half-width 1.963
    assert iv.mean == 3.0 and iv.n == 5
    assert math.isclose(iv.hi - 3.0, 2.7764451 * math.sqrt(2.5) / math.sqrt(5), rel_tol=1e-6)
    assert math.isclose(iv.lo, 6.0 - iv.hi)


def test_one_value_has_no_interval_and_a_deterministic_view_is_one_sample():
    one = mean_interval([1.4])
    assert (one.lo, one.hi, one.n) == (1.4, 1.4, 1)
    det = mean_interval([1.4, 1.4, 1.4], deterministic=True)
    assert det.n == 1 and det.deterministic
    with pytest.raises(ValueError):
        mean_interval([])
    with pytest.raises(ValueError):
        mean_interval([1.0, float("nan")])


@pytest.mark.parametrize("values, word", [
    ([1.50, 1.52, 1.48, 1.51, 1.49], "holds"),            # inside 1.35-1.65
    ([1.10, 1.12, 1.08, 1.11, 1.09], "does not hold"),    # wholly below
    ([1.25, 1.45, 1.30, 1.40, 1.35], "inconclusive"),     # straddles 1.35
])
def test_holds_inside_fails_outside_inconclusive_across(values, word):
    assert decide(mean_interval(values), Band(1.35, 1.65), needed=5)[0] == word


def test_fewer_repetitions_than_asked_decide_nothing_however_clear():
    iv = mean_interval([1.50, 1.50, 1.51])
    word, why = decide(iv, Band(1.35, 1.65), needed=5)
    assert word == "inconclusive" and "3 of the 5" in why
    det = mean_interval([1.50], deterministic=True)
    assert decide(det, Band(1.35, 1.65), needed=5)[0] == "holds"
    assert decide(det, Band(1.6, 1.65), needed=5)[0] == "does not hold"


def test_one_sided_bands_and_their_words():
    assert Band(1.8).text() == ">= 1.80" and Band(hi=0.5).text() == "<= 0.50"
    assert Band(1.35, 1.65).text() == "[1.35, 1.65]"
    assert decide(mean_interval([2.0] * 5), Band(1.8), 5)[0] == "holds"
    with pytest.raises(ValueError):
        Band(2.0, 1.0)


# -- interval claims on run folders ----------------------------------------------------------

def _run(root: Path, name: str, values: list[float], backend: str = "emulated",
         suspect: list[str] | None = None, lo: float = 1.0) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({
        "experiment": "toy", "run_id": name, "started_utc": name,
        "params": {"backend": backend}}))
    (d / "status.json").write_text(json.dumps({"status": "ok", "suspect": suspect or []}))
    write_csv(d / "reps.csv", [{"run": i, "x": v, "load": lo} for i, v in enumerate(values)])
    return d


def _stat(runs: list[C.Run], _cond: str) -> C.Samples:
    return C.Samples(tuple(float(r["x"]) for r in C.rows(runs, "reps.csv")))


def _pooled(runs: list[C.Run], _cond: str) -> C.Outcome:
    xs = [float(r["x"]) for r in C.need_rows(runs, "reps.csv")]
    return C.Outcome(f"{sum(xs) / len(xs):.2f}", True, "pooled mean")


def _regime(runs: list[C.Run], _cond: str) -> str:
    load = min(float(r["load"]) for r in C.rows(runs, "reps.csv"))
    return "" if load >= 1.0 else f"load {load} below the paper's 1.0"


CLAIM = C.Claim(experiment="toy", key="ratio", text="ratio about 1.5", source="toy, Fig. 1",
                paper="about 1.5", criterion="mean within [1.35, 1.65]", reason="test",
                measure=_pooled, pools=True, headline=True, samples=_stat,
                band=Band(1.35, 1.65), regime=_regime)


def _judge(*runs: Path) -> C.Verdict:
    [v] = C.evaluate(CLAIM, [[C.Run.open(r) for r in runs]])
    return v


def test_an_interval_claim_holds_only_on_enough_trusted_repetitions(tmp_path):
    v = _judge(_run(tmp_path, "a", [1.50, 1.52, 1.48, 1.51, 1.49]))
    assert v.verdict == C.HOLDS and v.headline
    assert v.interval.startswith("1.5 [") and "n=5 repetitions" in v.interval
    assert v.measured == v.interval and "criterion [1.35, 1.65]" in v.detail
    few = _judge(_run(tmp_path, "b", [1.5, 1.5]))
    assert few.verdict == C.INCONCLUSIVE and "2 of the 5" in few.detail


def test_flagged_runs_are_left_out_and_all_flagged_is_not_trusted(tmp_path):
    good = _run(tmp_path, "20300101", [1.50, 1.52, 1.48, 1.51, 1.49])
    bad = _run(tmp_path, "20300102", [1.0] * 5, suspect=["CPU above 90 %"])
    v = _judge(good, bad)
    assert v.verdict == C.HOLDS and "1 of 2 run folder(s) left out" in v.detail
    only_bad = _judge(_run(tmp_path, "c", [1.5] * 5, suspect=["steal"]))
    assert only_bad.verdict == C.NOT_TRUSTED


def test_a_flagged_repetition_is_left_out_not_its_whole_folder(tmp_path):
    """Reasons that name repetitions ('run 2 ...', outcast's 'n6-run2: ...') leave those
    out; a reason about the whole folder leaves the folder out; all left out: not trusted."""
    vals = [1.50, 1.52, 1.0, 1.51, 1.49, 1.50]
    v = _judge(_run(tmp_path, "a", vals, suspect=["run 2 mptcp: CPU above 90 %"]))
    assert v.verdict == C.HOLDS and "n=5 repetitions" in v.interval
    assert "1 repetition(s) left out" in v.detail
    v = _judge(_run(tmp_path, "b", vals, suspect=["n6-run2: lost", "run00: stalled"]))
    assert "n=4 repetitions" in v.interval and "2 repetition(s) left out" in v.detail
    v = _judge(_run(tmp_path, "c", vals, suspect=["run 2 mptcp: lost", "summary.csv: 1 row"]))
    assert v.verdict == C.NOT_TRUSTED
    every = [f"run {i} tcp: CPU" for i in range(6)]
    assert _judge(_run(tmp_path, "d", vals, suspect=every)).verdict == C.NOT_TRUSTED


def test_outside_the_papers_regime_is_never_holds(tmp_path):
    v = _judge(_run(tmp_path, "a", [1.50, 1.52, 1.48, 1.51, 1.49], lo=0.5))
    assert v.verdict == C.NOT_REGIME and "below the paper's 1.0" in v.detail
    assert v.interval     # the value is still shown


def test_a_deterministic_view_is_one_sample_a_seeded_one_is_many(tmp_path):
    same = _judge(_run(tmp_path, "m", [1.5] * 10, backend="model"))
    assert same.verdict == C.HOLDS and "deterministic: one sample" in same.interval
    drawn = _judge(_run(tmp_path, "n", [1.2, 1.6, 1.4], backend="model"))
    assert drawn.verdict == C.INCONCLUSIVE and "n=3" in drawn.interval


def test_samples_and_band_go_together():
    with pytest.raises(ValueError):
        C.Claim(experiment="toy", key="k", text="t", source="s", paper="p", criterion="c",
                reason="r", measure=_pooled, samples=_stat)


def test_a_straddling_interval_says_how_many_units_would_decide_it():
    """Five values, mean 1.0, sd 0.1, against a band from 1.05: the half-width (0.124)
    straddles the edge 0.05 away; at the same spread the half-width t(n-1) 0.1 / sqrt(n)
    falls below 0.05 at n = 18 (t(17) = 2.110: 0.0497), not at 17 (t(16) = 2.120: 0.0514)."""
    from analysis.intervals import DECIDE_MAX, to_decide
    xs = [0.9, 0.95, 1.0, 1.05, 1.1]     # sd 0.0791
    iv = mean_interval(xs)
    sd = 0.079057
    got = to_decide(iv, Band(1.0 + 0.05))
    from scipy import stats
    want = next(n for n in range(6, 500)
                if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) < 0.05)
    assert got == want
    assert to_decide(iv, Band(1.0)) is None            # the mean on the edge: none decides
    assert to_decide(iv, Band(2.0)) is None            # not straddling: nothing to decide
    assert to_decide(mean_interval([0.0, 2.0]), Band(1.0 + 1e-6)) is None   # past the cap
    assert DECIDE_MAX >= 100


def test_the_ablations_draw_and_name_their_intervals():
    """analysis.intervals' drawing helpers: error bars about the mean, never below 0, and the
    words a figure gives them (#55: intervals, not min-max)."""
    iv = Interval(1.0, 0.8, 1.5, 5)
    flat = Interval(0.3, 0.1 + 0.2, 0.3, 3)           # lo 0.30000000000000004 > the mean
    assert error_bars([iv, flat]) == [[pytest.approx(0.2), 0.0], [0.5, 0.0]]
    assert bars_words([5, 5]) == ("bars: the Student-t 95 % interval of the mean over 5 "
                                  "repetitions")
    assert bars_words([1, 10, 5]).endswith("over 5-10 repetitions; one repetition: no interval")
    assert bars_words([1]) == bars_words([]) == "one repetition: no interval"
    assert bracket_text(iv) == "1.000 [0.800, 1.500]"
    assert bracket_text(Interval(0.5, 0.5, 0.5, 1), 2) == "0.50"
