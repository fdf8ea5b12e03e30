"""Fairness of Jellyfish vs fat tree (Jellyfish paper Fig. 2 as reproduced in
000_b87022286e416fdf.txt): a random permutation on two topologies, MPTCP on both, fat tree
routed by ECMP and Jellyfish by k shortest paths; normalized throughput vs rank of flow.

Every run builds a fresh seeded Jellyfish and a fresh permutation matrix (both drawn from the
run's RNG, so the emulated and the model backend see the same graphs and traffic for a seed).
``--backend emulated`` runs the traffic in Mininet (root); ``--backend model`` routes synthetic
MPTCP subflows through the SAME routing plans (routing.walk with a per-switch CRC32 of the
5-tuple, model/network.py) and computes rates with the flow-level model, which is how the paper
scale (k=10 fat tree, 250+ servers) is reached on this machine.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import routing
import topos
from analysis.fidelity import gap_share, measurement_reasons
from emulator.emulation import Emulation
from emulator.proc import RunError
from harness.common import add_backend, add_shared, run_rng, transports
from harness.params import FlowParams
from harness.runfolder import RunFolder
from harness.sampling import Sampler
from harness.session import session
from harness.trace import trace_flows
from harness.traffic import BASE_PORT, Flow, check_subflows, counter_delta, port_counters, run_iperf
from model import TCP_LIKE, alpha_fair_rates, connection_rates, lia_subflow_rates, maxmin_rates
from model.network import capacities, path_links, route_by_hash, synthetic_subflows
from topos.base import Topology, TopologyError
from topos.jellyfish import path_length_distribution
from topos.spec import Spec
from topos.traffic import permutation as traffic_permutation

NAME = "fairness"
HELP = ("Jellyfish + k-shortest paths vs fat tree + ECMP, MPTCP on both: normalized throughput "
        "vs rank of flow (Jellyfish paper, Fig. 2)")
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`000_…` Fig. 6 (Jellyfish paper Fig. 1/2): MPTCP, fat tree + ECMP vs Jellyfish + '
         'k-shortest paths, rank of flow, path lengths, per-layer utilisation')
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/jellyfish-sweep.sh"
#: other figures of the same script
SWEEP_NOTE = '`--paper`: k=10 vs 125-switch Jellyfish through the model'


@dataclass(frozen=True)
class FairnessParams(FlowParams):
    """The parameters of one fairness run (their flags: add_arguments)."""

    fattree: str = "fattree,k=4"
    jellyfish: str = "jellyfish,switches=20,ports=4,hosts=16"
    k: int = 4
    backend: str = "emulated"
    grow: int | None = None
    extra_servers: float = 0.0
    aggregate: str = "auto"
    tcp_model: str = "propfair"
    bw: float = 15.0
    runs: int = 8
    transport: str = "mptcp"
    subflows: int = 8


PARAMS = FairnessParams
QUICK: dict[str, Any] = {"duration": 12.0, "trim": 3.0, "runs": 2}
#: aggregate (coupled, LP) model rates cost ~100 s per 250-host permutation; "auto" = small only
AGGREGATE_AUTO_MAX_HOSTS = 64
#: links are grouped by the layers of their two ends, in this order
LAYER_ORDER = ("host", "edge", "tor", "agg", "core", "switch")


def add_arguments(p: Any) -> None:
    """Shared flags plus the two topologies, ksp's k, the backend and the growth options."""
    add_shared(p, PARAMS, QUICK)
    p.add_argument("--fattree", default=None,
                   help=f"fat tree spec, routed by ecmp (default: {PARAMS.fattree})")
    p.add_argument("--jellyfish", default=None,
                   help="Jellyfish spec, routed by ksp; its seed is replaced by a per-run seed "
                   f"drawn from --seed (default: {PARAMS.jellyfish})")
    p.add_argument("--k", type=int, default=None,
                   help="paths of k-shortest-path routing (default: 4, as the reproduction "
                   "used on its 20-switch graph; the Jellyfish authors used 8 at paper scale)")
    add_backend(p)
    p.add_argument("--grow", type=int, default=None,
                   help="switches added to every Jellyfish by incremental expansion "
                   "(overrides the spec's grow=; default: the spec's)")
    p.add_argument("--extra-servers", type=float, default=None,
                   help="also run a Jellyfish with this fraction more servers on the same "
                   "switches, e.g. 0.12 as the Jellyfish paper compares (default: 0 = no)")
    p.add_argument("--aggregate", choices=("auto", "on", "off"), default=None,
                   help="model rates with coupled (aggregate max-min, LP) MPTCP besides "
                   f"independent subflows; auto = only up to {AGGREGATE_AUTO_MAX_HOSTS} hosts "
                   "(default: auto)")
    p.add_argument("--tcp-model", choices=(*TCP_LIKE, "off"), default=None,
                   help="the TCP-like model shown beside max-min on the same paths: propfair "
                   "(proportional fairness, alpha = 1) or mpd (alpha = 2, Reno's allocation "
                   "at equal round-trip times); off = max-min only (default: propfair)")


