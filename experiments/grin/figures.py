"""Summaries and the figure of the ``grin`` experiment (003_…, Figs. 6/7 style).

Reads flows.csv (one row per connection, degree, active share and run) and, for emulated
runs, each point's fidelity.json.  Writes summary.csv and throughput.png (the paper's
claims are in claims.py beside this file): per-server throughput vs % of active servers, one
colour per network (original, GRIN degrees, multihomed),
normalized to the original network's best result; emulated (solid), the independent-
subflow model on the same subflows (dotted) and the paper's h1 optimum (dashed).
"""
from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

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
    fig, ax = plt.subplots(figsize=(7.5, 5.4))
    fig.suptitle(caption(config, "per-server throughput vs active servers (003 Figs. 6/7)"),
                 fontsize=10)
    styles = {"mbps": "-o", "uncoupled_model_mbps": ":", "h1_optimum_mbps": "--"}
    for i, net in enumerate(sorted({r["network"] for r in summary}, key=_order)):
        color = f"C{i}"
        mine = [r for r in summary if r["network"] == net]
        for col, style in styles.items():
            pts = [(r["active_pct"], r[f"{col}_norm"]) for r in mine if r[f"{col}_norm"] != ""]
            if pts:
                xs, ys = zip(*pts)
                label = network_label(net) + \
                    ("" if col == "mbps" else f" ({COLUMNS[col]})")
                ax.plot(xs, ys, style, color=color, label=label, ms=4)
    ax.set_xlabel("active servers (%)")
    ax.set_ylabel("per-server throughput / original's best")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    path = save(fig, run_dir / "throughput.png")
    return [note(path, notes)]
