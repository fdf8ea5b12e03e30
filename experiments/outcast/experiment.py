"""TCP Outcast on the linear topology (002_b94e7e7e77304abe.txt, Fig. 3 and Fig. 4).

One receiver ``recv`` on s1; the lone sender ``lone`` on s1's port 2; N senders ``a1..aN``
behind s2, whose uplink enters s1 on port 3.  Every sender runs one long TCP flow to its own
iperf3 server on ``recv``; all meet in the tail-drop queue of s1's port 1 (s1 -> recv).

Measured per sender: goodput over time (iperf3 server intervals, 0.5 s) and the offered rate
entering the network (bwm-ng, rx of the switch port facing the sender, 0.5 s); the average
over the trimmed window; the lone flow's share of its fair share 1/(N+1) of the bottleneck.

Drops per *input* port of s1 (port blackout).  Linux drops at the output queue without
knowing the input port, so the count is derived, sampled every 0.5 s:

    drops(port) = packets entering s1 on ``port``  (sysfs rx_packets of s1-ethP)
                - segments of that port's senders that reached the receiver's sockets
                  (tcp_info ``segs_in`` per connection, read with ``ss -tin`` in recv,
                  summed per source address)

``segs_in`` counts every segment a socket received, duplicates and pure ACKs included, so
it is the packet count delivered per source; iperf3 bytes / MSS would miss retransmitted
duplicates.  The sum over ports is checked against the drop counter of s1-eth1's pfifo
(``tc -s``); the difference (packets queued at the two sample instants, drops elsewhere in
the receiver) is recorded as ``check_residual``.  Observed: the pfifo counts a few per
cent MORE drops than packets actually lost (negative residual, steady ~10 packets/s at
10 Mb/s), presumably because OVS's userspace datapath sends on the port with an AF_PACKET
socket and retries a send the qdisc refused (ENOBUFS), so one packet can be counted as
dropped and then still be delivered.  The derived per-port numbers count packets really
lost (entered s1, never reached the receiver).
"""
from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import routing
import topos
from emulator.emulation import Emulation
from emulator.proc import RunError, check, in_ns
from harness.bwmng import check_coverage, host_port, series_by_interface, series_mean
from harness.common import add_backend, add_shared, run_rng
from harness.params import FlowParams, SimFlowParams
from harness.runfolder import RunFolder
from harness.sampling import Sampler
from harness.session import judge_measurement, session
from harness.simrun import check_sim, sim_config, simulate_flows
from harness.traffic import Flow, loss_fields, run_iperf
from model.network import rates_on_paths
from routing.walk import first_choice, walk
from store import write_csv
from topos.outcast import OutcastLinear
from topos.traffic import many_to_one

NAME = "outcast"
HELP = "TCP Outcast: one flow on its own input port vs N flows on another, tail-drop queue"
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`002_…` Fig. 4: lone flow vs N = 2, 6, 12 flows into one tail-drop port, time '
         'series, drops per input port')
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/outcast-sweep.sh"


@dataclass(frozen=True)
class ManyToOneParams(FlowParams):
    """What every many-to-one TCP run has (this one and outcast-fattree)."""

    queue: int = 20
    runs: int = 3
    cc: str = "reno"
    rto_min: str | None = None
    interval: float = 0.5


@dataclass(frozen=True)
class SimManyToOneParams(SimFlowParams, ManyToOneParams):
    """... that ns-3 runs too (simulate_many_to_one); its fields come after the flows'."""


@dataclass(frozen=True)
class OutcastParams(SimManyToOneParams):
    """The parameters of one outcast run (their flags: add_arguments)."""

    flows: str = "2,6,12"


PARAMS = OutcastParams
BACKENDS = ("emulated", "model", "sim")
QUICK: dict[str, Any] = {"duration": 12.0, "trim": 3.0, "runs": 1}
ROUTING = "st"  # a line has one path; st is the plain destination-based plan


