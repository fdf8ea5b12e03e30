"""Fairness of Jellyfish vs fat tree (Jellyfish paper Fig. 2 as reproduced in
000_b87022286e416fdf.txt): a random permutation on two topologies, MPTCP on both, fat tree
routed by ECMP and Jellyfish by k shortest paths; normalized throughput vs rank of flow.

Every repetition builds a fresh seeded Jellyfish and a fresh permutation matrix (both drawn
from the repetition's RNG), one workload per network (``networks``), and the backend runs
each: ``--backend emulated`` in Mininet (root), tracing every subflow through the switches;
``--backend model`` routes synthetic MPTCP subflows through the SAME routing plans
(routing.walk with a per-switch CRC32 of the 5-tuple, model/network.py), which is how the
paper scale (k=10 fat tree, 250+ servers) is reached on this machine.  Either way the flow
models (max-min, aggregate, TCP-like, LIA's equilibrium) then run on the paths the flows took.
"""
from __future__ import annotations

import json
import random
import time
from argparse import ArgumentParser
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import numpy as np
from numpy.typing import NDArray

import routing
import topos
from emulator.proc import RunError
from harness.common import add_backend, add_shared, repetitions, run_rng
from harness.params import FlowParams, Quick, check_subflows, check_transport, transports
from harness.plan import RunPlan, network, repeat
from harness.runfolder import RunFolder
from harness.workload import FlowSpec, LinkBytes, Phase, Workload, flow_rows, make
from model import TCP_LIKE, alpha_fair_rates, connection_rates, lia_subflow_rates, maxmin_rates
from model.network import capacities, path_links
from routing.plan import Plan
from store import Row
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

    def check(self) -> None:
        super().check()
        check_transport(self.transport, self.rcvlowat)
        check_subflows(self.subflows)


PARAMS = FairnessParams
#: quick mode runs the 5 repetitions a verdict needs (analysis.claims: Claim.repetitions),
#: so that its headline claims can be decided, not only shown (issue #54): 166 s on 2 cores
#: against 82 s for two (2026-12-02, `scripts/jellyfish-sweep.sh --quick --runs 5`)
QUICK: Quick = {"duration": 12.0, "trim": 3.0, "runs": 5, "seed": 2}
#: aggregate (coupled, LP) model rates cost ~100 s per 250-host permutation; "auto" = small only
AGGREGATE_AUTO_MAX_HOSTS = 64
#: links are grouped by the layers of their two ends, in this order
LAYER_ORDER = ("host", "edge", "tor", "agg", "core", "switch")


def add_arguments(p: ArgumentParser) -> None:
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
    if len(transports(params.transport)) != 1:
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


def _buildable(label: str, spec: Spec) -> Topology:
    """The spec built for the first seed it builds with (sizes, ports, addresses); else
    ValueError."""
    err: Exception | None = None
    for seed in range(5):
        try:
            return topos.build(Spec(spec.name, {**spec.params, "seed": seed}))
        except TopologyError as exc:
            err = exc
    raise ValueError(f"{label} '{spec}' cannot be built: {err}")


def draw_jellyfish(spec: Spec, rng: random.Random, tries: int = 20) -> Topology:
    """The Jellyfish of ``spec`` with a seed drawn from ``rng`` (redrawn if disconnected)."""
    for _ in range(tries):
        seed = rng.randrange(1, 2**31)
        try:
            return topos.build(Spec(spec.name, {**spec.params, "seed": seed}))
        except TopologyError as exc:
            if "disconnected" not in str(exc):
                raise
    raise RunError(f"jellyfish '{spec}': {tries} seeds in a row gave disconnected graphs")


def permutation(topo: Topology, rng: random.Random, cache: dict[int, list[int]]) -> dict[str, str]:
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


def networks(params: FairnessParams, r: int, ft: tuple[Topology, Plan]) -> list[Workload]:
    """Repetition ``r``'s networks, one workload each: the fat tree, the Jellyfish (and the
    one with more servers), each with its permutation.

    They share one random stream, drawn in a fixed order (Jellyfish seeds, permutations,
    then what each backend draws as it runs them in turn: the model's source ports), so
    every view sees identical networks and traffic for the same --seed."""
    rng = run_rng(params.seed, r)
    nets = [("fattree", ft[0], ft[1])]
    for label, spec in jellyfish_variants(params).items():
        topo = draw_jellyfish(spec, rng)
        nets.append((label, topo, routing.make_plan(topo, f"ksp,k={params.k}")))
    cache: dict[int, list[int]] = {}
    transport = transports(params.transport)[0]
    out = []
    for label, topo, plan in nets:
        flows = tuple(FlowSpec(s, d) for s, d in permutation(topo, rng, cache).items())
        phase = Phase(transport, flows,  # type: ignore[arg-type]
                      params.subflows if transport == "mptcp" else 1)
        # bwm-ng's wire rates are this experiment's measurement (as the paper's), the
        # links' counters its utilisation figure, and its model variants its own (below)
        out.append(Workload(topo, plan, params.bw, (phase,), params.duration, params.trim,
                            params.seed, r, rng, label=label, links=True, wire=True,
                            tcp_like=False))
    return out


