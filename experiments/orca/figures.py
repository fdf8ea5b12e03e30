"""Summaries and figures of the ``orca`` experiment (in-network multicast vs
application-layer unicast, 001_da816e6d87c9a0a9.txt).

Reads the run folder only: transfers.csv (one row per 33-round transfer), rounds.csv (one
row per round) and, for emulated runs, receivers.csv (one row per receiver and round).
Writes summary.csv and exec_time.png (Fig. 5), send_cdf.png (Fig. 6),
wait_cdf.png (Fig. 7, emulated only), procs.png (Fig. 8).  Model runs draw the model's
bounds, labelled as such.  The paper's claims are in claims.py beside this file.
"""
from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np

from analysis.figures import (
    PAPER_COLOUR,
    caption,
    footer_height,
    headroom,
    judged,
    note,
    optional_table,
    panel_row,
    paper_mark,
    paper_values,
    save,
    save_judged,
    table,
    time_axis,
)
from analysis.intervals import mean_interval
from analysis.summaries import mean_present
from store import cell, read_csv, write_csv
from store.views import view_of

MODES = ("multicast", "unicast")
COLORS = {"multicast": "tab:blue", "unicast": "tab:orange"}




def _time_col(rows: list[dict[str, str]]) -> str:
    """Measured total time when the run measured it, else the model's bound."""
    return "total_s" if rows and rows[0].get("total_s", "") != "" else "bound_s"


def sender_cpu(row: dict[str, Any]) -> float:
    """A row's cap in cores per sending process (0: uncapped; folders before the flag)."""
    return float(row.get("sender_cpu") or 0)


def _interval(times: list[float]) -> tuple[float, float]:
    """The 95 % interval of the mean of ``times`` (the mean itself for one run)."""
    iv = mean_interval(times)
    return round(iv.lo, 4), round(iv.hi, 4)


def ratio_text(transfers: list[dict[str, str]], cap: float, workload: int, procs: int) -> str:
    """Unicast's time (``procs`` processes) over multicast's, per repetition, as the claims
    take it (claims.rep_ratios): '3.83x [3.80, 3.86]' (their mean and its 95 % interval),
    '3.83x' with one repetition, '' without a pair."""
    col = _time_col(transfers)
    times: dict[str, dict[str, float]] = {}
    for t in transfers:
        if (sender_cpu(t) == cap and int(t["workload"]) == workload and t.get(col, "") != ""
                and (t["mode"] == "multicast" or int(t["procs"]) == procs)):
            times.setdefault(str(t.get("run", "")), {})[t["mode"]] = cell(t[col])
    ratios = [m["unicast"] / m["multicast"] for m in times.values()
              if m.get("multicast", 0) > 0 and "unicast" in m]
    if not ratios:
        return ""
    iv = mean_interval(ratios)
    return f"{iv.mean:.2f}x" + (f"\n[{iv.lo:.2f}, {iv.hi:.2f}]" if iv.n > 1 else "")


