"""Issue #28's two PLTS ablations, drawn from run folders (docs/notebook/004-plts.md).

1. *ECMP's draw.*  ECMP's mean % of ideal is what its hash collisions leave it, and that
   varies with the pairing and the hash: a flow-model run with many repetitions
   (``dcrepro run plts --backend model --runs 100``) gives its distribution; each emulated
   ECMP network gives its measured mean beside the model on its own traced paths, and the
   sprays' ratio to it.  The paper's "1.5x" needs ECMP at or below the sprays' mean / 1.5.
2. *Undo.*  Each scheme's mean % of ideal per loss recovery (``--recovery modern,noundo``):
   how much of the sprays' lead over the paper's numbers is Linux undoing the window cuts
   of spurious retransmissions.
3. *Counters.*  Each scheme's mean % of ideal in runs that differ in one dataplane option
   (``--dataplane bpf`` against ``bpf,cnt=packets``: CNT balancing bytes or packets).

Writes ablation.csv (one row per emulated network, per recovery x scheme and per counted
run x scheme), ablation.md and ablation.png (a panel per part given) into the output
folder.  Reads flows.csv only.  Usage:

    python -m studies.plts_ablation OUT [--draws MODEL_RUN] [--runs EMULATED_RUN ...]
        [--counters LABEL=EMULATED_RUN ...]
"""
from __future__ import annotations

import argparse
import statistics as st
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

import matplotlib
from matplotlib.axes import Axes

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.figures import save
from analysis.intervals import Interval, bars_words, error_bars, mean_interval
from experiments.plts.claims import PAPER_SPRAY_OVER_ECMP
from experiments.plts.figures import (
    LABELS,
    PAPER_PCT,
    RECOVERIES,
    SPRAYS,
    _ordered,
    aqm_mode,
    aqm_of,
)
from store import read_csv
from studies.common import labelled, write

#: a flows.csv row as read
Row = dict[str, str]


class Network(TypedDict):
    """ablation.csv's row of one emulated ECMP network."""
    kind: str
    source: str
    run: str
    recovery: str
    scheme: str
    aqm: str
    pct_ideal: float
    model_pct: float
    sprays_pct: float
    spray_over_ecmp: float


class Spread(TypedDict):
    """Mean over the runs of each run's mean % of ideal, and its Student-t 95 % interval
    (analysis.intervals, the claims' interval; one run: the value alone)."""
    pct_ideal: float
    pct_lo: float
    pct_hi: float
    runs: int


class Recovery(Spread):
    """ablation.csv's row of one (recovery, scheme, ECMP's queue)."""
    kind: str
    source: str
    recovery: str
    scheme: str
    aqm: str


class Counted(Spread):
    """ablation.csv's row of one scheme of a counter ablation's run."""
    kind: str
    source: str
    scheme: str


def _mean(rows: list[Row], col: str = "pct_ideal") -> float:
    return st.mean(float(r[col]) for r in rows)


def _model_pct(rows: list[Row]) -> float:
    """The flow model's mean % of ideal over rows (model_mbps against each row's ideal)."""
    return st.mean(100 * float(r["model_mbps"]) / float(r["ideal_mbps"]) for r in rows)


def draws(model_rows: list[Row]) -> list[float]:
    """ECMP's mean % of ideal per repetition of a flow-model run (one pairing and hash draw
    each), in run order."""
    by: dict[str, list[Row]] = defaultdict(list)
    for r in model_rows:
        if r["scheme"] == "ecmp":
            by[str(r["run"])].append(r)
    return [_mean(by[k]) for k in sorted(by, key=int)]


