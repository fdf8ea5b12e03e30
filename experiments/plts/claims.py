"""The claims of 004_a477753408ad7b79.txt (packet-level traffic splitting vs ECMP, Dixit,
Prakash and Kompella, SIGCOMM'11 poster) that the plts experiment judges, once per TCP loss
recovery the run measured (``--recovery modern|classic|both``) and per queue ECMP ran on
(``--ecmp-aqm``): condition ``recovery=modern,ecmp=red`` compares the sprays with ECMP on
RED, ``...,ecmp=droptail`` with ECMP on the sprays' own tail-drop queue.  The paper's set-up
is ECMP on RED/ECN (``ecmp=red`` or ``ecmp=ecn``) beside the sprays on drop-tail; ECMP on
drop-tail is the ablation.  Claims about the sprays alone read the same sprays in every
ECMP condition.

The criteria are the ones this experiment checked before the claims became data (moved here
unchanged from figures.py: same tolerances, same numbers).  Read from summary.csv of the
newest chosen run (figures.summarize writes it from flows.csv and latency.csv); a sweep's
runs are not pooled.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from analysis.claims import Cause, Claim, Missing, Outcome, Run, Samples, claim_maker, need_rows
from analysis.intervals import Band
from analysis.summaries import rounded
from store import cell

from .figures import PAPER_PCT, RECOVERIES, SPRAYS, _ordered, _ratio, aqm_mode, aqm_of

PAPER = "004_a477753408ad7b79.txt"
PAPER_SPRAY_OVER_ECMP = 1.5       # "1.5x better throughput"
PAPER_P90_RATIO = 1 / 3           # spray latency "one-third" of ECMP's at p90 ...
PAPER_P99_RATIO = 1 / 6           # ... and "one-sixth" at p99
PAPER_SPREAD = 10.0               # "an order of magnitude" between ECMP's best and worst flow
#: a "RR ~ 92 %" claim holds when the measured mean is within this many percentage points
PCT_TOLERANCE = 5.0
#: a measured factor without a stated tolerance: 15 % both ways (as Orca's 4.16x)
SPRAY_BAND = Band(PAPER_SPRAY_OVER_ECMP * 0.85, PAPER_SPRAY_OVER_ECMP * 1.15)


#: the queues the paper's ECMP ran on ("ECMP with RED/ECN")
PAPER_ECMP_AQM = ("red", "ecn")
SETUP = ("The paper's set-up is ECMP on RED/ECN beside the sprays on drop-tail: the "
         "condition ecmp=red (or ecmp=ecn); ecmp=droptail puts ECMP on the sprays' own "
         "tail-drop queue (the ablation).")


def conditions(runs: list[Run]) -> list[str]:
    """One condition per loss recovery in the run's summary (modern first) and per queue
    ECMP ran on under it ('recovery=modern,ecmp=red'), in the run's order."""
    rows = runs[0].table("summary.csv")
    out = []
    for rec in _ordered((str(x.get("recovery", "")) for x in rows), RECOVERIES):
        modes = dict.fromkeys(aqm_mode(aqm_of(x)) for x in rows
                              if str(x.get("recovery", "")) == rec and x.get("scheme") == "ecmp")
        out += [f"recovery={rec},ecmp={m}" for m in modes] or [f"recovery={rec}"]
    return out


def _by_scheme(runs: list[Run], cond: str) -> dict[str, dict[str, str]]:
    """The summary rows of a condition by scheme: ECMP's on the condition's queue."""
    parts = dict(p.split("=", 1) for p in cond.split(",") if "=" in p)
    out: dict[str, dict[str, str]] = {}
    for r in need_rows(runs[:1], "summary.csv"):
        if str(r.get("recovery", "")) != parts.get("recovery", ""):
            continue
        scheme = str(r["scheme"])
        if scheme == "ecmp" and "ecmp" in parts and aqm_mode(aqm_of(r)) != parts["ecmp"]:
            continue
        out.setdefault(scheme, r)
    return out


def _in_cond(row: dict[str, str], parts: dict[str, str]) -> bool:
    """Whether a flows.csv or latency.csv row belongs to the condition ``parts`` (its
    recovery, and for ECMP its queue)."""
    if str(row.get("recovery", "")) != parts.get("recovery", ""):
        return False
    return row.get("scheme") != "ecmp" or "ecmp" not in parts or \
        aqm_mode(aqm_of(row)) == parts["ecmp"]


