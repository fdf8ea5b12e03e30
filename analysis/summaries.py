"""Per-run summaries written next to the raw data (flows.csv, summary.csv)."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from model import jain_index
from store import cell, write_csv

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


#: a table's row, and what rows are grouped by (group_rows)
R = TypeVar("R", bound=Mapping[str, Any])
K = TypeVar("K")


def group_rows(rows: Iterable[R], key: Callable[[R], K]) -> dict[K, list[R]]:
    """The rows by ``key(row)``, the groups in the order they first come."""
    out: dict[K, list[R]] = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return out


def runs_and_all(rows: list[R]) -> Iterator[tuple[Any, list[R]]]:
    """Each run's rows (its ``run`` column, in sorted order), then every row as run 'all':
    the rows a summary.csv has per run and pooled."""
    for run in sorted({r["run"] for r in rows}) + ["all"]:
        yield run, [r for r in rows if run == "all" or r["run"] == run]


def nan_mean(values: Iterable[float]) -> float:
    """The mean of the values that are numbers (NaN left out); NaN without any."""
    v = [x for x in values if x == x]
    return float(np.mean(v)) if v else float("nan")


def run_ratios(rows: list[R], value: Callable[[R], float], mine: Callable[[R], bool],
               runs: Iterable[Any]) -> list[float]:
    """Per run of ``runs`` (the rows' ``run`` column): the mean of ``value`` over the rows
    ``mine`` picks over its mean over the others (NaN values left out; NaN where either has
    none, or the others' mean is not above 0)."""
    by_run = group_rows(rows, lambda r: r["run"])
    out = []
    for run in runs:
        sel = by_run.get(run, [])
        a = nan_mean(value(r) for r in sel if mine(r))
        b = nan_mean(value(r) for r in sel if not mine(r))
        out.append(a / b if b > 0 else float("nan"))
    return out


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


def present(values: Iterable[Any]) -> list[float]:
    """The cells among ``values`` that hold a number (empty and NaN left out; inf kept: it
    is a value)."""
    return [x for x in (cell(v) for v in values) if x == x]


def rounded(x: float, digits: int = 4) -> Any:
    """A number for a table: rounded, '' when missing (NaN); inf stays inf ('inf')."""
    if x != x:
        return ""
    return x if math.isinf(x) else round(x, digits)


def mean_present(values: Iterable[Any], digits: int) -> Any:
    """The mean of the cells among ``values`` that hold a number, rounded; '' without any."""
    v = present(values)
    return round(float(np.mean(v)), digits) if v else ""


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
        for run, sel in runs_and_all(mine):
            fids = [f for f in reports if f.get(key) == group and (run == "all" or
                                                                    f["run"] == run)]
            for metric in MEASURES:
                if metric not in sel[0]:
                    continue
                row = {key: group, "run": run, "measure": metric,
                       **group_stats(r[metric] for r in sel),
                       "cpu_mean": mean_present((r.get("cpu_mean") for r in sel), 1),
                       "cpu_saturated_share": mean_present(
                           (r.get("cpu_saturated_share") for r in sel), 3)}
                if metric == "norm_goodput" and fids:
                    row["fidelity_aggregate_ratio"] = mean_present(
                        (f["aggregate_ratio"] for f in fids), 3)
                    row["fidelity_median_error"] = mean_present(
                        (f["median_abs_error"] for f in fids), 3)
                    row["suspect"] = any(f["suspect"] for f in fids)
                out.append(row)
    write_csv(run_dir / "summary.csv", out)
