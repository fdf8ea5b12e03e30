"""The emulator as a backend: one network per workload (harness.session), its phases one
after another on it, each flow an iperf3 transfer; every (sub)flow traced through the
switches, with its own rate and RTT from the senders' tcp_info samples, and each phase
compared with the flow model on the traced paths (the fidelity report, judged here: a
suspect phase flags the run).  A flow sprayed per packet has no one path: its split over
every switch's ports is recorded (spread.json) and the model splits it evenly, a rate TCP
need not reach (reordering), so that comparison is a result, not a doubt.  What a workload
asks beyond that: the links' bytes over the window (``Workload.links``: the switch ports'
counters), complete wire rates (``Workload.wire``: bwm-ng's, as the experiment plots them),
its network's AQM with hosts that ask for ECN where the ports mark (always), the senders'
loss recovery, the sampled segments' fabric latency and every port's queue lengths
(``Workload.recovery``, ``latency``, ``queues``: harness.fabric)."""
from __future__ import annotations

import contextlib
import json
import math
import socket
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.fidelity import gap_share, load_calibration, model_is_exact, report
from emulator import aqm as aqm_spec
from emulator import dataplane_registry
from emulator.dataplane import LatencySampling, Spread
from emulator.emulation import Emulation
from emulator.hostnet import grin_mptcp_endpoints, grin_userspace_pm, userspace_pm_available
from emulator.netns import root_qlens
from emulator.proc import RunError
from harness.backends.model import sprayed_rates
from harness.bottleneck import flow_events, many_to_one, measured_mbps, set_rto_min
from harness.fabric import (
    QUEUE_INTERVAL,
    RECOVERY,
    RECOVERY_READBACK,
    hop_counts,
    latency_rows,
    port_tiers,
    queue_rows,
    retrans_steps,
)
from harness.filexfer import transfers
from harness.runfolder import RunFolder
from harness.sampling import Sampler
from harness.session import Session, judge, judge_measurement, session
from harness.trace import trace_flows
from harness.traffic import (
    BASE_PORT,
    MAX_MISSING_SUBFLOWS,
    Flow,
    check_subflows,
    counter_delta,
    loss_fields,
    port_counters,
    run_iperf,
)
from harness.transfer import TransferResult, Transfers
from harness.workload import (
    FlowResult,
    LinkBytes,
    Measurement,
    Phase,
    Workload,
    register,
)
from model.flowmodel import goodput_capacity
from model.grin import address_maxmin
from model.network import rates_on_paths, route_by_hash, synthetic_subflows
from store import read_csv
from store.views import VIEWS
from topos.base import Topology
from topos.grin import MAX_SUBFLOWS, GrinTopology


def counter_sampler(emu: Emulation, flows: list[Flow], duration: float,
                    trim: float) -> Sampler[Any]:
    """Port counter snapshots at max(start) + trim and min(start) + duration - trim, the
    window the rates are taken over, once run_iperf has started every client."""
    def window() -> list[float] | None:
        if not all(f.start for f in flows):
            return None
        return [max(f.start for f in flows) + trim, min(f.start for f in flows) + duration - trim]
    return Sampler("port counter", lambda: port_counters(emu), schedule=window)


def link_bytes(topo: Topology, sampler: Sampler[Any]) -> LinkBytes:
    """The bytes of every directed link between the two snapshots of a finished counter
    sampler: a switch port's tx for the link it sends on, and a host's uplink by the rx of
    the switch port it reaches (its error kept, not raised: the run goes on without them)."""
    sampler.join(timeout=30)            # the end snapshot is due before traffic ends
    try:
        got = sampler.stop()
    except RunError as exc:
        return LinkBytes(0.0, {}, {}, str(exc))
    if len(got) < 2:
        return LinkBytes(0.0, {}, {}, "the window closed before both snapshots")
    (t0, before), (t1, after) = got[0], got[-1]
    nbytes: dict[tuple[str, str], int] = {}
    drops: dict[tuple[str, str], int] = {}
    for d in counter_delta(before, after):
        sw, port = d["switch"], d["port"]
        peer = topo.ports(sw)[port][0]
        nbytes[(sw, peer)] = d["tx_bytes"]
        drops[(sw, peer)] = d["qdisc_drops"]
        if not topo.is_switch(peer):
            nbytes[(peer, sw)] = d["rx_bytes"]
    return LinkBytes(t1 - t0, nbytes, drops)


