"""Issue #28's wire-bytes ablation of the permutation experiment (docs/notebook/000-
permutation-fairness.md): emulated runs that differ in one thing (``--pattern permutation``
against ``--pattern pairing``), per repetition and transport: the measured mean, the max-min
model's on the run's own traced paths, their aggregate ratio, and what the hosts' stacks
counted (ACKs per data segment, the retransmitted share of data segments).

Writes ablation.csv (one row per folder, repetition and transport), ablation.md (each
folder's pooled ratios, and the mean of the repetitions' ratios with its Student-t 95 %
interval) and ablation.png into the output folder.  Reads flows.csv and fidelity.json only.  Usage:

    python -m studies.permutation_ablation OUT LABEL=RUN_FOLDER LABEL=RUN_FOLDER ...
"""
from __future__ import annotations

import json
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.figures import save
from analysis.intervals import bars_words, bracket_text, error_bars, mean_interval
from analysis.summaries import with_goodput
from store import cell, read_csv
from studies.common import labelled_runs, write

TRANSPORTS = ("mptcp", "tcp")


class Counts(TypedDict):
    """What the hosts' stacks counted over one repetition and transport."""
    acks_per_segment: float
    retrans_share: float


class Row(TypedDict):
    """ablation.csv's row: one folder's repetition and transport."""
    label: str
    run: int
    transport: str
    flows: int
    measured: float
    model: float
    ratio: float
    acks_per_segment: NotRequired[float]
    retrans_share: NotRequired[float]


def counters(fidelity: dict[str, Any]) -> dict[tuple[int, str], Counts]:
    """Per (repetition, transport): ACKs per delivered data segment and the retransmitted
    share of data segments, from the hosts' stack counters (``stack_counters``).  Every
    segment a host sends is data delivered, data retransmitted, or an ACK."""
    out: dict[tuple[int, str], Counts] = {}
    for rep in fidelity.get("reports") or []:
        c = rep.get("stack_counters") or {}
        out_segs, delivered, retrans = (c.get(k) for k in ("OutSegs", "TCPDelivered",
                                                            "RetransSegs"))
        if not (out_segs and delivered) or retrans is None:
            continue
        out[(int(rep["run"]), str(rep["transport"]))] = {
            "acks_per_segment": round((out_segs - delivered - retrans) / delivered, 3),
            "retrans_share": round(retrans / (delivered + retrans), 4)}
    return out


def per_run(flows: list[dict[str, str]], fidelity: dict[str, Any], label: str) -> list[Row]:
    """One row per repetition and transport: measured and model means, and their ratio
    (sum over flows, the fidelity report's aggregate ratio), with the stack's counts."""
    by: dict[tuple[int, str], list[dict[str, str]]] = defaultdict(list)
    for r in flows:
        by[(int(r["run"]), r["transport"])].append(r)
    count = counters(fidelity)
    out: list[Row] = []
    for (run, transport), rows in sorted(by.items()):
        got = [(cell(r["norm_goodput"]), cell(r["norm_model"])) for r in rows]
        got = [(e, m) for e, m in got if e == e and m == m]
        if not got:
            continue
        emu, model = sum(e for e, _ in got), sum(m for _, m in got)
        row = Row(label=label, run=run, transport=transport, flows=len(got),
                  measured=round(emu / len(got), 4), model=round(model / len(got), 4),
                  ratio=round(emu / model, 4) if model else float("nan"))
        if (run, transport) in count:
            row.update(count[(run, transport)])
        out.append(row)
    return out


def summary(rows: list[Row]) -> list[str]:
    """ablation.md: per folder and transport, the pooled ratio, the mean of the
    repetitions' ratios with its Student-t 95 % interval, the means, and the counters'
    medians."""
    lines = ["# permutation wire-bytes ablation (issue #28)", "",
             "Emulated / max-min model on each repetition's traced paths (iperf3 payload "
             "goodput over the link rate), pooled over repetitions; beside it the mean of the "
             "repetitions' own ratios [its Student-t 95 % interval].  Made by "
             "`scripts/permutation-ablation.sh` (as root).", "",
             "| run | transport | measured mean | model mean | measured / model | per repetition: "
             "mean [95 % interval] | ACKs per data segment | retransmitted |",
             "|---|---|---|---|---|---|---|---|"]
    for lab in dict.fromkeys(r["label"] for r in rows):
        for t in TRANSPORTS:
            mine = [r for r in rows if r["label"] == lab and r["transport"] == t]
            if not mine:
                continue
            n = sum(r["flows"] for r in mine)
            emu = sum(r["measured"] * r["flows"] for r in mine) / n
            model = sum(r["model"] * r["flows"] for r in mine) / n
            acks = [r["acks_per_segment"] for r in mine if "acks_per_segment" in r]
            retx = [r["retrans_share"] for r in mine if "retrans_share" in r]
            lines.append(
                f"| {lab} | {t} | {emu:.3f} | {model:.3f} | **{emu / model:.3f}** | "
                f"{bracket_text(mean_interval([r['ratio'] for r in mine]))} | "
                + (f"{st.median(acks):.2f}" if acks else "") + " | "
                + (f"{st.median(retx):.2%}" if retx else "") + " |")
    return lines


def plot(out: Path, rows: list[Row]) -> Path:
    """ablation.png: measured / model per transport and folder: each repetition's ratio
    (small grey dots) and their mean with its Student-t 95 % interval (was one line per
    folder across the repetitions' indices, which pair nothing between folders)."""
    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ticks, names, ns = [], [], []
    for k, (t, marker) in enumerate(zip(TRANSPORTS, "os")):
        for i, lab in enumerate(labels):
            ratios = [r["ratio"] for r in rows if r["label"] == lab and r["transport"] == t
                      and r["ratio"] == r["ratio"]]
            if not ratios:
                continue
            x = k * (len(labels) + 1) + i
            iv = mean_interval(ratios)
            ns.append(iv.n)
            ax.plot([x - 0.18] * len(ratios), ratios, ".", color="0.55", ms=5)
            ax.errorbar([x], [iv.mean], yerr=error_bars([iv]) if iv.n > 1 else None,
                        fmt=marker, color=f"C{i}", ms=7, capsize=4, elinewidth=1.5)
            ticks.append(x)
            names.append(f"{lab}\n{t}")
    ax.set_xticks(ticks, names, fontsize=8)
    ax.set_xlim(min(ticks, default=0) - 0.7, max(ticks, default=0) + 0.5)
    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.set(ylabel="measured / max-min model (traced paths)",
           title="Wire-bytes ablation: permutation vs pairing, k=4, 5 Mb/s")
    ax.set_xlabel("grey dots: each repetition's ratio; marker: their mean, "
                  + bars_words(ns), fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return save(fig, out / "ablation.png")


def main(argv: list[str] | None = None) -> int:
    got = labelled_runs(sys.argv[1:] if argv is None else argv,
                        "studies.permutation_ablation")
    if got is None:
        return 2
    out, runs = got
    rows: list[Row] = []
    for label, folder in runs:
        fid = folder / "fidelity.json"
        fidelity = json.loads(fid.read_text()) if fid.is_file() else {}
        # emulated folders (the ablation's), those from before the goodput column too
        rows += per_run(with_goodput(read_csv(folder / "flows.csv"), "emulated"), fidelity,
                        label)
    print(write(out, rows, summary(rows), lambda o: plot(o, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
