"""One repetition's traffic, said once, and what a backend measured of it (issue #53).

An experiment builds a ``Workload`` per repetition from its parameters: the network (topology
and routing plan), the link rate, the traffic in phases, the measurement window and the
seed.  A phase is the flows measured together, with one transport; a workload's phases run
one after another on the same network (permutation: TCP, then MPTCP).  A backend (``make``:
emulated, sim, model) runs it and returns one ``Measurement`` per phase: per flow, the
goodput over the window, the paths it took, the flow model's max-min rate on those paths,
and the backend's further numbers.  Their fields are named once, so a claim reads
``norm_goodput`` whatever view made it; ``flow_rows`` writes them as flows.csv rows with the
same columns for every backend.

Pure: no emulator import here.  The backends live in ``harness/backends/`` and register
themselves; this module names them, it does not import them.
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from routing.plan import Plan
from store.views import View
from topos.base import Topology

if TYPE_CHECKING:
    from harness.runfolder import RunFolder
    from harness.transfer import TransferResult, Transfers

Transport = Literal["tcp", "mptcp", "udp"]


@dataclass(frozen=True)
class FlowSpec:
    """One connection: who sends to whom, and (MPTCP on a network that picks subflows by
    address, GRIN's) the subflows it should open."""
    src: str
    dst: str
    #: its subflows as (source address, destination address), when the network's addresses
    #: say which paths a connection takes (GRIN: one per horizontal link plus the direct
    #: one, each forwarded by the servers on its way: ``topo.subflow_path``); empty: the
    #: phase's count of subflows, each routed by the plan's hash of its 5-tuple
    subflows: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """Its name where a source may send several connections: 'src->dst'."""
        return f"{self.src}->{self.dst}"


@dataclass(frozen=True)
class Phase:
    """Flows measured together, all with one transport (MPTCP: ``subflows`` each)."""
    transport: Transport
    flows: tuple[FlowSpec, ...]
    subflows: int = 1

    def __post_init__(self) -> None:
        if not self.flows:
            raise ValueError(f"the {self.transport} phase has no flow")
        if self.subflows < 1:
            raise ValueError(f"the {self.transport} phase: subflows must be at least 1")
        if self.transport != "mptcp" and (self.subflows != 1 or self.addressed):
            raise ValueError(f"the {self.transport} phase: {self.transport} has one path")
        if self.addressed and not all(f.subflows for f in self.flows):
            raise ValueError("the mptcp phase: either every flow names its subflows by "
                             "address or none does")
        if len({f.key for f in self.flows}) != len(self.flows):
            raise ValueError(f"the {self.transport} phase: a connection twice")

    @property
    def addressed(self) -> bool:
        """Whether its flows' subflows are chosen by address (``FlowSpec.subflows``)."""
        return any(f.subflows for f in self.flows)

    def wanted(self, f: FlowSpec) -> int:
        """How many subflows flow ``f`` should open."""
        return len(f.subflows) or self.subflows

    def pairs(self) -> dict[str, str]:
        """Source -> destination (a phase has one flow per source host)."""
        got = {f.src: f.dst for f in self.flows}
        if len(got) != len(self.flows):
            raise ValueError(f"the {self.transport} phase: one flow per source host")
        return got


@dataclass(frozen=True)
class Inlet:
    """One way into a watched bottleneck: the bottleneck switch's ports from ``peers`` (its
    neighbours), and the senders whose traffic enters by them."""
    label: str
    peers: tuple[str, ...]
    senders: tuple[str, ...]


@dataclass(frozen=True)
class Bottleneck:
    """A receiver's access port watched as Outcast watches it: the drops of its tail-drop
    queue counted per inlet (port blackout), its arrivals traced (``trace``: off only to
    cost the tracer, bench/bench_arrivals.py), the senders started in a seeded shuffled
    order (none always first) with their offered rates measured at their access ports, and
    a sender that never connects (its SYNs lost at the full port) measured as 0, not failed."""
    receiver: str
    inlets: tuple[Inlet, ...]
    trace: bool = True

    def switch(self, topo: Topology) -> str:
        """The switch whose queue to the receiver is watched."""
        return topo.access_switch(self.receiver)

    def interfaces(self, topo: Topology, inlet: Inlet) -> list[str]:
        """The inlet's interfaces on the bottleneck switch (``<switch>-eth<port>``)."""
        sw = self.switch(topo)
        return [f"{sw}-eth{topo.port(sw, peer)}" for peer in inlet.peers]


@dataclass(frozen=True)
class Workload:
    """Everything one repetition runs, whatever the backend."""
    topo: Topology
    plan: Plan
    bw: float                 # every link's rate, Mb/s
    phases: tuple[Phase, ...]
    duration: float           # s of traffic per phase
    trim: float               # s left out at each end of the window
    seed: int
    rep: int                  # the repetition's index
    #: the repetition's random stream (harness.common.run_rng), as the experiment left it
    #: after drawing the traffic: a backend's own draws (the model's port numbers, ns-3's
    #: start order) follow on it, so a ported experiment draws exactly what it drew before
    rng: random.Random = field(compare=False, repr=False, default_factory=random.Random)
    #: which network of the repetition this is, when a repetition has several (fairness:
    #: fattree, jellyfish): it names the network's facts, flags and run id
    label: str = ""
    #: what else to measure: every directed link's bytes over the window (``links``: the
    #: emulated switch ports' counters); the wire rates (bwm-ng) as what the experiment
    #: plots, so that a gap in them fails the run (``wire``); the TCP-like model's rates
    #: beside max-min (``tcp_like``; False when the experiment computes its own variants)
    links: bool = False
    wire: bool = False
    tcp_like: bool = True
    #: MPTCP's path manager on an addressed network: the kernel's endpoints, or dcrepro's
    #: userspace one (emulator/mptcp_pm.py), for the traffic only
    path_manager: Literal["kernel", "userspace"] = "kernel"
    #: the receiver's port watched per inlet (the many-to-one experiments)
    bottleneck: Bottleneck | None = None
    #: the senders' TCP rto_min toward their receiver ('10ms'; None: the kernel's 200 ms)
    rto_min: str | None = None
    #: s between the time series' samples (iperf3's intervals, the wire rates, the drops)
    interval: float = 0.5
    #: its name in the run folder (facts key, folder, flags) when the experiment has its
    #: own ('n02-run00'); else ``key`` and ``where`` below
    name: str = ""
    #: its one phase's files in the repetition's folder itself, not in <transport>/ (the
    #: many-to-one experiments' layout, which their figures and reference folders read)
    flat: bool = False
    #: this network's switch-port AQM, in --aqm's form ('': the run's --aqm), when networks
    #: of one run differ (plts: ECMP on RED beside sprays on drop-tail).  Wherever the ports
    #: mark, the hosts ask for ECN
    aqm: str = ""
    #: the senders' TCP loss recovery (harness.fabric.RECOVERY: modern, classic, noundo);
    #: None: the kernel's (emulated) or ns-3's default (sim), not recorded
    recovery: str | None = None
    #: sample one TCP data segment in about N in the switches for its one-way fabric
    #: latency (``Measurement.latency``); 0: off
    latency: int = 0
    #: sample every switch port's queue length (``Measurement.queues``, per tier)
    queues: bool = False
    #: how ns-3's switches forward per-flow traffic: ``pinned`` paths or their ``plan``
    #: tables, as the emulated switches do (sim.spec.build; None: plan for sprays, pinned
    #: otherwise).  The emulator and the model have one way each
    sim_forwarding: Literal["pinned", "plan"] | None = None

    def __post_init__(self) -> None:
        if not self.phases:
            raise ValueError("a workload needs at least one phase")
        if not 0 <= 2 * self.trim < self.duration:
            raise ValueError(f"trim {self.trim:g} s leaves no window of {self.duration:g} s")
        if self.flat and len(self.phases) != 1:
            raise ValueError("a flat workload has one phase")
        if self.latency < 0:
            raise ValueError(f"latency sampling must be >= 0, got {self.latency}")
        if self.bottleneck is not None and any(p.transport != "tcp" for p in self.phases):
            raise ValueError("a watched bottleneck carries TCP only")

    @property
    def sprayed(self) -> bool:
        """Whether its switches split a flow per packet (rnd, rr, cnt): no flow has one
        path, so the model splits each evenly over the plan's paths and the emulated
        backend records each flow's split (spread.json) instead of tracing it."""
        return self.plan.sprays

    @property
    def where(self) -> str:
        """The repetition (and network) in flags and logs: 'run 3' or 'run 3 fattree'."""
        return self.name or f"run {self.rep}" + (f" {self.label}" if self.label else "")

    @property
    def key(self) -> str:
        """Its facts' key in the run folder: 'run03' or 'run03-fattree'."""
        return self.name or f"run{self.rep:02d}" + (f"-{self.label}" if self.label else "")

    def phase_folder(self, out: Path, phase: Phase) -> Path:
        """Where a backend writes a phase's files: ``out``/<transport>, or ``out`` (flat)."""
        return out if self.flat else out / phase.transport


@dataclass(frozen=True)
class FlowResult:
    """What a backend measured of one flow."""
    spec: FlowSpec
    #: payload goodput at the receiver over the window (Mb/s): iperf3's (emulated), the
    #: simulated receiver's (sim), the max-min rate (model)
    goodput_mbps: float
    #: the flow model's max-min rate on the paths this flow took (Mb/s): the fidelity
    #: comparison's reference, equal to goodput in the model view
    model_mbps: float
    #: (sub)flows that carried the connection (measured: emulated; asked: the others)
    subflows: int = 1
    #: the backend's further rates (Mb/s), named once per backend (emulated: bwm, acked,
    #: msk_acked, msk_received; model: model_tcp, model_tcp_coupled), written as
    #: <name>_mbps and norm_<name> columns
    extra: Mapping[str, float] = field(default_factory=dict)
    #: further columns of its row that are not rates (emulated: src_addrs, the source
    #: addresses its subflows left from)
    facts: Mapping[str, object] = field(default_factory=dict)
    #: its rate over time, when the workload watches a bottleneck: (source, s since the
    #: phase's first start, Mb/s); sources: iperf3 / bwm-ng (emulated), sink (sim)
    series: tuple[tuple[str, float, float], ...] = ()
    #: what its sender counted, for an experiment's own columns (not written by
    #: flow_rows): retrans (in the window), reord_seen, dsack_dups, reordering (emulated:
    #: iperf3 and the first subflow's tcp_info); offered_mbps (sim: what its NIC sent)
    sender: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class LinkBytes:
    """What every directed link (u, v) carried over the measurement window: payload and
    header bytes, and the packets its sending switch port's queue dropped (or why there is
    no such count: ``error``)."""
    window_s: float
    bytes: Mapping[tuple[str, str], int]
    drops: Mapping[tuple[str, str], int]
    error: str | None = None


@dataclass(frozen=True)
class Measurement:
    """One backend's run of one phase of a workload."""
    backend: str
    phase: Phase
    flows: tuple[FlowResult, ...]
    #: written on every row of this phase (emulated: cpu_mean; sim: sim_wall_s)
    row_facts: Mapping[str, object] = field(default_factory=dict)
    #: the emulated phase's fidelity report (analysis.fidelity.report), judged already
    report: Mapping[str, Any] | None = None
    #: every (sub)flow's path: src, dst, path (switches), five_tuple; emulated: traced
    #: through the switches, with each subflow's own rate and RTT (mbps, rtt_ms; NaN when
    #: it has no samples in the window); model: drawn through the plan by hash
    paths: tuple[Mapping[str, Any], ...] = ()
    #: the links' bytes over the window, when the workload asked (``Workload.links``)
    links: LinkBytes | None = None
    #: the watched bottleneck (``Workload.bottleneck``): per inlet, packets in, delivered,
    #: dropped, with the queue's own drop count beside (``inlets``: drops.csv rows); the
    #: same per sampling interval (``inlet_series``, emulated); the traced arrivals per
    #: port (``arrivals``, emulated)
    inlets: tuple[Mapping[str, object], ...] = ()
    inlet_series: tuple[Mapping[str, object], ...] = ()
    arrivals: tuple[Mapping[str, object], ...] = ()
    #: the payload ceiling of one host link as this view carries it (Mb/s): Ethernet's
    #: (emulated, model), ns-3's point-to-point framing (sim); 0: not given
    ceiling_mbps: float = 0.0
    #: sampled data segments' one-way fabric latency (``Workload.latency``): src, dst,
    #: latency_us, hops (switch-to-switch links), flow_retrans (its flow's retransmissions
    #: around the sample; '' where not measured)
    latency: tuple[Mapping[str, object], ...] = ()
    #: per tier of switch ports (``Workload.queues``): the sampled queue lengths inside the
    #: window and the tier's drops and marks (harness.fabric.queue_rows)
    queues: tuple[Mapping[str, object], ...] = ()


class Backend(Protocol):
    """Runs a workload: the emulator, ns-3 or the flow model."""
    #: what it is and can measure (store/views.py: the folder readers ask the same)
    view: View

    def __init__(self, params: Any, folder: RunFolder) -> None:
        ...

    @staticmethod
    def check(params: Any, w: Workload | Transfers) -> None:
        """One-line ValueError for what this view cannot run of ``w`` (before any run)."""
        ...

    def run(self, w: Workload, out: Path) -> list[Measurement]:
        """Every phase of ``w``, in order; ``out``: the repetition's folder."""
        ...

    def transfer(self, net: Transfers, out: Path) -> Iterator[TransferResult]:
        """Every file transfer of ``net`` (harness/transfer.py), in order, each as it ends
        (nothing where the view does not measure: the experiment computes its bound)."""
        ...


#: backend name -> its class (registered by its module, harness/backends/<name>.py)
BACKENDS: dict[str, type[Backend]] = {}


def register(cls: type[Backend]) -> type[Backend]:
    """Class decorator of a backend module: the backend under its view's name."""
    BACKENDS[cls.view.name] = cls
    return cls


#: (backend, transport) -> why that view cannot run it (checked before a run starts)
CANNOT = {("sim", "mptcp"): "mainline ns-3 has no MPTCP; use --transport tcp"}


def check_transports(backend: str, transports: list[str]) -> None:
    """One-line ValueError when the view ``backend`` cannot run one of ``transports``."""
    for t in transports:
        if (backend, t) in CANNOT:
            raise ValueError(f"--backend {backend}: {CANNOT[(backend, t)]}")


def backend_class(name: str) -> type[Backend]:
    """The backend called ``name`` (its module imported only now: a model run loads no
    emulator)."""
    import importlib
    importlib.import_module(f"harness.backends.{name}")   # registers it
    return BACKENDS[name]


def make(params: Any, folder: RunFolder) -> Backend:
    """The backend ``params.backend`` names, for this run."""
    return backend_class(params.backend)(params, folder)


def check(params: Any, workloads: Iterable[Workload | Transfers]) -> None:
    """One-line ValueError when the view ``params.backend`` cannot run one of ``workloads``
    (an experiment's validate calls it with the workloads its run would build)."""
    cls = backend_class(params.backend)
    for w in workloads:
        cls.check(params, w)


def measures(params: Any) -> bool:
    """Whether the view ``params.backend`` measures (has TCP), or computes the model."""
    return backend_class(params.backend).view.measures


def flow_rows(w: Workload, m: Measurement) -> list[dict[str, object]]:
    """flows.csv rows of one measurement: the same columns whatever the backend."""
    rows: list[dict[str, object]] = []
    for f in m.flows:
        rates = {"goodput": f.goodput_mbps, **f.extra, "model": f.model_mbps}
        row: dict[str, object] = {"run": w.rep, "transport": m.phase.transport,
                                  "src": f.spec.src, "dst": f.spec.dst}
        row.update({f"{k}_mbps": round(v, 4) for k, v in rates.items()})
        row.update({f"norm_{k}": round(v / w.bw, 5) for k, v in rates.items()})
        row["subflows"] = f.subflows
        row.update(f.facts)
        row.update(m.row_facts)
        rows.append(row)
    return rows

