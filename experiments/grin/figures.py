"""Summaries and the figure of the ``grin`` experiment (003_…, Figs. 6/7 style).

Reads flows.csv (one row per connection, degree, active share and run) and, for emulated
runs, each point's fidelity.json.  Writes summary.csv and throughput.png (the paper's
claims are in claims.py beside this file): per-server throughput vs % of active servers, one
colour per network (original, GRIN degrees, multihomed),
normalized to the original network's best result; emulated (solid), the independent-
subflow model on the same subflows (dotted) and the paper's h1 optimum (dashed).

For ``grin-hops`` (section 5.1, experiments/grin/hops.py): summary.csv and hops.png from
hops.csv, h1's and h2's gap to the optimum by GRIN degree (``plot_grin_hops``).
"""
from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from analysis.figures import caption, note, save
from store import cell, read_csv, write_csv


def network_label(network: str) -> str:
    """How figures name a network (as experiment.label does, without importing the run code)."""
    if network == "grin0":
        return "original"
    return f"multihomed (+{network[2:]} NIC)" if network.startswith("mh") else network.upper()

COLUMNS = {"mbps": "emulated", "uncoupled_model_mbps": "model: independent subflows",
           "h1_optimum_mbps": "model: h1 optimum (paper)"}




def network_of(row: dict[str, str]) -> str:
    """grin<d> or mh<extra> (runs from before the multihomed baseline name only a degree)."""
    return row.get("network") or f"grin{int(row['degree'])}"


def _order(network: str) -> tuple[int, int]:
    return (network.startswith("mh"), int(network.lstrip("grinmh")))


