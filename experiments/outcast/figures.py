"""Summaries and figures of the two TCP Outcast experiments (outcast, outcast-fattree).

Reads only the run folder: flows.csv (one row per sender and run), series.csv (per-sender
rate over time, iperf3 goodput and bwm-ng offered rate), drops.csv / drops_series.csv
(derived drops per input port of the bottleneck switch, see experiments/outcast/experiment.py).
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from analysis.arrivals import QUANTILES, parse_run_lengths
from analysis.fidelity import validity_caption
from analysis.figures import (
    caption,
    footer_height,
    headroom,
    interval_bars,
    judged,
    note,
    optional_table,
    refuse_unplottable,
    run_means,
    save,
    save_judged,
)
from analysis.intervals import error_bars, mean_interval
from analysis.summaries import nan_mean, rounded, run_ratios, runs_and_all
from model import jain_index
from store import cell, read_csv, write_csv
from store.views import view_of

ARRIVALS_METHOD = ("every packet offered to the bottleneck's tail-drop queue, traced in the "
                   "kernel (emulator/qarrive.py: qdisc_enqueue for accepted, kfree_skb with a "
                   "qdisc drop reason for dropped), attributed to its input port by source "
                   "address; blackout = consecutive drops of one port's packets with no "
                   "accepted packet of that port between; service time = one 1514-byte frame "
                   "at the link rate; statistics over the trimmed window")
DROP_METHOD = ("drops per input port = packets entering the switch on that port (sysfs rx) "
               "- segments of its senders delivered to the receiver (tcp_info segs_in)")




def rate(row: Mapping[str, Any]) -> float:
    """A sender's measured rate over the common window (flows.csv ``mbps``: in absolute
    time, see harness.bottleneck.measured_mbps); tables written before that column carry
    iperf3's own-clock rate only."""
    got = row.get("mbps")
    return cell(got) if got not in (None, "") else cell(row["iperf_mbps"])


def _jain(values: list[float]) -> float:
    """Jain's index of the measured values (NaN when none was measured, or all are zero)."""
    v = [x for x in values if x == x]
    return jain_index(v) if v else float("nan")


def _extra(params: dict[str, Any], rows: list[dict[str, Any]] | None = None) -> str:
    """Notes every figure shares (figures.json, on the report page)."""
    rto = params.get("rto_min") or "kernel default (200ms)"
    return (f"rto_min={rto}, interval={params.get('interval')}s, cc={params.get('cc')}, "
            f"queue={params.get('queue')} packets" + validity_caption(rows or []))


# -- summaries ------------------------------------------------------------------------------

def outcast_stats(rows: list[dict[str, Any]], drops: list[dict[str, Any]]) -> dict[str, Any]:
    """Lone flow vs the N aggregated flows of one (N, run) or a pooled set of runs."""
    lone = [rate(r) for r in rows if r["role"] == "lone"]
    agg = [rate(r) for r in rows if r["role"] != "lone"]
    share = [cell(r["share_of_fair"]) for r in rows if r["role"] == "lone"]
    runs = sorted({r["run"] for r in rows})
    ratio = run_ratios(rows, rate, lambda r: r["role"] == "lone", runs)
    lone_drops = [cell(d["drops"]) for d in drops if "lone" in str(d["port"])]
    lone_rx = [cell(d["rx_packets"]) for d in drops if "lone" in str(d["port"])]
    agg_drops = [cell(d["drops"]) for d in drops if "lone" not in str(d["port"])]
    agg_rx = [cell(d["rx_packets"]) for d in drops if "lone" not in str(d["port"])]
    return {
        "runs": len(runs), "lone_mbps": rounded(nan_mean(lone)),
        "lone_share_of_fair": rounded(nan_mean(share)),
        "lone_share_min": rounded(min(share)) if share else "",
        "lone_share_max": rounded(max(share)) if share else "",
        "others_mean_mbps": rounded(nan_mean(agg)), "lone_over_others": rounded(nan_mean(ratio)),
        "jain_all": rounded(nan_mean([_jain([rate(r) for r in rows if r["run"] == run])
                                      for run in runs])),
        "drops_lone_port": rounded(nan_mean(lone_drops), 1),
        "drop_rate_lone_port": rounded(sum(lone_drops) / sum(lone_rx)) if sum(lone_rx) else "",
        "drops_uplink_port": rounded(nan_mean(agg_drops), 1),
        "drop_rate_uplink_port": rounded(sum(agg_drops) / sum(agg_rx)) if sum(agg_rx) else "",
        "retransmits_lone": rounded(nan_mean([cell(r["retransmits"]) for r in rows
                                              if r["role"] == "lone"]), 1),
        "cpu_mean": rounded(nan_mean([cell(r["cpu_mean"]) for r in rows]), 1),
        "cpu_max": rounded(max((cell(r["cpu_max"]) for r in rows), default=float("nan")), 1),
    }


