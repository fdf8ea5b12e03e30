"""Summaries and figures of the ``plts`` experiment (packet-level traffic splitting vs ECMP,
Dixit, Prakash and Kompella, SIGCOMM'11 poster); its paper's claims are in claims.py.

Reads the run folder only: flows.csv (one row per flow, scheme, run and recovery) and, for
emulated runs, latency.csv (one row per sampled data packet).  Writes summary.csv and the
figures throughput.png (Fig. 1a), latency_rank.png (Fig. 1b, only when
there are latency samples) and flows_rank.png (Fig. 1c).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from analysis.figures import caption, note, rank_curves, save
from analysis.summaries import group_stats
from model import jain_index
from store import cell, read_csv, write_csv

SCHEMES = ("ecmp", "rnd", "cnt", "rr")
SPRAYS = ("rnd", "cnt", "rr")
RECOVERIES = ("modern", "classic")
LABELS = {"ecmp": "ECMP", "rnd": "PLTS-RND", "cnt": "PLTS-CNT", "rr": "PLTS-RR"}
#: the paper's Fig. 1(a) numbers given in its text (% of ideal throughput)
PAPER_PCT = {"rr": 92.0, "cnt": 81.0}
TCP_COUNTERS = ("retrans", "reord_seen", "dsack_dups")
LAT_SAMPLES_DRAWN = 2000          # points per ranked latency curve (quantiles, not thinning)

NO_RED = ("ECMP without RED/ECN (no RED qdisc on this kernel); all schemes share the same "
          "tail-drop pfifo")
LATENCY_DEF = ("latency: one-way fabric latency of sampled data packets, from ingress of the "
               "first switch to ingress of the last switch (host-link queues excluded)")


# -- helpers ------------------------------------------------------------------------------



def _finite(values: Iterable[Any]) -> list[float]:
    """Numeric cells that are present (NaN and empty dropped; +inf kept: it is a value)."""
    return [x for x in (cell(v) for v in values) if x == x]


def _r(x: float, nd: int = 4) -> Any:
    """Rounded number, '' for missing (inf stays inf: written as 'inf')."""
    if x != x:
        return ""
    return x if math.isinf(x) else round(x, nd)


def _count(x: float) -> Any:
    """Counter sums as ints when integral ('' when missing)."""
    if x != x:
        return ""
    return int(x) if float(x).is_integer() else round(x, 4)


def _ordered(values: Iterable[str], known: tuple[str, ...]) -> list[str]:
    """Known names first in their fixed order, then the others in first-seen order."""
    seen = list(dict.fromkeys(values))
    return [k for k in known if k in seen] + [v for v in seen if v not in known]


def _label(scheme: str) -> str:
    return LABELS.get(scheme, scheme.upper())


def spread(values: Iterable[Any]) -> float:
    """max/min of per-flow throughputs.  A starved flow (min 0, max > 0) gives inf: a flow
    that got nothing is more than any finite factor behind; NaN when no flow moved data or
    there are no values (the spread is undefined then)."""
    v = _finite(values)
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
    mbps = _finite(r.get("mbps") for r in rows)
    pct = group_stats(cell(r.get("pct_ideal")) for r in rows)
    pct_v = _finite(r.get("pct_ideal") for r in rows)
    model_pct = [100 * _ratio(cell(r.get("model_mbps")), cell(r.get("ideal_mbps"))) for r in rows]
    model_pct = [x for x in model_pct if x == x and not math.isinf(x)]
    per_run = [[r.get("mbps") for r in rows if str(r.get("run", "")) == run] for run in runs]
    run_spread = [s for s in (spread(v) for v in per_run) if s == s]
    # Jain per run (flows of one run share the fabric), then averaged over runs
    jains = [jain_index(v) for v in (_finite(x) for x in per_run) if v]
    jains = [j for j in jains if j == j]
    out: dict[str, Any] = {
        "flows": len(rows), "flows_missing": sum(cell(r.get("mbps")) != cell(r.get("mbps"))
                                                 for r in rows),
        "runs": len(runs),
        "mean_pct_ideal": pct.get("mean", ""),
        "median_pct_ideal": _r(float(np.median(pct_v))) if pct_v else "",
        "p10_pct_ideal": pct.get("p10", ""),
        "p90_pct_ideal": _r(float(np.percentile(pct_v, 90))) if pct_v else "",
        "min_pct_ideal": _r(min(pct_v)) if pct_v else "",
        "max_pct_ideal": _r(max(pct_v)) if pct_v else "",
        "mean_mbps": _r(float(np.mean(mbps))) if mbps else "",
        "min_mbps": _r(min(mbps)) if mbps else "",
        "max_mbps": _r(max(mbps)) if mbps else "",
        # pooled over every run's flows ...
        "max_over_min": _r(spread(mbps)),
        # ... and per run (one run = one realisation of the paper's single experiment),
        # median over runs; the claims use this one so that runs are not mixed
        "max_over_min_run_median": _r(float(np.median(run_spread))) if run_spread else "",
        "jain": _r(float(np.mean(jains))) if jains else "",
        "mean_model_pct_ideal": _r(float(np.mean(model_pct))) if model_pct else "",
    }
    for c in TCP_COUNTERS:
        v = _finite(r.get(c) for r in rows)
        out[f"{c}_sum"] = _count(float(sum(v))) if v else ""
        out[f"{c}_median"] = _r(float(np.median(v))) if v else ""
    reo = _finite(r.get("reordering") for r in rows)
    out["reordering_median"] = _r(float(np.median(reo))) if reo else ""
    cpu = _finite(r.get("cpu_mean") for r in rows)
    sat = _finite(r.get("cpu_saturated_share") for r in rows)
    loss = _finite(r.get("emulator_loss_share") for r in rows)
    out["cpu_mean"] = _r(float(np.mean(cpu)), 1) if cpu else ""
    out["cpu_saturated_share"] = _r(float(np.mean(sat)), 3) if sat else ""
    out["emulator_loss_share_max"] = _r(max(loss), 6) if loss else ""
    return out


def _latency_stats(values: list[float]) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {"latency_samples": 0, "latency_p50_us": "", "latency_p90_us": "",
                "latency_p99_us": ""}
    # numpy's default (linear interpolation between closest ranks)
    p50, p90, p99 = (float(x) for x in np.percentile(v, [50, 90, 99]))
    return {"latency_samples": int(v.size), "latency_p50_us": _r(p50, 2),
            "latency_p90_us": _r(p90, 2), "latency_p99_us": _r(p99, 2)}


def summarize(flows_rows: list[dict[str, Any]],
              latency_rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per (scheme, recovery), grouped by recovery, schemes in the order ecmp, rnd,
    cnt, rr (others after).  Every flow of every run is pooled unless a column says per run;
    latency percentiles pool every run's samples (empty when there are none)."""
    latency_rows = latency_rows or []
    keys = [(str(r.get("recovery", "")), str(r.get("scheme", "")))
            for r in [*flows_rows, *latency_rows]]
    out = []
    for rec in _ordered((k[0] for k in keys), RECOVERIES):
        for scheme in _ordered((s for r, s in keys if r == rec), SCHEMES):
            mine = [r for r in flows_rows
                    if str(r.get("recovery", "")) == rec and str(r.get("scheme", "")) == scheme]
            lat = _finite(r.get("latency_us") for r in latency_rows
                          if str(r.get("recovery", "")) == rec
                          and str(r.get("scheme", "")) == scheme)
            out.append({"scheme": scheme, "recovery": rec, **_flow_stats(mine),
                        **_latency_stats(lat)})
    return out


