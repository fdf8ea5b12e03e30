"""GRIN: servers lend their idle uplinks to neighbours over horizontal links (003_…,
Figs. 6/7 style: per-server throughput vs % of active servers, original vs GRIN1/2/3).

Each repetition and share of active servers draws one set of active servers and one traffic
matrix (``topos.traffic``), the same for every degree, then runs it on a fresh network
per degree (``grin,degree=d``; degree 0 is the original network): one MPTCP connection per
(source, destination) pair, iperf3 for ``duration`` seconds.  Each server forwards for its
neighbours (dataplane/hostnet.host_forwarding); each of its horizontal addresses is an MPTCP
endpoint, so a connection opens 1 + d(source) + d(destination) subflows, the paper's "one
subflow per horizontal link plus the direct one" (h1 paths).

Upstream Linux MPTCP has no coupled congestion control and no scheduler bias toward the
direct subflow (the paper's): every subflow runs its own congestion control (``--cc``)
and the default scheduler.  So besides the paper's optimum (``model.grin``: maximum total
flow over h1 paths, HiGHS), each point carries the max-min fair rates of independent
subflows on the subflows the emulation opened: what this MPTCP can reach at best.

Throughput is per active server: the mean over connections (permutation: one each), and
is normalized to the best original result of the run (the original network's highest mean
over the active shares), as the paper normalizes.  Every pattern runs emulated and in the
model (each connection its own iperf3 port).

Networks: ``--degrees`` on the base (``--base racks``: the paper's racks on one switch;
``fattree``: a k-ary fat tree, routed by ECMP, racks being edge switches) and, on the racks
base, ``--multihomed`` (the paper's baseline: extra NICs and ToRs per server, the rack's
uplinks divided evenly; topos/grin.py).  Their names in files: ``grin0`` (the original),
``grin<d>``, ``mh<extra>``.
"""
from __future__ import annotations

import json
import random
from argparse import ArgumentParser
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import routing
import topos
from harness.common import add_backend, add_shared, repetitions, run_rng
from harness.params import FlowParams, Quick
from harness.plan import RunPlan, network
from harness.runfolder import RunFolder
from harness.workload import FlowSpec, Measurement, Phase, Workload, check, make
from model.flowmodel import goodput_capacity
from model.grin import (
    GROUP_SIZE,
    PATTERNS,
    active_servers,
    max_flow_hn,
    network_of,
    pattern_options,
)
from store import Row, write_csv
from topos.grin import FABRIC, GrinTopology, Multihomed
from topos.traffic import make as make_traffic

NAME = "grin"
HELP = ("GRIN: horizontal server-to-server links and h1 routing with MPTCP; per-server "
        "throughput vs % of active servers, original vs GRIN degrees")
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`003_…` Figs. 6/7 style: servers wired to neighbours (GRIN degree 0–3) vs the '
         "multihomed baseline, on racks or a fat tree, h1 routing by the paper's "
         'addressing, MPTCP over every horizontal link; per-server throughput vs % of '
         "active servers against the paper's h1 optimum and an independent-subflow model; "
         'the §5.1 hop-count study is `grin-hops`')
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/grin-sweep.sh"


@dataclass(frozen=True)
class GrinParams(FlowParams):
    """The parameters of one grin run (their flags: add_arguments)."""

    racks: int = 2
    servers: int = 6
    degrees: str = "0,1,2,3"
    multihomed: str = "1"
    base: str = "racks"
    k: int = 4
    placement: str = "rack"
    active: str = "10,30,50,70"
    pattern: str = "permutation"
    pm: str = "kernel"
    duration: float = 30.0
    runs: int = 2
    backend: str = "emulated"


PARAMS = GrinParams
#: quick mode runs what one headline claim judges, on the 5 repetitions its verdict needs
#: (issue #54): GRIN1 against the original network at Fig. 7's lowest active share, on its
#: all-to-all traffic; 10 networks, the fewest of any GRIN headline (GRIN2 and the
#: multihomed baseline add 5 each, and run without --quick)
QUICK: Quick = {"racks": 4, "servers": 10, "degrees": "0,1", "multihomed": "0", "active": "10",
                "pattern": "all-to-all", "duration": 12.0, "trim": 3.0, "runs": 5,
                "seed": 2}


