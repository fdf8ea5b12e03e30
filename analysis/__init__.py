"""Reads run folders only (never the network): summaries and figures; rerunnable alone."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

# experiment -> "module:function" drawing its figures (imported only when needed)
PLOTTERS = {
    "permutation": "analysis.figures:plot_permutation",
    "outcast": "analysis.outcast:plot_outcast",
    "outcast-fattree": "analysis.outcast:plot_outcast_fattree",
    "fairness": "analysis.fairness:plot_fairness",
    "plts": "analysis.plts:plot_plts",
    "orca": "analysis.orca:plot_orca",
    "grin": "analysis.grin:plot_grin",
}


def plot(run_dir: str | Path) -> list[Path]:
    """Draw every figure of a finished run folder; return their paths."""
    from experiments.runfolder import plottable, status_of

    path = Path(run_dir)
    status = status_of(path)
    if not plottable(status):
        raise ValueError(f"{path}: run is '{status['status']}' ({status.get('error')}); "
                         "a failed run is never plotted as data")
    config = json.loads((path / "config.json").read_text())
    target = PLOTTERS.get(config["experiment"])
    if target is None:
        raise ValueError(f"no figures defined for experiment {config['experiment']}")
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)(path, config)
