"""What every experiment's ``--backend sim`` shares: its parameters as a sim.spec.SimConfig,
one simulation of a set of long TCP flows, and the run-folder record of it.

The simulator is ns-3 (sim/, installed by ``setup.sh --with-sim``); its import takes 15-30 s
once per process, after which a simulation of one run takes what docs/sim.md measures.
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from emulator import aqm as aqm_spec
from harness.params import SimFlowParams
from routing.plan import Plan
from sim import require_ns3
from sim.spec import SimConfig, build
from topos.base import Topology


def sim_config(params: SimFlowParams, run: int, rto_min_ms: float | None = None,
               interval: float = 0.5) -> SimConfig:
    """The simulation parameters of repetition ``run`` (seed: the run's root seed, ns-3's
    run number: the repetition; ``interval``: the sampling interval), from an experiment's
    parameters."""
    return SimConfig(duration=params.duration, trim=params.trim, interval=interval,
                     bw=params.bw, queue=params.queue, cc=params.cc, rto_min_ms=rto_min_ms,
                     delay_us=params.delay_us, start_jitter_s=params.jitter,
                     packet_jitter_us=params.pkt_jitter_us, seed=params.seed, run=run + 1,
                     cnt_packets="cnt=packets" in sim_dataplane_options(params.dataplane))


def sim_queue(cfg: SimConfig, aqm: str, queue: int) -> SimConfig:
    """``cfg`` with the switch ports' AQM (``aqm`` in --aqm's form, on a ``queue`` of that
    many packets): ns-3's RedQueueDisc with the spec's thresholds, probability and weight,
    and hosts that ask for ECN, where it is red; tail drop else.  One-line ValueError for
    ECN marking at a fixed threshold, which is not simulated."""
    spec = aqm_spec.parse(aqm, queue)
    if spec.mode == "ecn":
        raise ValueError(f"AQM {spec.describe()}: ECN marking at a fixed threshold is not "
                         "simulated; use droptail or red with --backend sim")
    if spec.mode != "red":
        return cfg
    return replace(cfg, queue_disc="red", ecn=True, red_min=float(spec.min_th),
                   red_max=float(spec.max_th), red_p=spec.max_p, red_wlog=spec.wlog)


def sim_dataplane_options(dataplane: str) -> list[str]:
    """The options of a ``--dataplane`` spec the simulated switches honour (they forward as
    the BPF switch does): ``cnt=packets`` only; ValueError (one line) on any other."""
    opts = [o.strip() for o in dataplane.split(",")[1:]]
    other = [o for o in opts if o and o != "cnt=packets"]
    if other:
        raise ValueError(f"--dataplane option {other[0]!r} is not simulated (--backend sim "
                         "honours cnt=packets only)")
    return opts


def check_sim(params: SimFlowParams, rto_min_ms: float | None = None) -> None:
    """Checks of a run's simulation parameters (one-line ValueError), before anything runs:
    ns-3 installed, the configuration valid; and the simulation-only parameters unset for
    the emulator, which cannot honour them."""
    if params.backend == "sim":
        sim_queue(sim_config(params, 0, rto_min_ms), params.aqm, params.queue).check()
        require_ns3()     # after: a parameter ns-3 can never run is said first
        return
    if params.delay_us:
        raise ValueError("--delay-us is simulation-only (this kernel has no netem): use "
                         "--backend sim or leave it 0")
    if params.pkt_jitter_us:
        raise ValueError("--pkt-jitter-us is simulation-only: use --backend sim or leave it 0")
    if params.jitter:
        raise ValueError("--jitter is simulation-only (emulated flows start in a seeded "
                         "order): use --backend sim or leave it 0")


def simulate_flows(topo: Topology, plan: Plan, pairs: list[tuple[str, str]], cfg: SimConfig,
                   rng: random.Random, out: Path, watch_drops: list[tuple[str, str]] | None = None,
                   watch_rx: list[tuple[str, str]] | None = None,
                   forwarding: str | None = None,
                   progress: Callable[[float, float], None] | None = None) -> Any:
    """One simulation of ``pairs`` (``forwarding``: sim.spec.build's); writes sim.json
    (configuration, paths, per-port counters, each flow's packets per switch and next hop
    where the switches forward by the plan, wall time) into ``out`` and returns the
    sim.ns3run.SimResult."""
    from sim.ns3run import simulate
    net = build(topo, plan, pairs, cfg, rng, forwarding)
    res = simulate(net, cfg, watch_drops, watch_rx, progress)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sim.json").write_text(json.dumps({
        "config": asdict(cfg), "ns3": res.ns3_version, "wall_s": round(res.wall_s, 3),
        "import_s": round(res.import_s, 3), "routing": net.routing, "spray": net.spray,
        "forwarding": net.forwarding,
        "flows": [{"src": f.src, "dst": f.dst, "path": f.path, "rev_path": f.rev_path,
                   "start": f.start, "src_addr": f.src_addr, "src_port": f.src_port,
                   "dst_addr": f.dst_addr, "dst_port": f.port,
                   "spread": res.spread.get(f.index)} for f in net.flows],
        "ports": [asdict(p) for p in res.ports]}, indent=1))
    return res