# -- figures ------------------------------------------------------------------------------

def _notes(config: dict[str, Any], rows: list[dict[str, str]]) -> str:
    """Notes every figure shares (figures.json, on the report page): schemes, the queue,
    the backend, the validity numbers of the flows."""
    from analysis.fidelity import validity_caption  # CPU, off-queue losses, SUSPECT past limits
    p = config["params"]
    backend = p.get("backend", "emulated")
    how = ("backend=model: flow-model numbers, not measurements" if backend == "model" else
           "backend=emulated: iperf3 goodput over the measurement window; % of ideal = "
           "goodput / payload ceiling of one host link")
    text = f"schemes={p.get('schemes')}, recovery={p.get('recovery')}\n{NO_RED}\n{how}"
    return text + (validity_caption(rows) if backend != "model" else "")


def _figure(n_panels: int, title: str) -> tuple[Any, np.ndarray]:
    """One panel per recovery side by side under a short title."""
    fig, axes = plt.subplots(1, n_panels, figsize=(max(7.0, 6.0 * n_panels), 4.8),
                             squeeze=False)
    fig.suptitle(title, fontsize=10)
    return fig, axes[0]



def _by(rows: list[dict[str, str]], rec: str) -> dict[str, list[dict[str, str]]]:
    mine = [r for r in rows if r.get("recovery", "") == rec]
    return {s: [r for r in mine if r["scheme"] == s]
            for s in _ordered((r["scheme"] for r in mine), SCHEMES)}


