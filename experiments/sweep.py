"""``dcrepro sweep``: one experiment over a grid of parameter values, resumable.

A sweep lives in ``<out>/sweeps/<name>/``: ``sweep.json`` (the experiment, the base
parameters and one entry per grid point with its full parameters), ``progress.log`` (plain
lines), one folder per point (``points/NNN-key=value,...``) holding that point's run
folders, and at the end ``summary.csv``: every complete point's summary rows with the grid
values in front.  A point is complete when one of its run folders says ``ok``; running the
same sweep again (same ``--name``, same grid) skips complete points and redoes the others,
so a Ctrl-C, a crash or a failed point costs only the points not yet complete.
"""
from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from .runfolder import read_csv, status_of, write_csv


def parse_grid(items: list[str], defaults: dict[str, Any]) -> dict[str, list[Any]]:
    """``--grid key=v1/v2`` items (repeatable) -> key -> values, typed like the default."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not text:
            raise ValueError(f"--grid {item!r}: write KEY=VALUE[/VALUE...]")
        if key not in defaults:
            raise ValueError(f"--grid {item!r}: unknown parameter {key!r} (one of "
                             f"{', '.join(sorted(defaults))})")
        kind = type(defaults[key])
        for raw in text.split("/"):
            try:
                value = kind(raw) if kind is not bool else raw.lower() in ("1", "true")
            except ValueError:
                raise ValueError(f"--grid {item!r}: {raw!r} is not a {kind.__name__}") from None
            values = grid.setdefault(key, [])
            if value in values:
                raise ValueError(f"--grid {item!r}: {key}={raw} given twice")
            values.append(value)
    return grid


def points(base: dict[str, Any], grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values over the base parameters, in grid order."""
    keys = list(grid)
    out = []
    for i, combo in enumerate(itertools.product(*(grid[k] for k in keys))):
        values = dict(zip(keys, combo))
        label = ",".join(f"{k}={v}" for k, v in values.items()) or "base"
        out.append({"index": i, "label": label, "values": values,
                    "params": {**base, **values}})
    return out


def load_or_create(sweep_dir: Path, experiment: str, pts: list[dict[str, Any]]) -> None:
    """Write sweep.json, or check that an existing one describes the same sweep."""
    plan = {"experiment": experiment, "points": [
        {"index": p["index"], "label": p["label"], "params": p["params"]} for p in pts]}
    path = sweep_dir / "sweep.json"
    if path.exists():
        old = json.loads(path.read_text())
        if old != json.loads(json.dumps(plan)):
            raise ValueError(f"{sweep_dir} holds a different sweep (experiment, grid or "
                             "parameters differ); choose another --name")
        return
    sweep_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plan, indent=1))


def point_dir(sweep_dir: Path, p: dict[str, Any]) -> Path:
    """The folder of one grid point (its run folders go below it)."""
    safe = "".join(c if c.isalnum() or c in "=,.-_" else "_" for c in p["label"])
    return sweep_dir / "points" / f"{p['index']:03d}-{safe}"[:120]


def complete_run(pdir: Path, experiment: str) -> Path | None:
    """The newest run folder of a point whose status is ok, if any."""
    root = pdir / experiment
    if not root.exists():
        return None
    done = [d for d in sorted(root.iterdir()) if (d / "status.json").exists()
            and status_of(d)["status"] == "ok"]
    return done[-1] if done else None


def _eta(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def run_sweep(sweep_dir: Path, experiment: str, pts: list[dict[str, Any]],
              execute: Callable[[dict[str, Any], Path], int]) -> int:
    """Run every incomplete point in order with ``execute(params, out) -> exit code``;
    stop at the first interrupted one (exit 130/143), go on after a failed one.  Returns
    0 when every point is complete, else the first non-zero code."""
    log = open(sweep_dir / "progress.log", "a", encoding="utf-8")  # noqa: SIM115

    def say(line: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        log.write(f"{stamp} {line}\n")
        log.flush()
        print(f"sweep: {line}", file=sys.stderr, flush=True)

    todo = [p for p in pts if complete_run(point_dir(sweep_dir, p), experiment) is None]
    say(f"{len(pts)} points, {len(pts) - len(todo)} already complete, {len(todo)} to run")
    code, spent = 0, []
    try:
        for n, p in enumerate(todo, start=1):
            eta = (f", ETA {_eta(sum(spent) / len(spent) * (len(todo) - n + 1))}"
                   if spent else "")
            say(f"[{n}/{len(todo)}] {p['label']}{eta}")
            t0 = time.monotonic()
            rc = execute(p["params"], point_dir(sweep_dir, p))
            spent.append(time.monotonic() - t0)
            say(f"[{n}/{len(todo)}] {p['label']}: "
                f"{'ok' if rc == 0 else f'exit {rc}'} in {spent[-1]:.0f} s")
            if rc != 0:
                code = code or rc
                if rc >= 128:
                    say("interrupted; run the same command again to resume")
                    return rc
        missing = [p["label"] for p in pts
                   if complete_run(point_dir(sweep_dir, p), experiment) is None]
        write_summary(sweep_dir, experiment, pts)
        say(f"summary: {sweep_dir / 'summary.csv'}" + (
            f"; incomplete: {', '.join(missing)}" if missing else ""))
        return code if missing else 0
    finally:
        log.close()


def write_summary(sweep_dir: Path, experiment: str, pts: list[dict[str, Any]]) -> None:
    """summary.csv: each complete point's summary.csv rows, grid values and run folder
    in front (a point without a summary.csv contributes one row of its own)."""
    rows: list[dict[str, Any]] = []
    for p in pts:
        run = complete_run(point_dir(sweep_dir, p), experiment)
        if run is None:
            continue
        head = {**p["values"], "run_dir": str(run)}
        summary = run / "summary.csv"
        rows += [{**head, **r} for r in read_csv(summary)] if summary.exists() else [head]
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    write_csv(sweep_dir / "summary.csv", [{k: r.get(k, "") for k in keys} for r in rows])
