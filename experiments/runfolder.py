"""One folder per run: config.json (every resolved parameter and fact), status, data, figures."""
from __future__ import annotations

import csv
import datetime as dt
import json
import logging
import math
import secrets
from pathlib import Path
from typing import Any, Iterable

from dataplane.sysinfo import environment, git_state

REPO = Path(__file__).resolve().parent.parent


class RunFolder:
    """results/<experiment>/<UTC timestamp>-<short id>/ with config.json and status.json."""

    def __init__(self, root: Path, experiment: str, params: dict[str, Any]) -> None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.id = f"{stamp}-{secrets.token_hex(3)}"
        self.path = root / experiment / self.id
        self.path.mkdir(parents=True, exist_ok=False)
        self.config: dict[str, Any] = {
            "experiment": experiment, "run_id": self.id, "params": params,
            "git": git_state(str(REPO)), "environment": environment(), "runtime": {},
            "started_utc": stamp}
        self.write_config()
        self.set_status("running")
        self.log = logging.getLogger(f"dcrepro.{self.id}")
        handler = logging.FileHandler(self.path / "log.txt")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        self.log.addHandler(handler)
        self.log.setLevel(logging.INFO)
        self.log.propagate = False  # the CLI prints its own one-line message

    def write_config(self) -> None:
        """Rewrite config.json (called again as runtime facts arrive)."""
        (self.path / "config.json").write_text(json.dumps(self.config, indent=1, default=str))

    def record(self, key: str, value: Any) -> None:
        """Add an observed runtime fact (datapath, qdiscs read back, ...) to config.json."""
        self.config["runtime"][key] = value
        self.write_config()

    def set_status(self, status: str, error: str | None = None, **extra: Any) -> None:
        """running | ok | failed | interrupted, with the error that ended it."""
        body = {"status": status, "error": error,
                "time_utc": dt.datetime.now(dt.timezone.utc).isoformat(), **extra}
        (self.path / "status.json").write_text(json.dumps(body, indent=1))


def status_of(path: Path) -> dict[str, Any]:
    """status.json of a run folder (raises a clear error if it is not one)."""
    try:
        return json.loads((path / "status.json").read_text())
    except FileNotFoundError:
        raise ValueError(f"{path} is not a dcrepro run folder (no status.json)") from None


def write_csv(path: Path, rows: Iterable[dict[str, Any]]) -> None:
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
