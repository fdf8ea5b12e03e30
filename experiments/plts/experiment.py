"""Packet-level traffic splitting vs ECMP (004_a477753408ad7b79.txt, Fig. 1 (a)-(c)).

A 6-pod fat tree (54 hosts) carries 27 long-lived TCP transfers over a seeded random pairing
in which every host is one sender or one receiver.  The same pairing runs under each scheme,
each on a freshly built network:

* ``ecmp``: one path per flow, chosen by a per-switch seeded hash of the 5-tuple;
* ``rnd``: a random next hop for every packet (``spray,mode=rnd``);
* ``cnt``: the next hop whose port this switch has sent the fewest bytes on (``spray,mode=cnt``);
* ``rr``: per-flow round robin over the next hops (``spray,mode=rr``).

Measured per flow: iperf3 goodput over the trimmed window, as a percentage of the ideal (the
payload ceiling of one host link: a perfect fabric gives every transfer 100 %), and the
sender's loss recovery: segments retransmitted inside the window (iperf3's intervals) and,
from tcp_info in the middle of the run (cumulative since the connection began), the
reorderings TCP detected, the DSACKs that reported spurious retransmissions, and the
reordering degree TCP had adapted to.  Measured in the datapath: the one-way latency of
sampled data segments from the ingress of their first switch to the ingress of their last
one (dataplanes/bpf/switch.bpf.c; the host links' own queues are not in it).

Differences from the paper, stated in every figure: the paper's ECMP ran RED/ECN queues;
this kernel has no RED qdisc, so every scheme uses the same tail-drop pfifo.  The paper's
TCP treated three duplicate ACKs as a loss; Linux today detects loss by time (RACK) and
adapts its reordering threshold.  ``--recovery classic`` runs the senders with RACK off and
the reordering threshold fixed at 3 (per host namespace), ``both`` runs each scheme twice.

``--backend model`` replaces the emulator by the flow model on the same plans: ECMP flows on
hash-chosen paths, sprayed flows split evenly over every equal-cost path, max-min fair rates.
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import routing
import topos
from analysis.fidelity import report
from emulator import dataplanes
from emulator.dataplane import LatencySampling, Spread
from emulator.emulation import Emulation
from emulator.proc import RunError
from harness.common import add_backend, add_shared, run_rng
from harness.params import FlowParams
from harness.runfolder import RunFolder
from harness.session import judge, session
from harness.trace import trace_flows
from harness.traffic import BASE_PORT, Flow, loss_fields, run_iperf
from model.flowmodel import goodput_capacity
from model.network import rates_on_paths, route_by_hash, split_rates, synthetic_subflows
from routing.walk import split
from store import write_csv
from topos.traffic import pairing

#: 5 Mb/s links: on this 2-core machine 10 Mb/s kept the CPU above 90 % for the sprayed
#: schemes (96-98 % mean; ECMP 71 %), 5 Mb/s at 37-58 % with every dequeue-gap share >= 96 %
#: (README, "plts").  The paper's claims are relative to the ideal, so the rate is a scale.
NAME = "plts"
HELP = ("packet spraying (random, least-sent counter, round robin) vs ECMP on a 6-pod fat "
        "tree: throughput, packet latency, reordering")
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`004_…` Fig. 1 (a)–(c): ECMP vs per-packet spraying (random, least-sent counter, '
         'round robin) on a k=6 fat tree, 27 TCP transfers: % of ideal, packet latency (in '
         'the datapath), per-flow throughput, reordering; `--recovery classic` for the '
         "paper's TCP")
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/plts-sweep.sh"
#: what the dataplane must offer besides forwarding (emulator/dataplane.py): the latency
#: samples and the per-packet split of every flow (spraying itself is checked by the plan's
#: modes)
NEEDS = frozenset({"latency_sampling", "spread"})


@dataclass(frozen=True)
class PltsParams(FlowParams):
    """The parameters of one plts run (their flags: add_arguments)."""

    topo: str = "fattree,k=6"
    schemes: str = "ecmp,rnd,cnt,rr"
    bw: float = 5.0
    trim: float = 10.0
    runs: int = 3
    recovery: str = "modern"
    sample: int = 64
    backend: str = "emulated"
    dataplane: str = "bpf"


PARAMS = PltsParams
#: name -> default (the flags' help and the README's view)
DEFAULTS = PARAMS.defaults()
QUICK: dict[str, Any] = {"duration": 20.0, "trim": 4.0, "runs": 1}

#: scheme -> routing spec
SCHEMES = {"ecmp": "ecmp", "rnd": "spray,mode=rnd", "cnt": "spray,mode=cnt",
           "rr": "spray,mode=rr"}
#: recovery -> sysctls set in every host namespace (all three are per namespace)
RECOVERY: dict[str, dict[str, str]] = {
    "modern": {},
    # RACK off: loss is inferred from duplicate ACKs again; the reordering degree starts at 3
    # and may not grow (max 3): the three-duplicate-ACK rule of the paper's TCP
    "classic": {"net.ipv4.tcp_recovery": "0", "net.ipv4.tcp_reordering": "3",
                "net.ipv4.tcp_max_reordering": "3"},
}


def add_arguments(p: Any) -> None:
    """Shared flags plus the schemes, the loss recovery and the latency sampling rate."""
    add_shared(p, DEFAULTS, QUICK)
    add_backend(p)
    p.add_argument("--schemes", default=None,
                   help=f"comma list of {', '.join(SCHEMES)} (default: {DEFAULTS['schemes']})")
    p.add_argument("--recovery", default=None, choices=[*RECOVERY, "both"],
                   help="TCP loss recovery of the senders: modern (Linux defaults: RACK, "
                        "adaptive reordering), classic (three duplicate ACKs, as the "
                        "paper's TCP), or both (default: modern)")
    p.add_argument("--sample", type=int, default=None,
                   help="sample one TCP data segment in about N for packet latency; 0 = off "
                        f"(default: {DEFAULTS['sample']})")


def schemes(params: PltsParams) -> list[str]:
    """The run's schemes, in the order given."""
    return [s.strip() for s in str(params.schemes).split(",") if s.strip()]


