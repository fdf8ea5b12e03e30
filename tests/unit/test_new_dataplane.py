"""Adding a dataplane is one folder and one registry line: a toy dataplane written into a
temporary package and registered with one line in emulator/dataplane_registry.py is parsed with its
options, made, offered by `auto` when the ones before it cannot run here, checked against
routing modes and experiment needs with one-line errors that point to a dataplane that can,
and appears in the README's backends column -- without touching the emulator."""
from __future__ import annotations

import sys

import pytest

from emulator import dataplane_registry as dp_registry
from emulator.dataplane import Dataplane
from store import registry

TOY = '''
"""Toy dataplane of the registry test: carries plain forwarding only."""
from __future__ import annotations

from typing import Any

from emulator.dataplane import Dataplane


class ToyDataplane(Dataplane):
    name = "toy"
    carries = frozenset({"forward"})
    options = {"color": ("blue", "red")}

    def __init__(self, color: str = "blue") -> None:
        self.color = color

    def switch_class(self) -> Any:
        raise NotImplementedError

    def install(self, emu: Any) -> None:
        raise NotImplementedError

    def trace(self, emu: Any, src: str, dst: str, five_tuple: dict[str, Any],
              proto: str = "tcp") -> list[str]:
        return []
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    pkg = tmp_path / "toydp"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "dataplane.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    # the one line
    monkeypatch.setitem(dp_registry.REGISTRY, "toy", "toydp.dataplane:ToyDataplane")
    yield
    for mod in [m for m in sys.modules if m.startswith("toydp")]:
        del sys.modules[mod]


def test_a_registered_toy_dataplane_is_made_with_its_options(toy, one_line_error):
    assert dp_registry.parse("toy,color=red") == ("toy", {"color": "red"})
    dp = dp_registry.make("toy,color=red")
    assert isinstance(dp, Dataplane) and dp.name == "toy" and dp.color == "red"
    with one_line_error("toy takes no option 'shade=x'"):
        dp_registry.parse("toy,shade=x")


def test_auto_takes_the_first_dataplane_that_can_run(toy, monkeypatch):
    for name in ("bpf", "ovs"):
        cls = dp_registry.dataplane_class(name)
        monkeypatch.setattr(cls, "unavailable", classmethod(lambda c: "not on this machine"))
    assert dp_registry.resolve("auto") == "toy"
    assert dp_registry.resolve("auto,color=red") == "toy,color=red"


def test_routing_and_needs_it_lacks_are_one_line_errors_naming_one_that_has_them(toy):
    dp = dp_registry.make("toy")
    dp_registry.check_modes(dp, "st", {"forward"})
    with pytest.raises(ValueError, match="needs hash, which the toy dataplane cannot "
                                         "carry; use --dataplane bpf"):
        dp_registry.check_modes(dp, "ecmp", {"forward", "hash"})
    with pytest.raises(ValueError, match="plts needs latency_sampling, which the toy "
                                         "dataplane does not offer; use --dataplane bpf"):
        dp_registry.check_needs(dp, "plts", {"latency_sampling"})


def test_the_readme_backends_column_lists_it_where_an_experiment_can_use_it(toy):
    caps = dp_registry.capabilities()
    assert caps["toy"] == frozenset()
    assert "`toy`" in registry.backends("permutation", caps)      # needs nothing extra
    assert "`toy`" not in registry.backends("plts", caps)         # needs the latency samples
