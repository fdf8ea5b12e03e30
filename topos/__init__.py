"""Topology registry: ``build("fattree,k=4")`` returns the Topology for a spec string."""
from __future__ import annotations

import importlib
from collections.abc import Mapping

from .base import Link, Node, Topology, TopologyError
from .spec import Param, Spec, SpecError, describe, parse_spec, positive_int

# name -> (module, class, schema); the class is called with the resolved params as kwargs.
_REGISTRY: dict[str, tuple[str, str, Mapping[str, Param]]] = {
    "fattree": ("topos.fattree", "FatTree", {
        "k": Param(int, 4, "ports per switch (even)", lambda k: k >= 2 and k % 2 == 0,
                   "an even number >= 2"),
    }),
    "jellyfish": ("topos.jellyfish", "Jellyfish", {
        "switches": Param(int, 20, "number of switches", positive_int, "> 0"),
        "ports": Param(int, 4, "ports per switch", positive_int, "> 0"),
        "hosts": Param(int, 16, "number of hosts", positive_int, "> 0"),
        "seed": Param(int, 0, "seed of the random graph"),
        "grow": Param(int, 0, "switches added afterwards by incremental expansion",
                      lambda g: g >= 0, ">= 0"),
    }),
    "outcast": ("topos.outcast", "OutcastLinear", {
        "n": Param(int, 6, "senders behind the aggregate switch S2", positive_int, "> 0"),
    }),
    "grin": ("topos.grin", "GrinTopology", {
        "racks": Param(int, 2, "racks (pairing groups) on the one switch", positive_int,
                       "> 0"),
        "servers": Param(int, 4, "servers per rack", positive_int, "> 0"),
        "degree": Param(int, 1, "horizontal links per server (0 = the original network)",
                        lambda d: d >= 0, ">= 0"),
        "placement": Param(str, "rack", "rack: neighbours in the same rack; cross: in the "
                           "adjacent racks", lambda p: p in ("rack", "cross"), "rack or cross"),
        "seed": Param(int, 0, "seed of the overlay"),
    }),
    "grin-fattree": ("topos.grin", "GrinFatTree", {
        "k": Param(int, 4, "fat-tree ports per switch (racks = edge switches of k/2 servers)",
                   lambda k: k >= 2 and k % 2 == 0 and k ** 3 // 4 <= 4000,
                   "an even number from 2 to 24"),
        "degree": Param(int, 1, "horizontal links per server (0 = the plain fat tree)",
                        lambda d: d >= 0, ">= 0"),
        "placement": Param(str, "rack", "rack: neighbours under the same edge switch; cross: "
                           "under the adjacent ones", lambda p: p in ("rack", "cross"),
                           "rack or cross"),
        "seed": Param(int, 0, "seed of the overlay"),
    }),
    "multihomed": ("topos.grin", "Multihomed", {
        "racks": Param(int, 2, "racks under the core switch", positive_int, "> 0"),
        "servers": Param(int, 4, "servers per rack", positive_int, "> 0"),
        "extra": Param(int, 1, "extra NICs (and ToRs) per server; the rack's uplinks are "
                       "divided evenly over its ToRs", positive_int, "> 0"),
    }),
    "orca": ("topos.orca", "OrcaTestbed", {
        "receivers": Param(int, 4, "receivers of the multicast sender", positive_int, "> 0"),
        "racks": Param(int, 2, "ToR switches the receivers are spread over", positive_int,
                       "> 0"),
    }),
}

SCHEMAS: dict[str, Mapping[str, Param]] = {name: s for name, (_, _, s) in _REGISTRY.items()}


def parse(text: str) -> Spec:
    """Parse and validate a topology spec string (no topology is built)."""
    return parse_spec(text, SCHEMAS, "topology")


def build(spec: str | Spec) -> Topology:
    """Build the topology named by a spec string or parsed Spec, and check it is connected."""
    parsed = parse(spec) if isinstance(spec, str) else spec
    module, cls, _ = _REGISTRY[parsed.name]
    topo = getattr(importlib.import_module(module), cls)(**parsed.params)
    topo.spec = str(parsed)
    topo.validate()
    return topo


def help_text() -> str:
    """Registered topologies with their keys and defaults."""
    return describe(SCHEMAS)


__all__ = ["Link", "Node", "Topology", "TopologyError", "Spec", "SpecError", "build", "parse",
           "help_text", "SCHEMAS"]
