"""A watched bottleneck in the emulator (``Workload.bottleneck``): many senders, one
receiver, their drops counted per inlet of the receiver's switch (the Outcast's port
blackout), their arrivals traced, their offered rates read at their access ports.

Linux drops at the output queue without knowing the input port, so the count per inlet is
derived, sampled every interval:

    drops(inlet) = packets entering the switch by the inlet's ports (sysfs rx_packets)
                 - segments of the inlet's senders that reached the receiver's sockets
                   (tcp_info ``segs_in`` per connection, read with ``ss -tin`` in the
                   receiver, summed per source address)

``segs_in`` counts every segment a socket received, duplicates and pure ACKs included, so it
is the packets delivered per source; iperf3 bytes / MSS would miss retransmitted duplicates.
The sum over inlets is checked against the drop counter of the bottleneck's pfifo (``tc
-s``); the difference (packets queued at the two sample instants, drops elsewhere in the
receiver) is recorded as ``check_residual``.  Observed on OVS: the pfifo counts a few per
cent MORE drops than packets lost (a steady ~10 packets/s at 10 Mb/s), presumably because
OVS's userspace datapath sends on the port with an AF_PACKET socket and retries a send the
qdisc refused (ENOBUFS).  The derived per-inlet numbers count packets really lost.
"""
from __future__ import annotations

import json
import math
import random
import re
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator.emulation import Emulation
from emulator.proc import RunError, check, in_ns
from harness import tcpevents
from harness.arrivals import trace_arrivals, write_arrivals
from harness.bwmng import check_coverage, host_port, series_by_interface, series_mean
from harness.params import rto_min_ms
from harness.sampling import Sampler
from harness.traffic import Flow, run_iperf
from harness.workload import Bottleneck
from store import write_csv
from topos.base import Topology


@dataclass
class Watch:
    """One inlet as the emulator counts it: the bottleneck switch's interfaces and the
    senders whose traffic enters by them."""

    label: str
    intfs: list[str]
    senders: list[str]


def watches(topo: Topology, b: Bottleneck) -> list[Watch]:
    """The bottleneck's inlets with their interface names."""
    return [Watch(i.label, b.interfaces(topo, i), list(i.senders)) for i in b.inlets]


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


class DropReader:
    """One snapshot for the drop sampler: rx packets of the watched inlets' ports,
    per-source delivered segments at the receiver (ss segs_in), and the bottleneck pfifo's
    drops/backlog."""

    def __init__(self, emu: Emulation, receiver: str, bottleneck: str,
                 groups: list[Watch]) -> None:
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


