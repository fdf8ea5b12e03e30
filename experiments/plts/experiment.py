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

The queues: every scheme's switch ports run ``--aqm`` (tail drop by default) except ECMP's,
which run ``--ecmp-aqm`` (default: the same).  The paper compared the sprays on drop-tail
with ECMP on RED/ECN queues: ``--ecmp-aqm red`` (or ``ecn``) is that set-up, and
``--ecmp-aqm red/droptail`` runs ECMP once on each queue beside the same sprays (the
ablation is ECMP's queue).  The kernel has no RED qdisc; the BPF switch does RED and ECN
marking itself, before each port's HTB + pfifo (emulator/aqm.py, docs/fidelity.md).  Hosts
of a network whose ports mark ask for ECN (``net.ipv4.tcp_ecn=1`` in every host namespace,
gone with the namespace); the others keep the kernel's default (accept ECN, never ask).
Every flow and latency row names its scheme's AQM.  The paper's
TCP treated three duplicate ACKs as a loss; Linux today detects loss by time (RACK) and
adapts its reordering threshold.  ``--recovery classic`` runs the senders with RACK off and
the reordering threshold fixed at 3 (per host namespace); ``noundo`` is classic with no undo
of a spurious retransmission's window cut (DSACKs, timestamps and F-RTO off); a comma list
(``both`` = ``modern,classic``) runs each scheme once per recovery.

Where the latency comes from: every switch port's root-qdisc length, sampled every 0.5 s
over rtnetlink (queues.csv: per tier, e.g. ``edge->agg``, the queue in packets and in
milliseconds at the link rate, with the tier's tail drops, AQM drops and marks); each
latency sample's path length in switch-to-switch links (``hops``) and the retransmissions
of its flow in the tcp_info interval around it (``flow_retrans``).

``--backend model`` replaces the emulator by the flow model on the same plans: ECMP flows on
hash-chosen paths, sprayed flows split evenly over every equal-cost path, max-min fair rates.

``--backend sim`` runs the same pairing, plans and queues packet by packet in ns-3 (no root;
docs/sim.md): every switch holds its plan's table and chooses per packet as the BPF switch
does (hash, rnd, rr, cnt); goodput at the receiver over the trimmed window; the fabric
latency of sampled data segments measured by the same rule; every port's queue length at
every 0.5 s and its drops and marks.  RED (``--aqm``/``--ecmp-aqm red,...``) is ns-3's
RedQueueDisc with the same thresholds, probability and weight, ECN with hosts that ask for
it; ``ecn,k=`` is not simulated (refused).  TCP is ns-3's (SACK, timestamps, three duplicate
ACKs, no RACK): ``--recovery modern`` is its default proportional rate reduction (PRR, as
Linux), ``classic`` its NewReno-style recovery (the paper's TCP).

Each network is one ``Workload`` (harness/workload.py: one TCP phase of the pairing, its
AQM, recovery, latency sampling and watched queues), which every view runs the same way
(harness/backends/; the samples become rows in harness/fabric.py).  This file keeps what is
plts's own: the pairing, the networks of a run and the rows of its tables.
"""
from __future__ import annotations

import json
import random
from argparse import ArgumentParser
from dataclasses import dataclass

import routing
import topos
from emulator import aqm as aqm_spec
from harness import fabric
from harness.common import add_backend, add_shared, repetitions, run_rng
from harness.fabric import QUEUE_INTERVAL
from harness.params import Quick, SimFlowParams, check_topo
from harness.plan import RunPlan, network, repeat
from harness.runfolder import RunFolder
from harness.simrun import check_sim
from harness.workload import FlowSpec, Measurement, Phase, Workload, check, make, measures
from model.flowmodel import goodput_capacity
from routing.walk import split
from store import Row, write_csv
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
class PltsParams(SimFlowParams):
    """The parameters of one plts run (their flags: add_arguments)."""

    topo: str = "fattree,k=6"
    schemes: str = "ecmp,rnd,cnt,rr"
    bw: float = 5.0
    trim: float = 10.0
    runs: int = 3
    recovery: str = "modern"
    sample: int = 64
    #: ECMP's switch-port AQM(s), '/'-separated, each in --aqm's form; '' = --aqm's
    ecmp_aqm: str = ""
    dataplane: str = "bpf"

    def check(self) -> None:
        check_topo(self.topo)       # first: a run's checks begin with the network
        super().check()


PARAMS = PltsParams
BACKENDS = ("emulated", "model", "sim")
#: quick mode runs the headline claims' regime, the paper's (classic recovery, ECMP on
#: RED/ECN: claims.paper_regime), on one repetition: five, what a verdict needs, take about
#: 8 min here (issue #54), so the quick verdicts say how many more would decide them
QUICK: Quick = {"duration": 16.0, "trim": 4.0, "runs": 1, "recovery": "classic",
                "ecmp_aqm": "red", "seed": 2}

#: scheme -> routing spec
SCHEMES = {"ecmp": "ecmp", "rnd": "spray,mode=rnd", "cnt": "spray,mode=cnt",
           "rr": "spray,mode=rr"}
#: the loss recoveries (--recovery): harness/fabric.py says what each sets
RECOVERY = tuple(fabric.RECOVERY)


def add_arguments(p: ArgumentParser) -> None:
    """Shared flags plus the schemes, the loss recovery and the latency sampling rate."""
    add_shared(p, PARAMS, QUICK)
    add_backend(p, BACKENDS)
    p.add_argument("--schemes", default=None,
                   help=f"comma list of {', '.join(SCHEMES)} (default: {PARAMS.schemes})")
    p.add_argument("--recovery", default=None,
                   help="TCP loss recovery of the senders, or a comma list run one after "
                        "the other: modern (Linux defaults: RACK, adaptive reordering), "
                        "classic (three duplicate ACKs, as the paper's TCP), noundo "
                        "(classic, and no spurious retransmission's cut undone: DSACKs, "
                        "timestamps, F-RTO off); both = modern,classic (default: modern)")
    p.add_argument("--sample", type=int, default=None,
                   help="sample one TCP data segment in about N for packet latency; 0 = off "
                        f"(default: {PARAMS.sample})")
    p.add_argument("--ecmp-aqm", dest="ecmp_aqm", default=None,
                   help="ECMP's switch ports' AQM, in --aqm's form (e.g. red or "
                        "ecn,k=20); several separated by '/' run ECMP once on each "
                        "(red/droptail: the paper's RED/ECN and the ablation); hosts ask for "
                        "ECN where the ports mark (default: the same as --aqm)")


def schemes(params: PltsParams) -> list[str]:
    """The run's schemes, in the order given."""
    return [s.strip() for s in str(params.schemes).split(",") if s.strip()]


def ecmp_aqms(params: PltsParams) -> list[str]:
    """ECMP's AQM(s), each written out in full (aqm.AqmSpec.describe), in the order given;
    --aqm's when --ecmp-aqm is empty."""
    if not params.ecmp_aqm:
        return [aqm_spec.parse(str(params.aqm), params.queue).describe()]
    out = []
    for item in str(params.ecmp_aqm).split("/"):
        try:
            out.append(aqm_spec.parse(item.strip(), params.queue).describe())
        except ValueError as e:   # the parser speaks of --aqm: name the flag it came from
            raise ValueError(f"--ecmp-aqm {params.ecmp_aqm!r}: {e}") from None
    return out


def variants(params: PltsParams) -> list[tuple[str, str]]:
    """(scheme, AQM) of every network a run builds, in --schemes' order: ECMP once per
    --ecmp-aqm, each spray on --aqm."""
    own = aqm_spec.parse(str(params.aqm), params.queue).describe()
    out: list[tuple[str, str]] = []
    for s in schemes(params):
        out += [(s, a) for a in ecmp_aqms(params)] if s == "ecmp" else [(s, own)]
    return out


def label(scheme: str, aqm: str, params: PltsParams) -> str:
    """The variant's name in folders and facts: the scheme alone on --aqm (so a run without
    --ecmp-aqm names them as before), else scheme-mode (ecmp-red)."""
    own = aqm_spec.parse(str(params.aqm), params.queue).describe()
    return scheme if aqm == own else f"{scheme}-{aqm.split(',')[0]}"


def recoveries(params: PltsParams) -> list[str]:
    """The run's recovery settings (a view that does not measure has no TCP: 'modern'
    alone there)."""
    return parse_recoveries(params.recovery) if measures(params) else ["modern"]


def parse_recoveries(text: str) -> list[str]:
    """--recovery's list as given: 'both' is modern,classic, else a comma list."""
    if text == "both":
        return ["modern", "classic"]
    return [r.strip() for r in str(text).split(",") if r.strip()]


def validate(params: PltsParams) -> None:
    """One-line ValueError for anything this experiment cannot run."""
    names = schemes(params)
    bad = [s for s in names if s not in SCHEMES]
    if bad or not names or len(set(names)) != len(names):
        raise ValueError(f"--schemes {params.schemes!r}: use a comma list of distinct "
                         f"{', '.join(SCHEMES)}")
    recs = parse_recoveries(params.recovery)      # checked for every backend, as given
    if not recs or any(r not in RECOVERY for r in recs) or len(set(recs)) != len(recs):
        raise ValueError(f"--recovery must be both or a comma list of distinct "
                         f"{', '.join(RECOVERY)}, got {params.recovery!r}")
    if params.sample < 0:
        raise ValueError(f"--sample must be >= 0, got {params.sample}")
    if params.ecmp_aqm:
        if "ecmp" not in names:
            raise ValueError(f"--ecmp-aqm {params.ecmp_aqm!r}: --schemes has no ecmp")
        modes = [a.split(",")[0] for a in ecmp_aqms(params)]   # parsed: bad specs raise
        if len(set(modes)) != len(modes):
            raise ValueError(f"--ecmp-aqm {params.ecmp_aqm!r}: each mode at most once "
                             f"(got {', '.join(modes)})")
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
    # what the view cannot run of each network (its dataplane, its simulator, its model);
    # the networks' pairing is drawn as a run draws it
    pairs = dict(pairing(hosts, run_rng(params.seed, 0)))
    check(params, [workload(params, topo, pairs, 0, run_rng(params.seed, 0), s, a, rec)
                   for rec in parse_recoveries(params.recovery) for s, a in variants(params)])
    check_sim(params)


#: the sender's TCP counts of a measured flow row, '' where a view does not count them
TCP_COLUMNS = ("retrans", "reord_seen", "dsack_dups", "reordering")


def _row(run: int, scheme: str, aqm: str, recovery: str, src: str, dst: str, ideal: float,
         mbps: float, model: float, **extra: object) -> Row:
    return {"run": run, "scheme": scheme, "aqm": aqm, "recovery": recovery, "src": src,
            "dst": dst,
            "ideal_mbps": round(ideal, 4), "mbps": round(mbps, 4),
            "pct_ideal": round(100 * mbps / ideal, 3), "model_mbps": round(model, 4), **extra}


def workload(params: PltsParams, topo: topos.Topology, pairs: dict[str, str], r: int,
             rng: random.Random, scheme: str, aqm: str, recovery: str) -> Workload:
    """One scheme on its AQM under one recovery setting: one TCP phase of the pairing on a
    fresh network, its latency sampled and its queues watched; its files in
    run<r>/<recovery>-<label>/."""
    return Workload(
        topo, routing.make_plan(topo, SCHEMES[scheme]), params.bw,
        (Phase("tcp", tuple(FlowSpec(s, d) for s, d in pairs.items())),),
        params.duration, params.trim, params.seed, r, rng,
        label=f"{recovery}-{label(scheme, aqm, params)}", tcp_like=False, flat=True,
        aqm=aqm, recovery=recovery, latency=params.sample, queues=True,
        interval=QUEUE_INTERVAL,
        # the simulated switches forward ECMP by their hash tables, as the BPF switch does,
        # with the hosts' own addresses (pinned paths would give each flow its own)
        sim_forwarding="plan")


def rows_of(m: Measurement, w: Workload, scheme: str, aqm: str, recovery: str,
            measures: bool) -> list[Row]:
    """flows.csv rows of one network: % of the view's ideal (the payload ceiling of one host
    link as it carries it; the model's rates, at Ethernet's, scaled to it), and where the
    view measures, the sender's TCP counts."""
    ideal = m.ceiling_mbps
    scale = ideal / goodput_capacity(w.bw)
    rows = []
    for f in m.flows:
        extra: Row = {}
        if measures:
            extra = {**{k: f.sender.get(k, "") for k in TCP_COLUMNS},
                     **{k: v for k, v in f.sender.items() if k not in TCP_COLUMNS}}
        rows.append(_row(w.rep, scheme, aqm, recovery, f.spec.src, f.spec.dst, ideal,
                         f.goodput_mbps, f.model_mbps * scale, **extra, backend=m.backend,
                         **m.row_facts))
    return rows


def run(params: PltsParams, folder: RunFolder) -> None:
    """Every run: one pairing, every recovery setting, every scheme, each on a fresh
    network."""
    rows: list[Row] = []
    lats: list[Row] = []
    queues: list[Row] = []
    backend = make(params, folder)
    for r in repetitions(params, folder):
        rng = run_rng(params.seed, r)
        topo = topos.build(params.topo)
        pairs = dict(pairing(topo.hosts(), rng))
        run_dir = folder.path / f"run{r:02d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "pairs.json").write_text(json.dumps(pairs, indent=1))
        for recovery in recoveries(params):
            for scheme, aqm in variants(params):
                folder.log.info("run %d: %s, %s on %s, %s recovery", r, topo.spec, scheme, aqm,
                                recovery)
                w = workload(params, topo, pairs, r, rng, scheme, aqm, recovery)
                out = run_dir / w.label
                (m,) = backend.run(w, out)
                if m.report is not None:
                    (out / "fidelity.json").write_text(json.dumps(
                        {**m.report, "scheme": scheme}, indent=1))
                rows += rows_of(m, w, scheme, aqm, recovery, backend.view.measures)
                base = {"run": r, "scheme": scheme, "aqm": aqm, "recovery": recovery}
                lats += [{**base, **x} for x in m.latency]
                queues += [{**base, **x} for x in m.queues]
    write_csv(folder.path / "flows.csv", rows)
    if backend.view.measures:
        write_csv(folder.path / "latency.csv", lats)
        write_csv(folder.path / "queues.csv", queues)


def plan(params: PltsParams) -> RunPlan:
    """What a run does (harness/plan.py): every repetition brings up one network per
    recovery setting and scheme (and ECMP AQM), one phase each, half the hosts sending."""
    topo = topos.build(params.topo)
    flows = len(topo.hosts()) // 2
    nets = [network(params.topo, 1, params.duration, flows, flows, params.bw, topo)
            for _ in recoveries(params) for _ in variants(params)]
    return repeat(params.runs, nets, f"{len(nets)} networks: "
                  f"{', '.join(recoveries(params))} x {', '.join(s for s, _ in variants(params))}")
