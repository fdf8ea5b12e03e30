"""``dcrepro calibrate``: what one flow achieves on this machine, per topology and link rate.

Stored in <results>/calibration.json and shown beside every run's fidelity report, so a
user can tell a network effect (many flows sharing links) from an emulator limit (one flow
alone already misses the link rate).
"""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import routing
import topos
from analysis.fidelity import calibration_key
from emulator.emulation import Emulation
from emulator.shaping import LinkSpec
from harness.traffic import Flow, run_iperf
from model import goodput_capacity


def calibrate(topo_spec: str, rates: list[float], duration: float, trim: float,
              cc: str, out_root: Path, queue: int = 100,
              dataplane: str = "bpf") -> dict[str, Any]:
    """Measure one TCP flow across the longest host pair at each rate; store and return."""
    topo = topos.build(topo_spec)
    plan = routing.make_plan(topo, "ecmp")
    src, dst = topo.hosts()[0], topo.hosts()[-1]
    store_path = out_root / "calibration.json"
    store = json.loads(store_path.read_text()) if store_path.exists() else {}
    results = {}
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for bw in rates:
        run_dir = out_root / "calibration" / f"{stamp}-{bw:g}"
        with Emulation(topo, plan, LinkSpec(bw, queue), run_dir, f"cal-{stamp}-{bw:g}",
                       cc=cc, dataplane=dataplane) as emu:
            flows = [Flow(src, dst)]
            meas = run_iperf(emu, flows, "tcp", duration, trim, run_dir / "tcp")
        entry = {"utilisation": round(flows[0].iperf_mbps / bw, 4),
                 "payload_ceiling": round(goodput_capacity(bw) / bw, 4),
                 "cpu_mean": meas["cpu_mean"], "emulator_loss_share":
                 meas["emulator_loss_share"], "flow": f"{src}->{dst}", "cc": cc,
                 "duration": duration, "trim": trim, "measured_utc": stamp,
                 "kernel": os.uname().release, "dataplane": dataplane}
        results[calibration_key(topo.spec, bw, dataplane)] = entry
        print(f"calibration {topo.spec} at {bw:g} Mb/s ({dataplane}): one flow reaches "
              f"{entry['utilisation']:.3f} of the link (payload ceiling "
              f"{entry['payload_ceiling']:.3f}), CPU {meas['cpu_mean']}%", flush=True)
    store.update(results)
    out_root.mkdir(parents=True, exist_ok=True)
    store_path.write_text(json.dumps(store, indent=1, sort_keys=True))
    return results
