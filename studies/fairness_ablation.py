"""Issue #28's coupling ablation of the fairness experiment (docs/notebook/000-permutation-
fairness.md): Jellyfish / fat tree mean throughput per repetition, measured (iperf3) and in
each flow model on the run's own traced paths, for emulated runs that differ in one thing
(e.g. ``--cc lia`` against ``--cc reno``), paired by repetition.

Writes ablation.csv (one row per run folder and repetition), ablation.md (means and the
paired differences against the first folder) and ablation.png into the output folder.
Reads flows.csv, and subflows.csv with config.json for the models a run did not compute
(figures.RENO_MODELS: LIA's equilibrium and Reno's with and without pooling, solved again
on the run's own traced paths; runs before 2026-11-28 lack the first; and LIA's and Reno's
with each subflow's measured RTT, the round-trip-time ablation, and LIA's on the capacity
the emulation delivered on its congested links).  Usage:

    python -m studies.fairness_ablation OUT LABEL=RUN_FOLDER LABEL=RUN_FOLDER ...
"""
from __future__ import annotations

import statistics as st
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.figures import save
from analysis.intervals import Interval, bars_words, bracket_text, error_bars, mean_interval
from analysis.remodel import remodel
from analysis.summaries import with_goodput
from store import cell, read_csv
from studies.common import labelled_runs, write

#: flows.csv columns -> what they are (all normalized to the host link)
MEASURES = {"norm_goodput": "measured (iperf3)", "norm_model": "max-min",
            "norm_model_tcp": "TCP-like, independent subflows",
            "norm_model_tcp_coupled": "TCP-like, coupled",
            "norm_model_lia": "LIA equilibrium",
            "norm_model_reno": "Reno (alpha 2), independent subflows",
            "norm_model_reno_coupled": "Reno (alpha 2), coupled",
            "norm_model_lia_rtt": "LIA equilibrium, measured RTTs",
            "norm_model_reno_rtt": "Reno, independent subflows, measured RTTs",
            "norm_model_lia_delivered": "LIA equilibrium, delivered capacities"}

Row = dict[str, Any]


