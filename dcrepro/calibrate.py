"""``dcrepro calibrate``: what one flow achieves on this machine, per topology and link rate.

Stored in <results>/calibration.json and shown beside every run's fidelity report, so a
user can tell a network effect (many flows sharing links) from an emulator limit (one flow
alone already misses the link rate).  ``dcrepro check`` (dcrepro/check.py) measures and
stores one entry the same way.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import routing
import topos
from analysis.fidelity import CALIBRATION_FILE, calibration_key
from emulator.emulation import Emulation
from emulator.shaping import LinkSpec
from harness.traffic import Flow, run_iperf
from model import goodput_capacity


def utc_stamp() -> str:
    """The calibration folders' and entries' time stamp, UTC."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def measure_flow(topo: topos.Topology, bw: float, duration: float, trim: float, cc: str,
                 run_dir: Path, run_id: str, stamp: str, queue: int = 100,
                 dataplane: str = "bpf") -> tuple[dict[str, Any], dict[str, Any], float]:
    """One TCP flow across the longest host pair of ``topo`` (ECMP) at ``bw`` Mb/s: its
    calibration entry, the measurement facts (harness/traffic.run_iperf's: CPU, losses,
    dequeue gaps, steal) and the network's bring-up time (s)."""
    src, dst = topo.hosts()[0], topo.hosts()[-1]
    with Emulation(topo, routing.make_plan(topo, "ecmp"), LinkSpec(bw, queue), run_dir,
                   run_id, cc=cc, dataplane=dataplane) as emu:
        flows = [Flow(src, dst)]
        meas = run_iperf(emu, flows, "tcp", duration, trim, run_dir / "tcp")
        bringup = emu.facts.bringup_s
    entry = {"utilisation": round(flows[0].iperf_mbps / bw, 4),
             "payload_ceiling": round(goodput_capacity(bw) / bw, 4),
             "cpu_mean": meas["cpu_mean"], "emulator_loss_share":
             meas["emulator_loss_share"], "flow": f"{src}->{dst}", "cc": cc,
             "duration": duration, "trim": trim, "measured_utc": stamp,
             "kernel": os.uname().release, "dataplane": dataplane}
    return entry, meas, bringup


def store(out_root: Path, results: dict[str, dict[str, Any]]) -> Path:
    """Add ``results`` (calibration_key -> entry) to <out_root>/calibration.json; its path."""
    store_path = out_root / CALIBRATION_FILE
    kept = json.loads(store_path.read_text()) if store_path.exists() else {}
    kept.update(results)
    out_root.mkdir(parents=True, exist_ok=True)
    store_path.write_text(json.dumps(kept, indent=1, sort_keys=True))
    return store_path


def calibrate(topo_spec: str, rates: list[float], duration: float, trim: float,
              cc: str, out_root: Path, queue: int = 100,
              dataplane: str = "bpf") -> dict[str, Any]:
    """Measure one TCP flow across the longest host pair at each rate; store and return."""
    topo = topos.build(topo_spec)
    results = {}
    stamp = utc_stamp()
    for bw in rates:
        entry, meas, _ = measure_flow(
            topo, bw, duration, trim, cc, out_root / "calibration" / f"{stamp}-{bw:g}",
            f"cal-{stamp}-{bw:g}", stamp, queue, dataplane)
        results[calibration_key(topo.spec, bw, dataplane)] = entry
        print(f"calibration {topo.spec} at {bw:g} Mb/s ({dataplane}): one flow reaches "
              f"{entry['utilisation']:.3f} of the link (payload ceiling "
              f"{entry['payload_ceiling']:.3f}), CPU {meas['cpu_mean']}%", flush=True)
    store(out_root, results)
    return results
