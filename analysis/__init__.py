"""Reads run folders only (never the network): summaries and figures; rerunnable alone."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .claims import Verdict


def plot(run_dir: str | Path) -> list[Path]:
    """Draw every figure of a finished run folder and judge the paper's claims on it
    (claims.csv, claims.md: analysis.claims); return the figures' paths."""
    return plot_and_judge(run_dir)[0]


def plot_and_judge(run_dir: str | Path) -> tuple[list[Path], list[Verdict]]:
    """plot(), and the verdicts it wrote to claims.md (none for an experiment without
    claims)."""
    from store.registry import EXPERIMENTS, claims, plotter

    from .claims import write_run_claims
    from .figures import HEADLINES, NOTES, headline_plot, refuse_unplottable
    path = Path(run_dir)
    refuse_unplottable(path)
    config = json.loads((path / "config.json").read_text())
    if config["experiment"] not in EXPERIMENTS:
        raise ValueError(f"no figures defined for experiment {config['experiment']}")
    (path / NOTES).unlink(missing_ok=True)    # the figures' notes are written anew
    figures = plotter(config["experiment"])(path, config)
    found = claims(config["experiment"])
    verdicts: list[Verdict] = []
    if found:        # after the figures: their summary.csv is what most claims read
        verdicts = write_run_claims(path, found)
        heads = [v for v in verdicts if v.headline and v.bounds is not None]
        (path / HEADLINES).unlink(missing_ok=True)
        if heads:    # the headlines beside the paper's numbers, with their intervals
            figures.append(headline_plot(path / HEADLINES, config, heads,
                                         {c.key: c.paper_value for c in found}))
    return figures, verdicts


def judge(run_dir: str | Path, force: bool = False) -> str:
    """Judge the paper's claims again on a finished run folder, from its tables alone:
    claims.csv and claims.md rewritten, nothing else (after a claim's criterion, cause or
    regime changed).  Returns one line saying what changed.  A folder where a claim would
    now measure a different value (a table it reads is gone, as the per-repetition traces
    of the committed replications are, or changed) is left as it was unless ``force``,
    and the line says so: a new criterion changes verdicts, not measurements."""
    import csv

    from store import plottable, status_of
    from store.registry import EXPERIMENTS, claims

    from .claims import Run, evaluate_all, write_run_claims
    path = Path(run_dir)
    status = status_of(path)
    if not plottable(status):
        return f"{path}: skipped, run is '{status['status']}'"
    experiment = json.loads((path / "config.json").read_text())["experiment"]
    found = claims(experiment) if experiment in EXPERIMENTS else []
    if not found:
        return f"{path}: skipped, {experiment} has no claims"
    before: dict[str, tuple[str, str]] = {}
    if (path / "claims.csv").exists():
        with open(path / "claims.csv", newline="") as fh:
            before = {f"{r['claim']} [{r['condition']}]": (r["verdict"], r["measured"])
                      for r in csv.DictReader(fh)}
    verdicts = evaluate_all(found, [[Run.open(path)]], complete=False)
    after = {f"{v.text} [{v.condition}]": (v.verdict, str(v.measured)) for v in verdicts}
    moved = [k for k, (_, m) in after.items() if k in before and before[k][1] != m]
    if moved and not force:
        k = moved[0]
        return (f"{path}: kept as it was: {len(moved)} claim(s) would measure differently "
                f"(a table they read is gone or changed), e.g. {k}: {before[k][1]!r} -> "
                f"{after[k][1]!r}; --force rewrites it")
    write_run_claims(path, found, verdicts)
    changed = sum(1 for k, (v, _) in after.items() if before.get(k, ("",))[0] != v)
    return f"{path}: {len(after)} verdicts, {changed} changed"