def _per_rep(runs: list[Run], cond: str, table: str, col: str
             ) -> dict[tuple[str, str], dict[str, list[float]]]:
    """Per repetition (run folder, run: one pairing, every scheme on it in turn): each
    scheme's values of ``col`` in ``table``, for the condition."""
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    parts = dict(p.split("=", 1) for p in cond.split(",") if "=" in p)   # once, not per row
    for r in need_rows(runs, table):
        x = cell(r.get(col))
        if _in_cond(r, parts) and x == x:
            out.setdefault((r["_run"], r["run"]), {}).setdefault(r["scheme"], []).append(x)
    return out


def rep_pct(scheme: str) -> Callable[[list[Run], str], Samples]:
    """Per repetition: the scheme's mean % of ideal over its flows."""
    def samples(runs: list[Run], cond: str) -> Samples:
        reps = _per_rep(runs, cond, "flows.csv", "pct_ideal")
        return Samples(tuple(float(np.mean(v[scheme])) for v in reps.values() if v.get(scheme)))
    return samples


def rep_spray_over_ecmp(runs: list[Run], cond: str) -> Samples:
    """Per repetition: the sprays' mean % of ideal (mean of the three schemes' means) over
    ECMP's on the same pairing."""
    vals = []
    for v in _per_rep(runs, cond, "flows.csv", "pct_ideal").values():
        sprays = [float(np.mean(v[s])) for s in SPRAYS if v.get(s)]
        if sprays and v.get("ecmp") and np.mean(v["ecmp"]) > 0:
            vals.append(float(np.mean(sprays)) / float(np.mean(v["ecmp"])))
    return Samples(tuple(vals))


def rep_latency(pct: int) -> Callable[[list[Run], str], Samples]:
    """Per repetition: the mean over the sprays of each one's ``pct``-th percentile of
    sampled packets' one-way fabric latency, over ECMP's on the same pairing."""
    def samples(runs: list[Run], cond: str) -> Samples:
        vals = []
        for v in _per_rep(runs, cond, "latency.csv", "latency_us").values():
            sprays = [float(np.percentile(v[s], pct)) for s in SPRAYS if v.get(s)]
            if sprays and v.get("ecmp"):
                base = float(np.percentile(v["ecmp"], pct))
                if base > 0:
                    vals.append(float(np.mean(sprays)) / base)
        return Samples(tuple(vals))
    return samples


#: the paper's regime: its TCP is QualNet's of 2011 (fast retransmit on three duplicate
#: ACKs, no reordering detection: --recovery classic) and its ECMP ran on RED/ECN
PAPER_RECOVERY = "classic"


def paper_regime(_runs: list[Run], cond: str) -> str:
    """'' when the condition is the paper's set-up, else why not."""
    parts = dict(p.split("=", 1) for p in cond.split(",") if "=" in p)
    why = []
    if parts.get("recovery") != PAPER_RECOVERY:
        why.append(f"TCP recovery '{parts.get('recovery')}', not the paper's era's (three "
                   "duplicate ACKs, no reordering detection: --recovery classic); a TCP that "
                   "tolerates reordering makes a spray look better than the paper's TCP could")
    if parts.get("ecmp", "red") not in PAPER_ECMP_AQM:
        why.append(f"ECMP on {parts.get('ecmp')}, not the paper's RED/ECN (the ablation)")
    return "; ".join(why)


def _val(by: dict[str, dict[str, str]], scheme: str, col: str) -> float:
    return cell(by[scheme].get(col)) if scheme in by else float("nan")


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


def pct_of_ideal(scheme: str) -> Callable[[list[Run], str], Outcome]:
    paper = PAPER_PCT[scheme]

    def measure(runs: list[Run], cond: str) -> Outcome:
        m = _val(_by_scheme(runs, cond), scheme, "mean_pct_ideal")
        if m != m:
            raise Missing(f"no {scheme} flows")
        return Outcome(f"{rounded(m, 2)}", abs(m - paper) <= PCT_TOLERANCE,
                       f"mean % of ideal over every {scheme} flow of every run")
    return measure