def recoveries(params: PltsParams) -> list[str]:
    """The run's recovery settings (the model has no TCP, so only 'modern' there)."""
    if params.backend == "model":
        return ["modern"]
    return list(RECOVERY) if params.recovery == "both" else [params.recovery]


def validate(params: PltsParams) -> None:
    """One-line ValueError for anything this experiment cannot run."""
    names = schemes(params)
    bad = [s for s in names if s not in SCHEMES]
    if bad or not names or len(set(names)) != len(names):
        raise ValueError(f"--schemes {params.schemes!r}: use a comma list of distinct "
                         f"{', '.join(SCHEMES)}")
    if params.recovery not in (*RECOVERY, "both"):
        raise ValueError(f"--recovery must be modern, classic or both, got "
                         f"{params.recovery!r}")
    if params.sample < 0:
        raise ValueError(f"--sample must be >= 0, got {params.sample}")
    if params.backend == "emulated":
        dp = dataplanes.make(params.dataplane)
        dp.check_needs("plts", NEEDS)
        for s in names:
            dp.check_modes(SCHEMES[s], routing.modes(SCHEMES[s]))
    topo = topos.build(params.topo)
    if len(topo.hosts()) < 2:
        raise ValueError(f"--topo {params.topo} has fewer than two hosts")
    # spraying spreads a flow over equal-cost paths: a network with one path between every
    # pair of hosts has nothing to compare
    plan = routing.make_plan(topo, "ecmp")
    hosts = topo.hosts()
    if all(len(split(topo, plan, hosts[0], d)) < 2 for d in hosts[1:]):
        raise ValueError(f"--topo {params.topo}: one path between its hosts, so spraying "
                         "and ECMP cannot differ (use a fat tree with k >= 4)")


