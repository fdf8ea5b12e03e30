"""Every committed reference run folder redraws its figures from its own tables (no root),
with short headers: titles say what a figure shows and which run; the parameters, suspect
lists and methods go to the report page (figures.json).  Their claims.md and claims.csv are
what the current claims code says of their data: a committed snapshot cannot go stale."""
import shutil
from pathlib import Path

import matplotlib.figure
import pytest

import analysis

#: a figure's header (suptitle, axes titles, figure texts): at most this many lines each,
#: none longer than this many characters
HEADER_LINES = 2
HEADER_WIDTH = 110

REFERENCE = Path(__file__).resolve().parents[2] / "results" / "reference"
FOLDERS = sorted(p.parent for p in REFERENCE.glob("*/*/status.json"))


@pytest.mark.parametrize("folder", FOLDERS, ids=[f"{p.parent.name}/{p.name}" for p in FOLDERS])
def test_reference_folder_redraws(folder, tmp_path, monkeypatch):
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    for png in copy.glob("*.png"):
        png.unlink()
    headers: list[str] = []
    save = matplotlib.figure.Figure.savefig

    def record(fig, *args, **kwargs):  # every text above or beside the axes
        texts = [fig._suptitle] if fig._suptitle is not None else []
        texts += list(fig.texts) + [t for ax in fig.axes
                                    for t in (ax.title, ax._left_title, ax._right_title)]
        headers.extend(t.get_text() for t in texts if t.get_text())
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", record)
    figures = analysis.plot(copy)
    assert figures and all(f.exists() and f.stat().st_size > 10_000 for f in figures)
    assert headers
    for text in headers:
        lines = text.split("\n")
        assert len(lines) <= HEADER_LINES and max(map(len, lines)) <= HEADER_WIDTH, text
        assert "SUSPECT" not in text, text
    notes = (copy / "figures.json").read_text()
    assert all(f.name in notes for f in figures), "every figure says how it is made"
    for name in ("claims.md", "claims.csv"):
        if (folder / name).exists():
            assert (copy / name).read_text() == (folder / name).read_text(), \
                f"{name} is stale: run 'dcrepro plot {folder}' and commit it"


def test_there_is_a_reference_for_every_experiment():
    assert {p.parent.name for p in FOLDERS} >= {"permutation", "fairness", "outcast",
                                                "outcast-fattree"}
