"""The README and docs/ hold together: every relative link points to a file that exists,
every repository path that a page, comment or message names exists, and CI runs exactly the
README's two commands (the test suite, then the quick reproduction)."""
from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
#: [text](target) and ![alt](target); the target ends at a space (a title) or ')'
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [t for t in LINK.findall(text)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", t, flags=re.I) and not t.startswith("#")]


def test_there_are_docs_pages_and_the_readme_links_them():
    readme = relative_links(REPO / "README.md")
    docs = [p for p in PAGES if p.parent != REPO]
    assert len(docs) >= 8
    linked = {(REPO / t.split("#")[0]).resolve() for t in readme}
    assert {p.resolve() for p in docs if p.parent == REPO / "docs"} <= linked


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-'."""
    headings = re.findall(r"^#+\s+(.*)$", FENCE.sub("", page.read_text()), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_points_to_a_file_that_exists(page):
    missing = [t for t in relative_links(page)
               if not (page.parent / t.split("#")[0]).resolve().exists()]
    assert not missing, f"{page.relative_to(REPO)}: {missing}"
    broken = [t for t in relative_links(page) if "#" in t and t.split("#")[0].endswith(".md")
              and t.split("#")[1] not in anchors((page.parent / t.split("#")[0]).resolve())]
    assert not broken, f"{page.relative_to(REPO)}: no such heading: {broken}"


def test_the_link_check_sees_links():
    """(a regex that matched nothing would pass every page)"""
    assert "docs/usage.md#setup" in relative_links(REPO / "README.md")
    assert any(t.endswith(".png") for t in relative_links(REPO / "docs/results/index.md"))


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text[text.index("<!-- commands:begin"):text.index("<!-- commands:end -->")]
    return [line.split("#")[0].strip() for line in block.splitlines()
            if line.startswith("./")]


def test_the_readme_names_the_test_command_then_the_reproduction_without_sudo():
    commands = readme_commands()
    assert commands == ["./scripts/test.sh", "./scripts/reproduce.sh"]
    for c in commands:
        assert (REPO / c).stat().st_mode & 0o111, c
    assert "sudo" not in "\n".join(commands)


def test_ci_runs_exactly_the_readme_commands():
    listed = subprocess.run([str(REPO / ".ci" / "run"), "--list"], cwd="/", text=True,
                            capture_output=True, check=True).stdout.splitlines()
    assert listed == readme_commands()


@pytest.mark.parametrize("script", sorted((REPO / "scripts").glob("*.sh")) + [REPO / ".ci/run"],
                         ids=lambda p: p.name)
def test_no_usage_text_asks_for_sudo(script):
    """A fresh Debian 12 root shell has no sudo: usage text says 'as root'."""
    comments = [line for line in script.read_text().splitlines() if line.startswith("#")]
    assert not [line for line in comments if re.search(r"\bsudo \S", line)]


def test_the_readme_shows_the_current_verdict_table(verdict_table):
    """Between the two markers: what `dcrepro report --headlines results/reference` prints
    for the committed reference runs, now (a reference rerun must update it)."""
    text = (REPO / "README.md").read_text()
    begin, end = text.index("<!-- headlines:begin"), text.index("<!-- headlines:end -->")
    assert text.index("## What reproduced") < begin < end
    verdict_table(text[begin:end])


# -- the repository's own paths, named in prose, comments and strings ---------------------

#: the top-level folders of the code (results/ is left out: its run ids are examples)
TOP = sorted(p.name for p in REPO.iterdir() if (p.is_dir() and (p / "__init__.py").exists())
             or p.name in ("bench", "docs", "scripts", "tests"))
#: a path below one of them that names a file by its extension
PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(TOP)})/[\w/-]+\.(?:py|md|sh|c|h|json|toml))"
                  r"(?![\w/-])")
#: in docs, a code span ``pkg/module.name``: a name defined in pkg/module.py
DOTTED = re.compile(rf"`((?:{'|'.join(TOP)})/[\w/]+)\.(\w+)`")
#: the files that may name them: the code's folders (not .venv or results) and the top level
SOURCES = sorted(p for top in [REPO, *(REPO / t for t in TOP)]
                 for p in (top.glob("*") if top == REPO else top.rglob("*"))
                 if p.suffix in (".py", ".md", ".sh", ".c", ".h"))


def named_paths(text: str) -> list[str]:
    return PATH.findall(text)


@functools.cache
def named_in(source: Path) -> tuple[str, ...]:
    """The repository paths one file names (read once for all the tests here)."""
    return tuple(named_paths(source.read_text(errors="replace")))


def test_every_repository_path_named_in_docs_or_code_exists():
    """A file moved or renamed leaves no page, comment or message pointing at the old place."""
    missing = [f"{src.relative_to(REPO)}: {p}" for src in SOURCES
               for p in named_in(src) if not (REPO / p).exists()]
    assert not missing, missing


def test_every_module_name_the_docs_cite_is_defined_there():
    """`harness/traffic.run_iperf` in a page: harness/traffic.py defines run_iperf."""
    stale = []
    for page in PAGES:
        for module, name in DOTTED.findall(page.read_text()):
            source = REPO / f"{module}.py"
            if (REPO / f"{module}.{name}").exists():
                continue                     # a file, e.g. `experiments/permutation/claims.py`
            if not source.is_file() or not re.search(
                    rf"^\s*(?:def|class)\s+{name}\b|^\s*{name}\s*[:=]", source.read_text(), re.M):
                stale.append(f"{page.relative_to(REPO)}: {module}.{name}")
    assert not stale, stale


def test_the_path_checks_see_paths():
    """(patterns that matched nothing would pass every file)"""
    assert "docs/usage.md" not in named_paths("xdocs/usage.md")
    assert named_paths("see docs/notebook/004-plts.md, and bench/bench_aqm.py:99") == [
        "docs/notebook/004-plts.md", "bench/bench_aqm.py"]
    assert sum(len(named_in(p)) for p in SOURCES) > 300
    assert ("harness/traffic", "run_iperf") in DOTTED.findall((REPO / "docs/design.md").read_text())


def test_the_testing_page_names_every_marker_and_its_tier_time():
    """docs/testing.md has a row for each pytest marker that pyproject.toml declares (a new
    tier, or the ovs and root skips, is documented where the suite is), and the three tiers
    each have a time."""
    import tomllib
    declared = [m.split(":")[0].strip() for m in tomllib.loads(
        (REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]]
    assert {"fast", "integration", "slow"} <= set(declared)
    page = (REPO / "docs" / "testing.md").read_text()
    tiers = page[page.index("## Tiers"):]
    tiers = tiers[:tiers.index("\n## ", 4)]
    rows = {m: line for line in tiers.splitlines() for m in declared
            if line.startswith(f"| `{m}` |")}
    assert sorted(rows) == sorted(declared), f"markers without a row: {set(declared) - set(rows)}"
    for tier in ("fast", "integration", "slow"):
        assert re.search(r"\d+ s", rows[tier]), f"the {tier} tier's row gives no time"
