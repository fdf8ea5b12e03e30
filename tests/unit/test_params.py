"""Typed parameters (harness/params.py): every experiment's DEFAULTS make a frozen
dataclass; unknown names and wrong types are one-line errors; ints pass for floats."""
from __future__ import annotations

import dataclasses

import pytest

from harness.params import Params, param_types, typed
from store import registry


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_experiments_defaults_make_typed_frozen_params(name):
    mod = registry.module(name)
    p = typed(mod, {**mod.DEFAULTS, **mod.QUICK, "quick": True})
    assert isinstance(p, Params) and p.experiment == mod.NAME
    assert dict(p) == {**mod.DEFAULTS, **mod.QUICK, "quick": True}
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.seed = 2                                        # type: ignore[misc]
    assert typed(mod, {}) == typed(mod, mod.DEFAULTS)     # missing names take defaults
    assert set(param_types(mod)) == set(mod.DEFAULTS) | {"quick"}


def test_strict_names_and_types():
    grin = registry.module("grin")
    p = typed(grin, {"bw": 20, "runs": 3})
    assert p["bw"] == 20.0 and isinstance(p.bw, float) and p.runs == 3
    assert {**p, "bw": 5.0}["bw"] == 5.0 and len(p) == len(grin.DEFAULTS) + 1
    for values, msg in (({"bandwidth": 1.0}, "unknown parameter bandwidth"),
                        ({"runs": 2.5}, "'runs' must be int"),
                        ({"runs": True}, "'runs' must be int"),
                        ({"degrees": [0, 1]}, "'degrees' must be str"),
                        ({"quick": "yes"}, "'quick' must be bool")):
        with pytest.raises(ValueError, match=msg) as exc:
            typed(grin, values)
        assert "\n" not in str(exc.value)


def test_none_defaults_declare_their_type():
    outcast = registry.module("outcast")
    assert typed(outcast, {"rto_min": "2ms"}).rto_min == "2ms"
    assert typed(outcast, {"rto_min": None}).rto_min is None
    with pytest.raises(ValueError, match="'rto_min' must be str or None"):
        typed(outcast, {"rto_min": 2})
