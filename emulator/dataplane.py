"""The one interface every dataplane implements (each is a folder of dataplanes/, listed in
emulator/dataplane_registry.py, which also checks a dataplane against what a run needs).

An ``Emulation`` (emulator/emulation.py) builds hosts, links and shaping the same way for
every dataplane; a dataplane only decides what the switches are and how they forward:

  prepare(emu)       before Mininet builds the network (start a controller, load programs)
  switch_class()     the Mininet switch class to build
  mn_controller()    a Mininet controller object, or None
  install(emu)       after the links exist: install the plan and return only once the
                     switches confirm it (barriers, or maps read back equal to the plan)
  check_alive()      raise RunError naming the component if one died
  trace(emu, ...)    where a 5-tuple goes, asked of the datapath itself (never recomputed;
                     ``follow`` walks the hops, the dataplane names each one's out port)
  stop(emu)          remove what prepare/install made (links are already gone)
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .proc import RunError

if TYPE_CHECKING:       # annotations only: never imported at run time (no import circle)
    from topos.base import Topology

    from .emulation import Emulation


class TraceError(RunError):
    """A traced flow was dropped, flooded, looped, has no record on a switch, or was
    delivered to the wrong host."""


def follow(topo: Topology, src: str, dst: str, out_port: Callable[[str, int], int]
           ) -> list[str]:
    """The switches a flow from ``src`` to ``dst`` crosses, hop by hop from ``src``'s access
    switch, as a dataplane's ``trace`` asks them: ``out_port(switch, in_port)`` is the port
    the flow left that switch by.  A loop, or delivery to a host other than ``dst``, is a
    TraceError."""
    sw = topo.access_switch(src)
    in_port = topo.port(sw, src)
    path: list[str] = []
    while True:
        if sw in path:
            raise TraceError(f"trace {src}->{dst} loops: {path + [sw]}")
        path.append(sw)
        peer, in_port = topo.ports(sw)[out_port(sw, in_port)]
        if not topo.is_switch(peer):
            if peer != dst:
                raise TraceError(f"trace {src}->{dst} delivered to {peer}")
            return path
        sw = peer


class Dataplane(ABC):
    """How the switches of one emulated network forward."""

    name = ""
    #: plan ops and select modes this dataplane can carry (see routing/plan.py)
    carries: frozenset[str] = frozenset()
    #: what it offers beyond the interface, by name (an experiment's NEEDS are checked
    #: against it at validation): "latency_sampling" (per-packet fabric latency samples),
    #: "spread" (per-packet path counts of a flow), "aqm" (--aqm other than droptail)
    capabilities: frozenset[str] = frozenset()
    #: options its spec may carry after its name (``bpf,socket=keep``): option -> values,
    #: the first one the default; each is passed to the constructor as a keyword
    options: dict[str, tuple[str, ...]] = {}

    @classmethod
    def unavailable(cls) -> str:
        """Why this dataplane cannot run on this machine ('' if it can)."""
        return ""

    def prepare(self, emu: Emulation) -> None:
        """Work before the Mininet network is built (default: none)."""

    @abstractmethod
    def switch_class(self) -> Any:
        """The Mininet switch class (or partial) for every switch."""

    def mn_controller(self) -> Any:
        """A Mininet controller to add, or None."""
        return None

    @abstractmethod
    def install(self, emu: Emulation) -> None:
        """Install the plan on every switch and return once each has confirmed it."""

    def check_alive(self) -> None:
        """Raise RunError if a component the switches depend on died."""

    @abstractmethod
    def trace(self, emu: Emulation, src: str, dst: str, five_tuple: dict[str, Any],
              proto: str = "tcp") -> list[str]:
        """Switch names a packet of ``five_tuple`` from ``src`` to ``dst`` crosses."""

    def stop(self, emu: Emulation) -> None:
        """Remove what prepare/install created (links and switch interfaces are gone)."""

    def facts(self) -> dict[str, Any]:
        """What this dataplane observed, for config.json."""
        return {"dataplane": self.name}


# -- capabilities: what a dataplane may offer beyond the interface (``capabilities``) --------

@runtime_checkable
class LatencySampling(Protocol):
    """"latency_sampling": one-way fabric latency of sampled TCP data segments."""

    def sample_latency(self, every: int) -> None:
        """Sample about one segment in ``every`` (0 = off)."""

    def latency_samples(self) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """Every measured segment (saddr, daddr, sport, dport, seq, at_ns, latency_ns) and
        the sampling counters."""


@runtime_checkable
class Aqm(Protocol):
    """"aqm": ECN marking or RED at the switch ports (--aqm, emulator/aqm.py), counted."""

    def aqm_counters(self) -> dict[str, tuple[int, int]]:
        """Per switch port (interface name): (packets marked CE, packets dropped early)."""

    def aqm_state(self) -> dict[str, Any]:
        """Per switch port: the AQM's whole state (queue length, average, counters)."""


@runtime_checkable
class Spread(Protocol):
    """"spread": how one flow's packets were split over the output ports of every switch."""

    def spread(self, emu: Emulation, src: str, dst: str, five_tuple: dict[str, Any],
               proto: str = "tcp") -> dict[str, dict[int, int]]:
        """Packets of one flow per output port at every switch that forwarded it."""
