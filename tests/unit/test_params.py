"""Typed parameters (harness/params.py): every experiment declares a frozen dataclass of
them; unknown names and wrong types are one-line errors; ints pass for floats; experiments
read them as attributes, which the type checker sees."""
from __future__ import annotations

import dataclasses

import pytest

from harness.params import Params, param_types, typed
from store import registry


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_experiment_declares_typed_frozen_params(name):
    mod = registry.module(name)
    assert dataclasses.is_dataclass(mod.PARAMS) and issubclass(mod.PARAMS, Params)
    defaults = mod.PARAMS.defaults()
    assert set(mod.QUICK) <= set(defaults)
    p = typed(mod, {**defaults, **mod.QUICK, "quick": True})
    assert isinstance(p, mod.PARAMS)
    assert dict(p) == {**defaults, **mod.QUICK, "quick": True}
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.seed = 2                                        # type: ignore[misc]
    assert typed(mod, {}) == typed(mod, defaults)         # missing names take defaults
    assert set(param_types(mod)) == set(defaults) | {"quick"}


def test_strict_names_and_types(one_line_error):
    grin = registry.module("grin")
    p = typed(grin, {"bw": 20, "runs": 3})
    assert p["bw"] == 20.0 and isinstance(p.bw, float) and p.runs == 3
    assert {**p, "bw": 5.0}["bw"] == 5.0 and len(p) == len(grin.PARAMS.defaults()) + 1
    for values, msg in (({"bandwidth": 1.0}, "unknown parameter bandwidth"),
                        ({"runs": 2.5}, "'runs' must be int"),
                        ({"runs": True}, "'runs' must be int"),
                        ({"degrees": [0, 1]}, "'degrees' must be str"),
                        ({"quick": "yes"}, "'quick' must be bool")):
        with one_line_error(msg):
            typed(grin, values)


def test_none_defaults_declare_their_type():
    outcast = registry.module("outcast")
    assert typed(outcast, {"rto_min": "2ms"}).rto_min == "2ms"
    assert typed(outcast, {"rto_min": None}).rto_min is None
    with pytest.raises(ValueError, match="'rto_min' must be str or None"):
        typed(outcast, {"rto_min": 2})


def test_experiments_read_their_parameters_as_attributes():
    """``params.bw``, not ``params["bw"]``: a name the dataclass lacks is a type error
    (mypy, in scripts/test.sh), not a KeyError in the middle of a run."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "experiments"
    by_key = [f"{p.relative_to(root)}:{i}" for p in root.glob("*/*.py")
              if p.stem not in ("figures", "claims")     # those read config.json's dicts
              for i, line in enumerate(p.read_text().splitlines(), 1)
              if 'params["' in line or "params['" in line or "params.get(" in line]
    assert not by_key, by_key


def test_every_experiments_defaults_match_their_golden_file(golden):
    """Each experiment's parameter defaults, value by value (sorted: their order is the
    flags', not a value).  A change of a base class can silently change a default: making
    outcast's parameters SimFlowParams beside ManyToOneParams gave it FlowParams' queue 100
    and cubic for its own 20 and reno (2026-12-03, caught only by an integration test).
    A default changed on purpose is rewritten with UPDATE_GOLDEN=1, and shows in the diff."""
    import json
    got = {n: dict(sorted(registry.module(n).PARAMS.defaults().items()))
           for n in registry.EXPERIMENTS}
    golden("params-defaults.json", json.dumps(got, indent=1, default=str) + "\n")
