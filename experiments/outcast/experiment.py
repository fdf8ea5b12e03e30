"""TCP Outcast on the linear topology (002_b94e7e7e77304abe.txt, Fig. 3 and Fig. 4).

One receiver ``recv`` on s1; the lone sender ``lone`` on s1's port 2; N senders ``a1..aN``
behind s2, whose uplink enters s1 on port 3.  Every sender runs one long TCP flow to its own
iperf3 server on ``recv``; all meet in the tail-drop queue of s1's port 1 (s1 -> recv).

Measured per sender: goodput over time (iperf3 server intervals, 0.5 s) and the offered rate
entering the network (bwm-ng, rx of the switch port facing the sender, 0.5 s); the average
over the trimmed window; the lone flow's share of its fair share 1/(N+1) of the bottleneck.

Drops per *input* port of s1 (port blackout): derived from the ports' rx counters and the
segments each sender delivered, checked against the queue's own drop counter
(harness/bottleneck.py says how); the run is a ``Workload`` with a watched ``Bottleneck``,
which every view (emulated, sim, model) runs.
"""
from __future__ import annotations

import random
import re
from argparse import ArgumentParser
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import routing
import topos
from harness.common import add_backend, add_shared, repetitions, run_rng
from harness.params import Quick, SimFlowParams, rto_min_ms
from harness.plan import RunPlan, network
from harness.runfolder import RunFolder
from harness.simrun import check_sim
from harness.workload import (
    Bottleneck,
    FlowSpec,
    Inlet,
    Measurement,
    Phase,
    Workload,
    make,
)
from routing.plan import Plan
from store import Row
from topos.base import Topology
from topos.outcast import OutcastLinear

NAME = "outcast"
HELP = "TCP Outcast: one flow on its own input port vs N flows on another, tail-drop queue"
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`002_…` Fig. 4: lone flow vs N = 2, 6, 12 flows into one tail-drop port, time '
         'series, drops per input port')
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/outcast-sweep.sh"


@dataclass(frozen=True)
class ManyToOneParams(SimFlowParams):
    """What every many-to-one TCP run has (this one and outcast-fattree; ns-3 runs both).
    Its defaults override the flows' own: a dataclass takes a field's default from the
    last class in the reversed MRO that declares it, so these must come after
    SimFlowParams there, which repeats every FlowParams field (a class beside it, not
    above it, lost them: queue 100 and cubic, 2026-12-03)."""

    queue: int = 20
    runs: int = 3
    cc: str = "reno"
    rto_min: str | None = None
    interval: float = 0.5


@dataclass(frozen=True)
class OutcastParams(ManyToOneParams):
    """The parameters of one outcast run (their flags: add_arguments)."""

    flows: str = "2,6,12"


PARAMS = OutcastParams
BACKENDS = ("emulated", "model", "sim")
#: quick mode runs what the headline claims judge (issue #54): N = 6 and 12, each on the 5
#: repetitions a verdict needs (N = 2, no headline's, runs without --quick)
QUICK: Quick = {"duration": 12.0, "trim": 3.0, "runs": 5, "flows": "6,12"}
ROUTING = "st"  # a line has one path; st is the plain destination-based plan


def add_arguments(p: ArgumentParser) -> None:
    """Shared flags plus --flows, --rto-min and --interval."""
    add_shared(p, PARAMS, QUICK)
    p.add_argument("--flows", type=str, default=None,
                   help="competing flows N behind s2, a comma list runs each "
                        f"(default: {PARAMS.flows})")
    add_tcp_arguments(p)
    add_backend(p, BACKENDS)


def add_tcp_arguments(p: ArgumentParser) -> None:
    """--rto-min and --interval (shared by both outcast experiments)."""
    p.add_argument("--rto-min", dest="rto_min", type=str, default=None,
                   help="per-route TCP rto_min set in every sender host, e.g. 2ms or 10ms "
                        "(default: not set, kernel default 200ms)")
    p.add_argument("--interval", type=float, default=None,
                   help="sampling interval of the time series, seconds, 0.1..1 (default: 0.5)")