def add_arguments(p: ArgumentParser) -> None:
    """Shared flags plus the base network, the degrees, the active shares and the pattern."""
    add_shared(p, PARAMS, QUICK)
    add_backend(p)
    for name, text in (("racks", "racks on the one switch"),
                       ("servers", "servers per rack")):
        p.add_argument(f"--{name}", type=int, default=None,
                       help=f"{text} (default: {getattr(PARAMS, name)})")
    p.add_argument("--degrees", default=None,
                   help="GRIN degrees to compare, 0 = the original network (default: "
                        f"{PARAMS.degrees}; quick: {QUICK['degrees']})")
    p.add_argument("--multihomed", default=None,
                   help="extra NICs of the multihomed baseline, comma list, 0 = none "
                        f"(racks base only; default: {PARAMS.multihomed})")
    p.add_argument("--base", default=None, choices=["racks", "fattree"],
                   help="racks on one non-blocking switch (the paper's section 5.1) or a "
                        "k-ary fat tree with ECMP (default: racks)")
    p.add_argument("--k", type=int, default=None,
                   help="fat-tree k with --base fattree (default: 4; racks are its edge "
                        "switches of k/2 servers)")
    p.add_argument("--placement", default=None, choices=["rack", "cross"],
                   help="neighbours in the same rack (the paper's cabling) or in the "
                        "adjacent racks (default: rack)")
    p.add_argument("--active", default=None,
                   help="percentages of active servers, comma list (default: "
                        f"{PARAMS.active}; quick: {QUICK['active']})")
    p.add_argument("--pattern", default=None, choices=list(PATTERNS),
                   help="traffic matrix among the active servers (default: permutation)")
    p.add_argument("--pm", default=None, choices=["kernel", "userspace"],
                   help="MPTCP path manager: the in-kernel one (full mesh where it fits its "
                        "limit of 8 extra subflows, else the star) or dcrepro's userspace "
                        "one (emulator/mptcp_pm.py: the full mesh at every degree) "
                        "(default: kernel)")


T = TypeVar("T")


