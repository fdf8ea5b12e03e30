"""Run-folder I/O: status, CSV tables and JSON files, with one-line errors for what is not a
run folder.  A run folder is results/<experiment>/<UTC time>-<id>/ (harness/runfolder.py
creates them); its status.json says whether its tables are complete."""
from __future__ import annotations

import csv
import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: one table row as an experiment writes it: column -> value (a number or text)
Row = dict[str, object]

#: statuses a run ends with; anything else means the run is (or was, when killed) running
FINAL = ("ok", "failed", "interrupted", "killed")


def plottable(status: dict[str, Any]) -> bool:
    """True when every table of the run was written (figures may be redrawn from it)."""
    return status.get("status") in ("ok", "measured") or bool(status.get("data_complete"))


def wall_s(config: dict[str, Any], status: dict[str, Any]) -> float | None:
    """A run's wall time, s: from its start (config.json's started_utc) to its latest
    status (status.json's time_utc, after the figures); None when either is missing."""
    try:
        start = dt.datetime.strptime(config["started_utc"], "%Y%m%dT%H%M%SZ").replace(
            tzinfo=dt.UTC)
        end = dt.datetime.fromisoformat(status["time_utc"])
    except (KeyError, TypeError, ValueError):
        return None
    return (end - start).total_seconds()


def status_of(path: Path) -> dict[str, Any]:
    """status.json of a run folder (raises a clear error if it is not one)."""
    try:
        return json.loads((Path(path) / "status.json").read_text())
    except FileNotFoundError:
        raise ValueError(f"{path} is not a dcrepro run folder (no status.json)") from None


def newest_ok_run(root: Path, experiment: str) -> Path | None:
    """The newest run folder of ``experiment`` under ``root`` (``root/<experiment>/<id>``,
    as ``--out root`` makes them) whose status is ok, or None."""
    for run in sorted((p.parent for p in Path(root).glob(f"{experiment}/*/status.json")),
                      reverse=True):
        try:
            if status_of(run).get("status") == "ok":
                return run
        except ValueError:            # unreadable status.json: not a complete run
            continue
    return None


def read_json(path: Path) -> Any:
    """A JSON file of a run folder (ValueError naming the file if it is missing or broken)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not readable JSON ({type(exc).__name__})") from None


def write_csv(path: Path, rows: Iterable[Mapping[str, object]]) -> None:
    """Write dict rows with the union of their keys as header, NaN as empty."""
    rows = list(rows)
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v)
                        for k, v in r.items()})


def read_csv(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV file as dicts of strings."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def cell(value: Any) -> float:
    """A CSV cell as a float; an empty or malformed cell is missing (NaN)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")