def add_arguments(p: Any) -> None:
    """Shared flags plus --flows, --rto-min and --interval."""
    add_shared(p, PARAMS, QUICK)
    p.add_argument("--flows", type=str, default=None,
                   help="competing flows N behind s2, a comma list runs each "
                        f"(default: {PARAMS.flows})")
    add_tcp_arguments(p)
    add_backend(p, BACKENDS)


def add_tcp_arguments(p: Any) -> None:
    """--rto-min and --interval (shared by both outcast experiments)."""
    p.add_argument("--rto-min", dest="rto_min", type=str, default=None,
                   help="per-route TCP rto_min set in every sender host, e.g. 2ms or 10ms "
                        "(default: not set, kernel default 200ms)")
    p.add_argument("--interval", type=float, default=None,
                   help="sampling interval of the time series, seconds, 0.1..1 (default: 0.5)")


def parse_flows(text: Any) -> list[int]:
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


_RTO = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|us)$")


def rto_min_ms(text: Any) -> float | None:
    """'2ms' -> 2.0, None/'' -> None (kernel default); ValueError on anything else."""
    if text in (None, "", "default", "none"):
        return None
    m = _RTO.match(str(text).strip())
    if not m:
        raise ValueError(f"--rto-min must look like 2ms, 0.2s or 500us, got {text!r}")
    ms = float(m.group(1)) * {"ms": 1.0, "s": 1000.0, "us": 0.001}[m.group(2)]
    if not 1 <= ms <= 1000:
        raise ValueError(f"--rto-min must be between 1ms and 1s, got {text!r}")
    return ms


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


# -- many senders, one receiver -------------------------------------------------------------

def set_rto_min(emu: Emulation, senders: list[str], receiver: str,
                rto: str | None) -> dict[str, str]:
    """Pin rto_min on each sender's route to the receiver; return `ip route get` read back."""
    dst = emu.topo.ip(receiver)
    got = {}
    for s in senders:
        h = emu.host(s)
        if rto_min_ms(rto) is not None:
            intf = h.intfList()[0].name
            emu.host_cmd(h, ["ip", "route", "replace", f"{dst}/32", "dev", intf,
                             "src", emu.topo.ip(s), "rto_min", str(rto)])
        # `ip route get` omits metrics; the table entry shows rto_min when it is set
        table = emu.host_cmd(h, ["ip", "route", "show", "match", dst]).strip()
        got[s] = " | ".join(line.strip() for line in table.splitlines())
        if rto_min_ms(rto) is not None and "rto_min" not in got[s]:
            raise RunError(f"{s}: rto_min {rto} not in its route: {got[s]}")
    return got


_SS_PEER = re.compile(r"^\S+\s+\d+\s+\d+\s+\S+:\d+\s+(\S+):(\d+)")
_SEGS_IN = re.compile(r"\bsegs_in:(\d+)")


def parse_segs_in(text: str) -> dict[str, int]:
    """`ss -Htin` output -> source address -> sum of segs_in over its sockets."""
    out: dict[str, int] = {}
    peer = None
    for line in text.splitlines():
        m = _SS_PEER.match(line)
        if m:
            peer = m.group(1).split("%")[0].strip("[]")
            if peer.startswith("::ffff:"):
                peer = peer[7:]
        seg = _SEGS_IN.search(line)
        if seg and peer is not None:
            out[peer] = out.get(peer, 0) + int(seg.group(1))
            peer = None
    return out


@dataclass
class Group:
    """Input port(s) of the bottleneck switch and the senders whose traffic enters there."""

    label: str
    intfs: list[str]
    senders: list[str]