def _write_tables(run_dir: Path, rows: list[dict[str, Any]], series: list[dict[str, Any]],
                  drops: list[dict[str, Any]], drop_series: list[dict[str, Any]],
                  arrivals: list[dict[str, Any]] | None) -> None:
    """The tables both outcast experiments write as they go."""
    for name, table in (("flows", rows), ("series", series), ("drops", drops),
                        ("drops_series", drop_series), ("arrivals_summary", arrivals)):
        if table is not None:
            write_csv(run_dir / f"{name}.csv", table)


def write_outcast_summary(run_dir: Path, rows: list[dict[str, Any]],
                          series: list[dict[str, Any]], drops: list[dict[str, Any]],
                          drop_series: list[dict[str, Any]], params: Mapping[str, Any],
                          arrivals: list[dict[str, Any]] | None = None) -> None:
    """flows.csv, series.csv, drops.csv, drops_series.csv, arrivals_summary.csv (the traced
    arrivals per point and input port) and summary.csv (per N, per run and pooled over runs
    as run=all)."""
    _write_tables(run_dir, rows, series, drops, drop_series, arrivals)
    out = []
    for n in sorted({r["flows"] for r in rows}):
        mine = [r for r in rows if r["flows"] == n]
        dmine = [d for d in drops if d["flows"] == n]
        for run, sel in runs_and_all(mine):
            dsel = [d for d in dmine if run == "all" or d["run"] == run]
            out.append({"flows": n, "run": run, "fair_mbps": rounded(params["bw"] / (int(n) + 1)),
                        **outcast_stats(sel, dsel)})
    write_csv(run_dir / "summary.csv", out)


def fattree_stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The local sender vs the remote senders' average, and means by hop distance."""
    runs = sorted({r["run"] for r in rows})

    def is_local(r: dict[str, Any]) -> bool:
        return str(r["local"]) == "True"

    ratio = run_ratios(rows, rate, is_local, runs)
    finite = sorted(x for x in ratio if x == x)
    out = {"runs": len(runs),
           "local_mbps": rounded(nan_mean([rate(r) for r in rows if is_local(r)])),
           "remote_mean_mbps": rounded(nan_mean([rate(r) for r in rows if not is_local(r)])),
           "local_over_remote": rounded(nan_mean(ratio)),
           "local_over_remote_min": rounded(min(ratio)) if ratio else "",
           "local_over_remote_max": rounded(max(ratio)) if ratio else "",
           "local_over_remote_median": rounded(float(np.median(finite))) if finite else "",
           "local_over_remote_q1": rounded(float(np.percentile(finite, 25))) if finite else "",
           "local_over_remote_q3": rounded(float(np.percentile(finite, 75))) if finite else "",
           "runs_local_below_half": sum(x < 0.5 for x in finite),
           "local_share_of_fair": rounded(nan_mean([cell(r["share_of_fair"]) for r in rows
                                                    if is_local(r)]))}
    for hops in sorted({int(r["hops"]) for r in rows}):
        out[f"mean_mbps_{hops}hops"] = rounded(nan_mean([rate(r) for r in rows
                                                         if int(r["hops"]) == hops]))
    out["jain_all"] = rounded(nan_mean([_jain([rate(r) for r in rows if r["run"] == run])
                                        for run in runs]))
    out["cpu_mean"] = rounded(nan_mean([cell(r["cpu_mean"]) for r in rows]), 1)
    out["cpu_max"] = rounded(max((cell(r["cpu_max"]) for r in rows), default=float("nan")), 1)
    return out