def drop_rows(samples: list[dict[str, Any]], groups: list[Watch], t0: float,
              t_end: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(time series rows, totals rows) of derived drops per inlet.

    Totals use the first sample (before any client started) and the last one taken while
    every connection was still open (``t_end``), since closed sockets lose their segs_in.
    """
    usable = [s for s in samples if s["t"] <= t_end]
    if len(usable) < 2:
        raise RunError("drop sampler: fewer than two samples inside the traffic window")
    series = []

    def counts(s: dict[str, Any], g: Watch) -> tuple[int, int]:
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


def measured_mbps(f: Flow) -> float:
    """A sender's rate as Outcast measures it: its bytes acked over the window all senders
    share, in absolute time (Flow.acked_mbps, from tcp_info), so that a sender whose
    set-up sat in RTO backoff behind the full port is measured over the same seconds as
    the others (iperf3 counts each flow from its own test start: session 13 found such
    senders credited with rates measured on an empty link); iperf3's rate only when the
    sender has no samples (never connected: 0; acked_mbps is NaN then, not None, which
    left such senders, and one whose connection came up after the window, with no rate
    and their claim "not measured" until 2026-12-03)."""
    return f.iperf_mbps if math.isnan(f.acked_mbps) else f.acked_mbps


def many_to_one(emu: Emulation, b: Bottleneck, flows: list[Flow], duration: float,
                trim: float, interval: float, out: Path, rng: random.Random
                ) -> dict[str, Any]:
    """Every sender's TCP flow to its own iperf3 server on the receiver at once, through
    the one iperf3 runner (traffic.run_iperf), started in a seeded shuffled order, with the
    drop sampler and (``b.trace``) the bottleneck's arrival tracer around it.

    Writes iperf3 JSON per flow, bwm.csv (also rx of each sender's access port), cpu.csv,
    the drop samples, arrivals.csv / arrivals_summary.csv (harness/arrivals.py) and
    tcp_events.csv (each sender's RTOs and fast retransmits, harness/tcpevents.py); returns
    run_iperf's facts with the bottleneck's: t0 (the first start), drops, drops_series,
    arrivals, tcp_events, and per sender its offered rate (``offered``: mean over its
    window) and series (``bwm``: (s since t0, Mb/s))."""
    out.mkdir(parents=True, exist_ok=True)
    groups = watches(emu.topo, b)
    bottleneck = host_port(emu.topo, b.receiver)
    names = [f.src for f in flows]
    counters0 = {n: tcpevents.read_counters(emu.host_pids[n]) for n in names}
    access = {n: host_port(emu.topo, n) for n in names}
    order = list(flows)
    rng.shuffle(order)  # start order from the run's seed: no sender always starts first
    drops = Sampler("drop", DropReader(emu, b.receiver, bottleneck, groups), interval)
    drops.start()
    try:
        drops.wait_first(10)       # the baseline, before any client
        with ExitStack() as stack:
            tracer: Any = stack.enter_context(trace_arrivals(emu, bottleneck)) if b.trace \
                else "not asked (trace off)"
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
    events = {n: tcpevents.delta(counters0[n], tcpevents.read_counters(emu.host_pids[n]))
              for n in names}
    write_csv(out / "tcp_events.csv", [{"sender": k, **v} for k, v in events.items()])
    bwm_path = out / "bwm.csv"
    t0 = min(f.start for f in order)
    port_of = {x: g.label for g in groups for x in g.senders}
    rate = emu.rates[(emu.topo.access_switch(b.receiver), b.receiver)]
    traced = write_arrivals(out, tracer, bottleneck, rate, t0, (trim, duration - trim),
                            {emu.topo.ip(n): n for n in names}, port_of)
    received = series_by_interface(bwm_path, received=True)  # one read for every use
    check_coverage(bwm_path, received, sorted(set(access.values())), t0 + trim,
                   max(f.start for f in order) + duration - trim, interval)
    series, totals = drop_rows(samples, groups, t0, t0 + duration - 0.2)
    write_csv(out / "drops_series.csv", series)
    (out / "drop_samples.json").write_text(json.dumps(samples))
    offered = {n: received.get(access[n], []) for n in names}
    return {**meas, "t0": t0, "drops_series": series, "drops": totals, "arrivals": traced,
            "tcp_events": events,
            "offered": {f.src: series_mean(offered[f.src], f.start + trim,
                                           f.start + duration - trim) for f in flows},
            "bwm": {name: [(round(t - t0, 3), round(r, 4)) for t, r in rates]
                    for name, rates in offered.items()}}


def flow_events(meas: dict[str, Any], sender: str) -> dict[str, Any]:
    """flows.csv columns of one sender: its RTOs and fast retransmits over the whole run
    (tcp_events.csv) and its arrivals and drops at the bottleneck queue in the window."""
    ev = meas.get("tcp_events", {}).get(sender, {})
    q = meas.get("arrivals", {}).get("senders", {}).get(sender, {})
    return {"rtos": ev.get("rto_data", ""), "syn_rtos": ev.get("TCPSynRetrans", ""),
            "fast_retrans": ev.get("TCPFastRetrans", ""),
            "loss_probes": ev.get("TCPLossProbes", ""),
            "queue_arrivals": q.get("queue_arrivals", ""), "queue_drops": q.get("queue_drops", "")}
