"""Per-run summaries written next to the raw data (flows.csv, summary.csv)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from model import jain_index
from store import write_csv

#: the measures summary.csv summarizes, where flows.csv has them (harness.workload.flow_rows)
MEASURES = ("norm_goodput", "norm_bwm", "norm_acked", "norm_msk_acked", "norm_msk_received",
            "norm_model", "norm_model_tcp", "norm_model_tcp_coupled")

#: the column each backend wrote its measured rate to before ``goodput`` (the flows.csv of
#: folders written before issue #53): read as goodput, so claims and figures read one field
LEGACY_GOODPUT = {"emulated": "iperf", "sim": "sim", "model": "model"}


#: what goodput is in each view, for captions
GOODPUT_MEANS = {"emulated": "iperf3 goodput at the receiver",
                 "sim": "simulated (ns-3) payload goodput at the receiver",
                 "model": "flow-model max-min rates on the routing plan's paths"}


def goodput_means(backend: str) -> str:
    """What goodput is in the view ``backend`` (a caption's words)."""
    return GOODPUT_MEANS.get(backend, GOODPUT_MEANS["model"])


def with_goodput(rows: list[dict[str, str]], backend: str) -> list[dict[str, str]]:
    """``rows`` of a flows.csv with goodput_mbps and norm_goodput added from the backend's
    old column, where a folder written before them has that column instead."""
    old = LEGACY_GOODPUT.get(backend)
    if not rows or "norm_goodput" in rows[0] or old is None or f"norm_{old}" not in rows[0]:
        return rows
    return [{**r, "goodput_mbps": r.get(f"{old}_mbps", ""), "norm_goodput": r[f"norm_{old}"]}
            for r in rows]


def group_stats(values: Iterable[float]) -> dict[str, float]:
    """Mean, Jain's index, 10th percentile and minimum of normalized throughputs."""
    v = np.asarray([x for x in values if x == x], dtype=float)  # drop NaN
    if v.size == 0:
        return {"n": 0}
    return {"n": int(v.size), "mean": round(float(v.mean()), 4),
            "jain": round(float(jain_index(v)), 4),
            "p10": round(float(np.percentile(v, 10)), 4), "min": round(float(v.min()), 4)}


def _mean(values: list[Any], digits: int) -> Any:
    vals = [float(v) for v in values if v is not None and v == v]
    return round(float(np.mean(vals)), digits) if vals else ""


def write_permutation_summary(run_dir: Path, rows: list[dict[str, Any]],
                              params: Mapping[str, Any], key: str = "transport",
                              reports: list[dict[str, Any]] | None = None) -> None:
    """flows.csv (one row per flow) and summary.csv (per group and measure, per run and
    over all runs), with the fidelity verdict of emulated groups beside the goodput rows."""
    write_csv(run_dir / "flows.csv", rows)
    reports = reports or []
    out = []
    for group in dict.fromkeys(r[key] for r in rows):
        mine = [r for r in rows if r[key] == group]
        for run in sorted({r["run"] for r in mine}) + ["all"]:
            sel = [r for r in mine if run == "all" or r["run"] == run]
            fids = [f for f in reports if f.get(key) == group and (run == "all" or
                                                                    f["run"] == run)]
            for metric in MEASURES:
                if metric not in sel[0]:
                    continue
                row = {key: group, "run": run, "measure": metric,
                       **group_stats(r[metric] for r in sel),
                       "cpu_mean": _mean([r.get("cpu_mean") for r in sel], 1),
                       "cpu_saturated_share": _mean([r.get("cpu_saturated_share")
                                                     for r in sel], 3)}
                if metric == "norm_goodput" and fids:
                    row["fidelity_aggregate_ratio"] = _mean([f["aggregate_ratio"]
                                                             for f in fids], 3)
                    row["fidelity_median_error"] = _mean([f["median_abs_error"]
                                                          for f in fids], 3)
                    row["suspect"] = any(f["suspect"] for f in fids)
                out.append(row)
    write_csv(run_dir / "summary.csv", out)
