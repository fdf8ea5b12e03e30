"""Every committed reference run folder redraws its figures from its own tables (no root),
with short headers: titles say what a figure shows and which run; the parameters, suspect
lists and methods go to the report page (figures.json).  Their claims.md and claims.csv are
what the current claims code says of their data: a committed snapshot cannot go stale."""
from pathlib import Path

import pytest

#: a figure's header (suptitle, axes titles, figure texts): at most this many lines each,
#: none longer than this many characters
HEADER_LINES = 2
HEADER_WIDTH = 110

REFERENCE = Path(__file__).resolve().parents[2] / "results" / "reference"
FOLDERS = sorted(p.parent for p in REFERENCE.glob("*/*/status.json"))
pytestmark = pytest.mark.slow   # the redraw of every reference folder


@pytest.mark.parametrize("folder", FOLDERS, ids=[f"{p.parent.name}/{p.name}" for p in FOLDERS])
def test_reference_folder_redraws(folder, redrawn_reference):
    drawn = redrawn_reference[1][folder]    # the PNGs removed and drawn again, once a session
    if drawn.error is not None:
        raise drawn.error
    figures = drawn.figures
    assert figures and all(f.exists() and f.stat().st_size > 10_000 for f in figures)
    assert drawn.headers
    for text in drawn.headers:
        lines = text.split("\n")
        assert len(lines) <= HEADER_LINES and max(map(len, lines)) <= HEADER_WIDTH, text
        assert "SUSPECT" not in text, text
    notes = (drawn.copy / "figures.json").read_text()
    assert all(f.name in notes for f in figures), "every figure says how it is made"
    for name in ("claims.md", "claims.csv"):
        if (folder / name).exists():
            assert (drawn.copy / name).read_text() == (folder / name).read_text(), \
                f"{name} is stale: run 'dcrepro plot {folder}' and commit it"


def test_there_is_a_reference_for_every_experiment():
    assert {p.parent.name for p in FOLDERS} >= {"permutation", "fairness", "outcast",
                                                "outcast-fattree"}