class DropReader:
    """One snapshot for the outcast sampler: rx packets of the watched input ports,
    per-source delivered segments at the receiver (ss segs_in), and the bottleneck pfifo's
    drops/backlog."""

    def __init__(self, emu: Emulation, receiver: str, bottleneck: str,
                 groups: list[Group]) -> None:
        self.groups = groups
        self.recv_pid = emu.host(receiver).pid
        self.bottleneck = bottleneck
        self.ip_of = {s: emu.topo.ip(s) for g in groups for s in g.senders}

    def _rx(self) -> dict[str, int]:
        return {i: int(Path(f"/sys/class/net/{i}/statistics/rx_packets").read_text())
                for g in self.groups for i in g.intfs}

    def _qdisc(self) -> tuple[int, int]:
        q = json.loads(check(["tc", "-s", "-j", "qdisc", "show", "dev", self.bottleneck],
                             timeout=5) or "[]")
        pf: dict[str, Any] = next((x for x in q if x.get("kind") == "pfifo"), {})
        return pf.get("drops", 0), pf.get("qlen", 0)

    def __call__(self) -> dict[str, Any]:
        """One snapshot: the port and qdisc counters are read just before and just after
        the (slow: a process in the receiver's namespace) socket read and averaged, so all
        three refer to the same instant; otherwise packets delivered while ss runs would
        show up as negative drops."""
        drops0, _ = self._qdisc()
        rx0 = self._rx()
        t0 = time.time()
        ss = check(in_ns(self.recv_pid, ["ss", "-Htin"]), timeout=5)
        t1 = time.time()
        rx1 = self._rx()
        drops1, backlog = self._qdisc()
        delivered = parse_segs_in(ss)
        return {"t": (t0 + t1) / 2, "ss_s": round(t1 - t0, 4),
                "rx": {i: (rx0[i] + rx1[i]) / 2 for i in rx0},
                "delivered": {s: delivered.get(ip, 0) for s, ip in self.ip_of.items()},
                "q_drops": (drops0 + drops1) / 2, "q_backlog_pkts": backlog}


