"""The one list of experiments: what `dcrepro run/sweep/rerun/plot/list` and `--help` offer.

An experiment is one folder ``experiments/<name>/``: ``experiment.py`` (``NAME``, ``HELP``,
``PARAMS`` (its typed parameters, harness/params.py: ``PARAMS.defaults()`` are the flags'
defaults), ``QUICK``, ``add_arguments``, ``validate``, ``run``, ``PAPER`` for the README
table, optionally ``SWEEP``: the script reproduce.sh runs), ``figures.py``, which reads its
run folders only (tests/unit/test_layers.py holds it to analysis' imports), and optionally
``claims.py``: the paper's claims it judges (``CLAIMS``, analysis.claims.Claim; same
rule).  Adding one is that folder and one line here (tests/unit/test_new_experiment.py
shows it).  It lives in the store, the bottom layer, so that ``analysis`` finds a run
folder's plotter without importing the experiments (modules are imported by name).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

#: name -> (experiment module, "figures module:plot function"); an experiment is one folder
#: under experiments/ (experiment.py + figures.py) and one line here
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "permutation": ("experiments.permutation.experiment",
                    "experiments.permutation.figures:plot_permutation"),
    "fairness": ("experiments.fairness.experiment", "experiments.fairness.figures:plot_fairness"),
    "outcast": ("experiments.outcast.experiment", "experiments.outcast.figures:plot_outcast"),
    "outcast-fattree": ("experiments.outcast.fattree",
                        "experiments.outcast.figures:plot_outcast_fattree"),
    "plts": ("experiments.plts.experiment", "experiments.plts.figures:plot_plts"),
    "orca": ("experiments.orca.experiment", "experiments.orca.figures:plot_orca"),
    "grin": ("experiments.grin.experiment", "experiments.grin.figures:plot_grin"),
    "grin-hops": ("experiments.grin.hops", "experiments.grin.figures:plot_grin_hops"),
}


def module(name: str) -> ModuleType:
    """The experiment module of ``name`` (KeyError if unknown)."""
    return importlib.import_module(EXPERIMENTS[name][0])


def plotter(name: str) -> Callable[..., Any]:
    """The function that draws ``name``'s figures from a run folder."""
    mod, func = EXPERIMENTS[name][1].split(":")
    return getattr(importlib.import_module(mod), func)


def claims(name: str) -> list[Any]:
    """The paper's claims ``name`` judges: ``CLAIMS`` of the ``claims`` module beside its
    experiment module (one folder may hold several experiments' claims), [] without one."""
    wanted = EXPERIMENTS[name][0].rsplit(".", 1)[0] + ".claims"
    try:
        mod = importlib.import_module(wanted)
    except ModuleNotFoundError as exc:
        if not exc.name or not wanted.startswith(exc.name):
            raise               # a claims module that imports something missing is a bug
        return []
    return [c for c in getattr(mod, "CLAIMS", []) if c.experiment == name]


def backends(name: str, dataplanes: Mapping[str, frozenset[str]]) -> str:
    """The backends column: emulated on the dataplanes (name -> capabilities, as
    emulator.dataplane_registry.capabilities() gives them) that offer everything the experiment
    ``NEEDS``, and the model and the ns-3 simulation where it has them; a model-only
    experiment (``BACKENDS = ("model",)``) is 'model' alone."""
    mod = module(name)
    needs = frozenset(getattr(mod, "NEEDS", ()))
    dps = ", ".join(f"`{d}`" for d, offers in dataplanes.items() if needs <= offers)
    # an experiment names its backends (BACKENDS); older ones are emulated, and have the
    # model iff --backend
    has = getattr(mod, "BACKENDS",
                  ("emulated", "model") if "backend" in mod.PARAMS.defaults() else
                  ("emulated",))
    return ", ".join([f"emulated ({dps})"] * ("emulated" in has) +
                     ["model"] * ("model" in has) + ["sim (ns-3)"] * ("sim" in has))


def markdown_table(dataplanes: Mapping[str, frozenset[str]]) -> str:
    """The README's experiment table, one row per registry entry (`dcrepro list --markdown`);
    ``dataplanes``: see backends."""
    rows = ["| experiment | paper | sweep script | backends |", "|---|---|---|---|"]
    for name in EXPERIMENTS:
        mod = module(name)
        note = getattr(mod, "SWEEP_NOTE", "")
        sweep = f"`{sweep_command(name)}`" + (f" ({note})" if note else "")
        cells = [f"`{name}`", mod.PAPER, sweep, backends(name, dataplanes)]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def sweep_script(name: str) -> str | None:
    """``name``'s sweep script (``SWEEP``: what reproduce.sh runs for its figures, which may
    add flags to the experiment's defaults), None when it has none."""
    return getattr(module(name), "SWEEP", None) or None


def sweep_command(name: str) -> str:
    """What regenerates ``name``'s figures: its sweep script when it has one, else the
    experiment itself, so that a new experiment needs no script."""
    return sweep_script(name) or f".venv/bin/dcrepro run {name}"


def takes_runs(name: str) -> bool:
    """Whether ``name`` has repetitions to set (--runs); grin-hops' model grid has none."""
    return "runs" in module(name).PARAMS.defaults()


def sweep_commands(runs: int | None = None) -> list[str]:
    """What scripts/reproduce.sh runs, in registry order (`dcrepro list --sweeps`);
    ``runs``: each experiment that has repetitions runs that many (reproduce.sh --runs)."""
    return [sweep_command(name) + (f" --runs {runs}" if runs and takes_runs(name) else "")
            for name in EXPERIMENTS]
