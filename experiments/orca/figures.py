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

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from analysis.figures import caption, note, save
from analysis.intervals import mean_interval
from store import cell, read_csv, write_csv

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
            row["cpu_mean"] = _mean_present(t.get("cpu_mean") for t in mine)
            # the sender's own CPU: cores it used while sending, and its cap's throttling
            row["sender_cores"] = _mean_present((t.get("sender_cores") for t in mine), 4)
            row["throttled_share"] = _throttled_share(mine)
            # goodput of one sending process: bytes on the sender's link per second over
            # the processes that sent them (the rate that a cap limits)
            row["mbps_per_process"] = _mean_present(
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


def _mean_present(values: Any, digits: int = 1) -> Any:
    v = [cell(x) for x in values]
    v = [x for x in v if x == x]
    return round(mean(v), digits) if v else ""


# -- figures ------------------------------------------------------------------------------

def _notes(config: dict[str, Any]) -> str:
    """Notes every figure shares (figures.json, on the report page)."""
    p = config["params"]
    model = p.get("backend") == "model"
    caps = str(p.get("sender_cpu") or "0")
    text = (f"workloads x{p.get('workloads')} of a {p.get('base_mb') or 'scaled'} MB base, "
            f"pace={p.get('pace')} (0 = unpaced), 33 rounds, group 239.1.1.1"
            + ("" if caps == "0" else f", sender caps {caps} cores a process, network work "
                                      f"{p.get('sender_net')} from it") + "\n")
    text += ("backend=model: the busiest link's time for the mode's copies, not measurements"
             if model else "measured by the sender app: a round ends at the last receiver's "
                           "ACK; the model's bound is the busiest link's time")
    return text


def _figure(ncols: int, title: str, width: float = 6.5) -> tuple[Any, np.ndarray]:
    fig, axes = plt.subplots(1, ncols, figsize=(max(7.0, width * ncols), 4.8), squeeze=False)
    fig.suptitle(title, fontsize=10)
    return fig, axes[0]



def plot_exec_time(run_dir: Path, config: dict[str, Any], summary: list[dict[str, Any]],
                   notes: str) -> Path:
    """Fig. 5: total time per workload, multicast vs single-process unicast, the mean's 95 %
    interval as whiskers, the model's bound as a black tick, the speedup above each pair."""
    fig, (ax,) = _figure(1, caption(config, "execution time vs workload (001 Fig. 5)"))
    loads = sorted({r["workload"] for r in summary})
    x = np.arange(len(loads))
    for i, mode in enumerate(MODES):
        rows = {r["workload"]: r for r in summary if r["mode"] == mode and r["procs"] == 1}
        xs = [x[j] + (i - 0.5) * 0.38 for j, w in enumerate(loads) if w in rows]
        ys = [rows[w]["time_s"] for w in loads if w in rows]
        err = [[rows[w]["time_s"] - rows[w]["time_lo_s"] for w in loads if w in rows],
               [rows[w]["time_hi_s"] - rows[w]["time_s"] for w in loads if w in rows]]
        ax.bar(xs, ys, 0.36, yerr=err, capsize=3, color=COLORS[mode],
               label=f"{mode}{' (1 process)' if mode == 'unicast' else ''}")
        ax.scatter(xs, [rows[w]["bound_s"] for w in loads if w in rows], marker="_", s=300,
                   color="black", zorder=3, label="model bound" if i == 0 else None)
    for j, w in enumerate(loads):
        u = [r for r in summary if r["workload"] == w and r["mode"] == "unicast"
             and r["procs"] == 1 and "speedup_of_multicast" in r]
        if u:
            # above the whisker's top, not through it
            ax.annotate(f"{u[0]['speedup_of_multicast']:.2f}x",
                        (x[j], max(u[0]["time_s"], u[0]["time_hi_s"])),
                        ha="center", va="bottom", fontsize=8, xytext=(0, 6),
                        textcoords="offset points")
    # room above the tallest bar for its speedup label, inside the frame
    ax.set_ylim(top=ax.get_ylim()[1] * 1.1)
    mb = {r["workload"]: r["total_mb"] for r in summary}
    ax.set_xticks(x, [f"x{w}\n{mb[w]:.3g} MB" for w in loads])
    ax.set_xlabel("workload (33 rounds in total)")
    ax.set_ylabel("execution time (s)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return note(save(fig, run_dir / "exec_time.png"), notes,
                "multicast vs single-process unicast; whiskers: the 95 % interval of the mean "
                "over runs; black tick: "
                "the model's bound; above each pair: unicast's time over multicast's")


def _cdf(ax: Any, values: list[float], label: str, style: str = "-") -> None:
    v = np.sort(np.asarray(values, dtype=float))
    if v.size:
        ax.step(v, np.arange(1, v.size + 1) / v.size, style, where="post", label=label)


def plot_cdfs(run_dir: Path, config: dict[str, Any], rows: list[dict[str, str]], col: str,
              title: str, xlabel: str, name: str, notes: str, how: str) -> Path:
    """One panel per mode (single-process unicast), one CDF per workload (all runs)."""
    fig, axes = _figure(2, caption(config, title), width=4.5)
    loads = sorted({int(r["workload"]) for r in rows})
    for ax, mode in zip(axes, MODES):
        for w in loads:
            vals = [cell(r[col]) for r in rows if r["mode"] == mode and r["procs"] == "1"
                    and int(r["workload"]) == w]
            _cdf(ax, [v for v in vals if v == v], f"x{w}")
        ax.set_title(mode + (" (1 process)" if mode == "unicast" else ""), fontsize=9)
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
        ax.legend(title="workload", fontsize=7, loc="lower right")
    return note(save(fig, run_dir / name), notes, how)


def _cap_label(c: float) -> str:
    return "uncapped sender" if not c else f"sender capped at {c:g} cores a process"


def plot_procs(run_dir: Path, config: dict[str, Any], summary: list[dict[str, Any]],
               notes: str) -> Path | None:
    """Fig. 8: unicast time vs sending processes at the largest workload, multicast beside;
    one panel per sender cap (--sender-cpu)."""
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
    fig, axes = _figure(len(panels), caption(config, f"unicast sending processes, workload "
                                                     f"x{top} (001 Fig. 8)"), width=4.5)
    for ax, (c, uni, mc) in zip(axes, panels):
        labels = [f"unicast\n{r['procs']} proc" for r in uni] + ["multicast"]
        bars = [*uni, mc]
        ys = [r["time_s"] for r in bars]
        lo = [r["time_s"] - r["time_lo_s"] for r in bars]
        hi = [r["time_hi_s"] - r["time_s"] for r in bars]
        colors = [COLORS["unicast"]] * len(uni) + [COLORS["multicast"]]
        ax.bar(range(len(ys)), ys, 0.6, yerr=[lo, hi], capsize=3, color=colors)
        ax.scatter(range(len(ys)), [r["bound_s"] for r in bars], marker="_", s=400,
                   color="black", zorder=3, label="model bound (link)")
        for i, r in enumerate(uni):
            if "speedup_of_multicast" in r:
                ax.annotate(f"{r['speedup_of_multicast']:.2f}x",
                            (i, max(r["time_s"], r["time_hi_s"])),
                            ha="center", va="bottom", fontsize=8, xytext=(0, 6),
                            textcoords="offset points")
        ax.set_ylim(top=ax.get_ylim()[1] * 1.1)      # the speedup labels inside the frame
        ax.set_title(_cap_label(c), fontsize=9)
        ax.set_xticks(range(len(ys)), labels, fontsize=8)
        ax.set_ylabel("execution time (s)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return note(save(fig, run_dir / "procs.png"), notes,
                "unicast with 1, 2, ... sending processes against multicast, at the largest "
                "workload, per sender cap; whiskers: the 95 % interval of the mean over runs; "
                "black tick: the link's "
                "bound; above each unicast bar: its time over multicast's")


def plot_orca(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """summary.csv and every figure; returns the figures drawn."""
    run_dir = Path(run_dir)   # (analysis.plot has refused a run that is not ok)
    transfers = read_csv(run_dir / "transfers.csv")
    if not transfers:
        raise ValueError(f"{run_dir}: transfers.csv has no transfers")
    rounds = read_csv(run_dir / "rounds.csv")
    recv_path = run_dir / "receivers.csv"
    receivers = read_csv(recv_path) if recv_path.exists() else []
    summary = summarize(transfers)
    write_csv(run_dir / "summary.csv", summary)
    notes = _notes(config)
    # Figs. 5-7 under the smallest cap the run has (uncapped when it has that); Fig. 8 all
    base = min(r["sender_cpu"] for r in summary)
    rounds = [r for r in rounds if sender_cpu(r) == base]
    receivers = [r for r in receivers if sender_cpu(r) == base]
    out = [plot_exec_time(run_dir, config, [r for r in summary if r["sender_cpu"] == base],
                          notes)]
    send_col = "round_s" if rounds and rounds[0].get("round_s", "") != "" else "bound_s"
    out.append(plot_cdfs(run_dir, config, rounds, send_col,
                         "per-round send time (001 Fig. 6)", "send time (s)", "send_cdf.png",
                         notes, "send time: a round's first datagram to its last ACK; one CDF "
                         "per workload, every run"))
    if receivers:
        first = sorted({r["receiver"] for r in receivers})[0]
        mine = [r for r in receivers if r["receiver"] == first]
        out.append(plot_cdfs(run_dir, config, mine, "wait_s",
                             f"wait time of receiver {first} (001 Fig. 7)", "wait time (s)",
                             "wait_cdf.png", notes, f"wait time: {first}'s ACK of file i to "
                             "file i+1's arrival; one CDF per workload, every run"))
    procs = plot_procs(run_dir, config, summary, notes)
    if procs is not None:
        out.append(procs)
    return out
