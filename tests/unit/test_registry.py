"""The experiment registry is the one list: every entry is a complete experiment, and the
README's experiment table and the sweep scripts name exactly these."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from emulator.dataplane_registry import capabilities
from store import registry

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_entry_is_a_complete_experiment(name):
    mod = registry.module(name)
    assert mod.NAME == name
    for attr in ("HELP", "PARAMS", "QUICK", "add_arguments", "run"):
        assert hasattr(mod, attr), attr
    assert set(mod.QUICK) <= set(mod.PARAMS.defaults())
    assert callable(registry.plotter(name))


def test_the_readme_table_is_the_one_the_registry_generates():
    text = (REPO / "README.md").read_text()
    table = text[text.index("<!-- experiments:begin"):text.index("<!-- experiments:end -->")]
    assert registry.markdown_table(capabilities()) in table, "run `.venv/bin/dcrepro list --markdown`"
    rows = re.findall(r"^\| `([a-z-]+)` \|", table, flags=re.M)
    assert rows == list(registry.EXPERIMENTS)


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_sweep_script_named_exists_and_runs_its_experiment(name):
    script = REPO / registry.sweep_command(name).split()[0]
    assert script.exists() and os.access(script, os.X_OK), script
    if script.name == "dcrepro":
        return
    assert re.search(rf"run {re.escape(name)}\b", script.read_text()), script


def test_reproduce_takes_its_sweeps_from_the_registry():
    text = (REPO / "scripts" / "reproduce.sh").read_text()
    assert "dcrepro list --sweeps" in text and "-sweep.sh" not in text


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["sweep", "--help"],
                                  *[[c, n, "--help"] for c in ("run", "sweep")
                                    for n in registry.EXPERIMENTS]])
def test_every_help_text_prints(argv, capsys):
    """(a HELP with '% of' once broke `dcrepro run --help`: argparse %-formats help)"""
    from dcrepro import cli
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 0 and "usage: dcrepro" in capsys.readouterr().out


def test_the_readmes_papers_are_the_ones_the_registry_cites():
    from store import papers
    text = (REPO / "README.md").read_text()
    block = text[text.index("<!-- papers:begin"):text.index("<!-- papers:end -->")]
    assert papers.markdown_list() in block, "run `.venv/bin/dcrepro list papers --markdown`"
    assert len(re.findall(r"^- `\d{3}_…` ", block, flags=re.M)) == len(papers.PAPERS)


def test_quick_draws_the_reference_networks(reference_report):
    """Quick mode's seed is the root seed of every reference folder that judges one of the
    emulated headline claims quick mode runs (docs/notebook/2026-12-04-quick-draws.md)."""
    import json
    seeds: dict[str, set[int]] = {}
    for _, _, views in reference_report.headline_claims:
        for v in views.get("emulated", []):
            mod = registry.module(v.experiment)
            claim = next(c for c in registry.claims(v.experiment) if c.key == v.key)
            if not claim.accepts({**mod.PARAMS.defaults(), **mod.QUICK, "quick": True}):
                continue    # e.g. GRIN2 against the multihomed network: not run quick
            for run_id in v.runs:
                config = json.loads((REPO / "results" / "reference" / v.experiment / run_id /
                                     "config.json").read_text())
                seeds.setdefault(v.experiment, set()).add(int(config["params"]["seed"]))
    assert set(seeds) >= {"permutation", "fairness", "outcast", "outcast-fattree", "plts",
                          "grin", "orca"}
    for name, found in seeds.items():
        mod = registry.module(name)
        quick = int(mod.QUICK.get("seed", mod.PARAMS.defaults()["seed"]))
        assert found == {quick}, f"{name}: quick seed {quick}, reference folders' {found}"


def test_sweeps_with_runs_set_the_repetitions_of_every_experiment_that_has_them():
    """reproduce.sh --runs N reads its sweeps from `dcrepro list --sweeps --runs N`: each
    sweep of an experiment with repetitions gets --runs N, grin-hops' model grid nothing."""
    plain, more = registry.sweep_commands(), registry.sweep_commands(5)
    assert len(plain) == len(more)
    for name, a, b in zip(registry.EXPERIMENTS, plain, more):
        assert b == (f"{a} --runs 5" if name != "grin-hops" else a)
        assert registry.takes_runs(name) == (name != "grin-hops")


@pytest.mark.parametrize("args", [["--runs", "0"], ["--runs", "x"], ["--runs"], ["--fast"]])
def test_reproduce_refuses_a_bad_option_in_one_line_before_installing_anything(args):
    import subprocess
    got = subprocess.run([str(REPO / "scripts" / "reproduce.sh"), *args],
                         capture_output=True, text=True, timeout=30)
    assert got.returncode == 2 and got.stdout == ""
    assert len(got.stderr.strip().splitlines()) == 1 and got.stderr.startswith("reproduce: ")


def test_list_runs_goes_with_sweeps_only(capsys):
    from dcrepro import cli
    assert cli.main(["list", "--runs", "5"]) == 2
    assert capsys.readouterr().err.strip() == "dcrepro: error: --runs goes with --sweeps"