def ratios(rows: list[dict[str, str]], label: str) -> list[Row]:
    """Per repetition: Jellyfish mean / fat-tree mean of every measure present."""
    by: dict[int, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by[int(r["run"])].append(r)
    return [_ratio_row(by[run], {"label": label, "run": run}) for run in sorted(by)]


def pooled(rows: list[dict[str, str]], label: str) -> Row:
    """Over every flow of every repetition: Jellyfish mean / fat-tree mean of every
    measure present (the agreement claim's ratio of means)."""
    return _ratio_row(rows, {"label": label})


def _ratio_row(rows: list[dict[str, str]], row: Row) -> Row:
    """row with, per measure, the Jellyfish rows' mean over the fat-tree rows'."""
    for col in MEASURES:
        jf, ft = (_mean([r for r in rows if r["topology"] == topo], col)
                  for topo in ("jellyfish", "fattree"))
        row[col] = round(jf / ft, 4) if ft else float("nan")
    return row


def _mean(rows: list[dict[str, str]], col: str) -> float:
    """Mean of a column's present cells (NaN when none)."""
    vals = [v for r in rows if (v := cell(r.get(col))) == v]
    return st.mean(vals) if vals else float("nan")


def summary(rows: list[Row], whole: Sequence[Row] = ()) -> list[str]:
    """ablation.md: each folder's mean ratio per measure (and, given ``whole``, its ratio
    of means over every flow), and the paired differences of the measured ratio against
    the first folder's."""
    labels = list(dict.fromkeys(r["label"] for r in rows))
    head = ["| run | " + " | ".join(MEASURES.values()) + " |",
            "|---|" + "---|" * len(MEASURES)]
    ivs = {lab: measured_interval([r for r in rows if r["label"] == lab]) for lab in labels}
    # the interval's column only where a folder has more than one repetition (one per
    # folder, as the seed-paired arms have: their interval is the pairs' below)
    many = any(iv is not None and iv.n > 1 for iv in ivs.values())
    lines = ["# fairness coupling ablation (issue #28)", "",
             "Jellyfish / fat tree mean normalized throughput, mean over repetitions"
             + ("; the last column: the measured one's Student-t 95 % interval over them."
                if many else "."), "",
             *([head[0] + " measured: mean [95 % interval], repetitions |", head[1] + "---|"]
               if many else head)]
    for lab in labels:
        mine = [r for r in rows if r["label"] == lab]
        iv = ivs[lab]
        lines.append(f"| {lab} | " + " | ".join(
            f"{st.mean(float(r[c]) for r in mine):.3f}" for c in MEASURES) + " |"
            + ((f" {bracket_text(iv)}, {iv.n} |" if iv else " |") if many else ""))
    if whole:
        lines += ["", "Jellyfish / fat tree, ratio of the means over every flow of every "
                  "repetition (the agreement claim's measure).", "", *head]
        lines += [f"| {w['label']} | " + " | ".join(f"{float(w[c]):.3f}" for c in MEASURES)
                  + " |" for w in whole]
    if whole and (by_seed := seed_pairs(whole)):
        return lines + ["", by_seed]
    base = {r["run"]: r["norm_goodput"] for r in rows if r["label"] == labels[0]}
    for lab in labels[1:]:
        diffs = [base[r["run"]] - r["norm_goodput"] for r in rows
                 if r["label"] == lab and r["run"] in base]
        if diffs:
            lines += ["", f"Paired by repetition, measured {labels[0]} minus {lab}: "
                      + ", ".join(f"{d:+.3f}" for d in diffs)
                      + f"; mean {st.mean(diffs):+.3f}"
                      + (f" (sd {st.stdev(diffs):.3f})" if len(diffs) > 1 else "")]
    return lines


def measured_interval(mine: Sequence[Row]) -> Interval | None:
    """The mean over repetitions of the measured ratio and its Student-t 95 % interval
    (None without a measured repetition)."""
    vals = [v for r in mine if (v := float(r["norm_goodput"])) == v]
    return mean_interval(vals) if vals else None


def seed_pairs(whole: Sequence[Row]) -> str:
    """For folders labelled ARM-sSEED in exactly two arms (one run folder per arm and seed,
    as the interleaved coupling ablations are): per seed, the first arm's measured ratio
    of means minus the second's, their mean and its Student-t 95 % interval; '' for any
    other labelling (folders are then paired by repetition with the first)."""
    arms: dict[str, dict[str, float]] = defaultdict(dict)
    for w in whole:
        arm, sep, seed = str(w["label"]).rpartition("-s")
        if not sep or not arm or not seed.isdigit():
            return ""
        arms[arm][seed] = float(w["norm_goodput"])
    if len(arms) != 2:
        return ""
    (a, first), (b, second) = arms.items()
    seeds = sorted(set(first) & set(second), key=int)
    diffs = [first[s] - second[s] for s in seeds]
    if len(diffs) < 2:
        return ""
    iv = mean_interval(diffs)
    return (f"Paired by seed ({', '.join(seeds)}), measured {a} minus {b}: "
            + ", ".join(f"{d:+.3f}" for d in diffs)
            + f"; mean {iv.mean:+.3f}, 95 % interval [{iv.lo:+.3f}, {iv.hi:+.3f}] "
            f"(Student t, {len(diffs)} pairs)")


#: the models plotted beside the measurement: column, marker, label
_PLOTTED = (("norm_model_tcp_coupled", "^", "TCP-like, coupled (pooled)"),
            ("norm_model_lia", "D", "LIA equilibrium"),
            ("norm_model_lia_rtt", "s", "LIA equilibrium, measured RTTs"),
            ("norm_model_tcp", "v", "TCP-like, independent subflows"),
            ("norm_model", "_", "max-min"))


def plot(out: Path, rows: list[Row]) -> Path:
    """ablation.png: per run folder, each repetition's measured ratio (small dots), their
    mean (large dot) with its Student-t 95 % interval, and the mean of each model on the
    same paths (markers; the models' own spread over repetitions is not drawn: they are
    there to say where the measurement sits, and five more bars hid it)."""
    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels) + 2) + 2.4, 4.2))
    ns = []
    for i, lab in enumerate(labels):
        mine = [r for r in rows if r["label"] == lab]
        iv = measured_interval(mine)
        if iv is None:
            continue
        ns.append(iv.n)
        meas = [float(r["norm_goodput"]) for r in mine]
        ax.plot([i - 0.2] * len(meas), meas, ".", color="0.6", ms=5,
                label="measured, one repetition" if i == 0 else None)
        ax.errorbar([i - 0.12], [iv.mean], yerr=error_bars([iv]) if iv.n > 1 else None,
                    fmt="o", color="k", ms=8, capsize=3,
                    label="measured, mean" if i == 0 else None)
        for k, (col, marker, name) in enumerate(_PLOTTED):
            vals = [v for r in mine if (v := cell(r.get(col))) == v]
            if vals:
                ax.plot(i + 0.12, st.mean(vals), marker, color=f"C{k}", ms=8,
                        mew=2, label=name if i == 0 else None)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.set(ylabel="Jellyfish / fat tree, mean throughput\n(each normalized to the link rate)",
           title="Jellyfish / fat tree: measured and the models on the same paths")
    ax.grid(alpha=0.3, axis="y")
    # beside the axes: inside (lower left) it covered the first folders' points
    words = bars_words(ns)
    handles, names = ax.get_legend_handles_labels()
    first = sorted(range(len(names)), key=lambda k: not names[k].startswith("measured"))
    ax.legend([handles[k] for k in first], [names[k] for k in first], fontsize=7,
              loc="upper left", bbox_to_anchor=(1.01, 1.0), title_fontsize=7,
              title="black " + words.replace(" of the mean", "\nof the mean").replace(
                  "; ", "\n") if words.startswith("bars") else "measured: " + words)
    return save(fig, out / "ablation.png")


def main(argv: list[str] | None = None) -> int:
    got = labelled_runs(sys.argv[1:] if argv is None else argv, "studies.fairness_ablation")
    if got is None:
        return 2
    out, runs = got
    # (ablations are emulated runs; folders from before goodput: their iperf column)
    flows = {label: remodel(folder, with_goodput(read_csv(folder / "flows.csv"), "emulated"))
             for label, folder in runs}
    rows = [r for label, got in flows.items() for r in ratios(got, label)]
    whole = [pooled(got, label) for label, got in flows.items()]
    print(write(out, rows, summary(rows, whole), lambda o: plot(o, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
