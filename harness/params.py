"""Typed, frozen parameters of one run: what an experiment's ``run`` receives.

Each experiment declares ``DEFAULTS`` (name -> default value; the value's type is the
parameter's type) and, for a parameter whose default is None, ``TYPES`` (name -> type).
``typed`` turns a mapping (flags resolved by the CLI, a sweep manifest line, a rerun's
config.json) into an instance of that experiment's frozen dataclass, strictly: an unknown
name or a value of the wrong type is a one-line ValueError, a missing one takes its default.
An int is accepted where a float is declared (``--bw 10``); nothing else is coerced.

The instance is also a read-only mapping (``params["bw"]``, ``dict(params)``,
``{**params, "bw": 20.0}``), so code that reads parameters by name works unchanged, and
config.json records ``dict(params)``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

#: parameters every experiment has besides its DEFAULTS
COMMON: dict[str, tuple[type, Any]] = {"quick": (bool, False)}


class Params(Mapping[str, Any]):
    """Base of every experiment's parameter dataclass: a frozen, typed, read-only mapping."""

    experiment: str = ""

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    #: the field names, set once when the class is made (params_class)
    NAMES: tuple[str, ...] = ()

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return cls.NAMES


_CLASSES: dict[str, type[Params]] = {}


def param_types(mod: ModuleType) -> dict[str, type]:
    """Name -> type of every parameter of an experiment module (ValueError if a None
    default has no entry in the module's TYPES)."""
    declared = getattr(mod, "TYPES", {})
    out: dict[str, type] = {}
    for name, default in mod.DEFAULTS.items():
        if default is None:
            if name not in declared:
                raise ValueError(f"{mod.NAME}: parameter {name!r} defaults to None and has "
                                 "no entry in TYPES")
            out[name] = declared[name]
        else:
            out[name] = type(default)
    out.update({k: t for k, (t, _) in COMMON.items()})
    return out


def params_class(mod: ModuleType) -> type[Params]:
    """The frozen dataclass of an experiment's parameters (made once per experiment)."""
    if mod.NAME not in _CLASSES:
        types = param_types(mod)
        defaults = {**mod.DEFAULTS, **{k: d for k, (_, d) in COMMON.items()}}
        fields = [(n, t | None if defaults[n] is None else t,
                   dataclasses.field(default=defaults[n])) for n, t in types.items()]
        cls = dataclasses.make_dataclass(
            "".join(w.capitalize() for w in mod.NAME.replace("-", "_").split("_")) + "Params",
            fields, bases=(Params,), frozen=True,
            namespace={"experiment": mod.NAME, "NAMES": tuple(types)})
        _CLASSES[mod.NAME] = cls
    return _CLASSES[mod.NAME]


def _check(experiment: str, name: str, value: Any, kind: type, nullable: bool) -> Any:
    if value is None and nullable:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and kind is not bool:
        ok = False
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise ValueError(f"{experiment}: parameter {name!r} must be {kind.__name__}"
                         f"{' or None' if nullable else ''}, got {value!r}")
    return value


def typed(mod: ModuleType, values: Mapping[str, Any]) -> Params:
    """``values`` as the experiment's frozen parameters (strict; see the module text)."""
    cls = params_class(mod)
    types = param_types(mod)
    unknown = sorted(set(values) - set(types))
    if unknown:
        raise ValueError(f"{mod.NAME}: unknown parameter{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(unknown)} (known: {', '.join(sorted(types))})")
    nullable = {n for n, d in mod.DEFAULTS.items() if d is None}
    checked = {n: _check(mod.NAME, n, v, types[n], n in nullable) for n, v in values.items()}
    return cls(**checked)
