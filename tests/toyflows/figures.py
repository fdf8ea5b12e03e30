"""Toy long-flow figure: each flow's goodput by rank, from flows.csv alone."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.figures import caption
from store import read_csv


def plot_toyflows(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    rates = sorted(float(r["norm_goodput"]) for r in read_csv(run_dir / "flows.csv"))
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(range(len(rates)), rates, "o-")
    fig.suptitle(caption(config), fontsize=6)
    out = run_dir / "toyflows.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return [out]
