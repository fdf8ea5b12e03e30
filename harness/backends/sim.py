"""ns-3 as a backend: a phase's TCP flows simulated on the plan's paths (pinned per flow, or
forwarded by the switches' plan tables: hashed or sprayed per packet), beside the flow
model's max-min rate on the same paths (a spray: split evenly over the plan's paths).  What
a workload asks beyond that: its network's AQM (RED, with hosts that ask for ECN), the
senders' recovery, the sampled segments' fabric latency and every port's queue lengths
(harness.fabric); every port's counters go to ports.csv."""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from emulator.proc import RunError
from harness.backends.model import sprayed_rates
from harness.fabric import SIM_RECOVERY, hop_counts, port_tiers, queue_rows, switch_path
from harness.params import rto_min_ms
from harness.runfolder import RunFolder
from harness.simrun import sim_config, sim_queue, simulate_flows
from harness.simxfer import simulate_transfer
from harness.transfer import TransferResult, Transfers
from harness.workload import FlowResult, FlowSpec, Measurement, Phase, Workload, register
from model.network import rates_on_paths
from sim import require_ns3
from sim.spec import SimConfig, payload_ceiling
from store import write_csv
from store.views import VIEWS


@register
class SimBackend:
    """Mainline ns-3: TCP only (it has no MPTCP)."""
    view = VIEWS["sim"]

    def __init__(self, params: Any, folder: RunFolder) -> None:
        self.params, self.folder = params, folder

    @staticmethod
    def config(params: Any, w: Workload) -> SimConfig:
        """The simulation of ``w``: the run's parameters, the workload's AQM, recovery and
        latency sampling; one-line ValueError for what ns-3 cannot simulate."""
        recovery = w.recovery or "modern"
        if recovery not in SIM_RECOVERY:
            raise ValueError(f"--recovery {recovery!r}: the simulator has "
                             f"{', '.join(SIM_RECOVERY)} only")
        cfg = replace(sim_config(params, w.rep, rto_min_ms(w.rto_min), w.interval),
                      sample=w.latency, recovery=SIM_RECOVERY[recovery])
        return sim_queue(cfg, w.aqm or params.aqm, params.queue)

    @staticmethod
    def check(params: Any, w: Workload | Transfers) -> None:
        """What ns-3 cannot run of ``w``: a recovery it has not, ECN marking at a threshold,
        a transport other than TCP; a sender's CPU cap (it has no CPU); then ns-3 itself
        installed (a parameter it can never run is said first, installed or not)."""
        if isinstance(w, Transfers):
            if any(t.cpu for t in w.transfers):
                raise ValueError("--sender-cpu caps a real sending process: it needs "
                                 "--backend emulated (the simulator has no CPU)")
        else:
            SimBackend.config(params, w).check()
            for p in w.phases:
                if p.transport != "tcp":
                    raise ValueError(f"--backend sim: mainline ns-3 has no "
                                     f"{p.transport.upper()}; use --transport tcp")
        require_ns3()

    def _bottleneck_phase(self, w: Workload, phase: Phase, out: Path) -> Measurement:
        """The many-to-one senders in ns-3: goodput is the receiver's payload over the
        trimmed window, the offered rate what the sender's NIC sent (frames); drops per
        inlet are counted exactly, per source, at the receiver's switch port (over the whole
        simulation), and packets per inlet where that switch receives them."""
        b = w.bottleneck
        assert b is not None
        names = [f.src for f in phase.flows]
        switch = b.switch(w.topo)
        port_key = (switch, b.receiver)
        watch = list(dict.fromkeys((switch, peer) for i in b.inlets for peer in i.peers))
        res = simulate_flows(w.topo, w.plan, [(n, b.receiver) for n in names],
                             self.config(self.params, w), w.rng, out, watch_drops=[port_key],
                             watch_rx=watch)
        dropped_by = res.drops_by_flow[port_key]
        flows = tuple(FlowResult(spec, f.goodput_mbps, math.nan, 1,
                                 {"measured": f.goodput_mbps, "offered": f.offered_mbps},
                                 {"connected": f.bytes_window > 0,
                                  "drops_at_bottleneck": dropped_by[i]},
                                 tuple(("sink", t, round(m, 4)) for t, m in f.series))
                      for i, (spec, f) in enumerate(zip(phase.flows, res.flows)))
        port = next(p for p in res.ports if (p.node, p.peer) == port_key)
        inlets = []
        for inlet in b.inlets:
            idx = [names.index(m) for m in inlet.senders]
            rx = sum(res.rx_by_flow[(switch, peer)][i] for peer in inlet.peers for i in idx)
            dropped = sum(dropped_by[i] for i in idx)
            inlets.append({"port": inlet.label, "intfs": f"{switch}->{'+'.join(inlet.peers)}",
                           "senders": len(inlet.senders), "rx_packets": rx,
                           "delivered": rx - dropped, "drops": dropped,
                           "drop_rate": round(dropped / rx, 5) if rx else "",
                           "bottleneck_qdisc_drops": port.drops,
                           "check_residual": sum(dropped_by.values()) - port.drops,
                           "window_s": w.duration})
        return Measurement(self.view.name, phase, flows, {"sim_wall_s": round(res.wall_s, 2)},
                           inlets=tuple(inlets))

    def _phase(self, w: Workload, phase: Phase, out: Path) -> Measurement:
        if phase.transport != "tcp":
            raise ValueError(f"--backend sim: mainline ns-3 has no {phase.transport.upper()}")
        if w.bottleneck is not None:
            return self._bottleneck_phase(w, phase, out)
        pairs = phase.pairs()
        cfg = self.config(self.params, w)

        def progress(t: float, wall: float) -> None:
            if abs(t - round(t)) < 1e-9:   # every whole simulated second
                self.folder.log.info("%s: %g of %g simulated s, %.0f s wall", w.where, t,
                                     cfg.duration, wall)
        res = simulate_flows(w.topo, w.plan, list(pairs.items()), cfg, w.rng, out,
                             forwarding=w.sim_forwarding, progress=progress)
        if w.sprayed:
            # per packet: no path per flow; how each flow split is in spread.json
            (out / "spread.json").write_text(json.dumps(
                {f"{f.src}->{f.dst}": res.spread.get(i, {}) for i, f in enumerate(res.flows)},
                indent=1))
            model = sprayed_rates(w, phase)
        else:
            if w.sim_forwarding == "plan":
                # the paths the simulated switches gave each flow (their per-flow record)
                try:
                    routed = [{"src": f.src, "dst": f.dst,
                               "path": switch_path(w.topo, f.src, res.spread.get(i, {}))}
                              for i, f in enumerate(res.flows)]
                except ValueError as e:
                    raise RunError(str(e)) from None
                (out / "paths.json").write_text(json.dumps(routed, indent=1))
            else:    # pinned: each flow on its plan path (sim.json)
                sim_json = json.loads((out / "sim.json").read_text())
                routed = [{"src": f["src"], "dst": f["dst"], "path": f["path"]}
                          for f in sim_json["flows"]]
            model = rates_on_paths(w.topo, w.bw, pairs, routed)
        ports = [{"switch": p.node, "port": p.port, "peer": p.peer,
                  "qdisc_sent_packets": p.sent, "qdisc_drops": p.drops - p.aqm_drops,
                  "aqm_drops": p.aqm_drops, "aqm_marks": p.marks}
                 for p in res.ports if w.topo.is_switch(p.node)]
        write_csv(out / "ports.csv", ports)
        flows = tuple(FlowResult(FlowSpec(f.src, f.dst), f.goodput_mbps, model[f.src],
                                 sender={"offered_mbps": round(f.offered_mbps, 4)})
                      for f in res.flows)
        window = (cfg.trim, cfg.duration - cfg.trim)
        latency: list[dict[str, object]] = []
        if w.latency:
            hops = hop_counts(w.topo, pairs)
            latency = [{"src": res.flows[i].src, "dst": res.flows[i].dst,
                        "latency_us": round(lat, 2), "hops": hops[res.flows[i].src],
                        "flow_retrans": ""}
                       for i, at, lat in res.latency if window[0] <= at <= window[1]]
            if not latency:
                raise RunError(f"{w.where}: no latency sample inside the simulated window")
        queues: list[dict[str, object]] = []
        if w.queues:
            samples = [(t, {f"{sw}-eth{w.topo.port(sw, peer)}": q
                            for (sw, peer), q in snap.items() if w.topo.is_switch(sw)})
                       for t, snap in res.queues]
            queues = queue_rows(samples, port_tiers(w.topo),
                                [{k: str(v) for k, v in p.items()} for p in ports], window,
                                w.bw, {})
        return Measurement(self.view.name, phase, flows, {"sim_wall_s": round(res.wall_s, 2)},
                           ceiling_mbps=payload_ceiling(w.bw), latency=tuple(latency),
                           queues=tuple(queues))

    def transfer(self, net: Transfers, out: Path) -> Iterator[TransferResult]:
        """Every file transfer simulated in turn (harness/simxfer.py), each in its folder."""
        for t in net.transfers:
            self.folder.log.info("%s, simulated", t.where)
            yield simulate_transfer(net, t, out / t.folder)
        self.folder.record(net.key, {"backend": "sim", "sender": net.src,
                                     "receivers": list(net.members)})
        self.folder.network_done(net.key)

    def run(self, w: Workload, out: Path) -> list[Measurement]:
        """Every phase simulated in turn; sim.json of each in its phase folder."""
        got = [self._phase(w, p, w.phase_folder(out, p)) for p in w.phases]
        self.folder.record(w.key, {"spec": w.topo.spec, "backend": "sim",
                                   "sim_wall_s": got[-1].row_facts["sim_wall_s"],
                                   **({"aqm": w.aqm} if w.aqm else {}),
                                   **({"latency_samples": sum(len(m.latency) for m in got)}
                                      if w.latency else {})})
        self.folder.network_done(w.where)
        return got