def validate(params: FairnessParams) -> None:
    """Experiment-specific checks (one-line ValueError), before anything is built."""
    ft = topos.parse(params.fattree)
    if ft.name != "fattree":
        raise ValueError(f"--fattree must be a fattree spec, got '{params.fattree}'")
    jf = topos.parse(params.jellyfish)
    if jf.name != "jellyfish":
        raise ValueError(f"--jellyfish must be a jellyfish spec, got '{params.jellyfish}'")
    if params.k < 1:
        raise ValueError(f"--k must be >= 1, got {params.k}")
    if params.grow is not None and params.grow < 0:
        raise ValueError(f"--grow must be >= 0, got {params.grow}")
    if not 0 <= params.extra_servers <= 1:
        raise ValueError(f"--extra-servers must be a fraction in [0, 1], got "
                         f"{params.extra_servers}")
    if params.aggregate not in ("auto", "on", "off"):
        raise ValueError(f"--aggregate must be auto, on or off, got '{params.aggregate}'")
    if params.tcp_model not in (*TCP_LIKE, "off"):
        raise ValueError(f"--tcp-model must be one of {', '.join(TCP_LIKE)} or off, got "
                         f"'{params.tcp_model}'")
    if len(transports(params)) != 1:
        raise ValueError("--transport: give one transport (mptcp or tcp) for this experiment")
    for label, spec in jellyfish_variants(params).items():
        _buildable(label, spec)


def jellyfish_variants(params: FairnessParams) -> dict[str, Spec]:
    """label -> Jellyfish spec (seed still to be drawn): the base one and the one with more
    servers on the same switches (when --extra-servers > 0)."""
    base = topos.parse(params.jellyfish)
    p = dict(base.params)
    if params.grow is not None:
        p["grow"] = params.grow
    out = {"jellyfish": Spec("jellyfish", p)}
    extra = params.extra_servers or 0.0
    more = int(round(p["hosts"] * (1 + extra)))
    if extra > 0 and more > p["hosts"]:
        out["jellyfish-more"] = Spec("jellyfish", {**p, "hosts": more})
    return out


def _buildable(label: str, spec: Spec) -> None:
    """Raise ValueError unless the spec builds for some seed (sizes, ports, addresses)."""
    err: Exception | None = None
    for seed in range(5):
        try:
            topos.build(Spec(spec.name, {**spec.params, "seed": seed}))
            return
        except TopologyError as exc:
            err = exc
    raise ValueError(f"{label} '{spec}' cannot be built: {err}")


def draw_jellyfish(spec: Spec, rng: Any, tries: int = 20) -> Topology:
    """The Jellyfish of ``spec`` with a seed drawn from ``rng`` (redrawn if disconnected)."""
    for _ in range(tries):
        seed = rng.randrange(1, 2**31)
        try:
            return topos.build(Spec(spec.name, {**spec.params, "seed": seed}))
        except TopologyError as exc:
            if "disconnected" not in str(exc):
                raise
    raise RunError(f"jellyfish '{spec}': {tries} seeds in a row gave disconnected graphs")


def permutation(topo: Topology, rng: Any, cache: dict[int, list[int]]) -> dict[str, str]:
    """A permutation matrix by host index; topologies of equal size share it within a run."""
    hosts = topo.hosts()
    n = len(hosts)
    if n not in cache:
        cache[n] = [d for _, d in traffic_permutation(range(n), rng)]
    return {hosts[i]: hosts[j] for i, j in enumerate(cache[n])}


def link_class(topo: Topology, u: str, v: str) -> str:
    """Layer pair of a link, e.g. edge-agg, agg-core, host-tor, tor-tor."""
    def layer(n: str) -> str:
        node = topo.node(n)
        return "host" if node.kind == "host" else node.attrs.get("layer", "switch")
    a, b = sorted((layer(u), layer(v)), key=LAYER_ORDER.index)
    return f"{a}-{b}"


