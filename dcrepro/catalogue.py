"""What a user can name in a flag, read from the registries themselves (so it cannot go
stale): ``dcrepro list topologies | routings | dataplanes | backends | ccs | aqms``.

Each entry is its name, the spec it takes (every key with its default), one example that
the registry's own parser accepts, and one line on what it is.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import routing
import topos
from topos.spec import Param

#: what `dcrepro list` can list (experiments: the registry's own listing, in the CLI)
KINDS = ("experiments", "papers", "topologies", "routings", "dataplanes", "backends", "ccs",
         "aqms")


@dataclass(frozen=True)
class Entry:
    """One thing a flag can name."""
    name: str
    spec: str         # the syntax: name,key=default,...
    example: str      # a spec the registry accepts
    what: str         # one line


#: how wide an entry's description is; a longer one goes on under itself, whole
WHAT = 80


def _wrapped(text: str) -> list[str]:
    """An entry's description in lines of at most WHAT characters (never cut short)."""
    import textwrap
    text = " ".join(text.replace("``", "").replace(" (see the module text)", "").split())
    return textwrap.wrap(text, WHAT, break_on_hyphens=False) or [""]


def _first_line(obj: object) -> str:
    """The first sentence of ``obj``'s docstring."""
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ").split(". ")[0].rstrip(".")


def _spec(name: str, schema: Mapping[str, Param]) -> str:
    return ",".join([name, *(f"{k}={p.default}" for k, p in schema.items())])


#: an example per name where the defaults alone show little
_TOPOLOGY_EXAMPLES = {"fattree": "fattree,k=8", "jellyfish": "jellyfish,switches=20,seed=7",
                      "outcast": "outcast,n=12", "grin": "grin,racks=4,servers=10,degree=2",
                      "grin-fattree": "grin-fattree,k=4,degree=1",
                      "multihomed": "multihomed,racks=4,servers=10",
                      "orca": "orca,receivers=16"}
_ROUTING_EXAMPLES = {"ksp": "ksp,k=4", "spray": "spray,mode=cnt"}


def topologies() -> list[Entry]:
    out = []
    for name, (module, cls, schema) in topos._REGISTRY.items():
        what = _first_line(getattr(importlib.import_module(module), cls))
        out.append(Entry(name, _spec(name, schema), _TOPOLOGY_EXAMPLES.get(name, name), what))
    return out


def routings() -> list[Entry]:
    return [Entry(name, _spec(name, schema), _ROUTING_EXAMPLES.get(name, name),
                  _first_line(fn))
            for name, (fn, schema, _) in routing._REGISTRY.items()]


def dataplanes() -> list[Entry]:
    from emulator import dataplane_registry as reg
    out = []
    for name in reg.REGISTRY:
        cls = reg.dataplane_class(name)
        caps = ", ".join(sorted(cls.capabilities)) or "none beyond the routing plan"
        out.append(Entry(name, f"{name}[,option=value...]", name,
                         f"{_first_line(cls)}; extras: {caps}"))
    return out


def backends() -> list[Entry]:
    """Each view with --backend's own help text and the experiments that offer it."""
    from harness.common import BACKEND_HELP, BACKENDS
    from store import registry
    out = []
    for name in BACKENDS:
        who = [e for e in registry.EXPERIMENTS
               if name in getattr(registry.module(e), "BACKENDS", ("emulated", "model"))]
        out.append(Entry(name, name, name, f"{BACKEND_HELP[name]}; experiments: "
                                           f"{', '.join(who)}"))
    return out


#: the kernel's list of the congestion controls it has loaded
AVAILABLE_CCS = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def ccs() -> list[Entry]:
    from emulator.cc import BPF_CCS
    try:
        kernel = AVAILABLE_CCS.read_text().split()
    except OSError:
        kernel = []
    out = [Entry(name, name, name, "built into this kernel")
           for name in kernel if name not in BPF_CCS]
    out += [Entry(name, name, name, f"dcrepro's BPF control: {what}")
            for name, (_, what) in BPF_CCS.items()]
    return out


def aqms() -> list[Entry]:
    from emulator import aqm
    examples = {"droptail": "droptail", "ecn": "ecn,k=20", "red": "red,min=20,max=60,p=0.1,w=9"}
    whats = {"droptail": "tail drop at the queue's limit (the default)",
             "ecn": "mark ECN-capable packets at queue >= k packets (DCTCP's), drop the rest "
                    "at the tail",
             "red": "RED on the average queue: drop non-ECT, mark ECT packets between min and "
                    "max packets, with probability up to p; weight 2^-w"}
    return [Entry(mode, ",".join([mode, *(f"{k}=..." for k in aqm._KEYS[mode])]),
                  examples[mode], whats[mode]) for mode in aqm.MODES]


LISTERS: dict[str, Callable[[], list[Entry]]] = {
    "topologies": topologies, "routings": routings, "dataplanes": dataplanes,
    "backends": backends, "ccs": ccs, "aqms": aqms}
#: the flag each kind is given with
FLAGS = {"topologies": "--topo SPEC", "routings": "--routing SPEC",
         "dataplanes": "--dataplane SPEC", "backends": "--backend NAME", "ccs": "--cc NAME",
         "aqms": "--aqm SPEC"}


def lines(kind: str) -> list[str]:
    """``dcrepro list KIND``'s lines: a heading with the flag, then per entry its name and
    what it is, and under it (when it takes keys) its spec, every key with its default, and
    an example."""
    entries = LISTERS[kind]()
    width = max(len(e.name) for e in entries)
    out = [f"{kind} ({FLAGS[kind]}):"]
    for e in entries:
        first, *rest = _wrapped(e.what)
        out.append(f"  {e.name:<{width}}  {first}")
        out += [f"  {'':<{width}}  {line}" for line in rest]
        if e.spec != e.name or e.example != e.name:
            out.append(f"  {'':<{width}}    {e.spec}" + (f"   e.g. {e.example}"
                                                       if e.example != e.name else ""))
    return out
