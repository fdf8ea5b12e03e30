"""Spec strings such as ``fattree,k=4`` or ``ecmp``: one strict parser for every registry.

A spec is ``name[,value][,key=value...]``. Positional values fill the schema's keys in order,
unknown keys and ill-typed values are errors, so a typo never silently becomes a default.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class SpecError(ValueError):
    """A spec string or one of its values is invalid; the message is meant for the user."""


@dataclass(frozen=True)
class Param:
    """One key of a schema: its type, default, and an optional validity check."""

    type: Callable[[str], Any]
    default: Any
    help: str = ""
    check: Callable[[Any], bool] | None = None
    requirement: str = ""  # human wording of `check`, shown in the error


@dataclass(frozen=True)
class Spec:
    """A parsed spec: the registered name and every parameter resolved (defaults included)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        parts = [self.name] + [f"{k}={v}" for k, v in self.params.items()]
        return ",".join(parts)

    def __getitem__(self, key: str) -> Any:
        return self.params[key]


def _convert(kind: str, name: str, key: str, param: Param, raw: str) -> Any:
    try:
        value = param.type(raw)
    except (TypeError, ValueError):
        tname = getattr(param.type, "__name__", str(param.type))
        raise SpecError(f"{kind} '{name}': {key}={raw!r} is not a valid {tname}") from None
    if param.check is not None and not param.check(value):
        raise SpecError(f"{kind} '{name}': {key}={value} is invalid ({param.requirement})")
    return value


def parse_spec(text: str, schemas: Mapping[str, Mapping[str, Param]], kind: str) -> Spec:
    """Parse ``text`` against the schema registered for its name; raise SpecError on any fault."""
    text = text.strip()
    if not text:
        raise SpecError(f"empty {kind} spec; choose one of: {', '.join(sorted(schemas))}")
    name, *items = [part.strip() for part in text.split(",")]
    if name not in schemas:
        raise SpecError(f"unknown {kind} '{name}'; choose one of: {', '.join(sorted(schemas))}")
    schema = schemas[name]
    keys = list(schema)
    raw: dict[str, str] = {}
    positional = 0
    for item in items:
        if not item:
            raise SpecError(f"{kind} '{name}': empty item in {text!r}")
        if "=" in item:
            key, value = (s.strip() for s in item.split("=", 1))
            if key not in schema:
                allowed = ", ".join(keys) or "none"
                raise SpecError(f"{kind} '{name}': unknown key '{key}' (allowed: {allowed})")
        else:
            if positional >= len(keys):
                raise SpecError(f"{kind} '{name}': too many positional values in {text!r}")
            key, value = keys[positional], item
            positional += 1
        if key in raw:
            raise SpecError(f"{kind} '{name}': '{key}' given twice")
        raw[key] = value
    params = {}
    for key, param in schema.items():
        params[key] = _convert(kind, name, key, param, raw[key]) if key in raw else param.default
    return Spec(name, params)


def describe(schemas: Mapping[str, Mapping[str, Param]]) -> str:
    """One line per registered name with its keys and defaults, for --help texts."""
    lines = []
    for name, schema in sorted(schemas.items()):
        keys = ", ".join(f"{k}={p.default}" for k, p in schema.items())
        lines.append(f"{name}" + (f" ({keys})" if keys else ""))
    return "; ".join(lines)


def positive_int(value: int) -> bool:
    """Check used by schemas: strictly positive."""
    return value > 0
