"""The figure that compares a sweep's runs (``compare.png`` beside its ``summary.csv``).

A sweep's summary has the grid values and the run id in front of each complete run's own
summary rows.  Every numeric column that is not a grid value and varies across rows gets a
panel (up to ``MAX_PANELS``, in column order): one x position per sweep point (its grid
values), one line per row identity across them (the row's non-numeric columns and the
numeric ones that are the same in every point, e.g. ``network=grin1,active_pct=10``), so
that each experiment's metric can be read across the grid without knowing the
experiment.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from store import read_csv

MAX_PANELS = 8
#: columns that name a run or mark it (flagged: its fidelity check's first reason), not a metric
IDS = {"run_id", "run", "index", "flagged"}


def _num(v: str) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _point(row: dict[str, str], grid: list[str]) -> str:
    return ",".join(f"{k}={row.get(k, '')}" for k in grid) or "base"


def row_keys(rows: list[dict[str, str]], grid: list[str]) -> list[str]:
    """Numeric columns that name a run's rows rather than measure them: the same values in
    every sweep point (e.g. orca's ``workload``, grin's ``active_pct``)."""
    by_point: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        by_point.setdefault(_point(r, grid), []).append(r)
    if len(by_point) < 2:
        return []
    out = []
    for col in rows[0]:
        if col in grid or col in IDS or _num(rows[0].get(col, "")) is None:
            continue
        sets = {tuple(sorted(r.get(col, "") for r in rs)) for rs in by_point.values()}
        if len(sets) == 1 and len(set(sets.pop())) > 1:
            out.append(col)
    return out


def metrics(rows: list[dict[str, str]], grid: list[str]) -> list[str]:
    """Numeric columns, not grid values, ids or row keys, whose value differs between rows."""
    keys = set(row_keys(rows, grid))
    out = []
    for col in rows[0] if rows else []:
        if col in grid or col in IDS or col in keys:
            continue
        got = [v for r in rows if (v := _num(r.get(col, ""))) is not None]
        if len(got) >= len(rows) / 2 and len(set(got)) > 1:
            out.append(col)
    return out[:MAX_PANELS]


def identity(row: dict[str, str], grid: list[str], keys: list[str]) -> str:
    """What tells rows of one run apart: its row keys and non-numeric columns (besides
    grid values and ids)."""
    parts = [f"{k}={v}" for k, v in row.items()
             if k not in grid and k not in IDS and v != ""
             and (k in keys or _num(v) is None)]
    return ",".join(parts[:4]) or "run"


def plot_sweep(sweep_dir: Path, grid: list[str], title: str = "") -> list[Path]:
    """compare.png from summary.csv ([] when there is nothing numeric to compare)."""
    path = Path(sweep_dir) / "summary.csv"
    rows = read_csv(path) if path.exists() else []
    cols = metrics(rows, grid)
    if not rows or not cols:
        return []
    keys = row_keys(rows, grid)
    at = [_point(r, grid) for r in rows]
    who = [identity(r, grid, keys) for r in rows]
    points = list(dict.fromkeys(at))
    kinds = list(dict.fromkeys(who))
    n = len(cols)
    ncols = 2 if n > 1 else 1
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, figsize=(
        6 * ncols, 2.6 * nrows + 0.8 + 0.16 * ((len(kinds) + 2) // 3)))
    for ax, col in zip(axes.flat, cols):
        for i, kind in enumerate(kinds):
            xs, ys = [], []
            for r, point, name in zip(rows, at, who):
                v = _num(r.get(col, ""))
                if v is None or name != kind:
                    continue
                xs.append(points.index(point))
                ys.append(v)
            # a line per row identity: how it moves across the grid
            ax.plot(xs, ys, "o-", color=f"C{i % 10}", ms=4, lw=0.8, alpha=0.8,
                    label=kind if len(kinds) <= 12 else None)
        ax.set_title(col, fontsize=8)
        ax.set_xticks(range(len(points)), points, rotation=30, ha="right", fontsize=6)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    height = fig.get_figheight()
    legend_in = 0.0
    if labels and len(kinds) > 1:
        legend_in = 0.16 * ((len(labels) + 2) // 3) + 0.1
        fig.legend(handles, labels, fontsize=6, loc="lower center", ncol=3, frameon=False)
    fig.suptitle(title or f"sweep {Path(sweep_dir).name}: {len(points)} points", fontsize=8)
    fig.tight_layout(rect=(0, legend_in / height, 1, 1 - 0.35 / height))
    out = Path(sweep_dir) / "compare.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return [out]
