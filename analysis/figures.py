"""Figure helpers every experiment's figures.py shares: the title, the notes on how a figure
is made, rank curves and plots, the fidelity plot.

A figure's own header stays short (what it shows, which run); the parameters, the run's
fidelity verdict and its reasons, and how the figure is made belong to the report page
(analysis/report.py), which reads the last from ``figures.json`` (``note``)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from analysis.intervals import mean_interval

#: how each figure of a run folder is made: figure file name -> text, in drawing order
NOTES = "figures.json"


def caption(config: dict[str, Any], headline: str = "") -> str:
    """A figure's title: what it shows (``headline``, one short line) over which run it is
    and in what conditions (experiment, backend: cc, link rate, repetitions, flow length;
    the run id).  Other parameters and methods go to ``note``."""
    backend = config["params"].get("backend", "emulated")
    conds = conditions(config)
    run = f"{config['experiment']} [{backend}]" + (f": {conds}" if conds else "") + \
        f" · {config['run_id']}"
    return f"{headline}\n{run}" if headline else run


def note(path: Path, *text: str) -> Path:
    """Record how the figure at ``path`` is made (``figures.json`` beside it) for the report
    page, which shows it under the figure; returns ``path``."""
    where = Path(path).parent / NOTES
    try:
        notes = json.loads(where.read_text())
    except (OSError, ValueError):
        notes = {}
    notes[Path(path).name] = "\n".join(t.strip("\n") for t in text if t and t.strip())
    where.write_text(json.dumps(notes, indent=1) + "\n")
    return Path(path)


def save(fig: Any, path: Path, rect: tuple[float, float, float, float] | None = None) -> Path:
    """Lay ``fig`` out (within ``rect``, figure fractions, when a footer needs room), write it
    to ``path`` (PNG, 110 dpi: every run figure alike), free it."""
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rank_curves(rows: list[dict[str, str]], metric: str) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """Per rank: the mean over runs of the sorted per-run values of ``metric`` and its 95 %
    interval (Student's t; with one run the interval is the value itself); empty when no
    row has a value (a meter that covered no flow leaves its column blank)."""
    runs: dict[str, list[float]] = {}
    for r in rows:
        if r[metric] != "":
            runs.setdefault(r["run"], []).append(float(r[metric]))
    if not runs:
        return np.array([]), np.array([]), np.array([])
    n = min(len(v) for v in runs.values())
    mat = np.array([sorted(v)[:n] for v in runs.values()])
    ivs = [mean_interval(mat[:, i].tolist()) for i in range(n)]
    return (mat.mean(axis=0), np.array([iv.lo for iv in ivs]),
            np.array([iv.hi for iv in ivs]))


Series = tuple[str, list[dict[str, str]], str]  # label, flow rows, metric column


def rank_plot(path: Path, series: list[Series], title: str,
              ylabel: str = "throughput / link rate") -> Path:
    """Value vs rank of flow, one line per series (mean over runs), its 95 % interval
    shaded; the
    legend under the axes (a rank curve fills its frame: inside, it would cover data)."""
    fig, ax = plt.subplots(figsize=(7, 4.2 + 0.2 * len(series)))
    for label, rows, metric in series:
        if not rows:
            continue
        mean, lo, hi = rank_curves(rows, metric)
        if not len(mean):   # said in the legend, not drawn: the run says why it is blank
            ax.plot([], [], label=f"{label} (no values)")
            continue
        x = np.arange(1, len(mean) + 1)
        ax.plot(x, mean, marker="o", ms=3, label=f"{label} (mean {mean.mean():.2f})")
        ax.fill_between(x, lo, hi, alpha=0.2)
    ax.set_xlabel("rank of flow")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.1)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8, frameon=False)
    ax.set_title(title, fontsize=9)
    return save(fig, path)


def fidelity_plot(path: Path, series: list[Series], title: str) -> Path:
    """Emulated vs model normalized throughput per flow; the diagonal is a perfect emulator."""
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for label, rows, metric in series:
        pts = [(float(r["norm_model"]), float(r[metric])) for r in rows
               if r.get(metric) not in (None, "") and r.get("norm_model") not in (None, "")]
        if pts:
            xs, ys = zip(*pts)
            ax.scatter(xs, ys, s=14, alpha=0.7, label=label)
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="perfect emulator")
    ax.set_xlabel("model (max-min on traced paths)")
    ax.set_ylabel("emulated (iperf3)")
    ax.set_xlim(0, 1.05)
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title, fontsize=9)
    return save(fig, path)


#: the figure every run with interval-judged headline claims gets (analysis.plot)
HEADLINES = "headlines.png"
#: run parameters named in the figure's conditions line, in this order, with their units
CONDITIONS = (("cc", "cc {}"), ("bw", "{:g} Mb/s links"), ("runs", "{} repetitions"),
              ("duration", "{:g} s each"))


def conditions(config: dict[str, Any]) -> str:
    """'cc lia, 5 Mb/s links, 10 repetitions, 20 s each': the conditions a headline figure
    states, from the run's parameters."""
    params = config.get("params") or {}
    out = []
    for key, fmt in CONDITIONS:
        value = params.get(key)
        if value not in (None, ""):
            try:
                out.append(fmt.format(value) if key != "runs" or int(value) != 1
                           else "1 repetition")
            except (ValueError, TypeError):
                out.append(f"{key} {value}")
    return ", ".join(out)


def headline_plot(path: Path, config: dict[str, Any], verdicts: list[Any],
                  paper_values: dict[str, float | None]) -> Path:
    """One row per headline verdict judged on an interval: the criterion's band (shaded),
    our statistic per repetition (grey dots), their mean with its 95 % interval (black), and
    the paper's value (red diamond) where it gives one; the verdict in the row's title.
    ``paper_values``: claim key -> the paper's number or None."""
    from .claims import COLOURS  # the page's verdict colours (claims imports the model: late)
    rows = [v for v in verdicts if v.bounds is not None]
    fig, axes = plt.subplots(len(rows), 1, figsize=(8, 0.55 + 1.05 * len(rows)),
                             squeeze=False)
    for ax, v in zip(axes[:, 0], rows):
        mean, lo, hi = v.bounds
        paper = paper_values.get(v.key)
        xs = [mean, lo, hi, *v.values, *([paper] if paper is not None else [])]
        finite = [b for b in (v.band or ()) if not np.isinf(b)]
        left, right = min(xs + finite), max(xs + finite)
        pad = 0.15 * (right - left or abs(right) or 1.0)
        left, right = left - pad, right + pad
        if v.band is not None:
            b_lo, b_hi = (max(v.band[0], left), min(v.band[1], right))
            ax.axvspan(b_lo, b_hi, color="#1a7f37", alpha=0.12, lw=0)
        jitter = np.linspace(-0.18, 0.18, len(v.values)) if len(v.values) > 1 else [0.0]
        ax.scatter(v.values, jitter[:len(v.values)], s=12, color="#8c959f", zorder=2)
        ax.errorbar([mean], [0], xerr=[[mean - lo], [hi - mean]], fmt="o", color="black",
                    capsize=4, zorder=3)
        if paper is not None:
            ax.scatter([paper], [0], marker="D", s=46, color="#cf222e", zorder=4)
            ax.annotate(f"paper {paper:.3g}", (paper, 0), xytext=(0, 9),
                        textcoords="offset points", ha="center", fontsize=7.5,
                        color="#cf222e")
        ax.set_xlim(left, right)
        ax.set_ylim(-0.5, 0.5)
        ax.set_yticks([])
        ax.grid(axis="x", alpha=0.3)
        tags = v.label[len(v.text):]        # ' [condition; view]': kept whole
        room = 104 - len(tags) - len(v.verdict)     # a header line stays within 110
        label = (v.text if len(v.text) <= room else v.text[:room - 3] + "...") + tags
        ax.set_title(f"{label}: {v.verdict}", fontsize=8.5, loc="left",
                     color=COLOURS.get(v.verdict, "black"))
    fig.suptitle(caption(config, "headline claims: ours (mean, 95 % interval) against the "
                                 "paper's band and value"), fontsize=9)
    save(fig, path)       # (the conditions are in the title's run line: caption)
    return note(path, "Each row is one headline claim judged on this run: the shaded span "
                      "is the criterion's band (written before the run), the grey dots the "
                      "statistic of each repetition, the black dot and bar their mean and "
                      "Student-t 95 % interval, the red diamond the paper's own number "
                      "where it gives one.  Flagged repetitions are left out, as the "
                      "verdict leaves them out.")