def run_networks(params: FairnessParams, r: int, ft: tuple[Topology, Any]
                 ) -> tuple[list[tuple[str, Topology, Any, dict[str, str]]], dict[str, Any]]:
    """Topologies, plans and permutations of repetition ``r``, plus synthetic 5-tuples.

    The draw order is fixed (Jellyfish seeds, permutations, then source ports) so both
    backends see identical networks and traffic for the same --seed.
    """
    rng = run_rng(params.seed, r)
    nets = [("fattree", ft[0], ft[1])]
    for label, spec in jellyfish_variants(params).items():
        topo = draw_jellyfish(spec, rng)
        nets.append((label, topo, routing.make_plan(topo, f"ksp,k={params.k}")))
    cache: dict[int, list[int]] = {}
    out = [(label, topo, plan, permutation(topo, rng, cache)) for label, topo, plan in nets]
    nsub = params.subflows if transports(params)[0] == "mptcp" else 1
    tuples = {label: synthetic_subflows(topo, pairs, nsub, rng, BASE_PORT)
              for label, topo, _, pairs in out}
    return out, tuples


def _solved(solve: Callable[[], Any]) -> Any:
    """A TCP-like model's rates, or NaN rates (logged) when its solver gives up: the run's
    measurements stay, and the claims on that model say 'not measured'."""
    try:
        return solve()
    except RuntimeError as exc:
        import logging
        logging.getLogger("dcrepro").warning("TCP-like model left out: %s", exc)
        return None


def model_rates(topo: Topology, plan: Any, pairs: dict[str, str],
                tuples: dict[str, list[dict[str, Any]]], bw: float, aggregate: bool,
                tcp_model: str = "off",
                routed: list[dict[str, Any]] | None = None
                ) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], float],
                           list[dict[str, Any]]]:
    """Per connection (keyed by source): max-min rate, aggregate rate, the TCP-like model's
    rate (``tcp_model``: a name of model.TCP_LIKE, or off) with uncoupled and with coupled
    subflows, LIA's own equilibrium (with the TCP-like models), paths; per link: load; per
    subflow: its path and the models' rates.
    ``routed``: the paths the datapath traced (else each 5-tuple is hashed through the plan)."""
    if routed is None:
        routed = route_by_hash(topo, plan, pairs, tuples)
    else:   # a connection with no traced subflow (never connected): its hashed 5-tuples
        have = {rt["src"] for rt in routed}
        lost = {s: d for s, d in pairs.items() if s not in have}
        routed = routed + route_by_hash(topo, plan, lost, tuples) if lost else routed
    caps = capacities(topo, bw)
    srcs = list(pairs)
    conns: dict[str, list[list[tuple[str, str]]]] = {s: [] for s in srcs}
    for rt in routed:
        conns[rt["src"]].append(path_links(rt["src"], rt["path"], rt["dst"]))
    flows = [conns[s] for s in srcs]
    rates = connection_rates(caps, flows, mode="independent")
    agg = connection_rates(caps, flows, mode="aggregate") if aggregate else None
    # uncoupled, as cubic's subflows are; coupled (utility of each connection's total), the
    # resource pooling that LIA (--cc lia) aims at
    alpha = TCP_LIKE.get(tcp_model)
    paths = [p for s in srcs for p in conns[s]]
    tcp_sub = _solved(lambda: alpha_fair_rates(caps, [[p] for p in paths], alpha)) \
        if alpha else None
    tcp_c = _solved(lambda: alpha_fair_rates(caps, flows, alpha, coupled=True)) \
        if alpha else None
    # what LIA itself settles at on these paths (its fluid equilibrium): it moves traffic
    # toward the pooled allocation above only in part; computed with the TCP-like models
    lia_sub = _solved(lambda: lia_subflow_rates(caps, flows)) if alpha else None
    # per-link load from the same max-min allocation (one rate per subflow)
    sub = maxmin_rates(caps, paths)
    load = dict.fromkeys(caps, 0.0)
    for p, rate in zip(paths, sub):
        for link in p:
            load[link] += float(rate)
    out, subs, i = {}, [], 0
    for n, s in enumerate(srcs):
        mine = [rt for rt in routed if rt["src"] == s]
        tcp = lia = 0.0
        for rt in mine:
            tcp += float(tcp_sub[i]) if tcp_sub is not None else float("nan")
            lia += float(lia_sub[i]) if lia_sub is not None else float("nan")
            subs.append({"src": s, "dst": pairs[s], **rt.get("five_tuple", {}),
                         "path": ">".join(rt["path"]), "links": len(rt["path"]) + 1,
                         "model_mbps": round(float(sub[i]), 4),
                         "model_tcp_mbps": round(float(tcp_sub[i]), 4)
                         if tcp_sub is not None else float("nan"),
                         "model_lia_mbps": round(float(lia_sub[i]), 4)
                         if lia_sub is not None else float("nan")})
            i += 1
        out[s] = {"mbps": float(rates[n]),
                  "aggregate_mbps": float(agg[n]) if agg is not None else float("nan"),
                  "tcp_mbps": tcp if tcp_sub is not None else float("nan"),
                  "tcp_coupled_mbps": float(tcp_c[n]) if tcp_c is not None else float("nan"),
                  "lia_mbps": lia if lia_sub is not None else float("nan"),
                  "paths": len({tuple(p) for p in conns[s]})}
    return out, load, subs


