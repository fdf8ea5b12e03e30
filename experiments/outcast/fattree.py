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

from dataclasses import dataclass
from typing import Any

import networkx as nx

import routing
import topos
from harness.common import add_backend, add_shared, run_rng
from harness.params import check_routing, check_topo
from harness.runfolder import RunFolder
from harness.session import judge_measurement
from harness.simrun import check_sim
from model.network import route_by_hash, synthetic_subflows
from routing.walk import first_choice, walk

from .experiment import (
    Group,
    Sender,
    SimManyToOneParams,
    Tables,
    add_tcp_arguments,
    emulate_once,
    flow_events,
    model_many_to_one,
    rto_min_ms,
    simulate_many_to_one,
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
class OutcastFattreeParams(SimManyToOneParams):
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
QUICK: dict[str, Any] = {"duration": 12.0, "trim": 3.0, "runs": 1}


def add_arguments(p: Any) -> None:
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


def sim_inputs(topo: Any, groups: list[Group], receiver: str) -> list[tuple[str, list[str],
                                                                           list[str]]]:
    """The layout's port groups as the simulation counts them: each group's peers of the
    receiver's edge switch (its interfaces ``<edge>-eth<port>``) and its senders."""
    edge = topo.access_switch(receiver)
    peer = {f"{edge}-eth{port}": other for port, (other, _) in topo.ports(edge).items()}
    return [(g.label, [peer[i] for i in g.intfs], g.senders) for g in groups]


def layout(topo: Any, plan: Any, receiver: str) -> tuple[list[Sender], list[Group],
                                                        dict[str, dict[str, Any]]]:
    """Senders with their entry port on the receiver's edge switch, port groups, hop counts."""
    edge = topo.access_switch(receiver)
    g = topo.graph()
    pinned = plan.routing == "st"
    senders, extra = [], {}
    by_port: dict[int, list[str]] = {}
    for s in (h for h in topo.hosts() if h != receiver):
        hops = nx.shortest_path_length(g, s, receiver)
        if topo.access_switch(s) == edge:
            port = topo.port(edge, s)
            entry = f"{edge} port {port} (own)"
        elif pinned:
            path = walk(topo, plan, s, receiver, first_choice)
            port = topo.port(edge, path[-2])
            entry = f"{edge} port {port} (uplink)"
        else:
            port = 0  # any uplink: chosen per flow by the hash
            entry = f"{edge} uplinks (hash)"
        by_port.setdefault(port, []).append(s)
        senders.append(Sender(s, entry))
        extra[s] = {"hops": hops, "local": topo.access_switch(s) == edge}
    uplinks = [p for p, (peer, _) in topo.ports(edge).items() if topo.is_switch(peer)]
    groups = []
    for port, names in sorted(by_port.items(), key=lambda kv: kv[0] or 1 << 30):
        if port == 0:
            groups.append(Group(f"{edge} uplinks {'+'.join(map(str, uplinks))}",
                                [f"{edge}-eth{p}" for p in uplinks], names))
        else:
            kind = "uplink" if port in uplinks else "own port"
            groups.append(Group(f"{edge} port {port} ({kind}, {len(names)} flows)",
                                [f"{edge}-eth{port}"], names))
    return senders, groups, extra


def run(params: OutcastFattreeParams, folder: RunFolder) -> None:
    """--runs repetitions of every host but the receiver sending to it."""
    from .figures import write_fattree_summary

    t = Tables()
    for r in range(params.runs):
        rng = run_rng(params.seed, r)
        topo = topos.build(params.topo)
        plan = routing.make_plan(topo, params.routing)
        senders, groups, extra = layout(topo, plan, params.receiver)
        tag = f"run{r:02d}"
        run_dir = folder.path / tag
        folder.log.info("%s: %s, %s, receiver %s, cc=%s, rto_min=%s%s", tag, topo.spec,
                        plan.routing, params.receiver, params.cc, params.rto_min,
                        {"sim": ", simulated", "model": ", flow model"}.get(params.backend, ""))
        base = {"routing": plan.routing, "run": r}
        fair = params.bw / len(senders)
        if params.backend == "model":
            pairs = {x.name: params.receiver for x in senders}
            routed = route_by_hash(topo, plan, pairs, synthetic_subflows(topo, pairs, 1, rng))
            t.rows += model_many_to_one(topo, params, base, senders, params.receiver, routed,
                                        extra, fair)
            folder.record(tag, {"topo": topo.spec, "backend": "model"})
            t.write(write_fattree_summary, folder.path, params)
            continue
        if params.backend == "sim":
            t.add_simulated(folder, tag, topo.spec, simulate_many_to_one(
                topo, plan, params, run_dir, r, rng, base, senders, params.receiver,
                sim_inputs(topo, groups, params.receiver), extra, fair))
            t.write(write_fattree_summary, folder.path, params)
            continue
        facts, meas = emulate_once(topo, plan, params, run_dir, f"{folder.id}-{tag}",
                                   senders, params.receiver, groups, rng)
        folder.record(tag, facts)
        judge_measurement(folder, meas, tag)
        extra = {x: {**extra.get(x, {}), **flow_events(meas, x)} for x in extra}
        t.add_emulated(meas, base, senders, fair, extra)
        t.write(write_fattree_summary, folder.path, params)


def plan(params: OutcastFattreeParams) -> Any:
    """What a run does (harness/plan.py, for ``--dry-run``): --runs networks, one phase
    each, every other host sending to the receiver."""
    from harness.plan import network, repeat
    topo = topos.build(params.topo)
    return repeat(params.runs, [network(params.topo, 1, params.duration,
                                        len(topo.hosts()) - 1, 1, params.bw, topo)],
                  "one network, every host to the receiver")