def summarize(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per (network, active %): mean per-connection Mb/s of each column over runs and
    connections, and each normalized to the original network's best (highest) mean."""
    keys = sorted({(network_of(r), float(r["active_pct"])) for r in rows},
                  key=lambda k: (_order(k[0]), k[1]))
    out = []
    for net, pct in keys:
        mine = [r for r in rows if network_of(r) == net and float(r["active_pct"]) == pct]
        row: dict[str, Any] = {"network": net, "active_pct": pct, "connections": len(mine),
                               "active_servers": mine[0]["active"]}
        for col in COLUMNS:
            vals = [cell(r.get(col)) for r in mine]
            vals = [v for v in vals if v == v]
            row[col] = round(mean(vals), 4) if vals else ""
        sub = [cell(r.get("subflows")) for r in mine]
        if all(s == s for s in sub):
            row["subflows_mean"] = round(mean(sub), 2)
            row["horizontal_subflows_mean"] = round(mean(cell(r["horizontal_subflows"])
                                                         for r in mine), 2)
        out.append(row)
    for col in COLUMNS:
        best = [r[col] for r in out if r["network"] == "grin0" and r[col] != ""]
        for r in out:
            r[f"{col}_norm"] = round(r[col] / max(best), 4) if best and r[col] != "" else ""
    return out


def _fidelity_line(run_dir: Path) -> str:
    reports = [json.loads(p.read_text()) for p in sorted(run_dir.glob("run*/*/fidelity.json"))]
    if not reports:
        return "backend=model: flow-model numbers, not measurements"
    ratios = [r["aggregate_ratio"] for r in reports if r.get("aggregate_ratio") is not None]
    gaps = [r["gaps_within_10pct"] for r in reports if r.get("gaps_within_10pct") is not None]
    cpu = [r["cpu_mean"] for r in reports if r.get("cpu_mean") is not None]
    miss = sum(r.get("subflows_missing", 0) for r in reports)
    want = sum(r.get("subflows_designed", 0) for r in reports)
    text = (f"fidelity: emulated/independent-subflow model {min(ratios):.2f}-{max(ratios):.2f}"
            if ratios else "fidelity: no model ratio")
    if gaps:
        text += f", busy-link dequeue gaps within 10 %: {min(gaps):.1%}-{max(gaps):.1%}"
    if cpu:
        text += f", CPU {min(cpu):.0f}-{max(cpu):.0f} %"
    return text + f", subflows opened {want - miss}/{want}"


def plot_grin(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """summary.csv and throughput.png."""
    run_dir = Path(run_dir)   # (analysis.plot has refused a run that is not ok)
    rows = read_csv(run_dir / "flows.csv")
    if not rows:
        raise ValueError(f"{run_dir}: flows.csv has no connections")
    summary = summarize(rows)
    write_csv(run_dir / "summary.csv", summary)
    p = config["params"]
    where = (f"k={p.get('k')} fat tree (ECMP), racks = edge switches"
             if p.get("base") == "fattree" else
             f"{p.get('racks')} racks x {p.get('servers')} servers on one switch")
    notes = (f"{where}, placement={p.get('placement')}, pattern={p.get('pattern')}, MPTCP "
             f"(upstream, uncoupled, default scheduler)\n{_fidelity_line(run_dir)}\n"
             "normalized to the original network's best; solid: emulated, dotted: the "
             "independent-subflow model on the same subflows, dashed: the paper's h1 optimum")
    fig, ax = plt.subplots(figsize=(8.6, 5.4))
    fig.suptitle(caption(config, "per-server throughput vs active servers (003 Figs. 6/7)"),
                 fontsize=10)
    styles = {"mbps": "-o", "uncoupled_model_mbps": ":", "h1_optimum_mbps": "--"}
    # two legends beside the axes, not one entry per line over the data: colour says the
    # network, the line's style what it is (measured, or one of the two models)
    nets, kinds = [], set()
    for i, net in enumerate(sorted({r["network"] for r in summary}, key=_order)):
        color = f"C{i}"
        mine = [r for r in summary if r["network"] == net]
        for col, style in styles.items():
            pts = [(r["active_pct"], r[f"{col}_norm"]) for r in mine if r[f"{col}_norm"] != ""]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, style, color=color, ms=4)
                kinds.add(col)
        nets.append(Line2D([], [], color=color, lw=6, label=network_label(net)))
    what = [Line2D([], [], color="0.3", marker="o" if col == "mbps" else None,
                   ls=style.strip("o"), ms=4,
                   label="emulated" if col == "mbps" else COLUMNS[col])
            for col, style in styles.items() if col in kinds]
    ax.set_xlabel("active servers (%)")
    ax.set_ylabel("per-server throughput / original network's best")
    ax.grid(alpha=0.3)
    first = ax.legend(handles=nets, title="network", fontsize=7, title_fontsize=7,
                      loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.add_artist(first)
    ax.legend(handles=what, title="line", fontsize=7, title_fontsize=7, loc="lower left",
              bbox_to_anchor=(1.01, 0.0))
    path = save(fig, run_dir / "throughput.png")
    return [note(path, notes)]


# -- grin-hops: the section 5.1 hop-count study (experiments/grin/hops.py) -------------------

#: the paper's numbers of section 5.1, drawn as reference lines: h1's average and worst gap
#: to the optimum, and the 1 % that h2 'seldom' exceeds
PAPER_H1_MEAN = 0.07
PAPER_H1_WORST = 0.32
PAPER_H2_SELDOM = 0.01
#: hops.csv's gap columns: (1 - h1 / optimum, 1 - h2 / optimum)
GAPS = ("h1_gap", "h2_gap")


def hop_seeds(rows: list[dict[str, str]]) -> list[int]:
    """The seeds of hops.csv's rows, ascending."""
    return sorted({int(r["seed"]) for r in rows})


def seed_words(seeds: list[int]) -> str:
    """'seed 1', 'seeds 101-105' or 'seeds 1, 3, 7'."""
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def summarize_hops(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per (pattern, degree), over its active shares and seeds: each gap's mean and worst,
    and the share of instances with h2 more than 1 % below the optimum; then one row over
    every instance (pattern 'all')."""
    def stats(pattern: str, degree: Any, mine: list[dict[str, str]]) -> dict[str, Any]:
        out: dict[str, Any] = {"pattern": pattern, "degree": degree, "instances": len(mine)}
        for col in GAPS:
            vals = [cell(r[col]) for r in mine]
            out[f"{col}_mean"] = round(mean(vals), 6)
            out[f"{col}_worst"] = round(max(vals), 6)
        out["h2_over_1pct_share"] = round(
            mean(1.0 if cell(r["h2_gap"]) > PAPER_H2_SELDOM else 0.0 for r in mine), 6)
        return out

    order = {p: i for i, p in enumerate(dict.fromkeys(r["pattern"] for r in rows))}
    keys = sorted({(r["pattern"], int(r["degree"])) for r in rows},
                  key=lambda k: (order[k[0]], k[1]))
    out = [stats(p, d, [r for r in rows if r["pattern"] == p and int(r["degree"]) == d])
           for p, d in keys]
    return out + [stats("all", "all", rows)]


def plot_grin_hops(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """summary.csv and hops.png: h1's and h2's gap to the optimum by GRIN degree, one line
    per traffic pattern (mean over active shares and seeds; dashed: the worst instance),
    beside the paper's 7 % average and 32 % worst for h1 and its 1 % for h2."""
    run_dir = Path(run_dir)
    rows = read_csv(run_dir / "hops.csv")
    if not rows:
        raise ValueError(f"{run_dir}: hops.csv has no instances")
    summary = summarize_hops(rows)
    write_csv(run_dir / "summary.csv", summary)
    p = config["params"]
    seeds = hop_seeds(rows)
    shares = sorted({cell(r["active_pct"]) for r in rows})
    where = (f"{p.get('racks')} racks x {p.get('servers')} servers on one switch, "
             f"{seed_words(seeds)}, {'/'.join(f'{a:g}' for a in shares)} % active")
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 4.6))
    fig.suptitle(caption(config, "h1 and h2 below the maximum multi-commodity flow, by "
                                 "GRIN degree (003 section 5.1)"), fontsize=10)
    per = [r for r in summary if r["pattern"] != "all"]
    for ax, col, name in zip(axes, GAPS, ("h1", "h2")):
        for i, pattern in enumerate(dict.fromkeys(r["pattern"] for r in per)):
            mine = [r for r in per if r["pattern"] == pattern]
            xs = [r["degree"] for r in mine]
            ax.plot(xs, [100 * r[f"{col}_mean"] for r in mine], "-o", color=f"C{i}", ms=4,
                    label=f"{pattern} (mean)")
            ax.plot(xs, [100 * r[f"{col}_worst"] for r in mine], "--", color=f"C{i}",
                    lw=0.9, label=f"{pattern} (worst)")
        refs = ([(PAPER_H1_MEAN, "paper: 7 % on average"),
                 (PAPER_H1_WORST, "paper: at most 32 % (GRIN6, permutation)")]
                if name == "h1" else [(PAPER_H2_SELDOM, "paper: seldom more than 1 %")])
        for y, text in refs:
            ax.axhline(100 * y, color="#cf222e", lw=1, ls=":")
            ax.annotate(text, (0.01, 100 * y), xycoords=("axes fraction", "data"),
                        xytext=(0, 2), textcoords="offset points", fontsize=7,
                        color="#cf222e")
        ax.set_xlabel("GRIN degree")
        ax.set_ylabel(f"1 - {name} / optimum (%)")
        ax.set_xticks(sorted({r["degree"] for r in per}))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.set_title(f"{name}: {where}"[:110], fontsize=7.5, loc="left")
    # the lines rise with the degree: the left middle is free (the top holds the paper's 32 %)
    axes[0].legend(fontsize=6, ncol=2, loc="center left")
    path = save(fig, run_dir / "hops.png")
    return [note(path, f"{where}, placement rack; flow model (HiGHS), no emulation.\n"
                       "Per traffic pattern and GRIN degree: solid, the mean over active "
                       "shares and seeds of 1 - h1 / optimum (left) and 1 - h2 / optimum "
                       "(right), the optimum being the maximum total multi-commodity flow "
                       "over every path; dashed, the worst instance.  Red dotted lines: the "
                       "paper's numbers (h1 7 % on average and at most 32 %, h2 seldom more "
                       "than 1 % below).")]
