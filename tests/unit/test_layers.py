"""The layering of store/__init__.py, read from the import statements of every module: no
package imports one above it, so analysis reads run folders without the experiments, the
model needs no network, and the store needs nothing of ours."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OURS = {"store", "topos", "routing", "model", "analysis", "dataplane", "controller",
        "experiments", "apps"}
#: what each package may import besides itself
ALLOWED = {
    "store": set(),
    "topos": {"store"},
    "routing": {"store", "topos"},
    "model": {"store", "topos", "routing"},
    "analysis": {"store", "topos", "routing", "model"},
    "dataplane": {"store", "topos", "routing", "model", "apps"},
    "controller": {"store", "topos", "routing"},
    "apps": {"store"},
    "experiments": OURS,
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out & OURS


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_package_imports_one_above_it(package):
    bad = {f"{p.relative_to(REPO)} imports {', '.join(sorted(wrong))}"
           for p in (REPO / package).rglob("*.py")
           if (wrong := _imports(p) - ALLOWED[package] - {package})}
    assert not bad, sorted(bad)


FIGURES = sorted((REPO / "experiments").glob("*/figures.py"))
#: an experiment's claims (analysis.claims.Claim) are held to the same rule as its figures
READERS = FIGURES + sorted((REPO / "experiments").glob("*/claims.py"))


def _from_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    return [(n.level, n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]


@pytest.mark.parametrize("path", READERS, ids=[f"{p.parent.name}/{p.stem}" for p in READERS])
def test_an_experiments_figures_read_run_folders_only(path):
    """figures.py and claims.py sit in their experiment's folder but are held to analysis'
    imports: besides those they may use an experiment's figures, never run code (relative
    or absolute)."""
    wrong = _imports(path) - ALLOWED["analysis"] - {"analysis", "experiments"}
    run_code = [f"{'.' * lvl}{mod}" for lvl, mod in _from_imports(path)
                if (lvl and mod != "figures") or
                (not lvl and mod.startswith("experiments") and not mod.endswith(".figures"))]
    assert not wrong and not run_code, (sorted(wrong), run_code)


def test_every_experiment_is_one_folder_in_the_registry():
    from store import registry
    folders = {p.parent.name for p in FIGURES}
    named = {mod.split(".")[1] for mod, _ in registry.EXPERIMENTS.values()}
    assert folders == named
    for mod, plot in registry.EXPERIMENTS.values():
        assert plot.split(":")[0].rsplit(".", 1)[0] == mod.rsplit(".", 1)[0]
