"""Issue #28's wire-bytes ablation of the permutation experiment (docs/notebook/000-
permutation-fairness.md): emulated runs that differ in one thing (``--pattern permutation``
against ``--pattern pairing``), per repetition and transport: the measured mean, the max-min
model's on the run's own traced paths, their aggregate ratio, and what the hosts' stacks
counted (ACKs per data segment, the retransmitted share of data segments).

Writes ablation.csv (one row per folder, repetition and transport), ablation.md (each
folder's pooled ratios and the repetitions' spread) and ablation.png into the output
folder.  Reads flows.csv and fidelity.json only.  Usage:

    python -m experiments.permutation.ablation OUT LABEL=RUN_FOLDER LABEL=RUN_FOLDER ...
"""
from __future__ import annotations

import json
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.ablation import labelled_runs, write
from analysis.figures import save
from analysis.summaries import with_goodput
from store import cell, read_csv

Row = dict[str, Any]
TRANSPORTS = ("mptcp", "tcp")


def counters(fidelity: dict[str, Any]) -> dict[tuple[int, str], dict[str, float]]:
    """Per (repetition, transport): ACKs per delivered data segment and the retransmitted
    share of data segments, from the hosts' stack counters (``stack_counters``).  Every
    segment a host sends is data delivered, data retransmitted, or an ACK."""
    out = {}
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
    out = []
    for (run, transport), rows in sorted(by.items()):
        got = [(cell(r["norm_goodput"]), cell(r["norm_model"])) for r in rows]
        got = [(e, m) for e, m in got if e == e and m == m]
        if not got:
            continue
        emu, model = sum(e for e, _ in got), sum(m for _, m in got)
        out.append({"label": label, "run": run, "transport": transport, "flows": len(got),
                    "measured": round(emu / len(got), 4), "model": round(model / len(got), 4),
                    "ratio": round(emu / model, 4) if model else float("nan"),
                    **count.get((run, transport), {})})
    return out


def summary(rows: list[Row]) -> list[str]:
    """ablation.md: per folder and transport, the pooled ratio and the repetitions' range,
    the means, and the counters' medians."""
    lines = ["# permutation wire-bytes ablation (issue #28)", "",
             "Emulated / max-min model on each repetition's traced paths (iperf3 payload "
             "goodput over the link rate), pooled over repetitions.  Made by "
             "`scripts/permutation-ablation.sh` (as root).", "",
             "| run | transport | measured mean | model mean | measured / model | per repetition "
             "| ACKs per data segment | retransmitted |", "|---|---|---|---|---|---|---|---|"]
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
                f"{min(r['ratio'] for r in mine):.3f}-{max(r['ratio'] for r in mine):.3f} | "
                + (f"{st.median(acks):.2f}" if acks else "") + " | "
                + (f"{st.median(retx):.2%}" if retx else "") + " |")
    return lines


def plot(out: Path, rows: list[Row]) -> Path:
    """ablation.png: measured / model per repetition, one line per folder and transport."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, lab in enumerate(dict.fromkeys(r["label"] for r in rows)):
        for t, style in zip(TRANSPORTS, ("o-", "s--")):
            mine = [r for r in rows if r["label"] == lab and r["transport"] == t]
            if mine:
                ax.plot([r["run"] for r in mine], [r["ratio"] for r in mine], style,
                        color=f"C{i}", label=f"{lab}: {t}")
    ax.set_xticks(sorted({r["run"] for r in rows}))
    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.set(xlabel="repetition", ylabel="measured / max-min model (traced paths)",
           title="Wire-bytes ablation: permutation vs pairing, k=4, 5 Mb/s")
    ax.legend(fontsize=8)
    return save(fig, out / "ablation.png")


def main(argv: list[str] | None = None) -> int:
    got = labelled_runs(sys.argv[1:] if argv is None else argv,
                        "experiments.permutation.ablation")
    if got is None:
        return 2
    out, runs = got
    rows = []
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
