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