def _row(run: int, scheme: str, recovery: str, src: str, dst: str, ideal: float,
         mbps: float, model: float, **extra: Any) -> dict[str, Any]:
    return {"run": run, "scheme": scheme, "recovery": recovery, "src": src, "dst": dst,
            "ideal_mbps": round(ideal, 4), "mbps": round(mbps, 4),
            "pct_ideal": round(100 * mbps / ideal, 3), "model_mbps": round(model, 4), **extra}


def model_rates(topo: topos.Topology, plan: routing.Plan, scheme: str, bw: float,
                pairs: dict[str, str], routed: list[dict[str, Any]] | None = None,
                rng: random.Random | None = None) -> dict[str, float]:
    """Flow-model rate of every flow: ECMP on the given (traced) or hash-chosen paths,
    spraying split evenly over every path of the plan."""
    if scheme != "ecmp":
        return split_rates(topo, bw, {s: split(topo, plan, s, d) for s, d in pairs.items()},
                           pairs)
    if routed is None:
        assert rng is not None
        routed = route_by_hash(topo, plan, pairs, synthetic_subflows(topo, pairs, 1, rng))
    return rates_on_paths(topo, bw, pairs, routed)


def set_recovery(emu: Emulation, recovery: str) -> dict[str, str]:
    """Set the recovery sysctls in every host namespace; return them as read back in one."""
    values = RECOVERY[recovery]
    hosts = emu.topo.hosts()
    if values:
        emu.hosts_cmd(hosts, ["sysctl", "-qw", *(f"{k}={v}" for k, v in values.items())])
    keys = ["net.ipv4.tcp_recovery", "net.ipv4.tcp_reordering", "net.ipv4.tcp_max_reordering"]
    got = emu.hosts_cmd(hosts[:1], ["sysctl", "-n", *keys])[hosts[0]].split()
    seen = dict(zip(keys, got))
    wrong = {k: seen.get(k) for k, v in values.items() if seen.get(k) != v}
    if wrong:
        raise RunError(f"host {hosts[0]} kept {wrong} after setting {values}")
    return seen


def latency_rows(samples: list[dict[str, Any]], flows: list[Flow], trim: float,
                 duration: float, mono_to_wall: float,
                 base: dict[str, Any]) -> list[dict[str, Any]]:
    """Samples of each flow's data connection inside its measurement window, as rows."""
    by_tuple = {}
    for f in flows:
        sub = f.subflows[0]
        by_tuple[(sub["src_ip"], sub["dst_ip"], int(sub["src_port"]), int(sub["dst_port"]))] = f
    rows = []
    for s in samples:
        flow = by_tuple.get((s["saddr"], s["daddr"], s["sport"], s["dport"]))
        if flow is None:
            continue  # iperf3's control connection
        at = s["at_ns"] / 1e9 + mono_to_wall
        if flow.start + trim <= at <= flow.start + duration - trim:
            rows.append({**base, "src": flow.src, "dst": flow.dst,
                         "latency_us": round(s["latency_ns"] / 1000, 2)})
    return rows