def _aggregate_wanted(params: FairnessParams, topo: Topology) -> bool:
    mode = params.aggregate
    return mode == "on" or (mode == "auto" and len(topo.hosts()) <= AGGREGATE_AUTO_MAX_HOSTS)


def path_length_rows(r: int, label: str, topo: Topology) -> list[dict[str, Any]]:
    """Share of ordered host pairs at each path length (links, host links included)."""
    dist = path_length_distribution(topo, max_hops=6)
    return [{"run": r, "topology": label, "spec": topo.spec, "hops": h,
             "share": round(share, 6)} for h, share in dist.items()]


# -- emulated backend -----------------------------------------------------------------------

@dataclass
class CounterWindow:
    """Port counters at the start and end of the trimmed measurement window (or why not)."""

    before: Any = None
    after: Any = None
    window_s: float = 0.0
    error: str | None = None


def counter_sampler(emu: Emulation, flows: list[Flow], duration: float,
                    trim: float) -> Sampler[Any]:
    """Port counter snapshots at max(start) + trim and min(start) + duration - trim, the
    window the rates are taken over, once run_iperf has started every client."""
    def window() -> list[float] | None:
        if not all(f.start for f in flows):
            return None
        return [max(f.start for f in flows) + trim, min(f.start for f in flows) + duration - trim]
    return Sampler("port counter", lambda: port_counters(emu), schedule=window)


def counter_window(sampler: Sampler[Any]) -> CounterWindow:
    """The two snapshots of a finished counter sampler (its error kept, not raised: the
    utilisation rows are then left out and the fact recorded)."""
    sampler.join(timeout=30)            # the end snapshot is due before traffic ends
    try:
        got = sampler.stop()
    except RunError as exc:
        return CounterWindow(error=str(exc))
    if len(got) < 2:
        return CounterWindow(error="the window closed before both snapshots")
    (t0, before), (t1, after) = got[0], got[-1]
    return CounterWindow(before, after, t1 - t0)


def measured_link_rows(topo: Topology, window: CounterWindow, bw: float, r: int,
                       label: str) -> list[dict[str, Any]]:
    """Utilisation of every directed link over the window (switch tx; host uplinks by rx)."""
    rows: list[dict[str, Any]] = []
    if window.before is None or window.after is None or window.window_s <= 0:
        return rows
    for d in counter_delta(window.before, window.after):
        sw, port = d["switch"], d["port"]
        peer = topo.ports(sw)[port][0]
        cap = topo.link_bw(sw, peer, bw) * 1e6 * window.window_s / 8
        dirs = [(sw, peer, d["tx_bytes"])]
        if not topo.is_switch(peer):
            dirs.append((peer, sw, d["rx_bytes"]))
        for u, v, nbytes in dirs:
            rows.append({"run": r, "topology": label, "source": "measured", "u": u, "v": v,
                         "layer": link_class(topo, u, v), "bytes": nbytes,
                         "util": round(nbytes / cap, 5),
                         "drops": d["qdisc_drops"] if (u, v) == (sw, peer) else ""})
    return rows


