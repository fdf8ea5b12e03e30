"""Per-run summaries written next to the raw data (summary.csv)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np

from experiments.runfolder import write_csv
from model import jain_index


def group_stats(values: Iterable[float]) -> dict[str, float]:
    """Mean, Jain's index, 10th percentile and minimum of normalized throughputs."""
    v = np.asarray([x for x in values if x == x], dtype=float)  # drop NaN
    if v.size == 0:
        return {"n": 0}
    return {"n": int(v.size), "mean": round(float(v.mean()), 4),
            "jain": round(float(jain_index(v)), 4),
            "p10": round(float(np.percentile(v, 10)), 4), "min": round(float(v.min()), 4)}


def write_permutation_summary(run_dir: Path, rows: list[dict[str, Any]],
                              params: dict[str, Any], key: str = "transport") -> None:
    """flows.csv (one row per flow) and summary.csv (per group, per run and over all runs)."""
    write_csv(run_dir / "flows.csv", rows)
    out = []
    for group in dict.fromkeys(r[key] for r in rows):
        mine = [r for r in rows if r[key] == group]
        for run in sorted({r["run"] for r in mine}) + ["all"]:
            sel = [r for r in mine if run == "all" or r["run"] == run]
            for metric in ("norm_iperf", "norm_bwm"):
                stats = group_stats(r[metric] for r in sel)
                cpu = [r["cpu_mean"] for r in sel if r.get("cpu_mean") is not None]
                sat = [r["cpu_saturated_share"] for r in sel
                       if r.get("cpu_saturated_share") is not None]
                out.append({key: group, "run": run, "measure": metric, **stats,
                            "cpu_mean": round(float(np.mean(cpu)), 1) if cpu else "",
                            "cpu_saturated_share": round(float(np.mean(sat)), 3) if sat else ""})
    write_csv(run_dir / "summary.csv", out)