def _solved(solve: Callable[[], T]) -> T | None:
    """A TCP-like model's rates, or NaN rates (logged) when its solver gives up: the run's
    measurements stay, and the claims on that model say 'not measured'."""
    try:
        return solve()
    except RuntimeError as exc:
        import logging
        logging.getLogger("dcrepro").warning("TCP-like model left out: %s", exc)
        return None


T = TypeVar("T")


def _at(rates: NDArray[np.float64] | None, i: int) -> float:
    """A model's i-th rate, NaN when the model was left out (None)."""
    return float(rates[i]) if rates is not None else float("nan")


#: what a backend measured of each (sub)flow beside its path (emulated: tcp_info), kept in
#: subflows.csv
MEASURED = ("mbps", "rtt_ms")


class ConnectionModel(TypedDict):
    """One connection's rates (Mb/s) in the flow models, and its distinct paths."""
    mbps: float
    aggregate_mbps: float
    tcp_mbps: float
    tcp_coupled_mbps: float
    lia_mbps: float
    paths: int


def model_rates(topo: Topology, pairs: dict[str, str], routed: list[Mapping[str, Any]],
                bw: float, aggregate: bool, tcp_model: str = "off"
                ) -> tuple[dict[str, ConnectionModel], dict[tuple[str, str], float],
                           list[Row]]:
    """The flow models on the paths the (sub)flows took (``routed``: a Measurement's
    paths). Per connection (keyed by source): max-min rate, aggregate rate, the TCP-like
    model's rate (``tcp_model``: a name of model.TCP_LIKE, or off) with uncoupled and with
    coupled subflows, LIA's own equilibrium (with the TCP-like models), paths; per link:
    load; per subflow: its path, the models' rates and what the backend measured of it."""
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
    out: dict[str, ConnectionModel] = {}
    subs: list[Row] = []
    i = 0
    for n, s in enumerate(srcs):
        mine = [rt for rt in routed if rt["src"] == s]
        tcp = lia = 0.0
        for rt in mine:
            tcp += _at(tcp_sub, i)
            lia += _at(lia_sub, i)
            subs.append({"src": s, "dst": pairs[s], **rt.get("five_tuple", {}),
                         "path": ">".join(rt["path"]), "links": len(rt["path"]) + 1,
                         "model_mbps": round(float(sub[i]), 4),
                         "model_tcp_mbps": round(_at(tcp_sub, i), 4),
                         "model_lia_mbps": round(_at(lia_sub, i), 4),
                         **{k: rt[k] for k in MEASURED if k in rt}})
            i += 1
        out[s] = {"mbps": float(rates[n]), "aggregate_mbps": _at(agg, n),
                  "tcp_mbps": tcp if tcp_sub is not None else float("nan"),
                  "tcp_coupled_mbps": _at(tcp_c, n),
                  "lia_mbps": lia if lia_sub is not None else float("nan"),
                  "paths": len({tuple(p) for p in conns[s]})}
    return out, load, subs


def _aggregate_wanted(params: FairnessParams, topo: Topology) -> bool:
    mode = params.aggregate
    return mode == "on" or (mode == "auto" and len(topo.hosts()) <= AGGREGATE_AUTO_MAX_HOSTS)


def path_length_rows(r: int, label: str, topo: Topology) -> list[Row]:
    """Share of ordered host pairs at each path length (links, host links included)."""
    dist = path_length_distribution(topo, max_hops=6)
    return [{"run": r, "topology": label, "spec": topo.spec, "hops": h,
             "share": round(share, 6)} for h, share in dist.items()]


def measured_link_rows(topo: Topology, links: LinkBytes, bw: float, r: int,
                       label: str) -> list[Row]:
    """Utilisation of every directed link over the window (switch tx; host uplinks by rx)."""
    if links.window_s <= 0:
        return []
    rows: list[Row] = []
    rates = topo.link_rates(bw)
    for (u, v), nbytes in links.bytes.items():
        cap = rates[(u, v)] * 1e6 * links.window_s / 8
        rows.append({"run": r, "topology": label, "source": "measured", "u": u, "v": v,
                     "layer": link_class(topo, u, v), "bytes": nbytes,
                     "util": round(nbytes / cap, 5), "drops": links.drops.get((u, v), "")})
    return rows


def model_link_rows(topo: Topology, load: dict[tuple[str, str], float], bw: float, r: int,
                    label: str) -> list[Row]:
    """Model utilisation of every directed link (load / link rate; payload, so <= 0.96)."""
    rates = topo.link_rates(bw)
    return [{"run": r, "topology": label, "source": "model", "u": u, "v": v,
             "layer": link_class(topo, u, v), "util": round(mbps / rates[(u, v)], 5)}
            for (u, v), mbps in sorted(load.items())]


# -- the experiment -------------------------------------------------------------------------

