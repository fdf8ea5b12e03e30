"""Summaries and figures of the ``plts`` experiment (packet-level traffic splitting vs ECMP,
Dixit, Prakash and Kompella, SIGCOMM'11 poster); its paper's claims are in claims.py.

Reads the run folder only: flows.csv (one row per flow, scheme, its AQM, run and recovery)
and, for emulated runs, latency.csv (one row per sampled data packet) and queues.csv (per
tier of switch ports: sampled queue lengths, drops, marks).  Writes summary.csv and the
figures throughput.png (Fig. 1a), latency_rank.png (Fig. 1b, only when there are latency
samples) and flows_rank.png (Fig. 1c); with path lengths and queues recorded (runs since
the per-scheme AQM), latency_sources.csv and latency_sources.png: where the latency comes
from.  A scheme is named with its AQM everywhere ("ECMP (red)"); rows without an ``aqm``
column (older runs) ran on drop-tail.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from analysis.figures import (
    caption,
    footer_height,
    interval_bars,
    judged,
    note,
    optional_table,
    panel_row,
    paper_mark,
    paper_values,
    per_run,
    rank_curves,
    rank_line,
    refuse_unplottable,
    run_means,
    save,
    save_judged,
    seconds_text,
    table,
    time_axis,
)
from analysis.intervals import Interval, mean_interval
from analysis.summaries import goodput_means, group_stats, present, rounded
from model import jain_index
from store import cell, read_csv, write_csv
from store.views import view_of

SCHEMES = ("ecmp", "rnd", "cnt", "rr")
SPRAYS = ("rnd", "cnt", "rr")
RECOVERIES = ("modern", "classic", "noundo")
LABELS = {"ecmp": "ECMP", "rnd": "PLTS-RND", "cnt": "PLTS-CNT", "rr": "PLTS-RR"}
TCP_COUNTERS = ("retrans", "reord_seen", "dsack_dups")
#: the paper's Fig. 1(a) numbers given in its text (% of ideal throughput): the claims'
#: paper_value (claims.py), which the figures draw (analysis.figures.paper_values)
PAPER_PCT = {"rr": 92.0, "cnt": 81.0}
LAT_SAMPLES_DRAWN = 2000          # points per ranked latency curve (quantiles, not thinning)

#: the queue note of every figure (older runs, before --ecmp-aqm: one queue for all)
NO_RED = ("ECMP without RED/ECN (no RED qdisc on this kernel); all schemes share the same "
          "tail-drop pfifo")
#: rows of runs before the per-scheme AQM had none: every port was drop-tail
DEFAULT_AQM = "droptail"
LATENCY_DEF = ("latency: one-way fabric latency of sampled data packets, from ingress of the "
               "first switch to ingress of the last switch (host-link queues excluded)")


# -- helpers ------------------------------------------------------------------------------



def _count(x: float) -> Any:
    """Counter sums as ints when integral ('' when missing)."""
    if x != x:
        return ""
    return int(x) if float(x).is_integer() else round(x, 4)


def _ordered(values: Iterable[str], known: tuple[str, ...]) -> list[str]:
    """Known names first in their fixed order, then the others in first-seen order."""
    seen = list(dict.fromkeys(values))
    return [k for k in known if k in seen] + [v for v in seen if v not in known]


def _label(scheme: str, aqm: str | None = None) -> str:
    """'ECMP', or with its AQM's mode 'ECMP (red)'."""
    name = LABELS.get(scheme, scheme.upper())
    return name if aqm is None else f"{name} ({aqm_mode(aqm)})"


def aqm_of(row: dict[str, Any]) -> str:
    """A row's AQM as written (DEFAULT_AQM for rows of older runs that have none)."""
    return str(row.get("aqm") or DEFAULT_AQM)


def aqm_mode(aqm: str) -> str:
    """'red,min=20,max=60,...' -> 'red'."""
    return aqm.split(",")[0]


def spread(values: Iterable[Any]) -> float:
    """max/min of per-flow throughputs.  A starved flow (min 0, max > 0) gives inf: a flow
    that got nothing is more than any finite factor behind; NaN when no flow moved data or
    there are no values (the spread is undefined then)."""
    v = present(values)
    if not v or max(v) <= 0:
        return float("nan")
    lo = min(v)
    return math.inf if lo <= 0 else max(v) / lo