def model_link_rows(topo: Topology, load: dict[tuple[str, str], float], bw: float, r: int,
                    label: str) -> list[dict[str, Any]]:
    """Model utilisation of every directed link (load / link rate; payload, so <= 0.96)."""
    return [{"run": r, "topology": label, "source": "model", "u": u, "v": v,
             "layer": link_class(topo, u, v), "util": round(mbps / topo.link_bw(u, v, bw), 5)}
            for (u, v), mbps in sorted(load.items())]


def emulate(params: FairnessParams, label: str, topo: Topology, plan: Any,
            pairs: dict[str, str], run_dir: Path, run_id: str,
            r: int) -> tuple[list[Flow], dict[str, Any], list[dict[str, Any]], dict[str, Any],
                             list[dict[str, Any]]]:
    """One topology of one run in Mininet: flows, measurement facts, link rows, facts, and
    every (sub)flow's path as the datapath traced it."""
    transport = transports(params)[0]
    timing: dict[str, Any] = {}
    with session(topo, plan, params, run_dir, run_id, label) as s:   # (bringup_s: its facts)
        emu = s.emu
        t = time.monotonic()
        if transport == "mptcp":
            timing.update(emu.configure_mptcp(params.subflows))
        timing["ping_and_config_s"] = round(time.monotonic() - t + s.facts["ping_s"], 2)
        flows = [Flow(src, dst) for src, dst in pairs.items()]
        s.flows = flows
        sampler = counter_sampler(emu, flows, params.duration, params.trim)
        sampler.start()
        t = time.monotonic()
        try:
            meas = run_iperf(emu, flows, transport, params.duration, params.trim,
                             run_dir / transport, port=BASE_PORT,
                             subflows=params.subflows if transport == "mptcp" else None)
        except BaseException:
            sampler.stop_quietly()
            raise
        window = counter_window(sampler)
        timing["traffic_s"] = round(time.monotonic() - t, 2)
        if meas["bwm_incomplete"]:  # bwm-ng is this experiment's measurement (as the paper's)
            raise RunError(f"{label}: {meas['measurement_note']}: the bwm-ng data this "
                           "experiment plots is incomplete")
        if transport == "mptcp":
            timing.update(check_subflows(flows, params.subflows))
        t = time.monotonic()
        traced = trace_flows(emu, flows)      # the model's paths: the datapath's, not a hash
        timing["trace_s"] = round(time.monotonic() - t, 2)
    facts = s.facts
    facts.update(timing, spec=topo.spec, routing=plan.routing, counter_window_s=round(
        window.window_s, 2), counter_error=window.error, cpu_mean=meas["cpu_mean"],
        cpu_saturated_share=meas["cpu_saturated_share"],
        emulator_loss_share=meas["emulator_loss_share"], backlog_drops=meas["backlog_drops"],
        dequeue_gaps=meas["dequeue_gaps"],
        tcp_limits=meas["tcp_limits"], restarts=meas["restarts"],
        subflow_wait=meas["subflow_wait"])
    links = measured_link_rows(topo, window, params.bw, r, label)
    return flows, meas, links, facts, traced


def subflow_rates(samples: Path, flows: list[Flow], duration: float,
                  trim: float) -> dict[tuple[str, int], dict[str, float]]:
    """Per (sub)flow socket, keyed by (source address, port): its goodput (bytes acked, from
    the tcp_info samples, over its flow's trimmed window) and its median smoothed RTT."""
    from store import read_csv
    window = {f.src: (f.start + trim, f.start + duration - trim) for f in flows}
    by: dict[tuple[str, int], list[dict[str, str]]] = {}
    for row in read_csv(samples) if samples.is_file() else []:
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


# -- the experiment -------------------------------------------------------------------------

def run(params: FairnessParams, folder: RunFolder) -> None:
    """All repetitions, on the emulator or on the flow model (``--backend``)."""
    if params.backend == "emulated":
        run_emulated(params, folder)
    else:
        run_model(params, folder)


def _networks(params: FairnessParams, folder: RunFolder, r: int,
              ft: tuple[Topology, Any]) -> tuple[list[tuple[str, Topology, Any, dict[str, str]]],
                                                 dict[str, Any], float, Path]:
    """Repetition ``r``'s two networks and permutations, recorded in its folder: (networks,
    the model's synthetic subflows per network, seconds the plans took, the folder)."""
    t = time.monotonic()
    nets, tuples = run_networks(params, r, ft)
    plan_s = round(time.monotonic() - t, 2)
    run_dir = folder.path / f"run{r:02d}"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "networks.json").write_text(json.dumps(
        {label: {"spec": topo.spec, "routing": plan.routing, "permutation": pairs}
         for label, topo, plan, pairs in nets}, indent=1))
    for label, topo, plan, pairs in nets:
        folder.log.info("run %d %s: %s, %s, permutation %s", r, label, topo.spec,
                        plan.routing, pairs)
    return nets, tuples, plan_s, run_dir