def _fat_tree(params: FairnessParams) -> tuple[Topology, Plan]:
    topo = topos.build(params.fattree)
    return topo, routing.make_plan(topo, "ecmp")


def _record_networks(folder: RunFolder, run_dir: Path, nets: list[Workload]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "networks.json").write_text(json.dumps(
        {w.label: {"spec": w.topo.spec, "routing": w.plan.routing,
                   "permutation": w.phases[0].pairs()} for w in nets}, indent=1))
    for w in nets:
        folder.log.info("run %d %s: %s, %s, permutation %s", w.rep, w.label, w.topo.spec,
                        w.plan.routing, w.phases[0].pairs())


def run(params: FairnessParams, folder: RunFolder) -> None:
    """Every repetition: the fat tree and the Jellyfish, fresh plans and permutation, each
    run by the backend (``--backend``), then the flow models on the paths its flows took;
    after each repetition every table so far is on disk."""
    from analysis.summaries import write_permutation_summary
    from store import write_csv

    from .figures import write_fidelity, write_model_summary

    backend = make(params, folder)
    ft = _fat_tree(params)
    rows: list[Row] = []
    links: list[Row] = []
    lengths: list[Row] = []
    subflows: list[Row] = []
    reports: list[Row] = []
    traffic_s = 0.0
    t_start = time.monotonic()
    for r in repetitions(params, folder):
        t = time.monotonic()
        nets = networks(params, r, ft)
        plan_s = round(time.monotonic() - t, 2)
        run_dir = folder.path / f"run{r:02d}"
        _record_networks(folder, run_dir, nets)
        for w in nets:
            lengths += path_length_rows(r, w.label, w.topo)
            for m in backend.run(w, run_dir / w.label):
                traffic_s += w.duration if backend.view.realtime else 0.0
                agg = _aggregate_wanted(params, w.topo)
                t = time.monotonic()
                pred, load, subs = model_rates(w.topo, m.phase.pairs(), list(m.paths),
                                               params.bw, agg, params.tcp_model)
                for sub in subs:
                    sub.update(run=r, topology=w.label, spec=w.topo.spec)
                subflows += subs
                folder.record(w.key, {**folder.config["runtime"].get(w.key, {}),
                                      "spec": w.topo.spec, "routing": w.plan.routing,
                                      "plans_s": plan_s,
                                      "model_s": round(time.monotonic() - t, 2),
                                      "aggregate": agg})
                base = {"run": r, "topology": w.label, "spec": w.topo.spec,
                        "routing": w.plan.routing, "servers": len(w.topo.hosts())}
                for row in flow_rows(w, m):
                    p = pred[str(row["src"])]
                    rows.append({**base, **row,
                                 "norm_model_aggregate": round(p["aggregate_mbps"] / params.bw, 5),
                                 "norm_model_tcp": round(p["tcp_mbps"] / params.bw, 5),
                                 "norm_model_tcp_coupled": round(p["tcp_coupled_mbps"] /
                                                                 params.bw, 5),
                                 "norm_model_lia": round(p["lia_mbps"] / params.bw, 5),
                                 "model_paths": p["paths"]})
                links += measured_link_rows(w.topo, m.links, params.bw, r, w.label) \
                    if m.links is not None else \
                    model_link_rows(w.topo, load, params.bw, r, w.label)
                if m.report is not None:
                    reports.append({**m.report, "topology": w.label})
        write_csv(folder.path / "links.csv", links)
        write_csv(folder.path / "subflows.csv", subflows)
        write_csv(folder.path / "path_lengths.csv", lengths)
        if reports:     # measured views: the emulator's rates beside their fidelity reports
            write_permutation_summary(folder.path, rows, params, key="topology",
                                      reports=reports)
        else:
            write_model_summary(folder.path, rows)
    wall = time.monotonic() - t_start
    # overhead = everything but the traffic itself
    timing = {"wall_s": round(wall, 1), "traffic_s": round(traffic_s, 1),
              "overhead_share_of_traffic": round((wall - traffic_s) / traffic_s, 3)
              if traffic_s else None, "transport": transports(params.transport)[0]}
    folder.record("timing", timing)
    write_fidelity(folder.path, rows, timing)
    if reports:
        (folder.path / "fidelity.json").write_text(json.dumps({"reports": reports}, indent=1))


def plan(params: FairnessParams) -> RunPlan:
    """What a run does (harness/plan.py): every repetition brings up the fat tree and each
    Jellyfish (a fresh seed each time, of the same size), one phase on each, every host
    sending."""
    nets = [network(params.fattree, 1, params.duration, bw=params.bw)]
    for label, spec in jellyfish_variants(params).items():
        topo = _buildable(label, spec)
        nets.append(network(str(spec), 1, params.duration, bw=params.bw, topo=topo))
    nets = [replace(n, flows=n.hosts, receivers=n.hosts) for n in nets]
    return repeat(params.runs, nets, f"{len(nets)} networks, one {params.transport} phase each")
