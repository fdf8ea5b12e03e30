"""What a run will do, known before anything is built: its networks, the traffic phases on
each and their seconds (``dcrepro run ... --dry-run`` prints it, dcrepro/estimate.py turns
it into a wall time).

Each experiment module may define ``plan(params) -> RunPlan`` (the counts are its own: a
repetition of fairness brings up two networks, one of permutation runs two phases on one);
one without it gets ``default_plan``: ``--runs`` networks of ``--topo``, one phase of
``--duration`` each.  Pure: topologies are built as objects only (their sizes), nothing is
brought up, nothing written.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import topos


@dataclass(frozen=True)
class Network:
    """One network a run brings up (emulated) or computes on (model, sim), and its work."""

    topo: str
    hosts: int
    switches: int
    #: traffic phases run on it one after another (permutation: TCP, then MPTCP)
    phases: int
    #: seconds of traffic over all its phases: real time in the emulator, simulated time in
    #: ns-3, nothing for the flow model
    traffic_s: float
    #: connections per phase, and how many distinct hosts receive them (what bounds the
    #: packets a simulation carries: estimate.SIM_*)
    flows: int = 0
    receivers: int = 0
    #: the links' rate, Mb/s
    bw: float = 0.0

    @property
    def nodes(self) -> int:
        """Hosts and switches: what a bring-up creates (namespaces, links, rules)."""
        return self.hosts + self.switches


@dataclass(frozen=True)
class RunPlan:
    """Every network of a run, in the order the run brings them up."""

    #: the run's repetitions (--runs; 1 where an experiment has none)
    repetitions: int
    networks: tuple[Network, ...]
    #: what one repetition is, for the printout ('2 networks (fattree, jellyfish)')
    note: str = ""

    @property
    def phases(self) -> int:
        """Traffic phases over all networks."""
        return sum(n.phases for n in self.networks)

    @property
    def traffic_s(self) -> float:
        """Seconds of traffic over all networks."""
        return sum(n.traffic_s for n in self.networks)

    def sizes(self) -> list[str]:
        """One line per distinct topology: 'fattree,k=4: 16 hosts, 20 switches (x2)'."""
        seen = Counter((n.topo, n.hosts, n.switches) for n in self.networks)
        return [f"{topo}: {h} hosts, {s} switches" + (f" (x{k})" if k > 1 else "")
                for (topo, h, s), k in seen.items()]


def network(spec: str, phases: int, traffic_s: float, flows: int = 0, receivers: int = 0,
            bw: float = 0.0, topo: Any = None) -> Network:
    """A Network of topology ``spec`` (built here for its sizes unless ``topo`` is given)."""
    t = topo if topo is not None else topos.build(spec)
    return Network(str(spec), len(t.hosts()), len(t.switches()), phases, traffic_s,
                   flows, receivers, bw)


def repeat(runs: int, nets: Iterable[Network], note: str = "") -> RunPlan:
    """``runs`` repetitions of the same networks."""
    one = tuple(nets)
    return RunPlan(runs, one * runs, note)


def default_plan(params: Any) -> RunPlan:
    """An experiment without its own ``plan``: --runs networks of --topo, one phase of
    --duration each (what a long-flow experiment does); no traffic time where it has no
    --duration."""
    runs = int(getattr(params, "runs", 1))
    spec = getattr(params, "topo", None)
    duration = float(getattr(params, "duration", 0.0))
    if spec is None:
        return RunPlan(runs, (), "no --topo: its networks are its own")
    return repeat(runs, [network(spec, 1, duration, bw=float(getattr(params, "bw", 0.0)))])
