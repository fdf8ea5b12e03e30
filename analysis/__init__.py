"""Reads run folders only (never the network): summaries and figures; rerunnable alone."""
from __future__ import annotations

import json
from pathlib import Path


def plot(run_dir: str | Path) -> list[Path]:
    """Draw every figure of a finished run folder; return their paths."""
    from experiments.runfolder import status_of

    path = Path(run_dir)
    status = status_of(path)
    if status["status"] != "ok":
        raise ValueError(f"{path}: run is '{status['status']}' ({status.get('error')}); "
                         "a failed run is never plotted as data")
    config = json.loads((path / "config.json").read_text())
    from . import figures
    fn = getattr(figures, f"plot_{config['experiment'].replace('-', '_')}", None)
    if fn is None:
        raise ValueError(f"no figures defined for experiment {config['experiment']}")
    return fn(path, config)