def _list(text: str, flag: str, cast: Callable[[str], T], ok: Callable[[T], bool]) -> list[T]:
    try:
        values = [cast(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--{flag} {text!r}: give a comma list of numbers") from None
    if not values or len(set(values)) != len(values) or not all(ok(v) for v in values):
        raise ValueError(f"--{flag} {text!r}: give a comma list of distinct valid values")
    return values


def degrees(params: GrinParams) -> list[int]:
    """Degrees to run, ascending (0 = original)."""
    return sorted(_list(params.degrees, "degrees", int, lambda d: d >= 0))


def actives(params: GrinParams) -> list[float]:
    """Active shares (%), ascending."""
    return sorted(_list(params.active, "active", float, lambda a: 0 < a <= 100))


def extras(params: GrinParams) -> list[int]:
    """Extra NICs of the multihomed networks to run, ascending (none for "0")."""
    return [m for m in sorted(_list(params.multihomed, "multihomed", int,
                                    lambda m: m >= 0)) if m]


def spec(params: GrinParams, degree: int) -> str:
    """Topology spec of one degree (the overlay's seed is the run's seed)."""
    if params.base == "fattree":
        return (f"grin-fattree,k={params.k},degree={degree},"
                f"placement={params.placement},seed={params.seed}")
    return (f"grin,racks={params.racks},servers={params.servers},degree={degree},"
            f"placement={params.placement},seed={params.seed}")


def networks(params: GrinParams) -> list[tuple[str, str]]:
    """(name, topology spec) of every network to compare: grin<d> per degree (grin0 is the
    original), then mh<extra> per multihomed baseline."""
    return [(f"grin{d}", spec(params, d)) for d in degrees(params)] + [
        (f"mh{m}", f"multihomed,racks={params.racks},servers={params.servers},"
                   f"extra={m}") for m in extras(params)]


def validate(params: GrinParams) -> None:
    """One-line ValueError for anything this experiment cannot run."""
    if params.base not in ("racks", "fattree"):
        raise ValueError("--base must be racks or fattree")
    if params.base == "fattree" and extras(params):
        raise ValueError("--multihomed needs --base racks (a multihomed fat tree is not "
                         "built); pass --multihomed 0")
    for _, s in networks(params):
        topos.build(s)                    # impossible degrees fail here, in one line
    actives(params)
    if 0 not in degrees(params):
        raise ValueError("--degrees must include 0: throughput is normalized to the "
                         "original network's best result")
    if params.pattern not in PATTERNS:
        raise ValueError(f"--pattern must be one of {', '.join(PATTERNS)}")
    n = len(topos.build(spec(params, 0)).hosts())
    for pct in actives(params):
        act = max(2, round(n * pct / 100))
        if params.pattern == "group" and act < GROUP_SIZE:
            raise ValueError(f"--active {pct:g} gives {act} active servers of {n}; group "
                             f"traffic needs at least {GROUP_SIZE}")
    if params.pm not in ("kernel", "userspace"):
        raise ValueError(f"--pm must be kernel or userspace, got {params.pm!r}")
    check(params, [_widest(params, net, s) for net, s in networks(params)])


def _widest(params: GrinParams, net: str, net_spec: str) -> Workload:
    """What the view cannot run of a network (its path manager, its most subflows per
    connection): one connection between the two servers that design the most subflows."""
    topo = topos.build(net_spec)
    assert isinstance(topo, GrinTopology)
    # a connection's subflows grow with its source's outgoing addresses and its
    # destination's addresses (designed_subflows: the star or the full mesh of them)
    src = max(topo.servers, key=lambda h: len(topo.outgoing_addresses(h)))
    dst = max((h for h in topo.servers if h != src), key=lambda h: len(topo.addresses(h)))
    return workload(params, topo, [(src, dst)], 0, actives(params)[0], net,
                    random.Random(params.seed))


def h1_optimum_mbps(topo: GrinTopology, bw: float, pairs: list[tuple[str, str]]) -> float:
    """The paper's bound: maximum total flow over h1 paths, per connection, in Mb/s (for
    the multihomed baseline every path is h1: its port hosts are one hop from a server)."""
    conns = [(topo.model_index(s), topo.model_index(t)) for s, t in pairs]
    return max_flow_hn(network_of(topo), conns, 1) / len(conns) * goodput_capacity(bw)


def uses_horizontal(topo: GrinTopology, src_ip: str, dst_ip: str) -> bool:
    """Whether a subflow crosses a horizontal link (another host on its path)."""
    inner = topo.subflow_path(src_ip, dst_ip)[1:-1]
    return not inner or any(n != FABRIC and not topo.is_switch(n) for n in inner)


def workload(params: GrinParams, topo: GrinTopology, pairs: list[tuple[str, str]], r: int,
             pct: float, net: str, rng: random.Random) -> Workload:
    """One network's run of one traffic matrix: an MPTCP connection per pair, each with
    the subflows its addresses design (1 + d(source) + d(destination); the full mesh with
    the userspace path manager), routed by a spanning tree on the racks' one switch or ECMP
    on the fat tree; the servers forward over the horizontal links."""
    mesh = True if params.pm == "userspace" else None
    flows = tuple(FlowSpec(s, t, tuple(topo.designed_subflows(s, t, mesh))) for s, t in pairs)
    plan = routing.make_plan(topo, "ecmp" if params.base == "fattree" else "st")
    return Workload(topo, plan, params.bw, (Phase("mptcp", flows),), params.duration,
                    params.trim, params.seed, r, rng, label=f"active{pct:g}-{net}",
                    tcp_like=False, path_manager="userspace" if params.pm == "userspace"
                    else "kernel")


def rows_of(m: Measurement, topo: GrinTopology, base_row: Row,
            measured: bool) -> list[Row]:
    """flows.csv rows of one network's measurement: the measured throughput (emulated),
    the independent-subflow model on the subflows the connection had (emulated: opened;
    model: designed), and (measured) which of them crossed a horizontal link."""
    rows = []
    for f in m.flows:
        row = {**base_row, "src": f.spec.src, "dst": f.spec.dst,
               "mbps": round(f.goodput_mbps, 4) if measured else "",
               "uncoupled_model_mbps": round(f.model_mbps, 4),
               "subflows_designed": len(f.spec.subflows)}
        if measured:
            mine = [(p["src_ip"], p["dst_ip"]) for p in m.paths
                    if (p["src"], p["dst"]) == (f.spec.src, f.spec.dst)]
            row.update(subflows=f.subflows,
                       horizontal_subflows=sum(uses_horizontal(topo, *x) for x in mine),
                       **m.row_facts)
        rows.append(row)
    return rows


def run(params: GrinParams, folder: RunFolder) -> None:
    """Every repetition x active share: one traffic matrix, every network."""
    backend = make(params, folder)
    bw = params.bw
    rows: list[Row] = []
    for r in repetitions(params, folder):
        for pct in actives(params):
            rng = run_rng(params.seed, r * 1000 + int(round(pct * 10)))
            base = topos.build(spec(params, 0))
            assert isinstance(base, GrinTopology)
            hosts = base.servers
            act = active_servers(len(hosts), pct, rng)
            conns = make_traffic(params.pattern, act, rng, **pattern_options(params.pattern))
            pairs = [(hosts[a], hosts[b]) for a, b in conns]
            for net, net_spec in networks(params):
                topo = topos.build(net_spec)
                assert isinstance(topo, GrinTopology)
                w = workload(params, topo, pairs, r, pct, net, rng)
                out = folder.path / f"run{r:02d}" / w.label
                (m,) = backend.run(w, out)
                if m.report is not None:
                    _write_point(out, w, m, pct, net)
                base_row = {"run": r, "active_pct": pct, "active": len(act), "network": net,
                            "degree": "" if isinstance(topo, Multihomed) else topo.degree,
                            "pattern": params.pattern,
                            "h1_optimum_mbps": round(h1_optimum_mbps(topo, bw, pairs), 4),
                            "uncoupled_model_mbps": ""}
                rows += rows_of(m, topo, base_row, backend.view.measures)
    write_csv(folder.path / "flows.csv", rows)


def _write_point(out: Path, w: Workload, m: Measurement, pct: float, net: str) -> None:
    """A measured point's subflows.json (each connection's designed and opened subflows)
    and fidelity.json (its judged report, with the share and the network)."""
    seen: dict[str, list[tuple[str, str]]] = {f.key: [] for f in w.phases[0].flows}
    for p in m.paths:
        seen[f"{p['src']}->{p['dst']}"].append((p["src_ip"], p["dst_ip"]))
    out.mkdir(parents=True, exist_ok=True)
    (out / "subflows.json").write_text(json.dumps(
        {f.key: {"designed": list(f.subflows), "seen": seen[f.key]}
         for f in w.phases[0].flows}, indent=1))
    assert m.report is not None
    (out / "fidelity.json").write_text(json.dumps(
        {**m.report, "active_pct": pct, "network": net}, indent=1))


def plan(params: GrinParams) -> RunPlan:
    """What a run does (harness/plan.py): every repetition and active share brings up
    every network (each GRIN degree, each multihomed baseline), one MPTCP phase each."""
    one = [network(s, 1, params.duration, bw=params.bw) for _, s in networks(params)]
    shares = actives(params)
    return RunPlan(params.runs, tuple(one * len(shares) * params.runs),
                   f"{len(one)} networks x {len(shares)} active shares")
