"""ns-3 as a backend: a phase's TCP flows simulated on the plan's paths (pinned per flow, or
sprayed per packet), beside the flow model's max-min rate on the same paths."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from harness.backends.model import model_phase
from harness.params import rto_min_ms
from harness.runfolder import RunFolder
from harness.simrun import sim_config, simulate_flows
from harness.workload import FlowResult, FlowSpec, Measurement, Phase, Workload, register
from model.network import rates_on_paths


class SimBackend:
    """Mainline ns-3: TCP only (it has no MPTCP)."""
    name = "sim"
    realtime = False
    measures = True

    def __init__(self, params: Any, folder: RunFolder) -> None:
        self.params, self.folder = params, folder

    def _config(self, w: Workload) -> Any:
        return sim_config(self.params, w.rep, rto_min_ms(w.rto_min), w.interval)

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
        res = simulate_flows(w.topo, w.plan, [(n, b.receiver) for n in names], self._config(w),
                             w.rng, out, watch_drops=[port_key], watch_rx=watch)
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
        return Measurement(self.name, phase, flows, {"sim_wall_s": round(res.wall_s, 2)},
                           inlets=tuple(inlets))

    def _phase(self, w: Workload, phase: Phase, out: Path) -> Measurement:
        if phase.transport != "tcp":
            raise ValueError(f"--backend sim: mainline ns-3 has no {phase.transport.upper()}")
        if w.bottleneck is not None:
            return self._bottleneck_phase(w, phase, out)
        pairs = phase.pairs()
        res = simulate_flows(w.topo, w.plan, list(pairs.items()), self._config(w),
                             w.rng, out)
        if w.plan.modes() & {"rnd"}:
            # a random spray's paths are per packet: the model's hash draw stands for them
            model = {f.spec.src: f.model_mbps for f in model_phase(w, phase).flows}
        else:
            sim_json = json.loads((out / "sim.json").read_text())
            routed = [{"src": f["src"], "dst": f["dst"], "path": f["path"]}
                      for f in sim_json["flows"]]
            model = rates_on_paths(w.topo, w.bw, pairs, routed)
        flows = tuple(FlowResult(FlowSpec(f.src, f.dst), f.goodput_mbps, model[f.src])
                      for f in res.flows)
        return Measurement(self.name, phase, flows, {"sim_wall_s": round(res.wall_s, 2)})

    def run(self, w: Workload, out: Path) -> list[Measurement]:
        """Every phase simulated in turn; sim.json of each in its phase folder."""
        got = [self._phase(w, p, w.phase_folder(out, p)) for p in w.phases]
        self.folder.record(w.key, {"spec": w.topo.spec, "backend": "sim",
                                   "sim_wall_s": got[-1].row_facts["sim_wall_s"]})
        return got


register("sim")(SimBackend)
