"""Reads run folders only (never the network): summaries and figures; rerunnable alone."""
from __future__ import annotations

import json
from pathlib import Path


def plot(run_dir: str | Path) -> list[Path]:
    """Draw every figure of a finished run folder and judge the paper's claims on it
    (claims.csv, claims.md: analysis.claims); return the figures' paths."""
    from store import plottable, status_of

    path = Path(run_dir)
    status = status_of(path)
    if not plottable(status):
        raise ValueError(f"{path}: run is '{status['status']}' ({status.get('error')}); "
                         "a failed run is never plotted as data")
    from store.registry import EXPERIMENTS, claims, plotter

    from .claims import write_run_claims
    from .figures import HEADLINES, NOTES, headline_plot
    config = json.loads((path / "config.json").read_text())
    if config["experiment"] not in EXPERIMENTS:
        raise ValueError(f"no figures defined for experiment {config['experiment']}")
    (path / NOTES).unlink(missing_ok=True)    # the figures' notes are written anew
    figures = plotter(config["experiment"])(path, config)
    found = claims(config["experiment"])
    if found:        # after the figures: their summary.csv is what most claims read
        verdicts = write_run_claims(path, found)
        heads = [v for v in verdicts if v.headline and v.bounds is not None]
        (path / HEADLINES).unlink(missing_ok=True)
        if heads:    # the headlines beside the paper's numbers, with their intervals
            figures.append(headline_plot(path / HEADLINES, config, heads,
                                         {c.key: c.paper_value for c in found}))
    return figures