def _spray_means(by: dict[str, dict[str, str]]) -> dict[str, float]:
    means = {s: _val(by, s, "mean_pct_ideal") for s in SPRAYS}
    return {s: m for s, m in means.items() if m == m}


def rnd_lowest(runs: list[Run], cond: str) -> Outcome:
    present = _spray_means(_by_scheme(runs, cond))
    if len(present) < len(SPRAYS):
        raise Missing("needs all three sprays (rnd, cnt, rr)")
    ok = present["rnd"] < present["cnt"] and present["rnd"] < present["rr"]
    return Outcome(_yes(ok), ok, ", ".join(f"{s} {m:.1f} %" for s, m in present.items()))


def sprays_above_ecmp(runs: list[Run], cond: str) -> Outcome:
    by = _by_scheme(runs, cond)
    ecmp, present = _val(by, "ecmp", "mean_pct_ideal"), _spray_means(by)
    if ecmp != ecmp or not present:
        raise Missing("needs ECMP and at least one spray")
    ok = all(m > ecmp for m in present.values())
    return Outcome(_yes(ok), ok, f"ecmp {ecmp:.1f} %, "
                   + ", ".join(f"{s} {m:.1f} %" for s, m in present.items()))


def spray_over_ecmp(runs: list[Run], cond: str) -> Outcome:
    by = _by_scheme(runs, cond)
    ecmp, present = _val(by, "ecmp", "mean_pct_ideal"), _spray_means(by)
    ratio = _ratio(float(np.mean(list(present.values()))), ecmp) if present else float("nan")
    if ratio != ratio:
        raise Missing("needs ECMP and at least one spray")
    return Outcome(f"{rounded(ratio, 3)}", ratio >= PAPER_SPRAY_OVER_ECMP,
                   ", ".join(f"{s} {_ratio(m, ecmp):.2f}x" for s, m in present.items()))


def latency_ratio(pct: str, paper: float) -> Callable[[list[Run], str], Outcome]:
    col = f"latency_{pct}_us"

    def measure(runs: list[Run], cond: str) -> Outcome:
        by = _by_scheme(runs, cond)
        base = _val(by, "ecmp", col)
        lat = {s: v for s in SPRAYS if (v := _val(by, s, col)) == v}
        ratio = _ratio(float(np.mean(list(lat.values()))), base) if lat else float("nan")
        if ratio != ratio:
            raise Missing("no latency samples (the model backend has none)")
        return Outcome(f"{rounded(ratio, 3)}", ratio <= paper,
                       f"ecmp {base:g} us, " + ", ".join(
                           f"{s} {v:g} us ({_ratio(v, base):.2f})" for s, v in lat.items()))
    return measure


def ecmp_spread(runs: list[Run], cond: str) -> Outcome:
    by = _by_scheme(runs, cond)
    s = _val(by, "ecmp", "max_over_min_run_median")
    if s != s:
        raise Missing("no ECMP flows moved data")
    return Outcome(f"{rounded(s, 2)}", s >= PAPER_SPREAD,
                   f"pooled over runs {rounded(_val(by, 'ecmp', 'max_over_min'), 2)}")


def spray_spread(runs: list[Run], cond: str) -> Outcome:
    by = _by_scheme(runs, cond)
    sp = {s: v for s in SPRAYS if (v := _val(by, s, "max_over_min_run_median")) == v}
    if not sp:
        raise Missing("no spray's flows moved data")
    worst = max(sp.values())
    return Outcome(f"{rounded(worst, 2)}", worst < PAPER_SPREAD,
                   ", ".join(f"{s} {v:.2f}" for s, v in sp.items()))


_make = claim_maker(PAPER, experiment="plts", conditions=conditions,
                    figure="throughput.png")


def _claim(**fields: object) -> Claim:
    """A plts claim: every reason ends with which condition is the paper's set-up."""
    return _make(**{**fields, "reason": f"{fields['reason']}  {SETUP}"})

_POINT = ("A point estimate read off a bar chart: within +-5 points of the paper's value "
          "counts as reproduced (the gap to the neighbouring scheme in the paper is 11 "
          "points).  Mean over every flow of every run.")


