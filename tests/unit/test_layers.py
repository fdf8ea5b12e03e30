"""The layering of store/__init__.py, read from the import statements of every module: no
package imports one above it, so analysis reads run folders without the experiments, the
model needs no network, and the store needs nothing of ours."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OURS = {"store", "topos", "routing", "model", "analysis", "emulator", "dataplanes",
        "controller", "harness", "experiments", "studies", "dcrepro", "apps", "sim"}
#: what each package may import besides itself
ALLOWED = {
    "store": set(),
    "topos": {"store"},
    "routing": {"store", "topos"},
    "model": {"store", "topos", "routing"},
    "analysis": {"store", "topos", "routing", "model"},
    # the emulator names no dataplane: emulator/dataplane_registry.py imports them by name
    "emulator": {"store", "topos", "routing", "model", "apps"},
    "dataplanes": {"store", "topos", "routing", "model", "apps", "emulator", "controller"},
    "controller": {"store", "topos", "routing"},
    "apps": {"store"},
    # the ns-3 simulation backend: a translation of the same pure objects the model reads
    "sim": {"store", "topos", "routing", "model"},
    # what every experiment runs with: the emulator, never a named dataplane
    "harness": {"store", "topos", "routing", "model", "analysis", "emulator", "apps", "sim"},
    "experiments": OURS - {"dcrepro", "dataplanes", "controller", "studies"},
    # analyses of finished run folders: what figures read, and the experiments' figures and
    # claims (test_a_study_reads_run_folders_only)
    "studies": {"store", "topos", "routing", "model", "analysis", "experiments"},
    "dcrepro": OURS - {"studies"},
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


STUDIES = sorted((REPO / "studies").glob("*.py"))


@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_a_study_reads_run_folders_only(path):
    """A study may use an experiment's figures and claims (its paper numbers, labels), never
    its run code."""
    run_code = [mod for lvl, mod in _from_imports(path) if not lvl and
                mod.startswith("experiments") and mod.rsplit(".", 1)[-1] not in
                ("figures", "claims")]
    assert not run_code, run_code


def test_every_experiment_is_one_folder_in_the_registry():
    from store import registry
    folders = {p.parent.name for p in FIGURES}
    named = {mod.split(".")[1] for mod, _ in registry.EXPERIMENTS.values()}
    assert folders == named
    for mod, plot in registry.EXPERIMENTS.values():
        assert plot.split(":")[0].rsplit(".", 1)[0] == mod.rsplit(".", 1)[0]


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` names, relative levels resolved against
    the importing file's package."""
    base = node.module or ""
    if node.level:
        up = package.split(".")
        up = up[:len(up) - node.level + 1]
        base = ".".join([*up, base] if base else up)
    return base


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _module_imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ours ``path`` imports at its top level (not inside functions: those
    run later, after every module is loaded, and cannot form an import-time circle)."""
    tree = ast.parse(path.read_text(), str(path))
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _from_module(node, package)
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        out |= {n for n in names if n in known}
    return out - {me}


def test_no_import_circle_between_modules():
    """Inside a package as between packages: no module imports itself through others at
    import time (each package's __init__ aside, which only re-exports)."""
    import networkx as nx
    paths = [p for pkg in OURS for p in (REPO / pkg).rglob("*.py")]
    known = {_module_name(p) for p in paths}
    g = nx.DiGraph()
    for p in paths:
        if p.name == "__init__.py":
            continue
        g.add_node(_module_name(p))
        g.add_edges_from((_module_name(p), m) for m in _module_imports(p, known)
                         if not (REPO / m.replace(".", "/") / "__init__.py").exists())
    cycles = list(nx.simple_cycles(g))
    assert not cycles, cycles[:5]


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING") or
        (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


def _all_imports(path: Path, known: set[str]) -> set[str]:
    """Every module of ours ``path`` imports, at its top level or inside a function: ``import
    a.b`` is a.b; ``from P import S`` is P.S when that is a module, else P; relative imports
    are resolved; a name that is no module counts as its longest module prefix.  Imports under
    ``if TYPE_CHECKING:`` are left out: they never run (annotations only)."""
    tree = ast.parse(path.read_text(), str(path))
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]

    def owner(name: str) -> str | None:
        parts = name.split(".")
        return next((m for i in range(len(parts), 0, -1)
                     if (m := ".".join(parts[:i])) in known), None)

    out: set[str | None] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt) and _is_type_checking(child):
                todo.extend(child.orelse)
                continue
            todo.append(child)
            if isinstance(child, ast.Import):
                out |= {owner(a.name) for a in child.names}
            elif isinstance(child, ast.ImportFrom):
                base = _from_module(child, package)
                out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else owner(base)
                        for a in child.names}
    return {m for m in out if m is not None} - {me}


def test_no_import_circle_between_files_function_level_imports_included():
    """No module of ours imports itself through others, not even through an import inside a
    function (issue #53 part 4: each such circle was a module doing another's job, and an
    import-order trap).  Imports under ``if TYPE_CHECKING:`` are skipped: they never run (a
    dataplane's hooks take the Emulation that calls them, emulator/dataplane.py)."""
    import networkx as nx
    paths = [p for pkg in OURS for p in (REPO / pkg).rglob("*.py")]
    known = {_module_name(p) for p in paths}
    g = nx.DiGraph()
    for p in paths:
        g.add_node(_module_name(p))
        g.add_edges_from((_module_name(p), m) for m in _all_imports(p, known))
    circles = sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)
    assert not circles, "import circles: " + "; ".join(", ".join(c) for c in circles)