def _ratio(a: float, b: float) -> float:
    """a/b with missing inputs NaN, x/0 inf for x > 0 and 0/0 NaN."""
    if a != a or b != b:
        return float("nan")
    if b == 0:
        return math.inf if a > 0 else float("nan")
    return a / b


# -- summaries ----------------------------------------------------------------------------

def _flow_stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    runs = list(dict.fromkeys(str(r.get("run", "")) for r in rows))
    mbps = present(r.get("mbps") for r in rows)
    pct = group_stats(cell(r.get("pct_ideal")) for r in rows)
    pct_v = present(r.get("pct_ideal") for r in rows)
    model_pct = [100 * _ratio(cell(r.get("model_mbps")), cell(r.get("ideal_mbps"))) for r in rows]
    model_pct = [x for x in model_pct if x == x and not math.isinf(x)]
    per_run = [[r.get("mbps") for r in rows if str(r.get("run", "")) == run] for run in runs]
    run_spread = [s for s in (spread(v) for v in per_run) if s == s]
    # Jain per run (flows of one run share the fabric), then averaged over runs
    jains = [jain_index(v) for v in (present(x) for x in per_run) if v]
    jains = [j for j in jains if j == j]
    out: dict[str, Any] = {
        "flows": len(rows), "flows_missing": sum(cell(r.get("mbps")) != cell(r.get("mbps"))
                                                 for r in rows),
        "runs": len(runs),
        "mean_pct_ideal": pct.get("mean", ""),
        "median_pct_ideal": rounded(float(np.median(pct_v))) if pct_v else "",
        "p10_pct_ideal": pct.get("p10", ""),
        "p90_pct_ideal": rounded(float(np.percentile(pct_v, 90))) if pct_v else "",
        "min_pct_ideal": rounded(min(pct_v)) if pct_v else "",
        "max_pct_ideal": rounded(max(pct_v)) if pct_v else "",
        "mean_mbps": rounded(float(np.mean(mbps))) if mbps else "",
        "min_mbps": rounded(min(mbps)) if mbps else "",
        "max_mbps": rounded(max(mbps)) if mbps else "",
        # pooled over every run's flows ...
        "max_over_min": rounded(spread(mbps)),
        # ... and per run (one run = one realisation of the paper's single experiment),
        # median over runs; the claims use this one so that runs are not mixed
        "max_over_min_run_median": rounded(float(np.median(run_spread))) if run_spread else "",
        "jain": rounded(float(np.mean(jains))) if jains else "",
        "mean_model_pct_ideal": rounded(float(np.mean(model_pct))) if model_pct else "",
    }
    for c in TCP_COUNTERS:
        v = present(r.get(c) for r in rows)
        out[f"{c}_sum"] = _count(float(sum(v))) if v else ""
        out[f"{c}_median"] = rounded(float(np.median(v))) if v else ""
    reo = present(r.get("reordering") for r in rows)
    out["reordering_median"] = rounded(float(np.median(reo))) if reo else ""
    cpu = present(r.get("cpu_mean") for r in rows)
    sat = present(r.get("cpu_saturated_share") for r in rows)
    loss = present(r.get("emulator_loss_share") for r in rows)
    out["cpu_mean"] = rounded(float(np.mean(cpu)), 1) if cpu else ""
    out["cpu_saturated_share"] = rounded(float(np.mean(sat)), 3) if sat else ""
    out["emulator_loss_share_max"] = rounded(max(loss), 6) if loss else ""
    return out


def _latency_stats(values: list[float]) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {"latency_samples": 0, "latency_p50_us": "", "latency_p90_us": "",
                "latency_p99_us": ""}
    # numpy's default (linear interpolation between closest ranks)
    p50, p90, p99 = (float(x) for x in np.percentile(v, [50, 90, 99]))
    return {"latency_samples": int(v.size), "latency_p50_us": rounded(p50, 2),
            "latency_p90_us": rounded(p90, 2), "latency_p99_us": rounded(p99, 2)}


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    """(recovery, scheme, AQM) of a row."""
    return str(row.get("recovery", "")), str(row.get("scheme", "")), aqm_of(row)