def subflow_rates(samples: list[dict[str, str]], flows: list[Flow], duration: float,
                  trim: float) -> dict[tuple[str, int], dict[str, float]]:
    """Per (sub)flow socket, keyed by (source address, port): its goodput (bytes acked, from
    the tcp_info samples' rows, over its flow's trimmed window) and its median smoothed
    RTT."""
    window = {f.src: (f.start + trim, f.start + duration - trim) for f in flows}
    by: dict[tuple[str, int], list[dict[str, str]]] = {}
    for row in samples:
        t0, t1 = window.get(row["host"], (0.0, -1.0))
        if t0 <= float(row["time"]) <= t1:
            by.setdefault((row["saddr"], int(row["sport"])), []).append(row)
    out = {}
    for key, rows in by.items():
        rows.sort(key=lambda x: float(x["time"]))
        span = float(rows[-1]["time"]) - float(rows[0]["time"])
        if len(rows) < 2 or span <= 0:
            continue
        acked = int(rows[-1]["bytes_acked"]) - int(rows[0]["bytes_acked"])
        rtts = sorted(int(x["rtt"]) for x in rows)
        out[key] = {"mbps": round(8 * acked / span / 1e6, 4),
                    "rtt_ms": round(rtts[len(rtts) // 2] / 1000, 3)}
    return out


def _with_rates(traced: list[dict[str, Any]],
                rates: Mapping[tuple[str, int], Mapping[str, float]]) -> list[dict[str, Any]]:
    """Each traced (sub)flow with its own rate and RTT (NaN where it has no samples)."""
    nan = {"mbps": math.nan, "rtt_ms": math.nan}
    out = []
    for t in traced:
        ft = t.get("five_tuple") or {}
        key = (str(ft.get("src_ip")), int(ft.get("src_port") or 0))
        out.append({**t, **rates.get(key, nan)})
    return out


def _addressed_network(w: Workload) -> GrinTopology:
    """The network of a phase whose subflows are chosen by address: GRIN's, whose servers
    forward for their neighbours (the only such network dcrepro builds)."""
    if not isinstance(w.topo, GrinTopology):
        raise ValueError(f"subflows by address need a GRIN network, not {w.topo.spec}")
    return w.topo


def _by_address(topo: GrinTopology, w: Workload, phase: Phase, flows: list[Flow],
                out: Path) -> tuple[dict[str, float], dict[str, float],
                                    list[dict[str, Any]], dict[str, Any]]:
    """Flows whose subflows the addresses choose (keyed 'src->dst'): each subflow the
    connection opened on the path its addresses give (the servers forward by address, so
    no switch trace shows it; paths.json in ``out``), the model's independent max-min rates
    on those subflows, and how many designed subflows never appeared (a quarter missing
    flags the phase)."""
    seen = {f"{f.src}->{f.dst}": [(x["src_ip"], x["dst_ip"]) for x in f.subflows]
            for f in flows}
    designed = {spec.key: list(spec.subflows) for spec in phase.flows}
    missing = sum(len(set(designed[c]) - set(seen[c])) for c in seen)
    paths = []
    for f in flows:
        for x in f.subflows:
            paths.append({"src": f.src, "dst": f.dst, "src_ip": x["src_ip"],
                          "dst_ip": x["dst_ip"],
                          "path": list(topo.subflow_path(x["src_ip"], x["dst_ip"])),
                          "five_tuple": {k: x.get(k) for k in ("src_ip", "src_port",
                                                               "dst_ip", "dst_port")}})
    (out / "paths.json").write_text(json.dumps(paths, indent=1))
    return ({f"{f.src}->{f.dst}": f.iperf_mbps for f in flows},
            address_maxmin(topo, w.bw, seen), paths,
            {"subflows_missing": missing,
             "subflows_designed": sum(len(v) for v in designed.values())})


def set_recovery(emu: Emulation, recovery: str) -> dict[str, str]:
    """Set the recovery sysctls (harness.fabric.RECOVERY) in every host namespace; return
    them as read back in one."""
    values = RECOVERY[recovery]
    hosts = emu.topo.hosts()
    if values:
        emu.hosts_cmd(hosts, ["sysctl", "-qw", *(f"{k}={v}" for k, v in values.items())])
    keys = list(dict.fromkeys([*RECOVERY_READBACK, *values]))
    got = emu.hosts_cmd(hosts[:1], ["sysctl", "-n", *keys])[hosts[0]].split()
    seen = dict(zip(keys, got))
    wrong = {k: seen.get(k) for k, v in values.items() if seen.get(k) != v}
    if wrong:
        raise RunError(f"host {hosts[0]} kept {wrong} after setting {values}")
    return seen


def set_ecn(emu: Emulation) -> str:
    """Hosts ask for ECN (tcp_ecn=1, per namespace) where the switch ports mark; the
    others keep the kernel's default (2: accept, never ask).  Returns the value read back."""
    hosts = emu.topo.hosts()
    marks = emu.link.aqm_spec.active
    if marks:
        emu.hosts_cmd(hosts, ["sysctl", "-qw", "net.ipv4.tcp_ecn=1"])
    got = emu.hosts_cmd(hosts[:1], ["sysctl", "-n", "net.ipv4.tcp_ecn"])[hosts[0]].strip()
    if marks and got != "1":
        raise RunError(f"host {hosts[0]} kept net.ipv4.tcp_ecn={got} after setting 1")
    return got


@contextlib.contextmanager
def queue_lengths(tiers: Mapping[str, str]) -> Iterator[Sampler[dict[str, int]]]:
    """Every switch port's root-qdisc length (packets, HTB's whole tree) every
    QUEUE_INTERVAL s while the block runs, over one rtnetlink socket of this (the root)
    namespace, where the switch ports live.  The samples are {interface: packets}; the
    sampler is stopped when the block ends (its samples: ``sampler.samples``)."""
    index = {socket.if_nametoindex(i): i for i in tiers}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
        def read() -> dict[str, int]:
            return {index[i]: q for i, q in root_qlens(nl).items() if i in index}
        sampler: Sampler[dict[str, int]] = Sampler("queue lengths", read, QUEUE_INTERVAL)
        sampler.start()
        try:
            yield sampler
        except BaseException:
            sampler.stop_quietly()      # the run's own error, not the sampler's
            raise
        sampler.stop()


@register
class EmulatedBackend:
    """Real Mininet, the run's dataplane, iperf3, bwm-ng and MPTCP."""
    view = VIEWS["emulated"]

    def __init__(self, params: Any, folder: RunFolder) -> None:
        self.params, self.folder = params, folder

    @staticmethod
    def check(params: Any, w: Workload | Transfers) -> None:
        """What the run's dataplane cannot do for ``w``: carry its plan, sample latency,
        record a sprayed flow's split, run its network's AQM; what this kernel's MPTCP
        cannot: the userspace path manager where it has none, more subflows per connection
        than upstream's in-kernel one opens."""
        dp = dataplane_registry.make(params.dataplane)
        if isinstance(w, Transfers):
            dataplane_registry.check_plan(dp, w.plan)
            return
        if w.path_manager == "userspace" and not userspace_pm_available():
            raise ValueError("--pm userspace: this kernel has no userspace MPTCP path manager "
                             "(/proc/sys/net/mptcp/available_path_managers)")
        for phase in w.phases:
            most = max(phase.wanted(f) for f in phase.flows)
            if w.path_manager == "kernel" and most > MAX_SUBFLOWS:
                raise ValueError(f"{w.where}: a connection of {most} subflows; upstream MPTCP "
                                 f"opens at most {MAX_SUBFLOWS} (--pm userspace opens more)")
        needs = {"latency_sampling"} if w.latency else set()
        needs |= {"spread"} if w.sprayed else set()
        if aqm_spec.parse(w.aqm or params.aqm, params.queue).active:
            needs.add("aqm")
        dataplane_registry.check_needs(dp, "this experiment", needs)
        dataplane_registry.check_plan(dp, w.plan)

    def _bottleneck_phase(self, s: Session, w: Workload, phase: Phase,
                          out: Path) -> Measurement:
        """A many-to-one phase through a watched bottleneck (harness.bottleneck): each
        sender's goodput, bytes acked in absolute time and offered rate, its series, its
        TCP events; the drops per inlet.  Judged on the measurement alone: the flow model's
        equal share is what the Outcast breaks, so no comparison with it flags the run."""
        b = w.bottleneck
        assert b is not None
        names = [f.src for f in phase.flows]
        s.facts["rto_min_requested"] = w.rto_min
        s.facts["routes"] = set_rto_min(s.emu, names, b.receiver, w.rto_min)
        flows = [Flow(f.src, f.dst) for f in phase.flows]
        meas = many_to_one(s.emu, b, flows, w.duration, w.trim, w.interval, out, w.rng)
        s.flows += flows
        # every sender is measured in absolute time (measured_mbps), so one whose set-up
        # sat behind the full port is measured with the others: its late start is the
        # Outcast's port blackout, the result, not a measurement apart (kept as a fact)
        if all(f.acked_mbps is not None or not f.connected for f in flows):
            meas["late_starts"] = meas.pop("late_note", None)
        s.facts.update(cpu_mean=meas["cpu_mean"], cpu_max=meas["cpu_max"],
                       cpu_us_per_packet_hop=meas["cpu_us_per_packet_hop"],
                       drops=meas["drops"], dequeue_gaps=meas["dequeue_gaps"],
                       tcp_limits=meas["tcp_limits"], late_starts=meas.get("late_starts"),
                       switch_losses=loss_fields(meas),
                       # the per-sender counts go to flows.csv; the facts keep the ports
                       # and the check
                       arrivals={k: v for k, v in meas["arrivals"].items() if k != "senders"},
                       tcp_events=meas["tcp_events"])
        judge_measurement(self.folder, meas, w.where)
        t0 = meas["t0"]
        results = []
        for spec, f in zip(phase.flows, flows):
            # iperf3's intervals count from the flow's own start: shifted to the first's
            series = tuple(("iperf3", round(f.start - t0 + t, 3), round(mbps, 4))
                           for t, mbps in f.series)
            series += tuple(("bwm-ng", t, mbps) for t, mbps in meas["bwm"][f.src])
            # nan: no flow model here (see above)
            results.append(FlowResult(
                spec, f.iperf_mbps, math.nan, 1,
                {"measured": measured_mbps(f), "offered": meas["offered"][f.src]},
                {"acked_mbps": f.acked_mbps, "first_ack_s": f.first_ack_s,
                 "retransmits": f.retransmits, "connected": f.connected,
                 **flow_events(meas, f.src)}, series))
        return Measurement(self.view.name, phase, tuple(results),
                           {k: meas[k] for k in ("cpu_mean", "cpu_max", "cpu_saturated_share",
                                                 "emulator_loss_share")},
                           inlets=tuple(meas["drops"]),
                           inlet_series=tuple(meas["drops_series"]),
                           arrivals=tuple(meas["arrivals"].get("ports", [])))

    def _phase(self, s: Session, w: Workload, i: int, phase: Phase, out: Path,
               calibration: dict[str, Any] | None) -> Measurement:
        emu = s.emu
        grin = _addressed_network(w) if phase.addressed else None
        if grin is not None:
            s.facts.update(grin_mptcp_endpoints(grin, emu.host_pids, w.path_manager))
        elif phase.transport == "mptcp":
            s.facts.update(emu.configure_mptcp(phase.subflows))
        if phase.transport == "mptcp":
            s.facts["mptcp_scheduler"] = "default (upstream; no bias toward the direct subflow)"
        flows = [Flow(f.src, f.dst) for f in phase.flows]
        s.flows += flows
        sampler = counter_sampler(emu, flows, w.duration, w.trim) if w.links else None
        if sampler is not None:
            sampler.start()
        wanted: int | dict[tuple[str, str], int] = phase.subflows if grin is None else \
            {(f.src, f.dst): phase.wanted(f) for f in phase.flows}
        # dcrepro's userspace path manager (a thread of this process) lives for the traffic
        pm = grin_userspace_pm(grin, emu.host_pids, [(f.src, f.dst) for f in phase.flows]) \
            if grin is not None and w.path_manager == "userspace" else None
        tiers = port_tiers(w.topo) if w.queues else {}
        # each flow its own port; each phase its own range on the shared network
        try:
            with contextlib.ExitStack() as during:
                if pm is not None:
                    during.enter_context(pm)
                qlens = during.enter_context(queue_lengths(tiers)) if w.queues else None
                meas = run_iperf(emu, flows, phase.transport, w.duration, w.trim, out,
                                 port=BASE_PORT + i * len(flows), subflows=wanted)
        except BaseException:
            if sampler is not None:
                sampler.stop_quietly()
            raise
        if pm is not None:
            s.facts.update(pm.summary())
        # the senders' tcp_info samples, read once for the latency rows and the subflows
        samples_csv = out / "tcp_samples.csv"
        tcp_rows = read_csv(samples_csv) if samples_csv.is_file() else []
        latency = self._latency(s, w, phase, flows, tcp_rows) if w.latency else []
        links = link_bytes(w.topo, sampler) if sampler is not None else None
        if w.wire and meas["bwm_incomplete"]:
            raise RunError(f"{w.where}: {meas['measurement_note']}: the bwm-ng data this "
                           "experiment plots is incomplete")
        (out / "flows.json").write_text(json.dumps(
            [{"src": f.src, "dst": f.dst, "subflows": f.subflows} for f in flows], indent=1))
        if grin is not None:
            emulated, model, traced, shortfall = _by_address(grin, w, phase, flows, out)
        elif w.sprayed:
            emulated, model, traced, shortfall = self._by_spread(s, w, phase, flows, out)
        else:
            emulated, model, traced, shortfall = self._by_trace(s, w, phase, flows, out)
        fid = report(emulated, model, w.bw, meas, calibration,
                     model_bound=model_is_exact(phase.transport, sprayed=w.sprayed))
        if grin is not None and shortfall["subflows_missing"] > \
                MAX_MISSING_SUBFLOWS * shortfall["subflows_designed"]:
            fid["suspect"] = True
            fid["reasons"].append(f"{shortfall['subflows_missing']} of "
                                  f"{shortfall['subflows_designed']} designed subflows never "
                                  "appeared")
        fid.update(run=w.rep, transport=phase.transport, cpu_mean=meas["cpu_mean"],
                   **({"topology": w.label} if w.label else {}),
                   **({"recovery": w.recovery} if w.recovery else {}),
                   **({"aqm": w.aqm} if w.aqm else {}),
                   **({"latency_sampling": s.facts["latency_sampling"]} if w.latency else {}),
                   **shortfall, restarts=meas["restarts"], subflow_wait=meas["subflow_wait"],
                   subflow_drops=meas["subflow_drops"],
                   **loss_fields(meas), cpu_busy_s=meas["cpu_busy_s"],
                   cpu_us_per_packet_hop=meas["cpu_us_per_packet_hop"],
                   stack_counters=meas["stack_counters"])
        if links is not None:
            s.facts.update(counter_window_s=round(links.window_s, 2),
                           counter_error=links.error)
        # acked: the senders' bytes acked (every subflow's, tcp_info) over the window in
        # absolute time, beside iperf3's goodput and bwm-ng's wire bytes; MPTCP: the
        # connections' own counters too (data acked at the sender, data taken in order at
        # the receiver: mptcp_info), which say where subflow bytes and iperf3 differ
        key = (lambda f: f"{f.src}->{f.dst}") if grin is not None else (lambda f: f.src)
        results = tuple(FlowResult(spec, f.iperf_mbps, model[key(f)], len(f.subflows),
                                   {"bwm": f.bwm_mbps, "acked": f.acked_mbps,
                                    "msk_acked": f.msk_acked_mbps,
                                    "msk_received": f.msk_received_mbps},
                                   {"src_addrs": len({x["src_ip"] for x in f.subflows})},
                                   sender={"retrans": f.retransmits,
                                           **{k: (f.subflows or [{}])[0].get(k, "")
                                              for k in ("reord_seen", "dsack_dups",
                                                        "reordering")}})
                        for spec, f in zip(phase.flows, flows))
        rates = subflow_rates(tcp_rows, flows, w.duration, w.trim)
        queues = []
        if qlens is not None:
            window = (min(f.start for f in flows) + w.trim,
                      max(f.start for f in flows) + w.duration - w.trim)
            queues = queue_rows(qlens.samples, tiers, read_csv(out / "ports.csv"), window,
                                w.bw, {})
        return Measurement(self.view.name, phase, results,
                           {"cpu_mean": meas["cpu_mean"],
                            "cpu_saturated_share": meas["cpu_saturated_share"],
                            "emulator_loss_share": meas["emulator_loss_share"],
                            "gaps_within_10pct": gap_share(meas["dequeue_gaps"])},
                           fid, tuple(_with_rates(traced, rates)), links,
                           ceiling_mbps=goodput_capacity(w.bw), latency=tuple(latency),
                           queues=tuple(queues))

    def _latency(self, s: Session, w: Workload, phase: Phase, flows: list[Flow],
                 tcp_rows: list[dict[str, str]]) -> list[dict[str, Any]]:
        """The switches' latency samples of the phase's data connections inside their
        windows, with each flow's path length and its retransmissions around the sample
        (from the senders' tcp_info rows); RunError when there is none (the sampling
        counters are in the facts)."""
        dp = s.emu.dataplane
        assert isinstance(dp, LatencySampling), dp      # check() asked for it
        samples, sampling = dp.latency_samples()
        mono_to_wall = time.time() - time.monotonic()
        s.facts["latency_sampling"] = sampling
        rows = latency_rows(samples, flows, w.trim, w.duration, mono_to_wall, {},
                            hops=hop_counts(w.topo, phase.pairs()),
                            steps=retrans_steps(tcp_rows))
        if not rows:
            raise RunError(f"{w.where}: no latency sample inside the measurement window "
                           f"({sampling})")
        return rows

    def _by_spread(self, s: Session, w: Workload, phase: Phase, flows: list[Flow],
                   out: Path) -> tuple[dict[str, float], dict[str, float],
                                       list[dict[str, Any]], dict[str, Any]]:
        """Flows sprayed per packet: how each (sub)flow's packets left every switch
        (spread.json in ``out``, where the dataplane counts it), and the model's rates with
        each flow split evenly over the plan's paths (keyed by source)."""
        shortfall = check_subflows(flows, phase.subflows) if phase.transport == "mptcp" \
            else {}
        dp = s.emu.dataplane
        assert isinstance(dp, Spread), dp          # check() asked for it
        spread = {f"{f.src}->{f.dst}" + (f"#{j}" if j else ""):
                  dp.spread(s.emu, f.src, f.dst, sub)
                  for f in flows for j, sub in enumerate(f.subflows)}
        (out / "spread.json").write_text(json.dumps(spread, indent=1))
        return {f.src: f.iperf_mbps for f in flows}, sprayed_rates(w, phase), [], shortfall

    def _by_trace(self, s: Session, w: Workload, phase: Phase, flows: list[Flow],
                  out: Path) -> tuple[dict[str, float], dict[str, float],
                                      list[dict[str, Any]], dict[str, Any]]:
        """Flows routed by the plan: each (sub)flow traced through the switches (paths.json
        in ``out``), and the flow model's max-min rates on those paths (keyed by source)."""
        shortfall = check_subflows(flows, phase.subflows) if phase.transport == "mptcp" \
            else {}
        traced = trace_flows(s.emu, flows)
        (out / "paths.json").write_text(json.dumps(traced, indent=1))
        pairs = phase.pairs()
        # a connection that never connected has no traced path: the model takes the plan's
        # hash of the 5-tuples it would have used
        lost = {src: dst for src, dst in pairs.items()
                if src not in {t["src"] for t in traced}}
        routed = list(traced)
        if lost:
            routed += route_by_hash(w.topo, w.plan, lost, synthetic_subflows(
                w.topo, lost, phase.subflows, w.rng, BASE_PORT))
        model = rates_on_paths(w.topo, w.bw, pairs, routed)
        return {f.src: f.iperf_mbps for f in flows}, model, routed, shortfall

    def transfer(self, net: Transfers, out: Path) -> Iterator[TransferResult]:
        """Every file transfer of ``net`` on one emulated network (harness/filexfer.py),
        the network's facts recorded before and after them."""
        with session(net.topo, net.plan, self.params, out,
                     f"{self.folder.id}-{net.rep}") as s:
            self.folder.record(net.key, s.facts)   # (again below, with the queue check)
            yield from transfers(s.emu, net, out, self.folder)
        self.folder.record(net.key, s.facts)
        self.folder.network_done(net.key)

    def _settings(self, s: Session, w: Workload) -> None:
        """What the workload sets on the whole network before its traffic: the senders'
        loss recovery, the hosts' ECN (asked for where the ports mark), the switches'
        latency sampling; each read back into the network's facts."""
        if w.recovery is not None:
            s.facts["recovery_sysctls"] = set_recovery(s.emu, w.recovery)
        if w.aqm:
            s.facts["aqm"] = w.aqm
        s.facts["hosts_tcp_ecn"] = set_ecn(s.emu)
        if w.latency:
            dp = s.emu.dataplane
            assert isinstance(dp, LatencySampling), dp      # check() asked for it
            dp.sample_latency(w.latency)

    def run(self, w: Workload, out: Path) -> list[Measurement]:
        """Every phase on one network (``out``/<transport>); the network's facts recorded,
        each phase's fidelity report judged."""
        run_id = f"{self.folder.id}-" + (w.name or f"{w.rep}" + (f"-{w.label}" if w.label
                                                                  else ""))
        # the network's own AQM, when its run's networks differ
        params = replace(self.params, aqm=w.aqm) if w.aqm else self.params
        with session(w.topo, w.plan, params, out, run_id, w.label) as s:
            self._settings(s, w)
            # one network, one calibration (read once, not per phase)
            if w.bottleneck is not None:
                got = [self._bottleneck_phase(s, w, p, w.phase_folder(out, p))
                       for p in w.phases]
            else:
                calibration = load_calibration(self.folder.path, w.topo.spec, w.bw,
                                               self.params.dataplane)
                got = [self._phase(s, w, i, p, w.phase_folder(out, p), calibration)
                       for i, p in enumerate(w.phases)]
        self.folder.record(w.key, {**s.facts, "spec": w.topo.spec, "routing": w.plan.routing})
        for m in got:
            if m.report is None:        # judged on its measurement already
                continue
            r = m.report
            # subflows chosen by address: how many of those designed opened
            opened = f"; subflows {r['subflows_designed'] - r['subflows_missing']}/" \
                f"{r['subflows_designed']}" if "subflows_designed" in r else ""
            judge(self.folder, r, f"{w.where} {m.phase.transport}", opened)
        self.folder.network_done(w.where)
        return got