def emulate(params: PltsParams, topo: topos.Topology, scheme: str, recovery: str,
            pairs: dict[str, str], run_dir: Path, run_id: str, r: int,
            folder: RunFolder) -> tuple[list[dict], list[dict]]:
    """One scheme under one recovery setting on a fresh network: flow rows, latency rows."""
    plan = routing.make_plan(topo, SCHEMES[scheme])
    bw, duration, trim = params.bw, params.duration, params.trim
    ideal = goodput_capacity(bw)
    with session(topo, plan, params, run_dir, run_id, scheme) as s:
        emu = s.emu
        dp = emu.dataplane
        # validate checked the dataplane offers both (NEEDS)
        assert isinstance(dp, LatencySampling) and isinstance(dp, Spread), dp
        s.facts["recovery_sysctls"] = set_recovery(emu, recovery)
        dp.sample_latency(params.sample)
        flows = [Flow(src, dst) for src, dst in pairs.items()]
        s.flows = flows
        meas = run_iperf(emu, flows, "tcp", duration, trim, run_dir, port=BASE_PORT)
        samples, sampling = dp.latency_samples()
        mono_to_wall = time.time() - time.monotonic()
        if scheme == "ecmp":
            routed = trace_flows(emu, flows)
            (run_dir / "paths.json").write_text(json.dumps(routed, indent=1))
        else:
            routed = None
            spread = {f"{f.src}->{f.dst}": dp.spread(emu, f.src, f.dst, f.subflows[0])
                      for f in flows}
            (run_dir / "spread.json").write_text(json.dumps(spread, indent=1))
    facts = s.facts
    facts["latency_sampling"] = sampling
    folder.record(f"run{r:02d}-{recovery}-{scheme}", facts)
    model = model_rates(topo, plan, scheme, bw, pairs, routed)
    fid = report({f.src: f.iperf_mbps for f in flows}, model, bw, meas["cpu_saturated_share"],
                 None, meas["emulator_loss_share"], meas["dequeue_gaps"],
                 meas["measurement_note"],
                 tcp_limits=meas["tcp_limits"], apart_note=meas["apart_note"])
    fid.update(run=r, scheme=scheme, recovery=recovery, cpu_mean=meas["cpu_mean"],
               latency_sampling=sampling, **loss_fields(meas))
    (run_dir / "fidelity.json").write_text(json.dumps(fid, indent=1))
    judge(folder, fid, f"run {r} {recovery} {scheme}")
    rows = []
    for f in flows:
        tcp = f.subflows[0]
        rows.append(_row(r, scheme, recovery, f.src, f.dst, ideal, f.iperf_mbps, model[f.src],
                         retrans=f.retransmits,
                         **{k: tcp.get(k, "") for k in ("reord_seen", "dsack_dups",
                                                        "reordering")},
                         cpu_mean=meas["cpu_mean"],
                         cpu_saturated_share=meas["cpu_saturated_share"],
                         emulator_loss_share=meas["emulator_loss_share"]))
    base = {"run": r, "scheme": scheme, "recovery": recovery}
    lats = latency_rows(samples, flows, trim, duration, mono_to_wall, base)
    if params.sample and not lats:
        raise RunError(f"{scheme}: no latency sample inside the measurement window "
                       f"({sampling})")
    return rows, lats


def run(params: PltsParams, folder: RunFolder) -> None:
    """Every run: one pairing, every recovery setting, every scheme."""
    rows: list[dict[str, Any]] = []
    lats: list[dict[str, Any]] = []
    emulated = params.backend == "emulated"
    ideal = goodput_capacity(params.bw)
    for r in range(params.runs):
        rng = run_rng(params.seed, r)
        topo = topos.build(params.topo)
        pairs = dict(pairing(topo.hosts(), rng))
        run_dir = folder.path / f"run{r:02d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "pairs.json").write_text(json.dumps(pairs, indent=1))
        for recovery in recoveries(params):
            for i, scheme in enumerate(schemes(params)):
                folder.log.info("run %d: %s, %s, %s recovery", r, topo.spec, scheme, recovery)
                if not emulated:
                    plan = routing.make_plan(topo, SCHEMES[scheme])
                    model = model_rates(topo, plan, scheme, params.bw, pairs, rng=rng)
                    rows += [_row(r, scheme, recovery, s, d, ideal, model[s], model[s])
                             for s, d in pairs.items()]
                    continue
                new_rows, new_lats = emulate(
                    params, topo, scheme, recovery, pairs, run_dir / f"{recovery}-{scheme}",
                    f"{folder.id}-{r}-{recovery[0]}{i}", r, folder)
                rows += new_rows
                lats += new_lats
    write_csv(folder.path / "flows.csv", rows)
    if emulated:
        write_csv(folder.path / "latency.csv", lats)