def _variants(keys: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(scheme, AQM) pairs in scheme order (ecmp, rnd, cnt, rr, others), AQMs as first seen."""
    return [(s, a) for s in _ordered((k[0] for k in keys), SCHEMES)
            for a in dict.fromkeys(a for k, a in keys if k == s)]


def summarize(flows_rows: list[dict[str, Any]],
              latency_rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per (scheme, AQM, recovery), grouped by recovery, schemes in the order ecmp,
    rnd, cnt, rr (others after), a scheme's AQMs as first seen.  Every flow of every run is
    pooled unless a column says per run; latency percentiles pool every run's samples
    (empty when there are none)."""
    latency_rows = latency_rows or []
    keys = [_key(r) for r in [*flows_rows, *latency_rows]]
    out = []
    for rec in _ordered((k[0] for k in keys), RECOVERIES):
        for scheme, aqm in _variants([(s, a) for r, s, a in keys if r == rec]):
            key = (rec, scheme, aqm)
            lat = present(r.get("latency_us") for r in latency_rows if _key(r) == key)
            out.append({"scheme": scheme, "aqm": aqm, "recovery": rec,
                        **_flow_stats([r for r in flows_rows if _key(r) == key]),
                        **_latency_stats(lat)})
    return out


# -- figures ------------------------------------------------------------------------------

def _notes(config: dict[str, Any], rows: list[dict[str, str]]) -> str:
    """Notes every figure shares (figures.json, on the report page): schemes, the queue,
    the backend, the validity numbers of the flows."""
    from analysis.fidelity import validity_caption  # CPU, off-queue losses, SUSPECT past limits
    p = config["params"]
    v = view_of(p)
    how = (f"backend={v.name}: {goodput_means(v.name)} over the measurement window; % of "
           "ideal = goodput / the payload ceiling of one host link as this view carries it"
           if v.measures else f"backend={v.name}: flow-model numbers, not measurements")
    text = f"schemes={p.get('schemes')}, recovery={p.get('recovery')}\n{queues_note(p)}\n{how}"
    # the CPU and off-queue loss columns only an emulated run's rows hold ('' without them)
    return text + validity_caption(rows)


def queues_note(params: dict[str, Any]) -> str:
    """What queue each scheme ran on: NO_RED for runs before the per-scheme AQM."""
    if "ecmp_aqm" not in params:
        return NO_RED
    aqm = params.get("aqm", DEFAULT_AQM)
    ecmp = params.get("ecmp_aqm") or aqm
    v = view_of(params)
    asked = f"sprays on --aqm {aqm}, ECMP on {ecmp.replace('/', ' and on ')}"
    if not v.measures:
        return f"{asked} (the flow model has {v.queues}: neither applies)"
    return (f"{asked} ({v.queues} of {params.get('queue')}; hosts ask for ECN where the "
            "ports mark)")


def _by(rows: list[dict[str, str]], rec: str) -> dict[tuple[str, str], list[dict[str, str]]]:
    """The rows of one recovery by (scheme, AQM), in scheme order."""
    mine = [r for r in rows if r.get("recovery", "") == rec]
    return {(s, a): [r for r in mine if r["scheme"] == s and aqm_of(r) == a]
            for s, a in _variants([(r["scheme"], aqm_of(r)) for r in mine])}


def _per_recovery(run_dir: Path, config: dict[str, Any], recs: list[str], notes: str,
                  name: str, title: str, draw: Callable[[Any, str], Any],
                  legend: tuple[str, int] | tuple[str, int, int], what: str) -> Path:
    """One figure ``name``, a panel per loss recovery: ``draw(ax, rec)`` fills it, then its
    legend (where, font size, columns: 1 unless given) and title; under it the claims
    judged on it (the paper's value beside ours, analysis.figures.claims_footer); saved
    with the run's notes and ``what`` it shows."""
    claims = judged(run_dir, config, name)
    fig, axes = panel_row(len(recs), caption(config, title), height=4.8 + footer_height(claims))
    for ax, rec in zip(axes, recs):
        draw(ax, rec)
        ax.legend(loc=legend[0], fontsize=legend[1], ncol=legend[2] if len(legend) > 2 else 1)
        ax.set_title(f"recovery={rec}", fontsize=9)
    return note(save_judged(fig, run_dir / name, claims), notes,
                what + ("; under the figure: the claims judged on it, the paper's value "
                        "beside ours" if claims else ""))


def plot_throughput(run_dir: Path, config: dict[str, Any], summary: list[dict[str, Any]],
                    recs: list[str], notes: str,
                    rows: list[dict[str, str]] | None = None) -> Path:
    """Fig. 1(a): per scheme the mean over repetitions of its mean % of ideal (as the
    claims take it) with the 95 % interval of that mean, the paper's numbers (claims'
    paper_value) as red diamonds."""
    paper = {k.split("-")[0]: v for k, v in paper_values(config, "throughput.png").items()
             if k.endswith("-pct")}

    def draw(ax: Any, rec: str) -> None:
        srows = [s for s in summary if s["recovery"] == rec and s["flows"]]
        x = np.arange(len(srows))
        mine = _by(rows or [], rec)
        ivs = []
        for s in srows:
            reps = run_means(mine.get((s["scheme"], aqm_of(s)), []),
                             lambda r: cell(r.get("pct_ideal")))
            pooled = cell(s["mean_pct_ideal"])    # without the flows' rows: no interval
            ivs.append(mean_interval(reps) if reps else Interval(pooled, pooled, pooled, 1))
        tops = interval_bars(ax, x, ivs, 0.6, capsize=4, color="tab:blue", alpha=0.8,
                             label="measured" if view_of(config["params"]).measures
                             else "flow model")
        for xi, iv in zip(x, ivs):
            if iv.mean == iv.mean:
                ax.text(xi, iv.mean / 2, f"{iv.mean:.1f}", ha="center", fontsize=8,
                        color="white")
        labelled = False
        for xi, s in zip(x, srows):
            if s["scheme"] in paper:
                paper_mark(ax, xi + 0.12, paper[s["scheme"]], f"paper {paper[s['scheme']]:g}",
                           offset=(5, 0), legend=None if labelled else "paper")
                labelled = True
        model = [(xi, cell(s.get("mean_model_pct_ideal"))) for xi, s in zip(x, srows)]
        model = [(xi, m) for xi, m in model if m == m]
        if model and view_of(config["params"]).measures:
            ax.scatter(*zip(*model), marker="_", s=300, color="black", zorder=4,
                       label="flow model (mean)")
        ax.set_xticks(x, [_label(s["scheme"], aqm_of(s)) for s in srows], fontsize=8)
        # room on the right for the last bar's "paper NN" label (it touched the frame)
        ax.set_xlim(-0.6, len(srows) - 0.4 + 0.45)
        ax.set_ylabel("average throughput (% of ideal: one host link's goodput)")
        # the legend in one row above the bars (lower right, it covered the last bar)
        ax.set_ylim(0, max(125.0, float(np.nanmax(tops, initial=0)) + 22))
        ax.grid(alpha=0.3, axis="y")
    return _per_recovery(run_dir, config, recs, notes, "throughput.png",
                         "average throughput per scheme (004 Fig. 1a)", draw,
                         ("upper center", 8, 3),
                         "bars: per repetition the scheme's mean % of ideal over its flows, "
                         "then the mean over repetitions; whiskers: its 95 % interval "
                         "(Student's t, as the claims); red diamonds: the paper's numbers; "
                         "the paper cites MPTCP ~90 % on this setup (not measured here)")


def _latency(us: float) -> str:
    """A latency in the unit that reads best, at most 3 significant digits: '850 µs',
    '4.1 ms', '115 ms'."""
    return seconds_text(us / 1e6)


def plot_latency_rank(run_dir: Path, config: dict[str, Any], latency: list[dict[str, str]],
                      recs: list[str], notes: str) -> Path:
    """Fig. 1(b): every sampled packet's latency ranked, per scheme, log y, p90/p99 marked;
    the paper's spray/ECMP ratios (claims' paper_value) as the latency they give beside
    ECMP's p90 and p99 (red diamonds)."""
    paper = paper_values(config, "latency_rank.png")

    def draw(ax: Any, rec: str) -> None:
        ecmp: dict[int, float] = {}
        for (scheme, aqm), mine in _by(latency, rec).items():
            v = np.asarray(present(r["latency_us"] for r in mine), dtype=float)
            if v.size == 0:
                continue
            q = np.linspace(0, 1, min(v.size, LAT_SAMPLES_DRAWN))
            y = np.quantile(v, q)
            p90, p99 = np.percentile(v, [90, 99])
            if scheme == "ecmp" and not ecmp:
                ecmp = {90: float(p90), 99: float(p99)}
            (line,) = ax.plot(q, y, lw=1.3, label=f"{_label(scheme, aqm)} (p90 "
                              f"{_latency(p90)}, p99 {_latency(p99)}, n={v.size})")
            ax.scatter([0.9], [p90], marker="o", color=line.get_color(), zorder=5)
            ax.scatter([0.99], [p99], marker="s", color=line.get_color(), zorder=5)
        for x in (0.9, 0.99):
            ax.axvline(x, color="grey", lw=0.7, ls=":")
        # p90's label above-left of its diamond, p99's below-left: the two sit close
        for pct, x, dy, va in ((90, 0.9, 5, "bottom"), (99, 0.99, -5, "top")):
            ratio = paper.get(f"latency-p{pct}")
            if ratio is not None and pct in ecmp:
                paper_mark(ax, x, ratio * ecmp[pct], f"paper p{pct}: ECMP's x {ratio:.3g}",
                           offset=(-12, dy), ha="right", va=va)
        ax.set_yscale("log")
        ax.set_xlim(0, 1.012)     # room for the p99 squares at 0.99: 1 cut them in half
        time_axis(ax, "y", per_second=1e6)      # '10 µs' ... '100 ms', no six digits
        ax.set_xlabel("rank of packet (fraction of samples)")
        ax.set_ylabel("one-way fabric latency")
        ax.grid(alpha=0.3, which="both")
    return _per_recovery(run_dir, config, recs, notes, "latency_rank.png",
                         "packet latency, ranked (004 Fig. 1b)", draw, ("lower right", 7),
                         f"{LATENCY_DEF}; every run's samples pooled, each curve drawn at "
                         f"{LAT_SAMPLES_DRAWN} quantiles; circles: p90, squares: p99; red "
                         "diamonds: the spray latency the paper's spray/ECMP ratios give "
                         "beside our ECMP")


def plot_flows_rank(run_dir: Path, config: dict[str, Any], rows: list[dict[str, str]],
                    recs: list[str], notes: str) -> Path:
    """Fig. 1(c): per-flow % of ideal ranked per run, mean over runs of the rank curves."""
    def draw(ax: Any, rec: str) -> None:
        for (scheme, aqm), mine in _by(rows, rec).items():
            valid = [r for r in mine if cell(r.get("pct_ideal")) == cell(r.get("pct_ideal"))]
            if not valid:
                continue
            runs = list(dict.fromkeys(r["run"] for r in valid))
            sp = [spread(r["mbps"] for r in valid if r["run"] == run) for run in runs]
            sp = [s for s in sp if s == s]
            text = f"max/min {np.median(sp):.1f}" if sp else "max/min n/a"
            rank_line(ax, rank_curves(valid, "pct_ideal"), f"{_label(scheme, aqm)} ({text})")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("rank of flow")
        ax.set_ylabel("throughput (% of ideal: one host link's goodput)")
        # the paper's test of this figure is a ratio, not a point on it: said, not drawn
        ax.text(0.02, 0.02, "paper: max/min >= 10 under ECMP, < 10 when spraying",
                transform=ax.transAxes, fontsize=7, va="bottom", color="tab:red")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
    return _per_recovery(run_dir, config, recs, notes, "flows_rank.png",
                         "throughput by rank of flow (004 Fig. 1c)", draw, ("lower right", 8),
                         "per-flow throughput sorted within each run, then the mean over runs "
                         "at each rank (shaded: the 95 % interval of the mean over runs; runs "
                         "cut to the smallest flow count); max/min: median over runs of the "
                         "per-run spread")


# -- where the latency comes from ----------------------------------------------------------

#: the queues a packet meets between its first switch's ingress and its last one's, in path
#: order (a 4-hop path of a fat tree; a 2-hop one skips the two middle tiers); the host
#: link's queue (edge->host) is outside the measured latency
FABRIC_TIERS = ("edge->agg", "agg->core", "core->agg", "agg->edge")
SOURCES_DEF = ("queues: every switch port's root-qdisc length every 0.5 s (rtnetlink), pooled "
               "over ports of a tier and over runs, in ms at the link rate for 1514-byte "
               "frames; a 4-hop packet meets one queue of each fabric tier, so the tiers' "
               "means add up to what a packet arriving at a random moment waits (the "
               "switch does not timestamp hops: this is the per-hop view it gives)")


def _weighted(rows: list[dict[str, str]], col: str) -> float:
    """Mean of a per-run column weighted by each run's sample count (NaN without any)."""
    pairs = [(cell(r.get(col)), cell(r.get("samples"))) for r in rows]
    pairs = [(v, n) for v, n in pairs if v == v and n == n and n > 0]
    total = sum(n for _, n in pairs)
    return sum(v * n for v, n in pairs) / total if total else float("nan")


def latency_sources(latency: list[dict[str, str]],
                    queues: list[dict[str, str]]) -> list[dict[str, Any]]:
    """One row per (recovery, scheme, AQM): the latency's p99 overall and by path length
    (hops), how much of the path's queueing each fabric tier holds (mean and p99 of its
    sampled queue in ms, tail drops, AQM drops and marks; share = the tier's mean over the
    four tiers' sum), and whether the slowest samples coincide with retransmissions of
    their flow (share of samples whose flow retransmitted in the tcp_info interval around
    them, over all samples and over those at or above the p99)."""
    out = []
    keys = [_key(r) for r in latency]
    for rec in _ordered((k[0] for k in keys), RECOVERIES):
        for scheme, aqm in _variants([(s, a) for r, s, a in keys if r == rec]):
            key = (rec, scheme, aqm)
            mine = [r for r in latency if _key(r) == key]
            v = np.asarray(present(r.get("latency_us") for r in mine), dtype=float)
            row: dict[str, Any] = {"scheme": scheme, "aqm": aqm, "recovery": rec,
                                   "samples": int(v.size)}
            if not v.size:
                continue
            p99 = float(np.percentile(v, 99))
            row["p99_ms"] = rounded(p99 / 1000, 3)
            for h in sorted({int(cell(r["hops"])) for r in mine
                             if cell(r.get("hops")) == cell(r.get("hops"))}):
                hv = present(r["latency_us"] for r in mine if cell(r.get("hops")) == h)
                row[f"hops{h}_samples"] = len(hv)
                row[f"hops{h}_mean_ms"] = rounded(float(np.mean(hv)) / 1000, 3)
                row[f"hops{h}_p99_ms"] = rounded(float(np.percentile(hv, 99)) / 1000, 3)
                # per repetition its own p99, and their mean's Student-t 95 % interval:
                # what latency_sources.png draws (a pooled p99 has no interval)
                reps = per_run([r for r in mine if cell(r.get("hops")) == h],
                               lambda r: cell(r["latency_us"]))
                iv = mean_interval([float(np.percentile(u, 99)) / 1000 for u in reps.values()])
                row[f"hops{h}_run_p99_ms"] = rounded(iv.mean, 3)
                row[f"hops{h}_run_p99_lo_ms"] = rounded(iv.lo, 3)
                row[f"hops{h}_run_p99_hi_ms"] = rounded(iv.hi, 3)
                row[f"hops{h}_runs"] = iv.n
            tiers = [q for q in queues if _key(q) == key]
            means = {t: _weighted([q for q in tiers if q["tier"] == t], "mean_ms")
                     for t in FABRIC_TIERS}
            path = sum(m for m in means.values() if m == m)
            for t in FABRIC_TIERS:
                mine_t = [q for q in tiers if q["tier"] == t]
                row[f"{t}_mean_ms"] = rounded(means[t], 3)
                row[f"{t}_p99_ms"] = rounded(_weighted(mine_t, "p99_ms"), 3)
                row[f"{t}_share"] = rounded(means[t] / path, 3) if path > 0 and means[t] == \
                    means[t] else ""
                for c in ("tail_drops", "aqm_drops", "aqm_marks"):
                    row[f"{t}_{c}"] = _count(float(sum(present(q.get(c) for q in mine_t)))) \
                        if mine_t else ""
            row["path_mean_ms"] = rounded(path, 3) if tiers else ""
            rt = [(cell(r.get("latency_us")), cell(r.get("flow_retrans"))) for r in mine]
            rt = [(lv, n) for lv, n in rt if lv == lv and n == n]
            if rt:
                top = [n for lv, n in rt if lv >= p99]
                row["retrans_share_all"] = rounded(float(np.mean([n > 0 for _, n in rt])), 3)
                row["retrans_share_p99"] = rounded(float(np.mean([n > 0 for n in top])), 3) \
                    if top else ""
            out.append(row)
    return out


def plot_latency_sources(run_dir: Path, config: dict[str, Any], rows: list[dict[str, Any]],
                         notes: str) -> Path:
    """Three panels per recovery: p99 by path length, each fabric tier's share of the
    path's queueing (total in ms written on top), samples coinciding with retransmissions."""
    recs = _ordered((r["recovery"] for r in rows), RECOVERIES)
    fig, axes = plt.subplots(len(recs), 3, figsize=(17.0, 4.6 * len(recs)), squeeze=False)
    fig.suptitle(caption(config, "where the packet latency comes from"), fontsize=10)
    colors = [f"C{i}" for i in range(10)]
    for axrow, rec in zip(axes, recs):
        mine = [r for r in rows if r["recovery"] == rec]
        # two lines each, level: rotated, the labels ran small into each other
        names = [_label(r["scheme"], r["aqm"]).replace(" (", "\n(") for r in mine]
        x = np.arange(len(mine))
        ax = axrow[0]
        hops = sorted({int(k[4:k.index("_")]) for r in mine for k in r
                       if k.startswith("hops") and k.endswith("_p99_ms") and "run" not in k})
        width = 0.8 / max(1, len(hops))
        # each repetition's own p99, their mean and its 95 % interval where the table has
        # them (an older latency_sources.csv: the pooled p99, no interval)
        per_run = any(f"hops{h}_run_p99_ms" in r for r in mine for h in hops)
        runs = max((int(cell(r.get(f"hops{h}_runs")) or 0) for r in mine for h in hops
                    if cell(r.get(f"hops{h}_runs")) == cell(r.get(f"hops{h}_runs"))),
                   default=0)
        for j, h in enumerate(hops):
            col = f"hops{h}_run_p99" if per_run else f"hops{h}_p99"
            p99s = np.array([cell(r.get(f"{col}_ms")) for r in mine], dtype=float)
            err = None
            if per_run and runs > 1:
                lo = np.array([cell(r.get(f"{col}_lo_ms")) for r in mine], dtype=float)
                hi = np.array([cell(r.get(f"{col}_hi_ms")) for r in mine], dtype=float)
                # a log axis: the interval's low end kept above 0
                err = np.clip([p99s - np.maximum(lo, 1e-6 * p99s), hi - p99s], 0, None)
            ax.bar(x + (j - (len(hops) - 1) / 2) * width, p99s, width, color=colors[j],
                   yerr=err, capsize=2, label=f"{h} hops")
        ax.set_yscale("log")
        ax.set_xticks(x, names, fontsize=7.5)
        ax.set_ylabel("p99 one-way fabric latency (ms)")
        ax.set_title(f"recovery={rec}: p99 by path length" +
                     (f" (mean of {runs} runs' p99, 95 % interval)" if per_run and runs > 1
                      else ""), fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, axis="y", which="both")
        ax = axrow[1]
        bottom = np.zeros(len(mine))
        for j, t in enumerate(FABRIC_TIERS):
            share = np.array([cell(r.get(f"{t}_share")) for r in mine], dtype=float)
            share = np.nan_to_num(share)
            drops = [cell(r.get(f"{t}_tail_drops")) for r in mine]
            ax.bar(x, 100 * share, 0.6, bottom=100 * bottom, color=colors[j + 3],
                   label=f"{t}: {', '.join(_fmt_count(d) for d in drops)}")
            bottom += share
        for xi, r in zip(x, mine):
            ax.text(xi, 101, f"{cell(r.get('path_mean_ms')):.1f} ms", ha="center",
                    fontsize=7)
        ax.set_ylim(0, 125)
        ax.set_xticks(x, names, fontsize=7.5)
        ax.set_ylabel("share of the 4-hop path's mean queueing (%)")
        ax.set_title("queueing per fabric tier (total on top)", fontsize=9)
        ax.legend(fontsize=6, loc="upper left", ncol=2, title_fontsize=6,
                  title="tier: its tail drops, one count per bar, left to right")
        ax = axrow[2]
        for j, (col, what) in enumerate((("retrans_share_all", "all samples"),
                                         ("retrans_share_p99", "samples >= p99"))):
            vals = [100 * cell(r.get(col)) for r in mine]
            at = x + (j - 0.5) * 0.35
            ax.bar(at, vals, 0.35, color=colors[j + 7], label=what)
            for xi, v in zip(at, vals):    # a 0 % bar and a missing one look alike
                ax.text(xi, (v if v == v else 0) + 1, f"{v:.0f} %" if v == v else "no data",
                        ha="center", va="bottom", fontsize=6.5)
        ax.set_xticks(x, names, fontsize=7.5)
        ax.set_ylim(0, 128)       # room for the legend above the bars and their values
        ax.set_ylabel("% with a retransmission of the flow\nwithin the 0.5 s around it")
        ax.set_title("do slow packets coincide with retransmissions?", fontsize=9)
        ax.legend(fontsize=7, loc="upper center", ncol=2)
        ax.grid(alpha=0.3, axis="y")
    return note(save(fig, run_dir / "latency_sources.png"), notes,
                f"{LATENCY_DEF}; {SOURCES_DEF}; left: each repetition's p99 per path "
                "length, the bar their mean, the whisker its Student-t 95 % interval; "
                "right: the flow's tcp_info total_retrans "
                "rose between the two looks (0.5 s apart) around the sample; "
                "latency_sources.csv has every number")


def _fmt_count(x: float) -> str:
    return "?" if x != x else f"{int(x)}"


def plot_plts(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """summary.csv and the figures throughput.png, flows_rank.png and
    (only when latency.csv has samples) latency_rank.png; one panel per recovery value; and
    where queues.csv and the samples' path lengths exist, latency_sources.csv and
    latency_sources.png.  Returns the figures drawn."""
    run_dir = Path(run_dir)
    refuse_unplottable(run_dir)
    rows = table(run_dir, "flows.csv", "flows")
    latency = optional_table(run_dir / "latency.csv")
    summary = summarize(rows, latency)
    write_csv(run_dir / "summary.csv", summary)
    recs = _ordered((r.get("recovery", "") for r in rows), RECOVERIES)
    notes = _notes(config, rows)
    out = [plot_throughput(run_dir, config, summary, recs, notes, rows)]
    if present(r.get("latency_us") for r in latency):
        lat_recs = _ordered((r.get("recovery", "") for r in latency), RECOVERIES)
        out.append(plot_latency_rank(run_dir, config, latency, lat_recs, notes))
    out.append(plot_flows_rank(run_dir, config, rows, recs, notes))
    q_path = run_dir / "queues.csv"
    if q_path.exists() and any(r.get("hops", "") != "" for r in latency):
        sources = latency_sources(latency, read_csv(q_path))
        write_csv(run_dir / "latency_sources.csv", sources)
        if sources:
            out.append(plot_latency_sources(run_dir, config, sources, notes))
    return out