def summarize(transfers: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per (sender cap, workload, mode, procs): time over runs (mean, min, max, the mean's
    95 % interval), the model's
    bound, copies and repairs; unicast rows get the speedup of multicast at the same cap
    and workload."""
    col = _time_col(transfers)

    def key(t: dict[str, str]) -> tuple[float, int, str, int]:
        return sender_cpu(t), int(t["workload"]), t["mode"], int(t["procs"])

    keys = list(dict.fromkeys(key(t) for t in transfers))
    out = []
    for c, w, mode, procs in sorted(keys, key=lambda k: (k[0], k[1], MODES.index(k[2])
                                                         if k[2] in MODES else 9, k[3])):
        mine = [t for t in transfers if key(t) == (c, w, mode, procs)]
        times = [cell(t[col]) for t in mine]
        row: dict[str, Any] = {
            "workload": w, "mode": mode, "procs": procs, "sender_cpu": c, "runs": len(mine),
            "total_mb": round(cell(mine[0]["total_bytes"]) / 1e6, 4),
            "time_s": round(mean(times), 4), "time_min_s": round(min(times), 4),
            "time_max_s": round(max(times), 4),
            # the 95 % interval of the mean over runs (Student's t): the figures' whiskers
            **dict(zip(("time_lo_s", "time_hi_s"), _interval(times))),
            "bound_s": round(mean(cell(t["bound_s"]) for t in mine), 4),
            "measured": col == "total_s"}
        if col == "total_s":
            row["bound_over_time"] = round(row["bound_s"] / row["time_s"], 4)
            row["copies"] = round(mean(cell(t["copies"]) for t in mine), 4)
            row["copies_max"] = round(max(cell(t["copies"]) for t in mine), 4)
            row["repairs_mean"] = round(mean(cell(t["repairs_sent"]) for t in mine), 1)
            row["cpu_mean"] = mean_present((t.get("cpu_mean") for t in mine), 1)
            # the sender's own CPU: cores it used while sending, and its cap's throttling
            row["sender_cores"] = mean_present((t.get("sender_cores") for t in mine), 4)
            row["throttled_share"] = _throttled_share(mine)
            # goodput of one sending process: bytes on the sender's link per second over
            # the processes that sent them (the rate that a cap limits)
            row["mbps_per_process"] = mean_present(
                (cell(t.get("sender_link_bytes")) * 8 / cell(t[col]) / 1e6
                 / (procs if mode == "unicast" else 1) for t in mine), 3)
        out.append(row)
    multicast = {(r["sender_cpu"], r["workload"]): r["time_s"] for r in out
                 if r["mode"] == "multicast"}
    for r in out:
        k = (r["sender_cpu"], r["workload"])
        if r["mode"] == "unicast" and k in multicast:
            r["speedup_of_multicast"] = round(r["time_s"] / multicast[k], 4)
    return out


def _throttled_share(rows: list[dict[str, str]]) -> Any:
    """Share of the cap's CFS periods in which it throttled the sender ('' uncapped)."""
    pairs = [(cell(t.get("throttled_periods", "")), cell(t.get("periods", ""))) for t in rows]
    pairs = [(a, b) for a, b in pairs if a == a and b == b and b > 0]
    return round(sum(a for a, _ in pairs) / sum(b for _, b in pairs), 4) if pairs else ""


# -- figures ------------------------------------------------------------------------------

def _notes(config: dict[str, Any]) -> str:
    """Notes every figure shares (figures.json, on the report page)."""
    p = config["params"]
    model = not view_of(p).measures      # the model's bound, not a measurement
    caps = str(p.get("sender_cpu") or "0")
    text = (f"workloads x{p.get('workloads')} of a {p.get('base_mb') or 'scaled'} MB base, "
            f"pace={p.get('pace')} (0 = unpaced), 33 rounds, group 239.1.1.1"
            + ("" if caps == "0" else f", sender caps {caps} cores a process, network work "
                                      f"{p.get('sender_net')} from it") + "\n")
    text += ("backend=model: the busiest link's time for the mode's copies, not measurements"
             if model else "measured by the sender app: a round ends at the last receiver's "
                           "ACK; the model's bound is the busiest link's time")
    return text


def _time_bars(ax: Any, xs: Any, rows: list[dict[str, Any]], width: float, tick: float,
               bound: str | None, **style: Any) -> list[float]:
    """Bars of the rows' mean times at ``xs`` with the 95 % interval of each mean (whiskers)
    and the model's bound as a black tick ``tick`` points wide (legend entry ``bound``);
    returns the tops the labels over them must clear."""
    ys = [r["time_s"] for r in rows]
    # one run: no whisker (a zero-width cap would look like an interval)
    many = any(r["runs"] > 1 for r in rows)
    ax.bar(xs, ys, width, yerr=[[r["time_s"] - r["time_lo_s"] for r in rows],
                                [r["time_hi_s"] - r["time_s"] for r in rows]] if many else None,
           capsize=3, **style)
    ax.scatter(xs, [r["bound_s"] for r in rows], marker="_", s=tick, color="black", zorder=3,
               label=bound)
    return [r["time_hi_s"] for r in rows] + ys


def _speedup(row: dict[str, Any], transfers: list[dict[str, str]] | None, cap: float,
             workload: int, procs: int) -> str:
    """The label over a unicast bar: its time over multicast's per repetition (ratio_text),
    else the summary's ratio of the means."""
    return (ratio_text(transfers, cap, workload, procs) if transfers else "") or \
        f"{row['speedup_of_multicast']:.2f}x"


def plot_exec_time(run_dir: Path, config: dict[str, Any], summary: list[dict[str, Any]],
                   notes: str, transfers: list[dict[str, str]] | None = None) -> Path:
    """Fig. 5: total time per workload, multicast vs single-process unicast, the mean's 95 %
    interval as whiskers, the model's bound as a black tick, the speedup above each pair
    (per repetition, its mean and 95 % interval, as the claims take it), the paper's
    speedup as the unicast time it implies at the largest workload (red diamond), and
    under the figure the claims judged on it."""
    claims = judged(run_dir, config, "exec_time.png")
    fig, (ax,) = panel_row(1, caption(config, "execution time vs workload (001 Fig. 5)"),
                           height=4.8 + footer_height(claims))
    loads = sorted({r["workload"] for r in summary})
    x = np.arange(len(loads))
    tops: list[float] = []
    for i, mode in enumerate(MODES):
        rows = {r["workload"]: r for r in summary if r["mode"] == mode and r["procs"] == 1}
        xs = [x[j] + (i - 0.5) * 0.38 for j, w in enumerate(loads) if w in rows]
        tops += _time_bars(ax, xs, [rows[w] for w in loads if w in rows], 0.36, 300,
                           "model bound" if i == 0 else None, color=COLORS[mode],
                           label=f"{mode}{' (1 process)' if mode == 'unicast' else ''}")
    cap = min((r["sender_cpu"] for r in summary), default=0.0)
    paper = paper_values(config, "exec_time.png").get("speedup")
    for j, w in enumerate(loads):
        u = [r for r in summary if r["workload"] == w and r["mode"] == "unicast"
             and r["procs"] == 1 and "speedup_of_multicast" in r]
        m = [r for r in summary if r["workload"] == w and r["mode"] == "multicast"]
        y_paper = None
        if paper is not None and m and w == loads[-1]:
            # the paper's 4.16x as the unicast time it gives beside our multicast, labelled
            # to its left (over the gap and multicast's lower bar)
            y_paper = paper * m[0]["time_s"]
            paper_mark(ax, x[j] + 0.19, y_paper, f"paper {paper:g}x", offset=(-7, 0),
                       ha="right")
            tops.append(y_paper)
        if u:
            # above the whisker's top (and the paper's diamond), not through them
            ax.annotate(_speedup(u[0], transfers, cap, w, 1),
                        (x[j], max(u[0]["time_s"], u[0]["time_hi_s"], y_paper or 0)),
                        ha="center", va="bottom", fontsize=8, xytext=(0, 8),
                        textcoords="offset points")
    headroom(ax, tops, 0.3)
    mb = {r["workload"]: r["total_mb"] for r in summary}
    ax.set_xticks(x, [f"x{w}\n{mb[w]:.3g} MB" for w in loads])
    ax.set_xlabel("workload (33 rounds in total)")
    ax.set_ylabel("execution time (s)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return note(save_judged(fig, run_dir / "exec_time.png", claims), notes,
                "multicast vs single-process unicast; whiskers: the 95 % interval of the mean "
                "over runs; black tick: the model's bound; above each pair: unicast's time "
                "over multicast's, the mean over repetitions and its 95 % interval; red "
                "diamond: the unicast time the paper's speedup gives beside our multicast "
                "(largest workload); under the figure: the claims judged on it")


def _cdf(ax: Any, values: list[float], label: str, style: str = "-") -> None:
    v = np.sort(np.asarray(values, dtype=float))
    if v.size:
        ax.step(v, np.arange(1, v.size + 1) / v.size, style, where="post", label=label)


def plot_cdfs(run_dir: Path, config: dict[str, Any], rows: list[dict[str, str]], col: str,
              title: str, xlabel: str, name: str, notes: str, how: str) -> Path:
    """One panel per mode (single-process unicast), one CDF per workload (all runs)."""
    fig, axes = panel_row(2, caption(config, title), width=4.5)
    loads = sorted({int(r["workload"]) for r in rows})
    for ax, mode in zip(axes, MODES):
        for w in loads:
            vals = [cell(r[col]) for r in rows if r["mode"] == mode and r["procs"] == "1"
                    and int(r["workload"]) == w]
            _cdf(ax, [v for v in vals if v == v], f"x{w}")
        ax.set_title(mode + (" (1 process)" if mode == "unicast" else ""), fontsize=9)
        ax.set_xscale("log")
        time_axis(ax, "x")        # '10 ms', '20 ms', ...: no overlapping minor labels
        ax.set_xlabel(xlabel)
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
        ax.legend(title="workload", fontsize=7, loc="lower right")
    return note(save(fig, run_dir / name), notes, how)


def _cap_label(c: float) -> str:
    return "uncapped sender" if not c else f"sender capped at {c:g} cores a process"


def plot_procs(run_dir: Path, config: dict[str, Any], summary: list[dict[str, Any]],
               notes: str, transfers: list[dict[str, str]] | None = None) -> Path | None:
    """Fig. 8: unicast time vs sending processes at the largest workload, multicast beside;
    one panel per sender cap (--sender-cpu); above each unicast bar its time over
    multicast's (per repetition: mean and 95 % interval), the paper's 1.85x as the time it
    gives over the most processes' bar, and under the figure the claims judged on it."""
    top = max(r["workload"] for r in summary)
    caps = sorted({r["sender_cpu"] for r in summary})
    panels: list[tuple[float, list[dict[str, Any]], dict[str, Any]]] = []
    for c in caps:
        mine = [r for r in summary if r["workload"] == top and r["sender_cpu"] == c]
        uni = sorted((r for r in mine if r["mode"] == "unicast"), key=lambda r: r["procs"])
        mcs = [r for r in mine if r["mode"] == "multicast"]
        if uni and mcs:
            panels.append((c, uni, mcs[0]))
    if not panels:
        return None
    claims = judged(run_dir, config, "procs.png")
    paper = paper_values(config, "procs.png").get("procs")
    fig, axes = panel_row(len(panels), caption(config, f"unicast sending processes, workload "
                                                       f"x{top} (001 Fig. 8)"), width=4.5,
                          height=5.0 + footer_height(claims))
    for ax, (c, uni, mc) in zip(axes, panels):
        labels = [f"unicast\n{r['procs']} proc" for r in uni] + ["multicast"]
        colors = [COLORS["unicast"]] * len(uni) + [COLORS["multicast"]]
        tops = _time_bars(ax, range(len(labels)), [*uni, mc], 0.6, 400, "model bound (link)",
                          color=colors)
        for i, r in enumerate(uni):
            if "speedup_of_multicast" in r:
                ax.annotate(_speedup(r, transfers, c, top, int(r["procs"])),
                            (i, max(r["time_s"], r["time_hi_s"])),
                            ha="center", va="bottom", fontsize=7.5, xytext=(0, 4),
                            textcoords="offset points")
        if paper is not None and len(uni) > 1:
            # the paper's 85 % better: unicast with the most processes at 1.85x multicast
            y = paper * mc["time_s"]
            # across the bar it is about (a diamond between two bars read as neither's),
            # labelled in the gap to multicast's, clear of the ratio labels above
            at = len(uni) - 1
            ax.hlines(y, at - 0.36, at + 0.36, colors=PAPER_COLOUR, linestyles=(0, (2, 1)),
                      lw=1.8, zorder=6)
            ax.annotate(f"paper {paper:g}x\nmulticast", (at + 0.36, y), xytext=(3, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=7,
                        color=PAPER_COLOUR, zorder=6,
                        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                              "alpha": 0.85})
            tops.append(y)
        headroom(ax, tops, 0.3)      # the labels inside the frame
        ax.set_title(_cap_label(c), fontsize=9)
        ax.set_xticks(range(len(labels)), labels, fontsize=8)
        ax.set_ylabel("execution time (s)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7.5, loc="upper right")
    return note(save_judged(fig, run_dir / "procs.png", claims), notes,
                "unicast with 1, 2, ... sending processes against multicast, at the largest "
                "workload, per sender cap; whiskers: the 95 % interval of the mean over runs; "
                "black tick: the link's bound; above each unicast bar: its time over "
                "multicast's (mean over repetitions and its 95 % interval); red dashes "
                "across the most processes' bar: the time the paper's 1.85x over multicast "
                "gives it; under the "
                "figure: the claims judged on it")


def plot_orca(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """summary.csv and every figure; returns the figures drawn."""
    run_dir = Path(run_dir)   # (analysis.plot has refused a run that is not ok)
    transfers = table(run_dir, "transfers.csv", "transfers")
    rounds = read_csv(run_dir / "rounds.csv")
    receivers = optional_table(run_dir / "receivers.csv")
    summary = summarize(transfers)
    write_csv(run_dir / "summary.csv", summary)
    notes = _notes(config)
    # Figs. 5-7 under the smallest cap the run has (uncapped when it has that); Fig. 8 all
    base = min(r["sender_cpu"] for r in summary)
    rounds = [r for r in rounds if sender_cpu(r) == base]
    receivers = [r for r in receivers if sender_cpu(r) == base]
    out = [plot_exec_time(run_dir, config, [r for r in summary if r["sender_cpu"] == base],
                          notes, transfers)]
    send_col = "round_s" if rounds and rounds[0].get("round_s", "") != "" else "bound_s"
    out.append(plot_cdfs(run_dir, config, rounds, send_col,
                         "per-round send time (001 Fig. 6)", "send time", "send_cdf.png",
                         notes, "send time: a round's first datagram to its last ACK; one CDF "
                         "per workload, every run"))
    if receivers:
        first = sorted({r["receiver"] for r in receivers})[0]
        mine = [r for r in receivers if r["receiver"] == first]
        out.append(plot_cdfs(run_dir, config, mine, "wait_s",
                             f"wait time of receiver {first} (001 Fig. 7)", "wait time",
                             "wait_cdf.png", notes, f"wait time: {first}'s ACK of file i to "
                             "file i+1's arrival; one CDF per workload, every run"))
    procs = plot_procs(run_dir, config, summary, notes, transfers)
    if procs is not None:
        out.append(procs)
    return out