def _base_row(r: int, label: str, topo: Topology, plan: Any) -> dict[str, Any]:
    return {"run": r, "topology": label, "spec": topo.spec, "routing": plan.routing,
            "servers": len(topo.hosts())}


def _fat_tree(params: FairnessParams) -> tuple[Topology, Any]:
    topo = topos.build(params.fattree)
    return topo, routing.make_plan(topo, "ecmp")


#: what one network of one repetition gives the tables: its flow, link and subflow rows
_NetworkRows = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]
#: how one network of one repetition is measured: (repetition, label, topology, plan,
#: permutation, the model's synthetic subflows, seconds the plans took, its folder, the
#: columns every row of it carries) -> its rows
_MeasureNetwork = Callable[[int, str, Topology, Any, dict[str, str], dict[str, Any], float, Path,
                    dict[str, Any]], _NetworkRows]


def _repetitions(params: FairnessParams, folder: RunFolder, measure: _MeasureNetwork,
                 summarize: Callable[[list[dict[str, Any]]], None]) -> list[dict[str, Any]]:
    """Every repetition: both networks, fresh plans and permutation, each measured by
    ``measure``; after each repetition every table so far is on disk (links.csv,
    path_lengths.csv and ``summarize``'s).  Returns the flow rows."""
    from store import write_csv

    ft = _fat_tree(params)
    rows: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    lengths: list[dict[str, Any]] = []
    subflows: list[dict[str, Any]] = []
    for r in range(params.runs):
        nets, tuples, plan_s, run_dir = _networks(params, folder, r, ft)
        for label, topo, plan, pairs in nets:
            lengths += path_length_rows(r, label, topo)
            new_rows, new_links, new_subs = measure(r, label, topo, plan, pairs, tuples[label],
                                                    plan_s, run_dir / label,
                                                    _base_row(r, label, topo, plan))
            rows += new_rows
            links += new_links
            subflows += new_subs
        write_csv(folder.path / "links.csv", links)
        write_csv(folder.path / "subflows.csv", subflows)
        write_csv(folder.path / "path_lengths.csv", lengths)
        summarize(rows)
    return rows