#: why a spray's throughput claims fail in the flow model's view: what it lacks
MODEL_NO_REORDERING = Cause(
    "the flow model has no reordering, no queue and no TCP: a spray's flows take their "
    "max-min rates, the ideal, so a spray's shortfall from the ideal and the order of the "
    "sprays, which come from TCP's reaction to reordered segments, are not in it",
    by_construction=True)


#: why RR's % of ideal is above the paper's band in the emulation (the page's sentence)
RR_CAUSE = Cause(
    "every sprayed path of the k=6 fat tree has the same length and rate, so round-robin "
    "segments arrive nearly in order and TCP rarely backs off; in ns-3 random jitter of up "
    "to one frame's time on every link brought RR into the paper's band, but the emulation "
    "has not been run with it")
#: the same in the ns-3 view, where it was ablated (criterion written before the runs:
#: docs/notebook/004-plts.md, "RR alone, five pairings")
SIM_NO_TIMING_NOISE = Cause(
    "ns-3's links are exact and every sprayed path of the k=6 fat tree has the same length "
    "and rate, so round-robin segments arrive nearly in order and TCP hardly backs off; "
    "delaying every packet on every link by a random extra of up to one frame's time (too "
    "little for a link to reorder its own packets) lowers RR in every pairing, into the "
    "paper's band",
    ablation=("plts-ablation/sim-jitter-0", "plts-ablation/sim-jitter-2400"))


#: why CNT's % of ideal is above the paper's in the emulation (criterion written before the
#: runs: docs/notebook/004-plts.md, "the counter ablation"); the undo run tested, and
#: refuted, the other candidate the sentence names
CNT_COUNTS = Cause(
    "dcrepro's CNT sends each packet out of the port that has sent the fewest bytes, and the "
    "paper's 'local port counters' do not say what they count; counting packets instead (a "
    "bare ACK then weighs as much as a full segment, so the links carry unequal bytes) brings "
    "CNT down into the paper's band with RR nearly unchanged, while never undoing a spurious "
    "retransmission's window cut does not lower it",
    ablation=("plts-ablation/counter-bytes", "plts-ablation/counter-packets",
              "plts-ablation/noundo"))


#: the same in the ns-3 view (criterion written before the runs: docs/notebook/004-plts.md,
#: "CNT in ns-3: what it counts")
SIM_CNT_COUNTS = Cause(
    "the simulated CNT balances bytes per port, as dcrepro's BPF switch does; balancing "
    "packets instead, which the simulated switches honour, lowers it in every pairing toward "
    "the paper's value, as in the emulation, but not into its band: the exact links that keep "
    "RR near the ideal remain",
    ablation=("plts-ablation/sim-cnt-bytes", "plts-ablation/sim-cnt-packets"))


def _pct(scheme: str, quote: str, causes: Mapping[str, Cause]) -> Claim:
    """A spray's mean % of ideal within PCT_TOLERANCE points of the paper's (Fig. 1(a))."""
    paper = PAPER_PCT[scheme]
    return _claim(key=f"{scheme}-pct", text=f"{scheme.upper()} % of ideal",
                  where="Fig. 1(a), section 3", paper=f"{paper:g} %", quote=quote,
                  criterion=f"per repetition the mean % of ideal of its {scheme} flows; the "
                            f"95 % interval of its mean within {paper:g} +- "
                            f"{PCT_TOLERANCE:g} points",
                  reason=_POINT, measure=pct_of_ideal(scheme), headline=scheme == "rr",
                  samples=rep_pct(scheme), paper_value=paper,
                  causes={"model": MODEL_NO_REORDERING, **causes},
                  band=Band(paper - PCT_TOLERANCE, paper + PCT_TOLERANCE),
                  regime=paper_regime)


#: the paper's "one-third" and "one-sixth" are rounded words, so each band reaches halfway to
#: the neighbouring simple fraction: 1/3 -> [1/3.5, 1/2.5], 1/6 -> [1/6.5, 1/5.5] (issue
#: #52: a point value gets a two-sided band; written 2026-12-01, before the runs that
#: judge it; before that the criteria were one-sided, <= 1/3 and <= 1/6)
LATENCY_BANDS = {"p90": Band(1 / 3.5, 1 / 2.5), "p99": Band(1 / 6.5, 1 / 5.5)}
LATENCY_BAND_REASON = ("  The paper's fractions are rounded words: the band reaches halfway "
                       "to the neighbouring simple fraction (1/3: 1/3.5-1/2.5; 1/6: "
                       "1/6.5-1/5.5), both ways, since a spray far below the paper's "
                       "fraction does not reproduce it either.")