def networks(rows: list[Row], source: str) -> list[Network]:
    """One row per emulated ECMP network under modern recovery: its measured and modelled
    (traced paths) mean % of ideal, and the sprays' mean over the same run's sprays."""
    modern = [r for r in rows if str(r["recovery"]) == "modern"]
    ecmp: dict[tuple[int, str], list[Row]] = defaultdict(list)
    sprays: dict[int, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for r in modern:
        if r["scheme"] == "ecmp":
            ecmp[(int(r["run"]), aqm_mode(aqm_of(r)))].append(r)
        elif r["scheme"] in SPRAYS:
            sprays[int(r["run"])][str(r["scheme"])].append(r)
    out: list[Network] = []
    for (run, mode), mine in sorted(ecmp.items()):
        if not sprays[run]:
            continue
        pct, spray = _mean(mine), st.mean(_mean(v) for v in sprays[run].values())
        out.append({"kind": "network", "source": source, "run": str(run),
                    "recovery": "modern", "scheme": "ecmp", "aqm": mode,
                    "pct_ideal": round(pct, 2), "model_pct": round(_model_pct(mine), 2),
                    "sprays_pct": round(spray, 2), "spray_over_ecmp": round(spray / pct, 3)})
    return out


def recoveries(rows: list[Row], source: str) -> list[Recovery]:
    """One row per (recovery, scheme, ECMP's queue) of a run with more than one recovery:
    the mean over runs of each run's mean % of ideal, with its 95 % interval."""
    recs = _ordered((str(r["recovery"]) for r in rows), RECOVERIES)
    if len(recs) < 2:
        return []
    by: dict[tuple[str, str, str], dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[(str(r["recovery"]), str(r["scheme"]), aqm_mode(aqm_of(r)))][str(r["run"])].append(r)
    return [{"kind": "recovery", "source": source, "recovery": rec, "scheme": scheme,
             "aqm": mode, **_spread(per_run)}
            for (rec, scheme, mode), per_run in sorted(
                by.items(), key=lambda kv: (recs.index(kv[0][0]),
                                            list(LABELS).index(kv[0][1])))]


def _spread(per_run: dict[str, list[Row]]) -> Spread:
    """Each run's mean % of ideal over its flows (one pairing and hash draw each: the
    independent unit), their mean and its Student-t 95 % interval (was the runs' min-max)."""
    iv = mean_interval([_mean(v) for v in per_run.values()])
    return {"pct_ideal": round(iv.mean, 2), "pct_lo": round(iv.lo, 2),
            "pct_hi": round(iv.hi, 2), "runs": iv.n}


def _interval(r: Spread) -> Interval:
    """A row's interval back from its columns."""
    return Interval(float(r["pct_ideal"]), float(r["pct_lo"]), float(r["pct_hi"]),
                    int(r["runs"]))


def _cell(r: Spread) -> str:
    """'66.7 [62.1, 71.3]' (one run: the value alone), for the tables."""
    iv = _interval(r)
    return f"{iv.mean:.1f}" + (f" [{iv.lo:.1f}, {iv.hi:.1f}]" if iv.n > 1 else "")


def counted(rows: list[Row], label: str) -> list[Counted]:
    """One row per scheme of a run of the counter ablation: the mean over runs of each
    run's mean % of ideal, with its 95 % interval."""
    by: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[str(r["scheme"])][str(r["run"])].append(r)
    return [{"kind": "counter", "source": label, "scheme": scheme, **_spread(by[scheme])}
            for scheme in LABELS if scheme in by]


def ecmp_needed(nets: list[Network]) -> float:
    """ECMP's % of ideal at or below which the networks' mean spray reaches the paper's
    spray/ECMP ratio."""
    return st.mean(float(n["sprays_pct"]) for n in nets) / PAPER_SPRAY_OVER_ECMP


def summary(draw_pcts: list[float], nets: list[Network], recs: list[Recovery]) -> list[str]:
    """ablation.md's lines."""
    lines = ["# PLTS ablations (issue #28)", ""]
    if draw_pcts and nets:
        need = ecmp_needed(nets)
        spray = need * PAPER_SPRAY_OVER_ECMP
        q = sorted(draw_pcts)
        # the draws' range, not an interval: the question is where single draws (one
        # pairing and hash each) fall against the 1.5x threshold, a spread of outcomes
        # (and the histogram shows them all), not the uncertainty of their mean
        lines += [
            f"ECMP's draw: {len(q)} flow-model draws, ECMP mean % of ideal median "
            f"{st.median(q):.1f} (range {q[0]:.1f}-{q[-1]:.1f}); {PAPER_SPRAY_OVER_ECMP:g}x "
            f"with the emulated sprays' mean {spray:.1f} % needs ECMP <= {need:.1f} %: "
            f"{sum(x <= need for x in q)} of {len(q)} draws.", "",
            "| source | run | ECMP queue | ECMP % of ideal | model on its traced paths | "
            "sprays % | spray/ECMP |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {n['source']} | {n['run']} | {n['aqm']} | {n['pct_ideal']} | "
                  f"{n['model_pct']} | {n['sprays_pct']} | {n['spray_over_ecmp']} |"
                  for n in nets]
        lines.append("")
    if recs:
        lines += ["Undo: mean % of ideal per recovery (each run's mean over its flows; their "
                  "mean over the runs [its Student-t 95 % interval]).", "",
                  "| source | recovery | scheme | % of ideal [95 % interval] | runs |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['source']} | {r['recovery']} | {LABELS[r['scheme']]} ({r['aqm']}) | "
                  f"{_cell(r)} | {r['runs']} |" for r in recs]
    return lines


def counter_lines(cnts: list[Counted]) -> list[str]:
    """ablation.md's lines for the counter ablation."""
    if not cnts:
        return []
    return ["", "Counters: mean % of ideal per labelled run folder (each repetition's mean "
            "over its flows; their mean [its Student-t 95 % interval]).", "",
            "| run | scheme | % of ideal [95 % interval] | runs |", "|---|---|---|---|"] + [
        f"| {r['source']} | {LABELS[r['scheme']]} | {_cell(r)} | {r['runs']} |" for r in cnts]


def plot(out: Path, draw_pcts: list[float], nets: list[Network], recs: list[Recovery],
         cnts: list[Counted] | None = None) -> Path:
    """ablation.png: the draw's histogram, spray/ECMP against ECMP's model per network, and
    % of ideal per recovery (the three when draws, networks or recoveries are given), and
    % of ideal per counted run (when given)."""
    first = bool(draw_pcts or nets or recs)
    panels = max(3 * first + bool(cnts), 1)
    fig, grid = plt.subplots(1, panels, figsize=(5 * panels, 4.2), squeeze=False)
    axes = list(grid[0])
    if cnts:
        _counter_panel(axes[-1], cnts)
    if not first:
        return save(fig, out / "ablation.png")
    need = ecmp_needed(nets) if nets else None
    ax = axes[0]
    if draw_pcts:
        ax.hist(draw_pcts, bins=20, color="0.7", label=f"flow model, {len(draw_pcts)} draws")
    for n in nets:
        ax.axvline(float(n["model_pct"]), ymax=0.08, color="C0", lw=1.5)
    if need is not None:
        ax.axvline(need, color="C3", ls="--",
                   label=f"{PAPER_SPRAY_OVER_ECMP:g}x needs ECMP <= {need:.1f} %")
    ax.set(xlabel="ECMP mean % of ideal", ylabel="draws",
           title="(a) ECMP's collision draw (ticks: emulated networks' models)")
    ax.legend(fontsize=8)
    ax = axes[1]
    for mode, marker in (("red", "o"), ("droptail", "s")):
        mine = [n for n in nets if n["aqm"] == mode]
        if mine:
            ax.scatter([float(n["model_pct"]) for n in mine],
                       [float(n["spray_over_ecmp"]) for n in mine], marker=marker,
                       label=f"ECMP on {mode}")
    ax.axhline(PAPER_SPRAY_OVER_ECMP, color="C3", ls="--", label="paper: 1.5x")
    # room above the paper's line (at the autoscaled top it ran along the frame)
    ax.set_ylim(top=max(ax.get_ylim()[1], PAPER_SPRAY_OVER_ECMP + 0.04))
    ax.set(xlabel="ECMP's flow model on its traced paths, % of ideal",
           ylabel="sprays' mean / ECMP's mean (measured)",
           title="(b) emulated networks: ratio against ECMP's draw")
    if nets:
        ax.legend(fontsize=8, loc="center right")   # best: lower left, beside the points
    rec_names = _ordered((str(r["recovery"]) for r in recs), RECOVERIES)
    variants = list(dict.fromkeys((r["scheme"], r["aqm"]) for r in recs))
    _interval_bars(axes[2], [(f"recovery={rec}", {(r["scheme"], r["aqm"]): r for r in recs
                                                if r["recovery"] == rec})
                          for rec in rec_names],
                variants, [f"{LABELS[s]}\n({a})" for s, a in variants],
                "(c) undo of spurious retransmissions (dotted: paper)")
    return save(fig, out / "ablation.png")


def _counter_panel(ax: Axes, cnts: list[Counted]) -> None:
    """% of ideal per scheme, a bar per counted run, the paper's values dotted."""
    labels = list(dict.fromkeys(r["source"] for r in cnts))
    schemes = [(s, "") for s in LABELS if any(r["scheme"] == s for r in cnts)]
    _interval_bars(ax, [(lab, {(r["scheme"], ""): r for r in cnts if r["source"] == lab})
                     for lab in labels],
                schemes, [LABELS[s] for s, _ in schemes],
                "counters: CNT by bytes or by packets (dotted: paper)")


def _interval_bars(ax: Axes, groups: Sequence[tuple[str, Mapping[tuple[str, str], Spread]]],
                   variants: list[tuple[str, str]], ticks: list[str], title: str) -> None:
    """Mean % of ideal per (scheme, variant): a bar per group, the Student-t 95 % interval
    of the mean over its runs as error bars (none for one run), the paper's value of each
    scheme dotted; the axis label says what the bars are."""
    width = 0.8 / max(len(groups), 1)
    ns = []
    for i, (label, have) in enumerate(groups):
        shown = [(j, _interval(have[v])) for j, v in enumerate(variants) if v in have]
        ivs = [iv for _, iv in shown]
        ns += [iv.n for iv in ivs]
        ax.bar([j + i * width for j, _ in shown], [iv.mean for iv in ivs], width,
               yerr=error_bars(ivs) if any(iv.n > 1 for iv in ivs) else None, capsize=3,
               label=label)
    for j, (scheme, _) in enumerate(variants):
        if scheme in PAPER_PCT:
            ax.plot([j - width / 2, j + 0.8 - width / 2], [PAPER_PCT[scheme]] * 2, "k:")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(variants))], ticks, fontsize=8)
    # the words under the axis: its label holds the unit only ('5-10 repetitions' made it
    # run past the panel)
    ax.set(ylabel="mean % of ideal", ylim=(0, 105), title=title)
    ax.set_xlabel(bars_words(ns).replace("; ", "\n"), fontsize=7)
    if groups:
        ax.legend(fontsize=8, loc="lower right")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--draws", type=Path, help="a flow-model plts run with many repetitions")
    p.add_argument("--runs", type=Path, nargs="*", default=[], help="emulated plts runs")
    p.add_argument("--counters", nargs="*", default=[], metavar="LABEL=RUN",
                   help="emulated plts runs of the counter ablation, each labelled")
    a = p.parse_args(argv)
    counters = labelled(a.counters)
    if counters is None:
        print("plts ablation: --counters takes LABEL=RUN_FOLDER", file=sys.stderr)
        return 2
    for d in [a.draws, *a.runs, *(d for _, d in counters)]:
        if d is not None and not (d / "flows.csv").is_file():
            print(f"plts ablation: {d} has no flows.csv", file=sys.stderr)
            return 2
    draw_pcts = draws(read_csv(a.draws / "flows.csv")) if a.draws else []
    nets: list[Network] = []
    recs: list[Recovery] = []
    for d in a.runs:
        rows = read_csv(d / "flows.csv")
        nets += networks(rows, d.name)
        recs += recoveries(rows, d.name)
    cnts = [row for lab, d in counters for row in counted(read_csv(d / "flows.csv"), lab)]
    print(write(a.out, [*nets, *recs, *cnts], summary(draw_pcts, nets, recs) + counter_lines(cnts),
                lambda o: plot(o, draw_pcts, nets, recs, cnts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