def run_emulated(params: FairnessParams, folder: RunFolder) -> None:
    """Every repetition in Mininet: both networks, one after the other, each fresh."""
    from analysis.summaries import write_permutation_summary

    from .figures import write_fidelity

    traffic_s = 0.0

    def measure(r: int, label: str, topo: Topology, plan: Any, pairs: dict[str, str],
                tuples: dict[str, Any], plan_s: float, sub_dir: Path,
                base: dict[str, Any]) -> _NetworkRows:
        nonlocal traffic_s
        flows, meas, lrows, facts, traced = emulate(params, label, topo, plan, pairs, sub_dir,
                                                    f"{folder.id}-{r}-{label}", r)
        traffic_s += params.duration
        if facts.get("subflows_missing"):
            folder.log.warning("run %d %s: %d subflows not up at the ss snapshot: "
                               "%s", r, label, facts["subflows_missing"],
                               facts["short_connections"])
        (sub_dir / "flows.json").write_text(json.dumps(
            [{"src": f.src, "dst": f.dst, "subflows": f.subflows} for f in flows],
            indent=1))
        (sub_dir / "paths.json").write_text(json.dumps(traced, indent=1))
        # fidelity: the model on the paths the datapath traced for the run's real 5-tuples
        t = time.monotonic()
        pred, _, subs = model_rates(topo, plan, pairs, tuples, params.bw,
                                    _aggregate_wanted(params, topo), params.tcp_model,
                                    routed=traced)
        got = subflow_rates(sub_dir / transports(params)[0] / "tcp_samples.csv", flows,
                            params.duration, params.trim)
        for sub in subs:
            sub.update({"run": r, "topology": label, "spec": topo.spec},
                       **got.get((sub["src_ip"], int(sub["src_port"])),
                                 {"mbps": float("nan"), "rtt_ms": float("nan")}))
        facts.update(plans_s=plan_s, model_s=round(time.monotonic() - t, 2))
        folder.record(f"run{r:02d}-{label}", facts)
        for why in measurement_reasons(meas):      # as every experiment judges
            folder.flag(f"run {r} {label}: {why}")
        return [{**base, "src": f.src, "dst": f.dst,
                 "iperf_mbps": round(f.iperf_mbps, 4),
                 "bwm_mbps": round(f.bwm_mbps, 4),
                 "norm_iperf": round(f.iperf_mbps / params.bw, 5),
                 "norm_bwm": round(f.bwm_mbps / params.bw, 5),
                 "norm_model": round(pred[f.src]["mbps"] / params.bw, 5),
                 "norm_model_aggregate": round(
                     pred[f.src]["aggregate_mbps"] / params.bw, 5),
                 "norm_model_tcp": round(pred[f.src]["tcp_mbps"] / params.bw, 5),
                 "norm_model_tcp_coupled": round(pred[f.src]["tcp_coupled_mbps"] / params.bw,
                                                 5),
                 "norm_model_lia": round(pred[f.src]["lia_mbps"] / params.bw, 5),
                 "subflows": len(f.subflows),
                 "src_addrs": len({s["src_ip"] for s in f.subflows}),
                 "model_paths": pred[f.src]["paths"],
                 "cpu_mean": meas["cpu_mean"],
                 "cpu_saturated_share": meas["cpu_saturated_share"],
                 "emulator_loss_share": meas["emulator_loss_share"],
                 "gaps_within_10pct": gap_share(meas["dequeue_gaps"])}
                for f in flows], lrows, subs

    t_start = time.monotonic()
    rows = _repetitions(params, folder, measure, lambda rows: write_permutation_summary(
        folder.path, rows, params, key="topology"))
    wall = time.monotonic() - t_start
    # overhead = everything but the traffic itself
    timing = {"wall_s": round(wall, 1), "traffic_s": round(traffic_s, 1),
              "overhead_share_of_traffic": round((wall - traffic_s) / traffic_s, 3)
              if traffic_s else None, "transport": transports(params)[0]}
    folder.record("timing", timing)
    write_fidelity(folder.path, rows, timing, True)


def run_model(params: FairnessParams, folder: RunFolder) -> None:
    """Every repetition on the flow model: the same networks, plans and permutations."""
    from .figures import write_fidelity, write_model_summary

    def measure(r: int, label: str, topo: Topology, plan: Any, pairs: dict[str, str],
                tuples: dict[str, Any], plan_s: float, _sub_dir: Path,
                base: dict[str, Any]) -> _NetworkRows:
        agg = _aggregate_wanted(params, topo)
        t = time.monotonic()
        pred, load, subs = model_rates(topo, plan, pairs, tuples, params.bw, agg,
                                       params.tcp_model)
        for sub in subs:
            sub.update(run=r, topology=label, spec=topo.spec)
        folder.record(f"run{r:02d}-{label}", {
            "spec": topo.spec, "routing": plan.routing, "plans_s": plan_s,
            "model_s": round(time.monotonic() - t, 2), "aggregate": agg})
        return [{**base, "src": src, "dst": dst,
                 "model_mbps": round(pred[src]["mbps"], 4),
                 "norm_model": round(pred[src]["mbps"] / params.bw, 5),
                 "norm_model_aggregate": round(pred[src]["aggregate_mbps"] / params.bw, 5),
                 "norm_model_tcp": round(pred[src]["tcp_mbps"] / params.bw, 5),
                 "norm_model_tcp_coupled": round(pred[src]["tcp_coupled_mbps"] / params.bw, 5),
                 "norm_model_lia": round(pred[src]["lia_mbps"] / params.bw, 5),
                 "subflows": len(tuples[src]),
                 "model_paths": pred[src]["paths"]}
                for src, dst in pairs.items()], model_link_rows(topo, load, params.bw, r,
                                                                label), subs

    t_start = time.monotonic()
    rows = _repetitions(params, folder, measure,
                        lambda rows: write_model_summary(folder.path, rows))
    timing = {"wall_s": round(time.monotonic() - t_start, 1), "traffic_s": 0.0,
              "overhead_share_of_traffic": None, "transport": transports(params)[0]}
    folder.record("timing", timing)
    write_fidelity(folder.path, rows, timing, False)