def parse_flows(text: str) -> list[int]:
    """'2,6,12' -> [2, 6, 12]; raises ValueError with a one-line message."""
    items = [s.strip() for s in str(text).split(",") if s.strip()]
    try:
        values = [int(s) for s in items]
    except ValueError:
        raise ValueError(f"--flows must be a comma list of integers, got {text!r}") from None
    if not values or any(not 1 <= v <= 64 for v in values):
        raise ValueError(f"--flows values must be 1..64, got {text!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"--flows has duplicates: {text!r}")
    return values


def validate_tcp(params: ManyToOneParams) -> None:
    """Checks shared by both outcast experiments."""
    rto_min_ms(params.rto_min)
    if not 0.1 <= float(params.interval) <= 1.0:
        raise ValueError(f"--interval must be 0.1..1 s, got {params.interval}")
    if params.duration < 4 * params.interval:
        raise ValueError(f"--duration {params.duration} is too short for a time series")
    if not re.fullmatch(r"[a-z0-9_]+", str(params.cc)):
        raise ValueError(f"--cc must be a congestion control name, got {params.cc!r}")


def validate(params: OutcastParams) -> None:
    """One-line ValueError for bad values, before anything is built."""
    parse_flows(params.flows)
    validate_tcp(params)
    check_sim(params, rto_min_ms(params.rto_min))


# -- many senders, one receiver: the workload, and its rows ---------------------------------

#: flows.csv's emulator columns, blank in a simulated or modelled point (same column order)
EMULATOR_COLUMNS = ("cpu_mean", "cpu_max", "cpu_saturated_share", "emulator_loss_share")
#: a sender's TCP events and its traced arrivals (harness.bottleneck.flow_events): flows.csv
#: columns of the emulated view, after the sender's own (role, hops)
EVENT_COLUMNS = ("rtos", "syn_rtos", "fast_retrans", "loss_probes", "queue_arrivals",
                 "queue_drops")


def many_to_one_workload(topo: Topology, plan: Plan, params: ManyToOneParams,
                         bottleneck: Bottleneck, senders: list[str], rep: int,
                         rng: random.Random, name: str) -> Workload:
    """``senders`` (in the order of the tables' rows; every one in an inlet of
    ``bottleneck``) to its receiver, one TCP phase, the repetition's files in its own
    folder (``name``)."""
    phase = Phase("tcp", tuple(FlowSpec(x, bottleneck.receiver) for x in senders))
    return Workload(topo, plan, params.bw, (phase,), params.duration, params.trim,
                    params.seed, rep, rng, tcp_like=False, bottleneck=bottleneck,
                    rto_min=params.rto_min, interval=params.interval, name=name, flat=True)


@dataclass
class Tables:
    """The tables a many-to-one run (outcast, outcast-fattree) grows point by point and
    rewrites after each point, so that an interrupted run keeps what it measured."""
    rows: list[Row] = field(default_factory=list)
    series: list[Row] = field(default_factory=list)
    drops: list[Row] = field(default_factory=list)
    drop_series: list[Row] = field(default_factory=list)
    arrivals: list[Row] = field(default_factory=list)

    def add(self, m: Measurement, base: Row, entry: dict[str, str],
            extra: dict[str, Row], fair_mbps: float) -> None:
        """One point, whatever view measured it: per sender its row (``entry``: where it
        enters the bottleneck; ``extra``: its own columns) and series; the drops per inlet
        and the traced arrivals where the view has them."""
        for r in m.flows:
            src, x = r.spec.src, r.facts
            measured = "measured" in r.extra         # a packet-level view, not the model
            mbps = r.extra.get("measured", r.goodput_mbps)
            row: Row = {**base, "sender": src, **extra.get(src, {}),
                                   **{k: x[k] for k in EVENT_COLUMNS if k in x},
                                   "entry": entry[src], "mbps": round(mbps, 4),
                                   "iperf_mbps": round(r.goodput_mbps, 4) if measured else "",
                                   "offered_mbps": round(r.extra["offered"], 4) if measured
                                   else ""}
            if "acked_mbps" in x:
                # the same flow in absolute time (see harness.bottleneck.measured_mbps):
                # differs from iperf_mbps when its transfer began late (first_ack_s), e.g.
                # behind a blacked-out port at start-up
                row.update(acked_mbps=x["acked_mbps"], first_ack_s=x["first_ack_s"])
            row.update(fair_mbps=round(fair_mbps, 4), share_of_fair=round(mbps / fair_mbps, 4),
                       retransmits=x.get("retransmits", ""), connected=x.get("connected", True))
            row.update({k: m.row_facts.get(k, "") for k in EMULATOR_COLUMNS})
            row["backend"] = m.backend
            if "drops_at_bottleneck" in x:
                row["drops_at_bottleneck"] = x["drops_at_bottleneck"]
            if "sim_wall_s" in m.row_facts:
                row["sim_wall_s"] = m.row_facts["sim_wall_s"]
            self.rows.append(row)
            self.series += [{**base, "sender": src, "source": source, "t": t, "mbps": v}
                            for source, t, v in r.series]
        self.drops += [{**base, **d} for d in m.inlets]
        self.drop_series += [{**base, **d} for d in m.inlet_series]
        self.arrivals += [{**base, **p} for p in m.arrivals]

    def write(self, writer: Callable[..., None], run_dir: Path,
              params: ManyToOneParams) -> None:
        """Write them with one of figures' summary writers."""
        writer(run_dir, self.rows, self.series, self.drops, self.drop_series, params,
               self.arrivals)


def bottleneck_of(topo: OutcastLinear, arrivals: bool = True) -> Bottleneck:
    """recv's port on s1, entered by the lone sender's port and by s2's uplink
    (``arrivals`` False: no arrival tracer, to cost it)."""
    return Bottleneck(topo.receiver, (
        Inlet("s1 port 2 (lone)", (topo.lone,), (topo.lone,)),
        Inlet(f"s1 port 3 (from s2, {topo.n} flows)", ("s2",), tuple(topo.senders_behind_s2))),
        trace=arrivals)


def run(params: OutcastParams, folder: RunFolder) -> None:
    """For each N in --flows, --runs repetitions of lone vs N senders."""
    from .figures import write_outcast_summary

    t = Tables()
    backend = make(params, folder)
    for n in parse_flows(params.flows):
        for r in repetitions(params, folder, f"n{n:02d}-"):
            rng = run_rng(params.seed, 1000 * n + r)
            topo = topos.build(f"outcast,n={n}")
            assert isinstance(topo, OutcastLinear)
            tag = f"n{n:02d}-run{r:02d}"
            w = many_to_one_workload(topo, routing.make_plan(topo, ROUTING), params,
                                     bottleneck_of(topo), topo.senders(), r, rng, tag)
            folder.log.info("%s: %s, cc=%s, rto_min=%s (%s)", tag, topo.spec, params.cc,
                            params.rto_min, params.backend)
            (m,) = backend.run(w, folder.path / tag)
            entry = {x: f"s1 port {topo.entry_port(x)}" for x in topo.senders()}
            extra = {x: {"role": topo.node(x).attrs["role"]} for x in topo.senders()}
            t.add(m, {"flows": n, "run": r}, entry, extra, params.bw / (n + 1))
            t.write(write_outcast_summary, folder.path, params)


def plan(params: OutcastParams) -> RunPlan:
    """What a run does (harness/plan.py, for ``--dry-run``): --runs networks per N of
    --flows, one phase each, N + 1 senders to one receiver."""
    nets = [network(f"outcast,n={n}", 1, params.duration, n + 1, 1, params.bw)
            for n in parse_flows(params.flows) for _ in range(params.runs)]
    return RunPlan(params.runs, tuple(nets), f"one network per N = {params.flows}")
