"""The one list of experiments: what `dcrepro run/sweep/rerun/plot` and `--help` offer.

An experiment is a module (``NAME``, ``HELP``, ``DEFAULTS``, ``QUICK``, ``add_arguments``,
``validate``, ``run``) and a plotter in ``analysis/`` that reads its run folders only;
adding one is one line here (a unit test checks the README's experiment table against it).
It lives in the store, the bottom layer, so that ``analysis`` finds a run folder's plotter
without importing the experiments (modules are imported by name, when asked for).
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Callable

#: name -> (experiment module, "analysis module:plot function")
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "permutation": ("experiments.permutation", "analysis.figures:plot_permutation"),
    "outcast": ("experiments.outcast", "analysis.outcast:plot_outcast"),
    "outcast-fattree": ("experiments.outcast_fattree", "analysis.outcast:plot_outcast_fattree"),
    "fairness": ("experiments.fairness", "analysis.fairness:plot_fairness"),
    "plts": ("experiments.plts", "analysis.plts:plot_plts"),
    "orca": ("experiments.orca", "analysis.orca:plot_orca"),
    "grin": ("experiments.grin", "analysis.grin:plot_grin"),
}


def module(name: str) -> ModuleType:
    """The experiment module of ``name`` (KeyError if unknown)."""
    return importlib.import_module(EXPERIMENTS[name][0])


def plotter(name: str) -> Callable[..., Any]:
    """The function that draws ``name``'s figures from a run folder."""
    mod, func = EXPERIMENTS[name][1].split(":")
    return getattr(importlib.import_module(mod), func)
