"""TCP Outcast in a k=4 fat tree (002_b94e7e7e77304abe.txt, Fig. 5 and Fig. 6).

Every host but one sends one long TCP flow to the receiver (default ``0_0_2``).  The one
sender under the receiver's edge switch (``0_0_3``) enters that switch on its own port; the
14 others arrive over the uplinks: under ``st`` all on one uplink port (the outcast
pattern), under ``hashed``/``ecmp`` spread by the flow hash over both.

Measured like the linear experiment (experiments/outcast/experiment.py): goodput per sender
over time
(iperf3 server intervals), offered rate at each sender's access port (bwm-ng), averages
grouped by hop distance (2 = same edge switch, 4 = same pod, 6 = other pod), and derived
drops per input port of the receiver's edge switch.  Where a flow enters is known per port
only under ``st`` (a pure function of the plan, found by walking it); under the hash-based
strategies the uplinks are counted together.  ``--backend sim`` runs the same senders on
the same plan in ns-3 (packet by packet, drops per input counted exactly), ``--backend
model`` through the flow model on each sender's hashed path (no queue: no outcast).
"""
from __future__ import annotations

from argparse import ArgumentParser
from dataclasses import dataclass

import networkx as nx

import routing
import topos
from harness.common import add_backend, add_shared, repetitions, run_rng
from harness.params import Quick, check_routing, check_topo, rto_min_ms
from harness.plan import RunPlan, network, repeat
from harness.runfolder import RunFolder
from harness.simrun import check_sim
from harness.workload import Bottleneck, Inlet, make
from routing.plan import Plan
from routing.walk import first_choice, walk
from store import Row
from topos.base import Topology

from .experiment import (
    ManyToOneParams,
    Tables,
    add_tcp_arguments,
    many_to_one_workload,
    validate_tcp,
)

NAME = "outcast-fattree"
HELP = "TCP Outcast in a fat tree: 15 senders to one receiver, st vs hashed vs ecmp"
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`002_…` Fig. 5/6: k=4 fat tree, 15 senders to one receiver, `st` vs `hashed` vs '
         '`ecmp`, by hop distance')
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/fattree-outcast-sweep.sh"
SWEEP_NOTE = '`-r st|hashed|ecmp`'  # other figures of the same script


@dataclass(frozen=True)
class OutcastFattreeParams(ManyToOneParams):
    """The parameters of one outcast-fattree run (their flags: add_arguments)."""

    topo: str = "fattree,k=4"
    routing: str = "st"
    receiver: str = "0_0_2"

    def check(self) -> None:
        check_topo(self.topo)       # first: a run's checks begin with the network
        check_routing(self.routing, self.dataplane)
        super().check()


PARAMS = OutcastFattreeParams
BACKENDS = ("emulated", "model", "sim")
#: quick mode: one repetition of each headline routing (its sweep runs st and hashed,
#: scripts/fattree-outcast-sweep.sh), for the figures; the 5 a verdict needs took 104 s and
#: 116 s and left both undecided (CI of 9767b70, 2026-12-03), more than the 15-min
#: reproduction has room for (docs/notebook/2026-12-03-quick-budgets.md), so the screen
#: says what --runs 5 would take
QUICK: Quick = {"duration": 12.0, "trim": 3.0, "runs": 1, "seed": 3}


def add_arguments(p: ArgumentParser) -> None:
    """Shared flags plus --receiver, --rto-min, --interval and --backend."""
    add_shared(p, PARAMS, QUICK)
    p.add_argument("--receiver", type=str, default=None,
                   help=f"receiving host (default: {PARAMS.receiver})")
    add_tcp_arguments(p)
    add_backend(p, BACKENDS)


