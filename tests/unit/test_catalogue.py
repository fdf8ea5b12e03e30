"""Issue #55 part 1, the entry points: `dcrepro` alone, `dcrepro --version`, and `dcrepro list
KIND` for every registry a flag names, read from the registries (no root, no network)."""
from __future__ import annotations

import re

import pytest

import routing
import topos
from dcrepro import catalogue, cli
from emulator import aqm, dataplane_registry
from harness.common import BACKENDS


def test_dcrepro_alone_prints_an_overview_and_exits_0(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dcrepro: ") and "dcrepro list" in out and "dcrepro report" in out
    assert len(out.splitlines()) <= 20


def test_version_names_the_package_version_and_the_commit(capsys):
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out.strip()
    assert re.fullmatch(r"dcrepro \S+ \(commit \S.*\)", out), out


#: each kind's registry names and the parser its examples must pass
PARSERS = {"topologies": (lambda: set(topos.SCHEMAS), topos.parse),
           "routings": (lambda: set(routing.SCHEMAS), routing.parse),
           "dataplanes": (lambda: set(dataplane_registry.REGISTRY), dataplane_registry.parse),
           "backends": (lambda: set(BACKENDS), lambda x: x in BACKENDS or 1 / 0),
           "aqms": (lambda: set(aqm.MODES), aqm.parse)}


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_each_registry_is_listed_whole_with_examples_its_parser_accepts(kind, capsys):
    names, parse = PARSERS[kind]
    assert cli.main(["list", kind]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{kind} (--")
    listed = {e.name for e in catalogue.LISTERS[kind]()}
    assert listed == names()
    for e in catalogue.LISTERS[kind]():
        parse(e.example)                       # raises on a stale example
        assert any(line.split()[:1] == [e.name] for line in lines), e.name
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)


def test_the_congestion_controls_are_dcrepros_and_the_kernels(capsys):
    assert cli.main(["list", "ccs"]) == 0
    out = capsys.readouterr().out
    for name in ("lia", "balia", "olia", "dctcp"):
        assert re.search(rf"^  {name} +dcrepro's BPF control", out, re.M), name


def test_markdown_lists_only_experiments(capsys):
    assert cli.main(["list", "ccs", "--markdown"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert cli.main(["list", "experiments"]) == 0
    assert "permutation" in capsys.readouterr().out
