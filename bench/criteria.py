"""What every bench that took a check over from the test suite prints for a criterion: how
many runs met it, with the median and the range (docs/testing.md#tiers).  Benches assert
nothing; a reader compares the line with the criterion."""
from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tests_on_path() -> None:
    """The checkout and tests/integration importable: a bench runs a test module's setup
    with its own, longer windows."""
    for p in (ROOT, ROOT / "tests" / "integration"):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))


def criterion(text: str, values: list[float], ok: Callable[[float], bool],
              excluded: str = "", digits: int = 2) -> None:
    """One summary line: how many of ``values`` met ``ok``, with their median and range
    (``excluded`` says which runs were left out, and why)."""
    if not values:
        print(f"criterion {text}: no run to judge{excluded}", flush=True)
        return
    met = sum(1 for v in values if ok(v))
    f = f".{digits}f"
    print(f"criterion {text}: met in {met} of {len(values)} runs; median "
          f"{statistics.median(values):{f}}, min {min(values):{f}}, max {max(values):{f}}"
          f"{excluded}", flush=True)