def validate(params: OutcastFattreeParams) -> None:
    """One-line ValueError for bad values, before any network is built."""
    spec = topos.parse(params.topo)
    if spec.name != "fattree":
        raise ValueError(f"--topo must be a fat tree (fattree,k=K), got {params.topo!r}")
    if routing.parse(params.routing).name not in ("st", "ecmp", "hashed"):
        raise ValueError(f"--routing must be st, hashed or ecmp, got {params.routing!r}")
    topo = topos.build(spec)
    if params.receiver not in topo.hosts():
        raise ValueError(f"--receiver {params.receiver!r} is not a host of {topo.spec} "
                         f"(hosts look like {topo.hosts()[0]})")
    if len(topo.hosts()) - 1 > 64:
        raise ValueError(f"{topo.spec} has {len(topo.hosts()) - 1} senders; at most 64")
    validate_tcp(params)
    check_sim(params, rto_min_ms(params.rto_min))


def layout(topo: Topology, plan: Plan, receiver: str
           ) -> tuple[Bottleneck, dict[str, str], dict[str, Row]]:
    """The receiver's port on its edge switch with its inlets (the ports where senders
    enter it), each sender's entry, and its hop count and locality."""
    edge = topo.access_switch(receiver)
    g = topo.graph()
    pinned = plan.routing == "st"
    entry, extra = {}, {}
    by_port: dict[int, list[str]] = {}
    for s in (h for h in topo.hosts() if h != receiver):
        hops = nx.shortest_path_length(g, s, receiver)
        if topo.access_switch(s) == edge:
            port = topo.port(edge, s)
            entry[s] = f"{edge} port {port} (own)"
        elif pinned:
            path = walk(topo, plan, s, receiver, first_choice)
            port = topo.port(edge, path[-2])
            entry[s] = f"{edge} port {port} (uplink)"
        else:
            port = 0  # any uplink: chosen per flow by the hash
            entry[s] = f"{edge} uplinks (hash)"
        by_port.setdefault(port, []).append(s)
        extra[s] = {"hops": hops, "local": topo.access_switch(s) == edge}
    peer = {p: other for p, (other, _) in topo.ports(edge).items()}
    uplinks = [p for p, other in peer.items() if topo.is_switch(other)]
    inlets = []
    for port, names in sorted(by_port.items(), key=lambda kv: kv[0] or 1 << 30):
        if port == 0:
            inlets.append(Inlet(f"{edge} uplinks {'+'.join(map(str, uplinks))}",
                                tuple(peer[p] for p in uplinks), tuple(names)))
        else:
            kind = "uplink" if port in uplinks else "own port"
            flows = f"{len(names)} flow" + "s" * (len(names) != 1)
            inlets.append(Inlet(f"{edge} port {port} ({kind}, {flows})",
                                (peer[port],), tuple(names)))
    return Bottleneck(receiver, tuple(inlets)), entry, extra


def run(params: OutcastFattreeParams, folder: RunFolder) -> None:
    """--runs repetitions of every host but the receiver sending to it."""
    from .figures import write_fattree_summary

    t = Tables()
    backend = make(params, folder)
    for r in repetitions(params, folder):
        rng = run_rng(params.seed, r)
        topo = topos.build(params.topo)
        plan = routing.make_plan(topo, params.routing)
        bottleneck, entry, extra = layout(topo, plan, params.receiver)
        tag = f"run{r:02d}"
        folder.log.info("%s: %s, %s, receiver %s, cc=%s, rto_min=%s (%s)", tag, topo.spec,
                        plan.routing, params.receiver, params.cc, params.rto_min,
                        params.backend)
        w = many_to_one_workload(topo, plan, params, bottleneck, list(entry), r, rng, tag)
        (m,) = backend.run(w, folder.path / tag)
        t.add(m, {"routing": plan.routing, "run": r}, entry, extra,
              params.bw / len(entry))
        t.write(write_fattree_summary, folder.path, params)


def plan(params: OutcastFattreeParams) -> RunPlan:
    """What a run does (harness/plan.py, for ``--dry-run``): --runs networks, one phase
    each, every other host sending to the receiver."""
    topo = topos.build(params.topo)
    return repeat(params.runs, [network(params.topo, 1, params.duration,
                                        len(topo.hosts()) - 1, 1, params.bw, topo)],
                  "one network, every host to the receiver")