#: why the sprays' latency is a far smaller fraction of ECMP's than the paper's (one sentence
#: for the paper's page)
LATENCY_CAUSE = Cause(
    "ECMP's collided links hold standing queues many packets deep while the sprays' queues "
    "stay nearly empty, so the sprays' latency is a far smaller fraction of ECMP's than the "
    "paper's; how deep ECMP's queue runs is set by the queue size and link rate, which the "
    "paper does not state")

#: the judged pairings' draw: the flow model over many drawn pairings and hashes (the
#: ablation of the draw), and the emulated ECMP networks of the reference and the undo run
#: against the model on their own traced paths (each network its own hash draw)
_DRAWS = "plts-ablation/draws"
_EMULATED_NETWORKS = ("plts/20261127T071454Z-200b2d", "plts-ablation/noundo")
#: the ns-3 reference: ECMP on RED and on drop-tail beside the sprays, each with its flow
#: model on the simulated paths
_SIM_REFERENCE = "plts/20261126T210554Z-45d2c6"

#: why spray/ECMP throughput falls short of the paper's factor, by view
SPRAY_OVER_ECMP_CAUSES: Mapping[str, Cause] = {
    "emulated": Cause(
        "ECMP gets what its hash collisions leave it, and that is a draw of the pairing and "
        "the hash: over many drawn pairings the flow model's ECMP share spreads widely and "
        "gives the paper's factor, beside the emulated sprays, in a minority of draws only; "
        "the emulated ECMP networks sit near the model on their own traced paths and their "
        "ratio follows that draw (the paper ran one pairing)",
        ablation=(_DRAWS, *_EMULATED_NETWORKS)),
    "model": Cause(
        "the model's ECMP gets what the pairing's hash collisions leave it, and with the "
        "sprays at the ideal the paper's factor needs ECMP near two thirds of the ideal; "
        "drawn pairings and hashes spread ECMP's share widely around that, so whether a "
        "pairing gives the paper's factor is a draw",
        ablation=_DRAWS),
    "sim": Cause(
        "ns-3's ECMP on RED sits on its flow model, so the gap below the paper's factor is the "
        "pairing's draw of collisions, as in the model's view, and RND's reordering, with no "
        "drop in the sprays' fabric",
        ablation=(_SIM_REFERENCE, _DRAWS)),
}

#: why ECMP's best and worst flows do not differ by an order of magnitude, by view
ECMP_SPREAD_CAUSES: Mapping[str, Cause] = {
    # the run with ECMP on both queues, the same pairings (RED: run-median max/min about
    # half drop-tail's); the notebook's older numbers are from a run its CPU check flagged
    # (48d96f), so that one is not cited
    "emulated": Cause(
        "ECMP's hash collisions put only a few of these flows on one link, and a queue that "
        "shares a collided link evenly keeps the spread near the flow model's on the traced "
        "paths; the claim's other ECMP queue, drop-tail, widens it through lockout",
        ablation="plts/20261127T071454Z-200b2d"),
    "model": Cause(
        "a fluid max-min model splits a collided link evenly, and ECMP's hash collisions put "
        "only a few of these flows on one link, so its spread stays small; an order of "
        "magnitude needs a queue that shares a collided link unevenly",
        by_construction=True),
    "sim": Cause(
        "on RED the flows of a collided link share it evenly in ns-3 too, as in the emulation, "
        "with only a few of these flows on one link; on drop-tail ns-3's lockout gives the "
        "spread",
        ablation=_SIM_REFERENCE),
}


def _latency(pct: str, ratio: float, quote: str, reason: str) -> Claim:
    """The sprays' latency at percentile ``pct`` at most ``ratio`` of ECMP's (Fig. 1(b))."""
    band = LATENCY_BANDS[pct]
    return _claim(key=f"latency-{pct}", figure="latency_rank.png", text=f"latency {pct} spray/ECMP",
                  where="Fig. 1(b), section 3", paper=f"{round(ratio, 3)}", quote=quote,
                  criterion=f"per repetition the mean of the sprays' {pct} / ECMP's {pct}; the "
                            f"95 % interval of its mean within {band.text(3)}",
                  reason=reason + LATENCY_BAND_REASON, measure=latency_ratio(pct, ratio),
                  headline=True, samples=rep_latency(int(pct[1:])), band=band,
                  regime=paper_regime, causes={"emulated": LATENCY_CAUSE}, paper_value=ratio)