def _per_recovery(run_dir: Path, config: dict[str, Any], recs: list[str], notes: str,
                  name: str, title: str, draw: Callable[[Any, str], Any], legend: tuple[str, int],
                  what: str) -> Path:
    """One figure ``name``, a panel per loss recovery: ``draw(ax, rec)`` fills it, then its
    legend (where, font size) and title; saved with the run's notes and ``what`` it shows."""
    fig, axes = _figure(len(recs), caption(config, title))
    for ax, rec in zip(axes, recs):
        draw(ax, rec)
        ax.legend(loc=legend[0], fontsize=legend[1])
        ax.set_title(f"recovery={rec}", fontsize=9)
    return note(save(fig, run_dir / name), notes, what)


def plot_throughput(run_dir: Path, config: dict[str, Any], summary: list[dict[str, Any]],
                    recs: list[str], notes: str) -> Path:
    """Fig. 1(a): mean % of ideal per scheme, per-flow min-max whiskers, paper markers."""
    def draw(ax: Any, rec: str) -> None:
        srows = [s for s in summary if s["recovery"] == rec and s["flows"]]
        x = np.arange(len(srows))
        mean = np.array([cell(s["mean_pct_ideal"]) for s in srows])
        lo = np.array([cell(s["min_pct_ideal"]) for s in srows])
        hi = np.array([cell(s["max_pct_ideal"]) for s in srows])
        ax.bar(x, mean, 0.6, yerr=[mean - lo, hi - mean], capsize=4, color="tab:blue",
               alpha=0.8, label="measured" if config["params"].get("backend") != "model"
               else "flow model")
        for xi, m in zip(x, mean):
            if m == m:
                ax.text(xi, m / 2, f"{m:.1f}", ha="center", fontsize=8, color="white")
        labelled = False
        for xi, s in zip(x, srows):
            if s["scheme"] in PAPER_PCT:
                ax.scatter(xi, PAPER_PCT[s["scheme"]], marker="D", color="red", zorder=5,
                           label=None if labelled else "paper")
                labelled = True
        model = [(xi, cell(s.get("mean_model_pct_ideal"))) for xi, s in zip(x, srows)]
        model = [(xi, m) for xi, m in model if m == m]
        if model and config["params"].get("backend", "emulated") != "model":
            ax.scatter(*zip(*model), marker="_", s=300, color="black", zorder=4,
                       label="flow model (mean)")
        ax.set_xticks(x, [_label(s["scheme"]) for s in srows])
        ax.set_ylabel("average throughput (% of ideal)")
        ax.set_ylim(0, max(105.0, float(np.nanmax(hi, initial=0)) + 5))
        ax.grid(alpha=0.3, axis="y")
    return _per_recovery(run_dir, config, recs, notes, "throughput.png",
                         "average throughput per scheme (004 Fig. 1a)", draw,
                         ("lower right", 8),
                         "bars: mean % of ideal over every flow of every run; whiskers: "
                         "per-flow min-max; red diamonds: the paper (RR 92 %, CNT 81 %); the "
                         "paper cites MPTCP ~90 % on this setup (not measured here)")


