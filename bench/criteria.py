"""What every bench that took a check over from the test suite prints for a criterion: how
many runs met it, with the median and the range (docs/testing.md#tiers).  Benches assert
nothing; a reader compares the line with the criterion.  And how such a bench reaches the
test module whose set-up it runs (``integration``).

A bench runs as ``.venv/bin/python bench/<name>.py`` from the checkout: dcrepro is installed
(editable) in .venv, and Python puts the script's own folder, bench/, first on sys.path, so
this module and bench_profile import by name."""
from __future__ import annotations

import importlib.util
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

INTEGRATION = Path(__file__).resolve().parents[1] / "tests" / "integration"


def integration(name: str) -> ModuleType:
    """tests/integration/<name>.py, loaded by its path (tests/ is no package): a bench runs
    a test module's set-up with its own, longer windows."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, INTEGRATION / f"{name}.py")
    assert spec and spec.loader, name
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # before it runs: dataclasses look their module up
    spec.loader.exec_module(module)
    return module


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