def drop_rows(samples: list[dict[str, Any]], groups: list[Group], t0: float,
              t_end: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(time series rows, totals rows) of derived drops per group.

    Totals use the first sample (before any client started) and the last one taken while
    every connection was still open (``t_end``), since closed sockets lose their segs_in.
    """
    usable = [s for s in samples if s["t"] <= t_end]
    if len(usable) < 2:
        raise RunError("drop sampler: fewer than two samples inside the traffic window")
    series = []

    def counts(s: dict[str, Any], g: Group) -> tuple[int, int]:
        return (sum(s["rx"][i] for i in g.intfs), sum(s["delivered"][x] for x in g.senders))

    for a, b in zip(usable, usable[1:]):
        for g in groups:
            (rx0, d0), (rx1, d1) = counts(a, g), counts(b, g)
            series.append({"t": round(b["t"] - t0, 3), "port": g.label,
                           "rx_packets": round(rx1 - rx0, 1), "delivered": d1 - d0,
                           "drops": round((rx1 - rx0) - (d1 - d0), 1)})
        series.append({"t": round(b["t"] - t0, 3), "port": "bottleneck qdisc",
                       "drops": b["q_drops"] - a["q_drops"], "backlog": b["q_backlog_pkts"]})
    first, last = usable[0], usable[-1]
    totals = []
    derived = 0
    for g in groups:
        (rx0, d0), (rx1, d1) = counts(first, g), counts(last, g)
        drops = round((rx1 - rx0) - (d1 - d0), 1)
        derived += drops
        totals.append({"port": g.label, "intfs": "+".join(g.intfs), "senders": len(g.senders),
                       "rx_packets": round(rx1 - rx0, 1), "delivered": d1 - d0, "drops": drops,
                       "drop_rate": round(drops / (rx1 - rx0), 5) if rx1 > rx0 else ""})
    qd = last["q_drops"] - first["q_drops"]
    for row in totals:
        row["bottleneck_qdisc_drops"] = qd
        row["check_residual"] = round(derived - qd, 1)
        row["ss_read_s_max"] = max(x.get("ss_s", 0) for x in usable)
        row["backlog_at_end"] = last["q_backlog_pkts"]
        row["window_s"] = round(last["t"] - first["t"], 2)
    return series, totals


@dataclass
class Sender:
    """One long TCP flow from ``name`` to the receiver, and where it enters the bottleneck."""

    name: str
    entry: str  # which input port of the bottleneck switch (or group) it arrives by
    flow: Flow | None = None        # its iperf3 transfer, once run_many_to_one ran it
    offered_mbps: float = float("nan")


def run_many_to_one(emu: Emulation, senders: list[Sender], receiver: str, groups: list[Group],
                    params: ManyToOneParams, out: Path, rng: random.Random,
                    arrivals: bool = True) -> dict[str, Any]:
    """Every sender runs one TCP flow to its own iperf3 server on ``receiver`` at once,
    through the one iperf3 runner (traffic.run_iperf), with the drop sampler and (unless
    ``arrivals`` is False: the cost benchmark) the bottleneck's arrival tracer around it.

    Writes iperf3 JSON per flow, bwm.csv (also rx of each sender's access port), cpu.csv,
    the drop samples, arrivals.csv / arrivals_summary.csv (harness/arrivals.py) and
    tcp_events.csv (each sender's RTOs and fast retransmits, harness/tcpevents.py); fills in
    every sender's flow and offered rate; returns the facts.
    """
    from contextlib import ExitStack

    from harness import tcpevents
    from harness.arrivals import trace_arrivals, write_arrivals

    out.mkdir(parents=True, exist_ok=True)
    bottleneck = host_port(emu.topo, receiver)
    counters0 = {s.name: tcpevents.read_counters(emu.host_pids[s.name]) for s in senders}
    duration, trim, interval = params.duration, params.trim, params.interval
    access = {s.name: host_port(emu.topo, s.name) for s in senders}
    pairs = dict(many_to_one([s.name for s in senders], receiver=receiver))
    order = [Flow(s.name, pairs[s.name]) for s in senders]
    for s, f in zip(senders, order):
        s.flow = f
    rng.shuffle(order)  # start order from the run's seed: no sender always starts first
    drops = Sampler("drop", DropReader(emu, receiver, bottleneck, groups), interval)
    drops.start()
    try:
        drops.wait_first(10)       # the baseline, before any client
        with ExitStack() as stack:
            tracer: Any = stack.enter_context(trace_arrivals(emu, bottleneck)) if arrivals \
                else "not asked (arrivals=False)"
            # A starved sender (the phenomenon itself) and iperf3's control connection
            # through the same tail-drop port can sit in RTO backoff, capped at 120 s by
            # Linux: allow one full backoff after the test before calling the client hung.
            # A sender whose SYNs the full port drops for the whole connect timeout is the
            # Outcast effect at its extreme: recorded as 0 Mb/s and flagged, not failed.
            meas = run_iperf(emu, order, "tcp", duration, trim, out, interval=interval,
                             watch_intfs=sorted(set(access.values())), grace=150,
                             may_not_connect=True)
    finally:
        samples = [v for _, v in drops.stop()]
    events = {s.name: tcpevents.delta(counters0[s.name],
                                      tcpevents.read_counters(emu.host_pids[s.name]))
              for s in senders}
    write_csv(out / "tcp_events.csv", [{"sender": k, **v} for k, v in events.items()])
    bwm_path = out / "bwm.csv"
    t0 = min(f.start for f in order)
    port_of = {x: g.label for g in groups for x in g.senders}
    rate = emu.topo.link_bw(emu.topo.access_switch(receiver), receiver, emu.link.bw)
    traced = write_arrivals(out, tracer, bottleneck, rate, t0, (trim, duration - trim),
                            {emu.topo.ip(s.name): s.name for s in senders}, port_of)
    received = series_by_interface(bwm_path, received=True)  # one read for every use
    check_coverage(bwm_path, received, sorted(set(access.values())), t0 + trim,
                   max(f.start for f in order) + duration - trim, interval)
    series, totals = drop_rows(samples, groups, t0, t0 + duration - 0.2)
    write_csv(out / "drops_series.csv", series)
    (out / "drop_samples.json").write_text(json.dumps(samples))
    offered = {s.name: received.get(access[s.name], []) for s in senders}
    for s in senders:
        assert s.flow is not None
        s.offered_mbps = series_mean(offered[s.name], s.flow.start + trim,
                                     s.flow.start + duration - trim)
    return {**meas, "t0": t0, "drops_series": series, "drops": totals, "arrivals": traced,
            "tcp_events": events,
            "bwm": {name: [(round(t - t0, 3), round(r, 4)) for t, r in rates]
                    for name, rates in offered.items()}}


def measured_mbps(f: Flow) -> float:
    """A sender's rate as Outcast measures it: its bytes acked over the window all senders
    share, in absolute time (Flow.acked_mbps, from tcp_info), so that a sender whose
    set-up sat in RTO backoff behind the full port is measured over the same seconds as
    the others (iperf3 counts each flow from its own test start: session 13 found such
    senders credited with rates measured on an empty link); iperf3's rate only when the
    sender has no samples (never connected: 0)."""
    return f.acked_mbps if f.acked_mbps is not None else f.iperf_mbps


def sender_rows(senders: list[Sender], meas: dict[str, Any], base: dict[str, Any],
                fair_mbps: float, extra: dict[str, dict[str, Any]]
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(per-sender average rows, per-sender time series rows) for the CSVs."""
    rows, series = [], []
    t0 = meas["t0"]
    for s in senders:
        f = s.flow
        assert f is not None
        mbps = measured_mbps(f)
        rows.append({**base, "sender": s.name, **extra.get(s.name, {}), "entry": s.entry,
                     "mbps": round(mbps, 4), "iperf_mbps": round(f.iperf_mbps, 4),
                     "offered_mbps": round(s.offered_mbps, 4),
                     # the same flow in absolute time (see Flow.acked_mbps): differs from
                     # iperf_mbps when its transfer began late (first_ack_s), e.g. behind a
                     # blacked-out port at start-up
                     "acked_mbps": f.acked_mbps, "first_ack_s": f.first_ack_s,
                     "fair_mbps": round(fair_mbps, 4),
                     "share_of_fair": round(mbps / fair_mbps, 4),
                     "retransmits": f.retransmits, "connected": f.connected,
                     "cpu_mean": meas["cpu_mean"],
                     "cpu_max": meas["cpu_max"],
                     "cpu_saturated_share": meas["cpu_saturated_share"],
                     "emulator_loss_share": meas["emulator_loss_share"]})
        for t, mbps in f.series:   # (time since the flow's own start: shifted to t0's)
            series.append({**base, "sender": s.name, "source": "iperf3",
                           "t": round(f.start - t0 + t, 3), "mbps": round(mbps, 4)})
        for t, mbps in meas["bwm"][s.name]:
            series.append({**base, "sender": s.name, "source": "bwm-ng", "t": t, "mbps": mbps})
    return rows, series


def flow_events(meas: dict[str, Any], sender: str) -> dict[str, Any]:
    """flows.csv columns of one sender: its RTOs and fast retransmits over the whole run
    (tcp_events.csv) and its arrivals and drops at the bottleneck queue in the window."""
    ev = meas.get("tcp_events", {}).get(sender, {})
    q = meas.get("arrivals", {}).get("senders", {}).get(sender, {})
    return {"rtos": ev.get("rto_data", ""), "syn_rtos": ev.get("TCPSynRetrans", ""),
            "fast_retrans": ev.get("TCPFastRetrans", ""),
            "loss_probes": ev.get("TCPLossProbes", ""),
            "queue_arrivals": q.get("queue_arrivals", ""), "queue_drops": q.get("queue_drops", "")}


def emulate_once(topo: Any, plan: Any, params: ManyToOneParams, run_dir: Path, run_id: str,
                 senders: list[Sender], receiver: str, groups: list[Group],
                 rng: random.Random, arrivals: bool = True) -> tuple[dict[str, Any],
                                                                   dict[str, Any]]:
    """Bring up one network, check it, run the flows, verify the queues again
    (``arrivals``: trace the bottleneck's arrivals, see run_many_to_one)."""
    with session(topo, plan, params, run_dir, run_id) as s:
        facts = s.facts
        facts["rto_min_requested"] = params.rto_min
        facts["routes"] = set_rto_min(s.emu, [x.name for x in senders], receiver,
                                      params.rto_min)
        meas = run_many_to_one(s.emu, senders, receiver, groups, params, run_dir, rng,
                               arrivals)
        s.flows = [x.flow for x in senders]
        # every sender is measured in absolute time (measured_mbps), so one whose set-up
        # sat behind the full port is measured with the others: its late start is the
        # Outcast's port blackout, the result, not a measurement apart (kept as a fact)
        if all(x.flow is not None and (x.flow.acked_mbps is not None or not x.flow.connected)
               for x in senders):
            meas["late_starts"] = meas.pop("late_note", None)
        facts["cpu_mean"], facts["cpu_max"] = meas["cpu_mean"], meas["cpu_max"]
        facts["drops"] = meas["drops"]
        facts["dequeue_gaps"] = meas["dequeue_gaps"]
        facts["tcp_limits"] = meas["tcp_limits"]
        facts["late_starts"] = meas.get("late_starts")
        facts["switch_losses"] = loss_fields(meas)
        # the per-sender counts go to flows.csv; config.json keeps the ports and the check
        facts["arrivals"] = {k: v for k, v in meas["arrivals"].items() if k != "senders"}
        facts["tcp_events"] = meas["tcp_events"]
    return facts, meas


#: flows.csv's emulator columns, blank in a simulated or modelled point (same column order)
NO_EMULATOR = dict.fromkeys(("cpu_mean", "cpu_max", "cpu_saturated_share",
                             "emulator_loss_share"), "")


#: one input of the bottleneck switch as the simulation counts it: (label, the peers the
#: switch receives from there, the senders whose traffic enters there)
SimInput = tuple[str, list[str], list[str]]


def simulate_many_to_one(topo: Any, plan: Any, params: SimManyToOneParams, run_dir: Path,
                         run: int, rng: random.Random, base: dict[str, Any],
                         senders: list[Sender], receiver: str, inputs: list[SimInput],
                         extra: dict[str, dict[str, Any]],
                         fair_mbps: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                    list[dict[str, Any]]]:
    """--backend sim of a many-to-one run (outcast, outcast-fattree): the same senders in
    ns-3; (flow rows, series rows, drop rows) in the emulated run's columns.  Goodput is
    the receiver's payload over the trimmed window (what iperf3 reports); the offered rate
    is what the sender's NIC sent (frames); drops per input are counted exactly, per
    source, at the receiver's switch port (over the whole simulation), and packets per
    input where that switch receives them."""
    names = [x.name for x in senders]
    cfg = sim_config(params, run, rto_min_ms(params.rto_min), params.interval)
    switch = topo.access_switch(receiver)
    bottleneck = (switch, receiver)
    watch = list(dict.fromkeys((switch, peer) for _, peers, _ in inputs for peer in peers))
    res = simulate_flows(topo, plan, [(n, receiver) for n in names], cfg, rng, run_dir,
                         watch_drops=[bottleneck], watch_rx=watch)
    rows, series = [], []
    for i, (x, f) in enumerate(zip(senders, res.flows)):
        rows.append({**base, "sender": x.name, **extra.get(x.name, {}), "entry": x.entry,
                     "mbps": round(f.goodput_mbps, 4), "iperf_mbps": round(f.goodput_mbps, 4),
                     "offered_mbps": round(f.offered_mbps, 4),
                     "fair_mbps": round(fair_mbps, 4),
                     "share_of_fair": round(f.goodput_mbps / fair_mbps, 4),
                     "retransmits": "", "connected": f.bytes_window > 0, **NO_EMULATOR,
                     "backend": "sim", "drops_at_bottleneck": res.drops_by_flow[bottleneck][i],
                     "sim_wall_s": round(res.wall_s, 2)})
        series += [{**base, "sender": x.name, "source": "sink", "t": t, "mbps": round(m, 4)}
                   for t, m in f.series]
    port = next(p for p in res.ports if (p.node, p.peer) == bottleneck)
    drops = []
    for label, peers, members in inputs:
        idx = [names.index(m) for m in members]
        rx = sum(res.rx_by_flow[(switch, peer)][i] for peer in peers for i in idx)
        dropped = sum(res.drops_by_flow[bottleneck][i] for i in idx)
        drops.append({**base, "port": label, "intfs": f"{switch}->{'+'.join(peers)}",
                      "senders": len(members), "rx_packets": rx, "delivered": rx - dropped,
                      "drops": dropped, "drop_rate": round(dropped / rx, 5) if rx else "",
                      "bottleneck_qdisc_drops": port.drops,
                      "check_residual": sum(res.drops_by_flow[bottleneck].values()) - port.drops,
                      "window_s": params.duration})
    return rows, series, drops


def simulate_once(topo: OutcastLinear, plan: Any, params: OutcastParams, run_dir: Path,
                  run: int, rng: random.Random, base: dict[str, Any]
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """--backend sim of the linear topology: the lone sender's port and s2's."""
    senders = [Sender(n, f"s1 port {topo.entry_port(n)}") for n in topo.senders()]
    inputs = [("s1 port 2 (lone)", [topo.lone], [topo.lone]),
              (f"s1 port 3 (from s2, {topo.n} flows)", ["s2"], topo.senders_behind_s2)]
    extra = {n: {"role": topo.node(n).attrs["role"]} for n in topo.senders()}
    return simulate_many_to_one(topo, plan, params, run_dir, run, rng, base, senders,
                                topo.receiver, inputs, extra, params.bw / (topo.n + 1))


def model_many_to_one(topo: Any, params: ManyToOneParams, base: dict[str, Any],
                      senders: list[Sender], receiver: str, routed: list[dict[str, Any]],
                      extra: dict[str, dict[str, Any]], fair_mbps: float
                      ) -> list[dict[str, Any]]:
    """--backend model of a many-to-one run: the flow model's max-min rates on each
    sender's path (``routed``), in the emulated run's flow columns.  A fluid model has no
    queue and no loss, so no input port can be shut out: the senders share the receiver's
    link equally.  That is the view's point, the baseline the packet-level views are read
    against (the Outcast is a packet effect)."""
    rates = rates_on_paths(topo, params.bw, {x.name: receiver for x in senders}, routed)
    return [{**base, "sender": x.name, **extra.get(x.name, {}), "entry": x.entry,
             "mbps": round(rates[x.name], 4), "iperf_mbps": "", "offered_mbps": "",
             "fair_mbps": round(fair_mbps, 4),
             "share_of_fair": round(rates[x.name] / fair_mbps, 4), "retransmits": "",
             "connected": True, **NO_EMULATOR, "backend": "model"} for x in senders]


def model_once(topo: OutcastLinear, plan: Any, params: OutcastParams,
               base: dict[str, Any]) -> list[dict[str, Any]]:
    """--backend model of the linear topology: its one path per sender."""
    senders = [Sender(n, f"s1 port {topo.entry_port(n)}") for n in topo.senders()]
    routed = [{"src": n, "dst": topo.receiver,
               "path": walk(topo, plan, n, topo.receiver, first_choice)}
              for n in topo.senders()]
    extra = {n: {"role": topo.node(n).attrs["role"]} for n in topo.senders()}
    return model_many_to_one(topo, params, base, senders, topo.receiver, routed, extra,
                             params.bw / (topo.n + 1))


@dataclass
class Tables:
    """The tables a many-to-one run (outcast, outcast-fattree) grows point by point and
    rewrites after each point, so that an interrupted run keeps what it measured."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, Any]] = field(default_factory=list)
    drops: list[dict[str, Any]] = field(default_factory=list)
    drop_series: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[dict[str, Any]] = field(default_factory=list)

    def add_emulated(self, meas: dict[str, Any], base: dict[str, Any],
                     senders: list[Sender], fair_mbps: float,
                     extra: dict[str, dict[str, Any]]) -> None:
        """One emulated point: its senders' rows and series, drops and traced arrivals."""
        rows, series = sender_rows(senders, meas, base, fair_mbps, extra)
        self.rows += rows
        self.series += series
        self.drops += [{**base, **d} for d in meas["drops"]]
        self.drop_series += [{**base, **d} for d in meas["drops_series"]]
        self.arrivals += [{**base, **p} for p in meas["arrivals"].get("ports", [])]

    def add_simulated(self, folder: RunFolder, tag: str, spec: str,
                      got: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]
                      ) -> None:
        """One simulated point (simulate_many_to_one's tables), recorded in the run folder."""
        rows, series, drops = got
        folder.record(tag, {"topo": spec, "backend": "sim", "sim_wall_s": rows[0]["sim_wall_s"]})
        self.rows += rows
        self.series += series
        self.drops += drops

    def write(self, writer: Any, run_dir: Path, params: Any) -> None:
        """Write them with one of figures' summary writers."""
        writer(run_dir, self.rows, self.series, self.drops, self.drop_series, params,
               self.arrivals)


def run(params: OutcastParams, folder: RunFolder) -> None:
    """For each N in --flows, --runs repetitions of lone vs N senders."""
    from .figures import write_outcast_summary

    t = Tables()
    for n in parse_flows(params.flows):
        for r in range(params.runs):
            rng = run_rng(params.seed, 1000 * n + r)
            topo = topos.build(f"outcast,n={n}")
            assert isinstance(topo, OutcastLinear)
            plan = routing.make_plan(topo, ROUTING)
            senders = [Sender(name, f"s1 port {topo.entry_port(name)}")
                       for name in topo.senders()]
            groups = [Group("s1 port 2 (lone)", ["s1-eth2"], [topo.lone]),
                      Group(f"s1 port 3 (from s2, {n} flows)", ["s1-eth3"],
                            topo.senders_behind_s2)]
            tag = f"n{n:02d}-run{r:02d}"
            run_dir = folder.path / tag
            base = {"flows": n, "run": r}
            if params.backend == "model":
                folder.log.info("%s: %s, flow model", tag, topo.spec)
                t.rows += model_once(topo, plan, params, base)
                folder.record(tag, {"topo": topo.spec, "backend": "model"})
                t.write(write_outcast_summary, folder.path, params)
                continue
            if params.backend == "sim":
                folder.log.info("%s: %s, cc=%s, rto_min=%s, simulated", tag, topo.spec,
                                params.cc, params.rto_min)
                t.add_simulated(folder, tag, topo.spec,
                                simulate_once(topo, plan, params, run_dir, r, rng, base))
                t.write(write_outcast_summary, folder.path, params)
                continue
            folder.log.info("%s: %s, cc=%s, rto_min=%s", tag, topo.spec, params.cc,
                            params.rto_min)
            facts, meas = emulate_once(topo, plan, params, run_dir, f"{folder.id}-{tag}",
                                       senders, topo.receiver, groups, rng)
            facts["topo"] = topo.spec
            folder.record(tag, facts)
            judge_measurement(folder, meas, tag)
            fair = params.bw / (n + 1)
            extra = {s: {"role": topo.node(s).attrs["role"], **flow_events(meas, s)}
                     for s in topo.senders()}
            t.add_emulated(meas, base, senders, fair, extra)
            t.write(write_outcast_summary, folder.path, params)


def plan(params: OutcastParams) -> Any:
    """What a run does (harness/plan.py, for ``--dry-run``): --runs networks per N of
    --flows, one phase each, N + 1 senders to one receiver."""
    from harness.plan import RunPlan, network
    nets = [network(f"outcast,n={n}", 1, params.duration, n + 1, 1, params.bw)
            for n in parse_flows(params.flows) for _ in range(params.runs)]
    return RunPlan(params.runs, tuple(nets), f"one network per N = {params.flows}")