def plot_latency_rank(run_dir: Path, config: dict[str, Any], latency: list[dict[str, str]],
                      recs: list[str], notes: str) -> Path:
    """Fig. 1(b): every sampled packet's latency ranked, per scheme, log y, p90/p99 marked."""
    def draw(ax: Any, rec: str) -> None:
        for scheme, mine in _by(latency, rec).items():
            v = np.asarray(_finite(r["latency_us"] for r in mine), dtype=float)
            if v.size == 0:
                continue
            q = np.linspace(0, 1, min(v.size, LAT_SAMPLES_DRAWN))
            y = np.quantile(v, q)
            p90, p99 = np.percentile(v, [90, 99])
            (line,) = ax.plot(q, y, lw=1.3, label=f"{_label(scheme)} (p90 {p90:.0f}, "
                              f"p99 {p99:.0f} us, n={v.size})")
            ax.scatter([0.9], [p90], marker="o", color=line.get_color(), zorder=5)
            ax.scatter([0.99], [p99], marker="s", color=line.get_color(), zorder=5)
        for x in (0.9, 0.99):
            ax.axvline(x, color="grey", lw=0.7, ls=":")
        ax.set_yscale("log")
        ax.set_xlim(0, 1)
        ax.set_xlabel("rank of packet (fraction of samples)")
        ax.set_ylabel("one-way fabric latency (us)")
        ax.grid(alpha=0.3, which="both")
    return _per_recovery(run_dir, config, recs, notes, "latency_rank.png",
                         "packet latency, ranked (004 Fig. 1b)", draw, ("best", 7),
                         f"{LATENCY_DEF}; every run's samples pooled, each curve drawn at "
                         f"{LAT_SAMPLES_DRAWN} quantiles; circles: p90, squares: p99")


def plot_flows_rank(run_dir: Path, config: dict[str, Any], rows: list[dict[str, str]],
                    recs: list[str], notes: str) -> Path:
    """Fig. 1(c): per-flow % of ideal ranked per run, mean over runs of the rank curves."""
    def draw(ax: Any, rec: str) -> None:
        for scheme, mine in _by(rows, rec).items():
            valid = [r for r in mine if cell(r.get("pct_ideal")) == cell(r.get("pct_ideal"))]
            if not valid:
                continue
            mean, lo, hi = rank_curves(valid, "pct_ideal")
            runs = list(dict.fromkeys(r["run"] for r in valid))
            sp = [spread(r["mbps"] for r in valid if r["run"] == run) for run in runs]
            sp = [s for s in sp if s == s]
            x = np.arange(1, len(mean) + 1)
            text = f"max/min {np.median(sp):.1f}" if sp else "max/min n/a"
            ax.plot(x, mean, marker="o", ms=3, label=f"{_label(scheme)} ({text})")
            ax.fill_between(x, lo, hi, alpha=0.2)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("rank of flow")
        ax.set_ylabel("throughput (% of ideal)")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
    return _per_recovery(run_dir, config, recs, notes, "flows_rank.png",
                         "throughput by rank of flow (004 Fig. 1c)", draw, ("lower right", 8),
                         "per-flow throughput sorted within each run, then the mean over runs "
                         "at each rank (shaded: min-max over runs; runs cut to the smallest "
                         "flow count); max/min: median over runs of the per-run spread")


def plot_plts(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """summary.csv and the figures throughput.png, flows_rank.png and
    (only when latency.csv has samples) latency_rank.png; one panel per recovery value.
    Returns the figures drawn."""
    from store import plottable, status_of
    run_dir = Path(run_dir)
    status = status_of(run_dir)
    if not plottable(status):
        raise ValueError(f"{run_dir}: run is '{status['status']}' ({status.get('error')}); "
                         "a failed run is never plotted as data")
    rows = read_csv(run_dir / "flows.csv")
    if not rows:
        raise ValueError(f"{run_dir}: flows.csv has no flows")
    lat_path = run_dir / "latency.csv"
    latency = read_csv(lat_path) if lat_path.exists() else []
    summary = summarize(rows, latency)
    write_csv(run_dir / "summary.csv", summary)
    recs = _ordered((r.get("recovery", "") for r in rows), RECOVERIES)
    notes = _notes(config, rows)
    out = [plot_throughput(run_dir, config, summary, recs, notes)]
    if _finite(r.get("latency_us") for r in latency):
        lat_recs = _ordered((r.get("recovery", "") for r in latency), RECOVERIES)
        out.append(plot_latency_rank(run_dir, config, latency, lat_recs, notes))
    out.append(plot_flows_rank(run_dir, config, rows, recs, notes))
    return out
