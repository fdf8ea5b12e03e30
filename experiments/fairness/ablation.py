"""Issue #28's coupling ablation of the fairness experiment (docs/results/000-permutation-
fairness.md): Jellyfish / fat tree mean throughput per repetition, measured (iperf3) and in
each flow model on the run's own traced paths, for emulated runs that differ in one thing
(e.g. ``--cc lia`` against ``--cc reno``), paired by repetition.

Writes ablation.csv (one row per run folder and repetition), ablation.md (means and the
paired differences against the first folder) and ablation.png into the output folder.
Reads flows.csv, and subflows.csv with config.json for the models a run did not compute
(RENO_MODELS: LIA's equilibrium and Reno's with and without pooling, solved again on the
run's own traced paths; runs before 2026-11-28 lack the first).  Usage:

    python -m experiments.fairness.ablation OUT LABEL=RUN_FOLDER LABEL=RUN_FOLDER ...
"""
from __future__ import annotations

import statistics as st
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import topos
from analysis.ablation import labelled_runs, write
from analysis.figures import save
from model import alpha_fair_rates, lia_rates
from model.network import capacities, path_links
from store import cell, read_csv, read_json

#: flows.csv columns -> what they are (all normalized to the host link)
MEASURES = {"norm_iperf": "measured (iperf3)", "norm_model": "max-min",
            "norm_model_tcp": "TCP-like, independent subflows",
            "norm_model_tcp_coupled": "TCP-like, coupled",
            "norm_model_lia": "LIA equilibrium",
            "norm_model_reno": "Reno (alpha 2), independent subflows",
            "norm_model_reno_coupled": "Reno (alpha 2), coupled"}
#: the Reno-based models solved again from subflows.csv when flows.csv lacks them: LIA's
#: fluid equilibrium (RFC 6356, model.lia_rates) between Reno's allocation with
#: independent subflows and with each connection pooled over its paths
RENO_MODELS = {
    "norm_model_lia": lambda caps, flows: lia_rates(caps, flows),
    "norm_model_reno": lambda caps, flows: alpha_fair_rates(caps, flows, 2.0),
    "norm_model_reno_coupled": lambda caps, flows: alpha_fair_rates(caps, flows, 2.0,
                                                                    coupled=True)}

Row = dict[str, Any]


def remodel(folder: Path, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """flows.csv rows with every RENO_MODELS column they lack filled in: each repetition's
    network rebuilt from its spec, its connections from the subflows' traced paths."""
    want = [c for c in RENO_MODELS if not any(cell(r.get(c)) == cell(r.get(c)) for r in rows)]
    if not want or not (folder / "subflows.csv").is_file():   # no traced paths: left out
        return rows
    bw = float(read_json(folder / "config.json")["bw"])
    nets: dict[tuple[str, str], dict[str, list]] = defaultdict(dict)
    specs: dict[tuple[str, str], str] = {}
    for sub in read_csv(folder / "subflows.csv"):
        key = (sub["run"], sub["topology"])
        specs[key] = sub["spec"]
        nets[key].setdefault(sub["src"], []).append(
            path_links(sub["src"], sub["path"].split(">"), sub["dst"]))
    got: dict[tuple[str, str, str], dict[str, float]] = {}
    for key, conns in nets.items():
        caps = capacities(topos.build(specs[key]), bw)
        for col in want:
            for src, rate in zip(conns, RENO_MODELS[col](caps, list(conns.values()))):
                got.setdefault((*key, src), {})[col] = float(rate) / bw
    return [{**r, **{c: str(round(v, 5)) for c, v in got.get(
        (r["run"], r["topology"], r["src"]), {}).items()}} for r in rows]


def ratios(rows: list[dict[str, str]], label: str) -> list[Row]:
    """Per repetition: Jellyfish mean / fat-tree mean of every measure present."""
    by: dict[tuple[int, str], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by[(int(r["run"]), r["topology"])].append(r)
    out = []
    for run in sorted({run for run, _ in by}):
        row: Row = {"label": label, "run": run}
        for col in MEASURES:
            jf, ft = (_mean(by[(run, topo)], col) for topo in ("jellyfish", "fattree"))
            row[col] = round(jf / ft, 4) if ft else float("nan")
        out.append(row)
    return out


def _mean(rows: list[dict[str, str]], col: str) -> float:
    """Mean of a column's present cells (NaN when none)."""
    vals = [v for r in rows if (v := cell(r.get(col))) == v]
    return st.mean(vals) if vals else float("nan")


def summary(rows: list[Row]) -> list[str]:
    """ablation.md: each folder's mean ratio per measure, and the paired differences of
    the measured ratio against the first folder's."""
    labels = list(dict.fromkeys(r["label"] for r in rows))
    lines = ["# fairness coupling ablation (issue #28)", "",
             "Jellyfish / fat tree mean normalized throughput, mean over repetitions.", "",
             "| run | " + " | ".join(MEASURES.values()) + " |",
             "|---|" + "---|" * len(MEASURES)]
    for lab in labels:
        mine = [r for r in rows if r["label"] == lab]
        lines.append(f"| {lab} | " + " | ".join(
            f"{st.mean(float(r[c]) for r in mine):.3f}" for c in MEASURES) + " |")
    base = {r["run"]: r["norm_iperf"] for r in rows if r["label"] == labels[0]}
    for lab in labels[1:]:
        diffs = [base[r["run"]] - r["norm_iperf"] for r in rows
                 if r["label"] == lab and r["run"] in base]
        if diffs:
            lines += ["", f"Paired by repetition, measured {labels[0]} minus {lab}: "
                      + ", ".join(f"{d:+.3f}" for d in diffs)
                      + f"; mean {st.mean(diffs):+.3f}"
                      + (f" (sd {st.stdev(diffs):.3f})" if len(diffs) > 1 else "")]
    return lines


def plot(out: Path, rows: list[Row]) -> Path:
    """ablation.png: the measured ratio per repetition of each folder, and each folder's
    coupled and independent-subflow models (dashed, dotted) and LIA's equilibrium
    (dash-dot)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, lab in enumerate(dict.fromkeys(r["label"] for r in rows)):
        mine = [r for r in rows if r["label"] == lab]
        x = [r["run"] for r in mine]
        ax.plot(x, [r["norm_iperf"] for r in mine], "o-", color=f"C{i}",
                label=f"{lab}: measured")
        ax.plot(x, [r["norm_model_tcp_coupled"] for r in mine], "--", color=f"C{i}",
                alpha=0.6, label=f"{lab}: TCP-like, coupled")
        ax.plot(x, [r["norm_model_tcp"] for r in mine], ":", color=f"C{i}", alpha=0.6,
                label=f"{lab}: TCP-like, independent")
        ax.plot(x, [r["norm_model_lia"] for r in mine], "x-.", color=f"C{i}", alpha=0.8,
                label=f"{lab}: LIA equilibrium")
    ax.set_xticks(sorted({r["run"] for r in rows}))
    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.set(xlabel="repetition (same seed: same permutation and graphs)",
           ylabel="Jellyfish / fat tree, mean normalized",
           title="Coupling ablation: Jellyfish / fat tree per repetition")
    ax.legend(fontsize=7, ncol=2)
    return save(fig, out / "ablation.png")


def main(argv: list[str] | None = None) -> int:
    got = labelled_runs(sys.argv[1:] if argv is None else argv, "experiments.fairness.ablation")
    if got is None:
        return 2
    out, runs = got
    rows = [r for label, folder in runs
            for r in ratios(remodel(folder, read_csv(folder / "flows.csv")), label)]
    print(write(out, rows, summary(rows), lambda o: plot(o, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
