"""ns-3 as a backend: a phase's TCP flows simulated on the plan's paths (pinned per flow, or
sprayed per packet), beside the flow model's max-min rate on the same paths."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.backends.model import model_phase
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

    def _phase(self, w: Workload, phase: Phase, out: Path) -> Measurement:
        if phase.transport != "tcp":
            raise ValueError(f"--backend sim: mainline ns-3 has no {phase.transport.upper()}")
        pairs = phase.pairs()
        res = simulate_flows(w.topo, w.plan, list(pairs.items()), sim_config(self.params, w.rep),
                             w.rng, out / phase.transport)
        if w.plan.modes() & {"rnd"}:
            # a random spray's paths are per packet: the model's hash draw stands for them
            model = {f.spec.src: f.model_mbps for f in model_phase(w, phase).flows}
        else:
            sim_json = json.loads((out / phase.transport / "sim.json").read_text())
            routed = [{"src": f["src"], "dst": f["dst"], "path": f["path"]}
                      for f in sim_json["flows"]]
            model = rates_on_paths(w.topo, w.bw, pairs, routed)
        flows = tuple(FlowResult(FlowSpec(f.src, f.dst), f.goodput_mbps, model[f.src])
                      for f in res.flows)
        return Measurement(self.name, phase, flows, {"sim_wall_s": round(res.wall_s, 2)})

    def run(self, w: Workload, out: Path) -> list[Measurement]:
        """Every phase simulated in turn; sim.json of each in ``out``/<transport>."""
        got = [self._phase(w, p, out) for p in w.phases]
        self.folder.record(f"run{w.rep:02d}", {"backend": "sim",
                                                "sim_wall_s": got[-1].row_facts["sim_wall_s"]})
        return got


register("sim")(SimBackend)
