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

#: how each figure of a run folder is made: figure file name -> text, in drawing order
NOTES = "figures.json"


def caption(config: dict[str, Any], headline: str = "") -> str:
    """A figure's title: what it shows (``headline``, one short line) over which run it is
    (experiment, backend, run id).  Parameters and methods go to ``note``."""
    backend = config["params"].get("backend", "emulated")
    run = f"{config['experiment']} [{backend}] {config['run_id']}"
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


def save(fig: Any, path: Path) -> Path:
    """Lay ``fig`` out, write it to ``path`` (PNG, 110 dpi: every run figure alike), free it."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rank_curves(rows: list[dict[str, str]], metric: str) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """Per rank: mean, min and max over runs of the sorted per-run values of ``metric``;
    empty when no row has a value (a meter that covered no flow leaves its column blank)."""
    runs: dict[str, list[float]] = {}
    for r in rows:
        if r[metric] != "":
            runs.setdefault(r["run"], []).append(float(r[metric]))
    if not runs:
        return np.array([]), np.array([]), np.array([])
    n = min(len(v) for v in runs.values())
    mat = np.array([sorted(v)[:n] for v in runs.values()])
    return mat.mean(axis=0), mat.min(axis=0), mat.max(axis=0)


Series = tuple[str, list[dict[str, str]], str]  # label, flow rows, metric column


def rank_plot(path: Path, series: list[Series], title: str,
              ylabel: str = "normalized throughput") -> Path:
    """Value vs rank of flow, one line per series (mean over runs), run spread shaded."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
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
    ax.legend(loc="lower right")
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