def write_fattree_summary(run_dir: Path, rows: list[dict[str, Any]],
                          series: list[dict[str, Any]], drops: list[dict[str, Any]],
                          drop_series: list[dict[str, Any]], params: Mapping[str, Any],
                          arrivals: list[dict[str, Any]] | None = None) -> None:
    """flows.csv, series.csv, drops.csv, drops_series.csv, arrivals_summary.csv and
    summary.csv (per run + all)."""
    _write_tables(run_dir, rows, series, drops, drop_series, arrivals)
    out = []
    for run, sel in runs_and_all(rows):
        out.append({"routing": params["routing"], "run": run, **fattree_stats(sel)})
    write_csv(run_dir / "summary.csv", out)


# -- figures --------------------------------------------------------------------------------

def _series(rows: list[dict[str, str]], sender: str, source: str) -> tuple[np.ndarray,
                                                                        np.ndarray]:
    pts = sorted((cell(r["t"]), cell(r["mbps"])) for r in rows
                 if r["sender"] == sender and r["source"] == source)
    return np.array([p[0] for p in pts]), np.array([p[1] for p in pts])


def _empty(ax: Any, title: str, why: str) -> None:
    """A panel with nothing to draw says so, in the panel (a flow-model run has rates only:
    no time series, no queues)."""
    ax.set_title(title, fontsize=9)
    ax.text(0.5, 0.5, why, ha="center", va="center", fontsize=9, color="0.4",
            transform=ax.transAxes, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def _time_panel(ax: Any, rows: list[dict[str, str]], senders: list[str], special: str,
                source: str, title: str, fair: float) -> None:
    if not any(r["source"] == source for r in rows):
        _empty(ax, title, f"no {source} series in this run\n(the flow model's view has "
                          "average rates only)")
        return
    cmap = plt.get_cmap("tab20")
    for i, s in enumerate(senders):
        t, y = _series(rows, s, source)
        if s == special:
            ax.plot(t, y, color="black", lw=2.2, label=f"{s} (alone on its port)", zorder=5)
        else:
            ax.plot(t, y, color=cmap(i % 20), lw=0.8, alpha=0.85,
                    label=s if len(senders) <= 8 else None)
    ax.axhline(fair, color="red", ls="--", lw=1, label=f"fair share {fair:.2f} Mb/s")
    ax.set_xlabel("time since first sender started (s)")
    ax.set_ylabel("Mb/s")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    # room above the data for the legend: upper right, it covered the end of the series
    entries = len(ax.get_legend_handles_labels()[0])
    ax.set_ylim(0, ax.get_ylim()[1] * (1.12 + 0.045 * ((entries + 1) // 2)))
    ax.legend(fontsize=6, ncol=2, loc="upper right")


def _bar_panel(ax: Any, rows: list[dict[str, str]], senders: list[str], special: str,
               fair: float, title: str) -> None:
    """Each sender's average goodput over runs (one value per run) and, with more than one
    run, the Student-t 95 % interval of that mean (analysis.intervals, the claims'), not the
    runs' min-max; ``title`` says which."""
    ivs = []
    for s in senders:
        v = [x for r in rows if r["sender"] == s and (x := rate(r)) == x]
        ivs.append(mean_interval(v) if v else None)
    colors = ["black" if s == special else "tab:blue" for s in senders]
    tops = interval_bars(ax, range(len(senders)), ivs, color=colors, capsize=2)
    ax.axhline(fair, color="red", ls="--", lw=1, label=f"fair share {fair:.2f} Mb/s")
    ax.set_xticks(range(len(senders)))
    ax.set_xticklabels(senders, rotation=60, fontsize=6)
    ax.set_ylabel("average goodput (Mb/s)")
    ax.set_title(title, fontsize=9)
    headroom(ax, [*tops, fair], 0.18)
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(alpha=0.3, axis="y")


def _bars_words(runs: int) -> str:
    """What a sender bar's whisker is, for a panel title."""
    return (f"bars: 95 % interval of the mean over {runs} runs" if runs > 1
            else "one run, no interval")


def _drop_panel(ax: Any, drop_series: list[dict[str, str]], totals: list[dict[str, str]]) -> None:
    if not drop_series:
        _empty(ax, "drops by input port", "no drop samples in this run\n(a fluid flow model "
                                          "has no queue, so no drops)")
        return
    ports = [p for p in dict.fromkeys(r["port"] for r in drop_series)]
    for p in ports:
        pts = sorted((cell(r["t"]), cell(r["drops"])) for r in drop_series if r["port"] == p)
        if not pts:
            continue
        t = np.array([x[0] for x in pts])
        y = np.cumsum([x[1] for x in pts])
        style = {"color": "grey", "ls": ":"} if p == "bottleneck qdisc" else {}
        tot = next((d for d in totals if d["port"] == p), None)
        # the drop rate is of the port's own arrivals (analysis/arrivals.py), in %
        label = f"{p}: {int(y[-1])}" + (f" ({100 * float(tot['drop_rate']):.1f} % of its "
                                        "arrivals)" if tot and tot.get("drop_rate") else "")
        ax.plot(t, y, label=label, **style)
    ax.set_xlabel("time since first sender started (s)")
    ax.set_ylabel("cumulative drops (packets)")
    ax.set_title("drops by input port (derived; dotted: output pfifo counter)", fontsize=9)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:   # a flow-model run has no drops to draw
        ax.legend(fontsize=6)


#: tables a time-series figure needs beyond flows.csv: a folder kept without them (raw data
#: left out of an ablation's copy) still gets the figures flows.csv alone draws
SERIES_TABLES = ("series", "drops", "drops_series")


Table = list[dict[str, str]]


def _tables(run_dir: Path) -> tuple[Table, Table | None, Table | None, Table | None]:
    """flows, series, drops and drops_series tables of an outcast run folder; a missing one
    other than flows.csv reads as None (the figure that needs it is skipped, and named)."""
    def optional(name: str) -> Table | None:
        path = run_dir / f"{name}.csv"
        return read_csv(path) if path.is_file() else None
    series, drops, drop_series = (optional(n) for n in SERIES_TABLES)
    return read_csv(run_dir / "flows.csv"), series, drops, drop_series


def _complete(run_dir: Path, figure: str, series: Table | None, drops: Table | None,
              drop_series: Table | None) -> tuple[Table, Table, Table] | None:
    """The three tables ``figure`` needs, or None after one line on stderr naming the
    missing ones (the figures the other tables allow are still drawn)."""
    if series is not None and drops is not None and drop_series is not None:
        return series, drops, drop_series
    missing = [f"{n}.csv" for n, t in zip(SERIES_TABLES, (series, drops, drop_series))
               if t is None]
    print(f"dcrepro: note: {run_dir}: {figure} not drawn: no {', '.join(missing)} in the "
          "folder (the figures its other tables allow are drawn)", file=sys.stderr)
    return None


def plot_outcast(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """Per N: outcast_nNN.png (goodput and offered rate over time, averages, drops per
    input port); over all N: outcast_share.png (lone flow's share of its fair share)."""
    refuse_unplottable(run_dir)
    params = config["params"]
    view = view_of(params)
    rows, *rest = _tables(run_dir)
    figs = []
    ns = sorted({int(r["flows"]) for r in rows})
    tables = _complete(run_dir, "outcast_nNN.png", *rest)
    series, drops, dseries = tables or ([], [], [])
    for n in ns if tables else []:
        mine = [r for r in rows if int(r["flows"]) == n]
        senders = list(dict.fromkeys(r["sender"] for r in mine))
        run0 = min(r["run"] for r in mine)
        s0 = [r for r in series if int(r["flows"]) == n and r["run"] == run0]
        fair = params["bw"] / (n + 1)
        st = outcast_stats(mine, [d for d in drops if int(d["flows"]) == n])
        fig, axes = plt.subplots(2, 2, figsize=(12, 8))
        if view.simulates:
            _time_panel(axes[0, 0], s0, senders, "lone", view.goodput_by,
                        f"simulated goodput at the receiver ({params['interval']} s), "
                        f"run {run0}", fair)
            axes[0, 1].text(0.5, 0.5, "offered rate: averages only (flows.csv)",
                            ha="center", va="center")
        else:
            _time_panel(axes[0, 0], s0, senders, "lone", "iperf3",
                        f"goodput at the receiver (iperf3 {params['interval']} s), run {run0}",
                        fair)
            _time_panel(axes[0, 1], s0, senders, "lone", "bwm-ng",
                        "rate entering the network at each sender's switch port (bwm-ng rx)",
                        fair)
        _bar_panel(axes[1, 0], mine, senders, "lone", fair,
                   f"average over runs ({_bars_words(int(st['runs']))}); lone = "
                   f"{float(st['lone_share_of_fair']):.2f} of fair share")
        run_drops = [d for d in drops if int(d["flows"]) == n and d["run"] == run0]
        if view.exact_drops:   # exact totals, no time series
            _sim_drop_panel(axes[1, 1], run_drops, "s1's queue to recv", run0)
        else:
            _drop_panel(axes[1, 1], [d for d in dseries if int(d["flows"]) == n and
                                     d["run"] == run0], run_drops)
        fig.suptitle(caption(config, f"TCP Outcast, 1 flow on s1 port 2 vs {n} flows on s1 "
                                     "port 3 (bottleneck s1 port 1 -> recv)"), fontsize=11)
        path = save(fig, run_dir / f"outcast_n{n:02d}.png")
        figs.append(note(path, _extra(params, mine), DROP_METHOD))
    claims = judged(run_dir, config, "outcast_share.png")
    fig, ax = plt.subplots(figsize=(7, 4.8 + footer_height(claims)))
    # the two series a little apart at each N: where they are equal (the model's fair
    # shares) the second hid the first
    dodge = 0.012 * max(max(ns) - min(ns), 4)
    for side, (label, pick, color) in zip((-1, 1), (
            ("lone flow (own port)", lambda r: r["role"] == "lone", "black"),
            ("flows behind s2 (mean)", lambda r: r["role"] != "lone", "tab:blue"))):
        xs, ys, means = [], [], []
        for n in ns:
            vals = run_means([r for r in rows if int(r["flows"]) == n and pick(r)],
                             lambda r: cell(r["share_of_fair"]))
            xs += [n + side * dodge] * len(vals)
            ys += vals
            means.append(mean_interval(vals) if vals else None)
        ax.scatter(xs, ys, color=color, alpha=0.5, s=14)
        have = [(n, iv) for n, iv in zip(ns, means) if iv is not None]
        if have:    # the mean over runs and its 95 % interval (Student's t, as the claims)
            ax.errorbar([n + side * dodge for n, _ in have], [iv.mean for _, iv in have],
                        yerr=error_bars([iv for _, iv in have]), marker="o", color=color,
                        capsize=3, label=label)
    ax.axhline(1, color="red", ls="--", lw=1, label="fair share 1/(N+1)")
    ax.axhline(0.5, color="grey", ls=":", lw=1, label="half of fair share")
    ax.set_xlabel("competing flows N behind s2")
    ax.set_ylabel("average goodput / fair share")
    ax.set_xticks(ns)
    ax.grid(alpha=0.3)
    # under the axes: inside, it covered the half-fair-share line (the claims' criterion)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4,
              frameon=False)
    ax.set_title(caption(config, "lone flow's share of its fair share vs N (002 Fig. 4)"),
                 fontsize=9)
    path = save_judged(fig, run_dir / "outcast_share.png", claims)
    figs.append(note(path, _extra(params, rows), "lines: mean over runs, whiskers its 95 % "
                     "interval (Student's t); dots: single runs; fair share = link / (N + 1); "
                     "the two series drawn a little apart at each N so neither hides the "
                     "other"
                     + ("; under the figure: the claims judged on it, the paper's words "
                        "beside ours" if claims else "")))
    first = {n: min(int(r["run"]) for r in rows if int(r["flows"]) == n) for n in ns}
    points = [(f"N={n}", run_dir / f"n{n:02d}-run{first[n]:02d}") for n in ns]
    figs += plot_arrivals(run_dir, config, points)
    return figs


def _sim_drop_panel(ax: Any, run_drops: list[dict[str, str]], queue: str, run: str) -> None:
    """A simulated run's drops per input port: exact totals over the run, no time series."""
    ax.barh([str(d["port"]) for d in run_drops], [cell(d["drops"]) for d in run_drops])
    ax.set_xlabel(f"packets dropped at {queue}, whole run")
    ax.set_title(f"drops by input port (counted per source), run {run}", fontsize=9)


def plot_outcast_fattree(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """fattree_outcast.png: goodput over time of the senders outside the receiver's pod and
    the local sender; average goodput grouped by hop distance; drops per input port."""
    refuse_unplottable(run_dir)
    params = config["params"]
    rows, *rest = _tables(run_dir)
    tables = _complete(run_dir, "fattree_outcast.png", *rest)
    if tables is None:
        return [_plot_runs(run_dir, config, rows)]
    series, drops, dseries = tables
    run0 = min(r["run"] for r in rows)
    r0 = [r for r in rows if r["run"] == run0]
    local = next((r["sender"] for r in r0 if r["local"] == "True"), "")
    shown = [r["sender"] for r in r0 if int(r["hops"]) == max(int(x["hops"]) for x in r0)]
    shown.append(local)
    fair = params["bw"] / len(r0)
    st = fattree_stats(rows)
    view = view_of(params)
    sim = view.simulates
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    _time_panel(axes[0, 0], [s for s in series if s["run"] == run0], shown, local,
                view.goodput_by,
                f"{'simulated ' if sim else ''}goodput, senders outside the receiver's pod "
                f"+ {local} (run {run0})", fair)
    ax = axes[0, 1]
    hops = sorted({int(r["hops"]) for r in rows})
    ticks = []
    for i, h in enumerate(hops):
        per_sender: dict[str, list[float]] = {}
        for r in rows:
            if int(r["hops"]) == h:
                per_sender.setdefault(r["sender"], []).append(rate(r))
        vals = [nan_mean(v) for v in per_sender.values()]
        # the whisker: each run's mean over these senders, their Student-t 95 % interval
        reps = run_means([r for r in rows if int(r["hops"]) == h], rate)
        iv = mean_interval(reps) if reps else None
        err = error_bars([iv]) if iv is not None and iv.n > 1 else None
        ax.bar(i, nan_mean(vals), color="black" if h == min(hops) else "tab:blue", alpha=0.8,
               yerr=err, capsize=3)
        ax.scatter([i] * len(vals), vals, color="orange", s=12, zorder=5)
        # the bar's value under its tick: above the bar, it covered the senders' dots
        ticks.append(f"{h} hops\n{nan_mean(vals):.2f} ({len(vals)} "
                     f"sender{'s' * (len(vals) != 1)})")
    ax.axhline(fair, color="red", ls="--", lw=1, label=f"fair share {fair:.2f} Mb/s")
    ax.set_xticks(range(len(hops)))
    ax.set_xticklabels(ticks, fontsize=8)
    ax.set_ylabel("average goodput (Mb/s)")
    runs = int(st["runs"])
    ax.set_title(f"by hop distance: dots senders, {runs} run{'s' * (runs != 1)}"
                 + ("; bars 95 % interval" if runs > 1 else "")
                 + f"; local/remote = {float(st['local_over_remote']):.2f}", fontsize=8.5)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    senders = list(dict.fromkeys(r["sender"] for r in rows))
    _bar_panel(axes[1, 0], rows, senders, local, fair,
               f"average goodput per sender ({_bars_words(int(st['runs']))})")
    if sim:
        _sim_drop_panel(axes[1, 1], [d for d in drops if d["run"] == run0],
                        f"the queue to {params['receiver']}", run0)
    else:
        _drop_panel(axes[1, 1], [d for d in dseries if d["run"] == run0],
                    [d for d in drops if d["run"] == run0])
    fig.suptitle(caption(config, f"TCP Outcast in {params['topo']}, routing "
                                 f"{params['routing']}, receiver {params['receiver']} (002 "
                                 "Figs. 5/6)"), fontsize=11)
    path = save(fig, run_dir / "fattree_outcast.png")
    return [note(path, _extra(params, rows), DROP_METHOD), _plot_runs(run_dir, config, rows),
            *plot_arrivals(run_dir, config, [(f"run {run0}", run_dir / f"run{int(run0):02d}")])]


def _plot_runs(run_dir: Path, config: dict[str, Any], rows: list[dict[str, str]]) -> Path:
    """fattree_outcast_runs.png: the distribution over runs, not only the mean: the local
    sender's goodput over the remote senders' mean, and the mean by hop distance, per run."""
    params = config["params"]
    runs = sorted({r["run"] for r in rows}, key=int)
    per_run = [fattree_stats([r for r in rows if r["run"] == run]) for run in runs]
    ratios = [cell(s["local_over_remote"]) for s in per_run]
    hops = sorted({int(r["hops"]) for r in rows})
    claims = judged(run_dir, config, "fattree_outcast_runs.png")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6 + footer_height(claims)))
    ax = axes[0]
    finite = [x for x in ratios if x == x]
    if finite:    # the mean over runs with its 95 % interval (Student's t, as the claims)
        iv = mean_interval(finite)
        many = iv.n > 1     # one run: its value, no interval (not a '[x, x]' one)
        ax.errorbar([iv.mean], [1.32], xerr=error_bars([iv]) if many else None, fmt="o",
                    color="black", capsize=4, zorder=6,
                    label=f"mean {iv.mean:.2f} [{iv.lo:.2f}, {iv.hi:.2f}], 95 %" if many
                    else f"{iv.mean:.2f} (one run: no interval)")
    try:  # matplotlib >= 3.10 names the orientation; older ones only know vert
        ax.boxplot(finite, orientation="horizontal", widths=0.5)
    except TypeError:
        ax.boxplot(finite, vert=False, widths=0.5)
    jitter = np.random.default_rng(0).uniform(-0.12, 0.12, len(ratios))
    ax.scatter(ratios, 1 + jitter, color="tab:orange", zorder=5, s=25,
               label=f"one run each ({len(ratios)} run{'s' if len(ratios) != 1 else ''})")
    ax.axvline(1.0, color="grey", ls=":", lw=1, label="local = remote")
    ax.axvline(0.5, color="red", ls="--", lw=1, label="local at half the remote mean")
    ax.set_yticks([])
    ax.set_xlabel("local sender's goodput / remote senders' mean goodput")
    ax.set_title(f"Outcast per run: median {np.nanmedian(ratios):.2f}, "
                 f"{sum(x < 0.5 for x in ratios)} of {len(ratios)} runs below 0.5", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="x")
    ax = axes[1]
    for i, h in enumerate(hops):
        vals = [cell(s.get(f"mean_mbps_{h}hops", "")) for s in per_run]
        ax.scatter([i] * len(vals) + jitter[:len(vals)], vals, s=20,
                   color="black" if h == min(hops) else "tab:blue")
        ax.plot([i - 0.25, i + 0.25], [np.nanmedian(vals)] * 2, color="red", lw=2)
    ax.set_xticks(range(len(hops)))
    ax.set_xticklabels([f"{h} hops" for h in hops])
    ax.set_ylabel("mean goodput of the senders at that distance (Mb/s)")
    ax.set_title("per run (dots) and median (red) by hop distance", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    fig.suptitle(caption(config, f"TCP Outcast in {params['topo']}, routing "
                                 f"{params['routing']}: {len(runs)} "
                                 f"run{'s' * (len(runs) != 1)}"), fontsize=11)
    path = save_judged(fig, run_dir / "fattree_outcast_runs.png", claims)
    return note(path, _extra(params, rows), "left: the local sender's goodput over the "
                "remote senders' mean, one dot per run, the box its quartiles, the black "
                "bar the mean over runs and its 95 % interval; right: mean goodput by hop "
                "distance" + ("; under the figure: the claims judged on it" if claims else ""))


# -- arrivals at the bottleneck ---------------------------------------------------------------

def _pct(share: object) -> str:
    """A share (0-1) of a table as a percentage of one decimal ('' stays '')."""
    x = cell(share)
    return f"{100 * x:.1f} %" if x == x else ""


def _3g(value: object) -> str:
    """A number of a table to three significant digits ('' stays '')."""
    x = cell(value)
    return f"{x:.3g}" if x == x else ""


def _arrival_table(point: Path) -> list[dict[str, Any]]:
    return [{"t": float(r["t"]), "port": r["port"], "sender": r["sender"],
             "dropped": int(r["dropped"]), "qlen": int(r["qlen"])}
            for r in read_csv(point / "arrivals.csv")]


def _raster(ax: Any, rows: list[dict[str, Any]], t_lo: float, t_hi: float, title: str) -> None:
    """Accepted (grey) and dropped (red) arrivals per sender, grouped by input port, under
    a strip of the queue length (on a twin axis, a full queue's trace ran across the top
    row of arrivals)."""
    from mpl_toolkits.axes_grid1 import make_axes_locatable
    sel = [r for r in rows if t_lo <= r["t"] <= t_hi]
    order = sorted({(r["port"], r["sender"]) for r in sel}, key=lambda x: (x[0], x[1]))
    y = {k: i for i, k in enumerate(order)}
    for dropped, color, marker, size in ((0, "0.6", "|", 12), (1, "red", "x", 14)):
        pts = [r for r in sel if r["dropped"] == dropped]
        ax.scatter([r["t"] for r in pts], [y[(r["port"], r["sender"])] for r in pts],
                   c=color, marker=marker, s=size, lw=0.8)
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([f"{s} ({p.split(' (')[0]})" for p, s in order], fontsize=6)
    ax.set_ylim(-0.7, len(order) - 0.3)
    ax.set_xlim(t_lo, t_hi)
    ax.set_xlabel("time since the first flow started (s)")
    q = make_axes_locatable(ax).append_axes("top", size="30%", pad=0.06, sharex=ax)
    q.plot([r["t"] for r in sel], [r["qlen"] for r in sel], color="tab:blue", lw=0.6)
    q.set_ylim(0, max((r["qlen"] for r in sel), default=1) * 1.1 + 0.5)
    q.set_ylabel("queue\n(packets)", fontsize=6, color="tab:blue")
    q.tick_params(labelbottom=False, labelsize=6)
    q.grid(alpha=0.3)
    q.set_title(f"{title}\n(top: queue at each arrival; below: grey | accepted, red x "
                "dropped)", fontsize=8)


def _gap_cdf(ax: Any, rows: list[dict[str, Any]], t_lo: float, t_hi: float,
             service: float) -> None:
    for port in sorted({r["port"] for r in rows}):
        t = np.sort([r["t"] for r in rows if r["port"] == port and t_lo <= r["t"] <= t_hi])
        g = np.sort(np.diff(t) / service)
        if g.size:
            ax.plot(g, np.arange(1, g.size + 1) / g.size, lw=1, label=port)
    ax.axvline(1, color="grey", ls=":", lw=1)
    ax.set_xscale("log")      # bursts (<< 1) and RTO silences (>> 1) both show
    ax.set_xlim(1e-2, 1e3)
    ax.set_xlabel("gap between a port's consecutive arrivals / service time")
    ax.set_ylabel("CDF")
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3)


def _run_hist(ax: Any, summary: list[dict[str, str]]) -> None:
    width = 0.8 / max(1, len(summary))
    for i, s in enumerate(summary):
        h = parse_run_lengths(s.get("run_lengths", ""))
        if h:
            ax.bar([k + (i - (len(summary) - 1) / 2) * width for k in h], list(h.values()),
                   width=width, label=f"{s['port']}: median {s['blackout_median']}, "
                                      f"p90 {s['blackout_p90']}, max {s['blackout_max']}")
    ax.set_yscale("log")
    # whole runs only, also when every run is 1 long (the default locator then drew 0.6,
    # 0.7, ...)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.set_xlabel("blackout: consecutive drops of one port")
    ax.set_ylabel("runs")
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3, axis="y")


def plot_arrivals(run_dir: Path, config: dict[str, Any],
                  points: list[tuple[str, Path]]) -> list[Path]:
    """outcast_arrivals.png: per point (one row each), a 1-s raster of every arrival at the
    bottleneck queue per sender and input port, the CDF of each port's inter-arrival gaps
    over the service time, and the blackout run lengths; nothing if no point was traced."""
    params = config["params"]
    points = [(label, p) for label, p in points if (p / "arrivals.csv").exists()]
    if not points:
        return []
    service = 1514 * 8 / (params["bw"] * 1e6)
    t_lo, t_hi = params["trim"], params["duration"] - params["trim"]
    mid = (t_lo + t_hi) / 2
    fig, axes = plt.subplots(len(points), 3, figsize=(15, 3.6 * len(points)), squeeze=False)
    for (label, point), row in zip(points, axes):
        rows = _arrival_table(point)
        summary = optional_table(point / "arrivals_summary.csv")
        shares = ", ".join(f"{s['port'].split(' (')[0]} {_pct(s['drop_share'])}"
                           for s in summary)
        _raster(row[0], rows, mid - 0.5, mid + 0.5, f"{label}: arrivals in 1 s; drop share "
                                                     f"{shares}")
        _gap_cdf(row[1], rows, t_lo, t_hi, service)
        row[1].set_title(f"{label}: gaps between a port's arrivals (p50 per port, in service "
                         "times: " +
                         ", ".join(_3g(s['gap_p50']) for s in summary) + ")", fontsize=8)
        _run_hist(row[2], summary)
        row[2].set_title(f"{label}: blackout run lengths", fontsize=8)
    fig.suptitle(caption(config, "arrivals at the bottleneck queue, per input port"),
                 fontsize=11)
    path = save(fig, run_dir / "outcast_arrivals.png")
    return [note(path, _extra(params), ARRIVALS_METHOD,
                 f"service time {service * 1e3:.3f} ms; gap quantiles in "
                 f"arrivals_summary.csv: {', '.join(f'p{round(q * 100)}' for q in QUANTILES)}")]
