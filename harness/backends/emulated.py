"""The emulator as a backend: one network per workload (harness.session), its phases one
after another on it, each flow an iperf3 transfer; every (sub)flow traced through the
switches, and each phase compared with the flow model on the traced paths (the fidelity
report, judged here: a suspect phase flags the run)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.fidelity import load_calibration, model_is_exact, report
from harness.runfolder import RunFolder
from harness.session import Session, judge, session
from harness.trace import trace_flows
from harness.traffic import BASE_PORT, Flow, check_subflows, loss_fields, run_iperf
from harness.workload import FlowResult, FlowSpec, Measurement, Phase, Workload, register
from model.network import rates_on_paths


class EmulatedBackend:
    """Real Mininet, the run's dataplane, iperf3, bwm-ng and MPTCP."""
    name = "emulated"

    def __init__(self, params: Any, folder: RunFolder) -> None:
        self.params, self.folder = params, folder
        self.calibration = load_calibration(folder.path, params.topo, params.bw,
                                            params.dataplane)

    def _phase(self, s: Session, w: Workload, i: int, phase: Phase,
               out: Path) -> Measurement:
        emu = s.emu
        if phase.transport == "mptcp":
            s.facts.update(emu.configure_mptcp(phase.subflows))
        flows = [Flow(f.src, f.dst) for f in phase.flows]
        s.flows += flows
        # each flow its own port; each phase its own range on the shared network
        meas = run_iperf(emu, flows, phase.transport, w.duration, w.trim, out,
                         port=BASE_PORT + i * len(flows), subflows=phase.subflows)
        shortfall = check_subflows(flows, phase.subflows) if phase.transport == "mptcp" \
            else {}
        (out / "flows.json").write_text(json.dumps(
            [{"src": f.src, "dst": f.dst, "subflows": f.subflows} for f in flows], indent=1))
        traced = trace_flows(emu, flows)
        (out / "paths.json").write_text(json.dumps(traced, indent=1))
        model = rates_on_paths(emu.topo, w.bw, phase.pairs(), traced)
        fid = report({f.src: f.iperf_mbps for f in flows}, model, w.bw, meas,
                     self.calibration, model_bound=model_is_exact(phase.transport))
        fid.update(run=w.rep, transport=phase.transport, cpu_mean=meas["cpu_mean"],
                   **shortfall, restarts=meas["restarts"], subflow_wait=meas["subflow_wait"],
                   **loss_fields(meas), cpu_busy_s=meas["cpu_busy_s"],
                   cpu_us_per_packet_hop=meas["cpu_us_per_packet_hop"],
                   stack_counters=meas["stack_counters"])
        # acked: the senders' bytes acked (every subflow's, tcp_info) over the window in
        # absolute time, beside iperf3's goodput and bwm-ng's wire bytes; MPTCP: the
        # connections' own counters too (data acked at the sender, data taken in order at
        # the receiver: mptcp_info), which say where subflow bytes and iperf3 differ
        results = tuple(FlowResult(FlowSpec(f.src, f.dst), f.iperf_mbps, model[f.src],
                                   len(f.subflows),
                                   {"bwm": f.bwm_mbps, "acked": f.acked_mbps,
                                    "msk_acked": f.msk_acked_mbps,
                                    "msk_received": f.msk_received_mbps})
                        for f in flows)
        return Measurement(self.name, phase, results,
                           {"cpu_mean": meas["cpu_mean"],
                            "cpu_saturated_share": meas["cpu_saturated_share"]}, fid)

    def run(self, w: Workload, out: Path) -> list[Measurement]:
        """Every phase on one network (``out``/<transport>); the network's facts recorded,
        each phase's fidelity report judged."""
        with session(w.topo, w.plan, self.params, out, f"{self.folder.id}-{w.rep}") as s:
            got = [self._phase(s, w, i, p, out / p.transport) for i, p in enumerate(w.phases)]
        self.folder.record(f"run{w.rep:02d}", s.facts)
        for m in got:
            assert m.report is not None
            judge(self.folder, m.report, f"run {w.rep} {m.phase.transport}")
        return got


register("emulated")(EmulatedBackend)
