"""The experiment registry is the one list: every entry is a complete experiment, and the
README's experiment table and the sweep scripts name exactly these."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from store import registry

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_entry_is_a_complete_experiment(name):
    mod = registry.module(name)
    assert mod.NAME == name
    for attr in ("HELP", "DEFAULTS", "QUICK", "add_arguments", "run"):
        assert hasattr(mod, attr), attr
    assert set(mod.QUICK) <= set(mod.DEFAULTS)
    assert callable(registry.plotter(name))


def test_the_readme_table_lists_exactly_the_registry():
    text = (REPO / "README.md").read_text()
    table = text[text.index("## Experiments"):text.index("## How it works")]
    rows = re.findall(r"^\| `([a-z-]+)` \|", table, flags=re.M)
    assert sorted(rows) == sorted(registry.EXPERIMENTS)


def test_reproduce_runs_a_sweep_script_for_every_experiment():
    text = (REPO / "scripts" / "reproduce.sh").read_text()
    scripts = re.findall(r'"(scripts/[a-z-]+-sweep\.sh)', text)
    assert all((REPO / s).exists() for s in scripts)
    named = "\n".join((REPO / s).read_text() for s in scripts)
    for name in registry.EXPERIMENTS:
        assert re.search(rf"run {re.escape(name)}\b", named), name