CLAIMS = [
    _pct("rr", "PLTS-RR is able to achieve almost 92% of the ideal throughput",
         {"emulated": RR_CAUSE, "sim": SIM_NO_TIMING_NOISE}),
    _pct("cnt", "PLTS-CNT attains around 81% of the ideal throughput",
         {"emulated": CNT_COUNTS, "sim": SIM_CNT_COUNTS}),
    _claim(key="rnd-lowest", text="RND lowest of the three sprays",
           where="Fig. 1(a), section 3",
           paper="yes", quote="Among packet-level traffic splitting, PLTS-RND attains the "
                                "least throughput",
           criterion="rnd mean < cnt and rr means",
           reason="An ordering in the text; the means of % of ideal are compared as they are.",
           measure=rnd_lowest, causes={"model": MODEL_NO_REORDERING}),
    _claim(key="sprays-above-ecmp", text="every spray above ECMP",
           where="Fig. 1(a), section 3",
           paper="yes",
           quote="All the three PLTS techniques achieve better throughput than ECMP",
           criterion="each spray's mean % of ideal > ECMP's",
           reason="An ordering in the text; every spray measured must beat ECMP.",
           measure=sprays_above_ecmp),
    _claim(key="spray-over-ecmp", text="spray/ECMP throughput",
           where="abstract and section 1",
           paper=f"{PAPER_SPRAY_OVER_ECMP:g}",
           quote="per-packet load balancing outperforms ECMP in all the dimensions—1.5× "
                 "better throughput",
           criterion=f"per repetition the sprays' mean % of ideal / ECMP's; the 95 % "
                     f"interval of its mean within {SPRAY_BAND.text(3)}",
           reason="'1.5x better', for the sprays on average (the abstract speaks of "
                  "per-packet load balancing as one).  A measured factor with no tolerance "
                  "given: within 15 % both ways, as for Orca's 4.16x (issue #52, written "
                  "2026-12-01 before the runs that judge it; before that the criterion was "
                  "'at least 1.5').",
           measure=spray_over_ecmp, headline=True, paper_value=PAPER_SPRAY_OVER_ECMP,
           samples=rep_spray_over_ecmp,
           band=SPRAY_BAND, regime=paper_regime, causes=SPRAY_OVER_ECMP_CAUSES),
    _latency("p90", PAPER_P90_RATIO,
             "A packet in PLTS experiences only one-third of the packet latency of ECMP with "
             "RED/ECN at the 90th percentile",
             "The spray's latency is at most that fraction of ECMP's.  One-way fabric latency "
             "of sampled packets (stamped at the first switch, measured where the last "
             "hands it to the host's port); emulated and simulated runs."),
    _latency("p99", PAPER_P99_RATIO,
             "... and one-sixth of the packet latency at the 99th percentile",
             "As for p90, at the 99th percentile."),
    _claim(key="ecmp-spread", figure="flows_rank.png", text="ECMP per-flow max/min >= 10",
           where="Fig. 1(c), section 3",
           paper=f">= {PAPER_SPREAD:g}",
           quote="There is an order of magnitude of difference between the highest and "
                 "lowest throughput seen by ECMP",
           criterion="median over runs of per-run max/min >= 10",
           reason="An order of magnitude is a factor 10.  Per run (one run is one "
                  "realisation of the paper's single experiment), median over runs, so that "
                  "runs are not mixed.",
           measure=ecmp_spread, causes=ECMP_SPREAD_CAUSES),
    _claim(key="spray-spread", figure="flows_rank.png", text="spray per-flow max/min < 10",
           where="Fig. 1(c), section 3",
           paper=f"< {PAPER_SPREAD:g}",
           quote="Flow throughputs for ECMP show a huge variability as compared to those of "
                 "PLTS",
           criterion="largest spray's median over runs of per-run max/min < 10",
           reason="The contrast to ECMP's order of magnitude: no spray reaches it.",
           measure=spray_spread),
]
