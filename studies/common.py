"""What the ablation studies' command lines share (studies/<experiment>_ablation.py): an
output folder and labelled run folders, ``OUT LABEL=RUN_FOLDER ...``, checked once."""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from store import write_csv


def labelled(items: list[str]) -> list[tuple[str, Path]] | None:
    """[(label, run folder)] from ``LABEL=RUN_FOLDER`` items; None if one has no '='."""
    if any("=" not in a for a in items):
        return None
    return [(label, Path(folder)) for label, folder in (a.split("=", 1) for a in items)]


def labelled_runs(argv: list[str], prog: str,
                  need: str = "flows.csv") -> tuple[Path, list[tuple[str, Path]]] | None:
    """(output folder, [(label, run folder)]) from ``OUT LABEL=RUN_FOLDER ...``; None after
    a one-line error on stderr (usage, or a folder without ``need``)."""
    runs = labelled(argv[1:]) if len(argv) >= 2 else None
    if runs is None:
        print(f"usage: python -m {prog} OUT LABEL=RUN_FOLDER ...", file=sys.stderr)
        return None
    for _, folder in runs:
        if not (folder / need).is_file():
            who = prog.rsplit(".", 1)[-1].split("_")[0]   # studies.fairness_ablation: fairness
            print(f"{who} ablation: {folder} has no {need}", file=sys.stderr)
            return None
    return Path(argv[0]), runs


def write(out: Path, rows: Sequence[Mapping[str, object]], lines: list[str],
          draw: Callable[[Path], Path]) -> Path:
    """An ablation's three outputs in ``out``: ablation.csv (``rows``), ablation.md
    (``lines``) and the figure ``draw`` saves there (its path is returned)."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "ablation.csv", rows)
    (out / "ablation.md").write_text("\n".join(lines) + "\n")
    return draw(out)
