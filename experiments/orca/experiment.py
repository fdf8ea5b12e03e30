"""In-network multicast vs application-layer UDP unicast for an iterative file transfer
(Orca, 001_da816e6d87c9a0a9.txt, Figs. 5-8).

One sender hands 33 files, one a round, to every receiver with the real application
(``apps/filexfer``); a round ends when every receiver has acknowledged every byte.  Modes:

* ``multicast``: each datagram is sent once to a group; the network replicates it along a
  tree (routing/multicast.py: replicate on the BPF dataplane, OpenFlow group ALL on OVS);
* ``unicast``: one socket per receiver; with ``--procs P`` the receivers are shared among P
  sending processes that run in parallel (the paper's Fig. 8).

The workload: 33 rounds whose sizes keep the paper's proportions (the base workload's total,
its largest file = 141/1408 of the total, doubled up to 16 x) and are otherwise a fixed
synthetic LDA-like draw (``schedule``): the paper gives no other detail.  The base scales
with the link rate so that the link-seconds of the paper's 88 MB at 10 Gb/s are kept.

The sender paces itself to ``--pace`` of the link's IP rate: the paper's Python sender was
CPU-bound at 10 Gb/s and never overflowed its NIC, whereas here any Python sender outruns
an emulated link, and unpaced UDP would be dropped at its own interface queue.  So the
emulated transfers are link-bound, and the model (``bound_s``) is the time the busiest link
needs to carry the copies the mode puts on it: one per file in multicast, one per receiver
behind the sender's link in unicast.

Per transfer: the sender's and every receiver's JSON report, the bytes on the sender's link
(copies = those bytes / the bytes one copy of every file takes on the wire), CPU and the
dequeue gaps of every shaped switch port.  A round that ends with bytes missing, a failed
receiver or a bound wait that expires fails the run.

``--backend model`` writes the model's times only (no root, no network).  ``--backend sim``
runs the same transfers packet by packet in ns-3 (no root; docs/sim.md): the plan's tree as
static multicast routes, unicast and the replies on pinned routes, the real protocol's
receivers and an event-driven copy of its sender in simulated time (harness/simxfer.py); it
writes the emulated run's tables, without CPU (the sender is never CPU-bound there).

Each repetition is one ``Transfers`` (harness/transfer.py: the network, the group and the
transfers in order), which the emulated and sim backends run (harness/filexfer.py,
harness/simxfer.py) and return as typed ``TransferResult``s; this file keeps what is orca's
own: the workload's files, the cases of a repetition, the bound and the rows.
"""
from __future__ import annotations

import itertools
import json
import os
import random
from argparse import ArgumentParser
from dataclasses import dataclass

import routing
import topos
from apps.filexfer import protocol
from emulator import cgroup
from harness.common import add_backend, add_shared, repetitions, run_rng
from harness.params import NetworkParams, Quick, check_topo
from harness.plan import RunPlan, network
from harness.runfolder import RunFolder
from harness.transfer import ETH_HEADER, Transfer, TransferResult, Transfers
from harness.workload import check, make
from model.network import path_links
from routing.multicast import add_group, tree_edges
from routing.walk import first_choice, walk
from store import Row, write_csv
from topos.traffic import multicast

NAME = "orca"
HELP = ("in-network multicast vs application-layer UDP unicast for an iterative 33-round "
        "file transfer: execution time, send and wait times, sender processes")
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ('`001_…` Figs. 5–8: in-network multicast vs application-layer UDP unicast, '
         '33-round file transfer with the real app (`apps/filexfer`), workloads ×1…×16, '
         'unicast with 1…N sending processes; execution time, send-time and wait-time '
         "CDFs, copies on the sender's link, model bound")
#: what scripts/reproduce.sh runs for the figure (with --quick unless --full)
SWEEP = "scripts/orca-sweep.sh"
SWEEP_NOTE = '`--pace 0`: unpaced sender'  # other figures of the same script


@dataclass(frozen=True)
class OrcaParams(NetworkParams):
    """The parameters of one orca run (their flags: add_arguments)."""

    topo: str = "orca,receivers=4,racks=2"
    bw: float = 50.0
    runs: int = 3
    backend: str = "emulated"
    workloads: str = "1,2,4,8,16"
    base_mb: float = 0.0
    procs: str = "1,2,4"
    pace: float = 0.95
    members: int = 4
    sender_cpu: str = "0"
    sender_net: str = "away"

    def check(self) -> None:
        check_topo(self.topo)       # first: a run's checks begin with the network
        super().check()


PARAMS = OrcaParams
QUICK: Quick = {"runs": 1, "workloads": "1,4,16", "procs": "1,4"}

ROUNDS = 33
#: the paper's base workload (88 MB), its largest (1.4 GB) and that one's largest file
PAPER_BASE_MB, PAPER_LARGEST_MB, PAPER_LARGEST_FILE_MB = 88.0, 1408.0, 141.0
PAPER_BW_MBPS = 10_000.0
GROUP = "239.1.1.1"
BASE_PORT = 6000
#: file bytes a datagram: 1436 + 36 (app headers) + 28 (IP, UDP) = a full 1500-byte packet
PAYLOAD = 1500 - protocol.DATA_HEADER_LEN - protocol.IP_UDP_OVERHEAD
SENDER_NET = ("away", "same")
BACKENDS = ("emulated", "model", "sim")
#: the CPU a capped sender is pinned to with --sender-net away (RPS sends the rest elsewhere)
SENDER_PIN = 0
SCHEDULE_SEED = 33  # fixed: every run sends the same files, like the paper's data set


def add_arguments(p: ArgumentParser) -> None:
    """Shared flags plus the workloads, the sender processes, pacing and group size."""
    add_shared(p, PARAMS, QUICK)
    add_backend(p, BACKENDS)
    p.add_argument("--workloads", default=None,
                   help="comma list of multiples of the base workload, each its own 33-round "
                        f"transfer (default: {PARAMS.workloads}; quick: "
                        f"{QUICK['workloads']})")
    p.add_argument("--base-mb", dest="base_mb", type=float, default=None,
                   help="total MB (10^6 bytes) of the base workload; 0 = the paper's 88 MB "
                        "at 10 Gb/s scaled to --bw (default: 0)")
    p.add_argument("--procs", default=None,
                   help="unicast sending processes compared at the largest workload "
                        f"(Fig. 8), comma list (default: {PARAMS.procs}; quick: "
                        f"{QUICK['procs']})")
    p.add_argument("--pace", type=float, default=None,
                   help="the sender's total rate as a share of the link's IP rate, 0 < x <= 1; "
                        "0 = unpaced, as fast as the socket takes datagrams (the paper's "
                        f"sender; losses at its own queue are repaired) (default: "
                        f"{PARAMS.pace})")
    p.add_argument("--sender-cpu", dest="sender_cpu", default=None,
                   help="cap every sending process at this many cores (a cgroup's CFS "
                        "bandwidth: the paper's CPU-bound sender, Fig. 8); a comma list runs "
                        "every case under each cap; 0 = uncapped (default: "
                        f"{PARAMS.sender_cpu})")
    p.add_argument("--sender-net", dest="sender_net", choices=SENDER_NET, default=None,
                   help="where the emulated network processes a capped sender's datagrams: "
                        "away = the sender pinned to CPU 0 and its switch port steering what "
                        "it receives (RPS) to the other CPUs, so the cap holds only the "
                        "sender's own work, as on a host whose NIC and switches do the rest; "
                        "same = the kernel's default, the first switch and every hop after it "
                        "in the sender's softirq, charged to its cap (default: "
                        f"{PARAMS.sender_net})")
    p.add_argument("--members", type=int, default=None,
                   help="receivers drawn at random on topologies other than orca (default: "
                        f"{PARAMS.members})")


def _ints(text: str, flag: str) -> list[int]:
    try:
        values = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--{flag} {text!r}: give a comma list of positive integers") from None
    if not values or any(v < 1 for v in values) or len(set(values)) != len(values):
        raise ValueError(f"--{flag} {text!r}: give a comma list of distinct positive integers")
    return values


def sender_caps(params: OrcaParams) -> list[float]:
    """Cores per sending process, in the order given (0 = uncapped)."""
    text = str(params.sender_cpu)
    try:
        caps = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--sender-cpu {text!r}: give a comma list of cores per sending "
                         "process (0 = uncapped)") from None
    if not caps or len(set(caps)) != len(caps):
        raise ValueError(f"--sender-cpu {text!r}: give a comma list of distinct numbers")
    cores = os.cpu_count() or 1
    for c in caps:
        if not 0 <= c <= cores:
            raise ValueError(f"--sender-cpu {c:g}: must be 0 (uncapped) or above 0 and at "
                             f"most this machine's {cores} cores")
        if c:
            cgroup.quota(c)   # raises, in one line, below the kernel's smallest quota
    return caps


def workloads(params: OrcaParams) -> list[int]:
    """Multiples of the base workload, ascending."""
    return sorted(_ints(params.workloads, "workloads"))


def procs_list(params: OrcaParams) -> list[int]:
    """Unicast process counts for Fig. 8, ascending (1 is always the single-process run)."""
    return sorted(set(_ints(params.procs, "procs")) | {1})


def base_bytes(params: OrcaParams) -> int:
    """Total bytes of the base workload (the paper's, scaled to the link rate, by default)."""
    mb = params.base_mb or PAPER_BASE_MB * params.bw / PAPER_BW_MBPS
    return int(mb * 1e6)


def schedule(total: int, rounds: int = ROUNDS,
             largest_share: float = PAPER_LARGEST_FILE_MB / PAPER_LARGEST_MB) -> list[int]:
    """``rounds`` file sizes summing to ``total``; the largest is ``largest_share`` of it.

    The other sizes are a fixed log-normal draw (sigma 0.5) scaled to the rest and kept below
    the largest; the largest sits at a fixed random round.  A workload of multiple w is
    w times every size (``run``), as the paper doubles its workload.
    """
    if total < rounds:
        raise ValueError(f"a workload of {total} bytes cannot fill {rounds} rounds")
    rng = random.Random(SCHEDULE_SEED)
    weights = [rng.lognormvariate(0.0, 0.5) for _ in range(rounds - 1)]
    largest = max(1, round(total * largest_share))
    rest = total - largest
    scale = rest / sum(weights)
    sizes = [max(1, int(w * scale)) for w in weights]
    sizes[sizes.index(max(sizes))] += rest - sum(sizes)   # exact total, in the biggest other
    if max(sizes) > largest:
        raise ValueError(f"schedule: a file above the largest ({max(sizes)} > {largest})")
    sizes.insert(rng.randrange(rounds), largest)
    return sizes


def validate(params: OrcaParams) -> None:
    """One-line ValueError for anything this experiment cannot run."""
    workloads(params)
    procs_list(params)
    caps = sender_caps(params)
    if params.sender_net not in SENDER_NET:
        raise ValueError(f"--sender-net must be one of {', '.join(SENDER_NET)}, got "
                         f"{params.sender_net!r}")
    if any(caps) and params.sender_net == "away" and (os.cpu_count() or 1) < 2:
        raise ValueError("--sender-net away needs a second CPU for the network's work "
                         "(give --sender-net same)")
    if params.sender_net == "away" and max(caps) * max(procs_list(params)) > 1:
        raise ValueError(f"--sender-net away pins every sending process to one CPU: "
                         f"--sender-cpu x --procs must be at most 1 core, got "
                         f"{max(caps):g} x {max(procs_list(params))}")
    if not 0 <= params.pace <= 1:
        raise ValueError(f"--pace must be in [0, 1] (0 = unpaced), got {params.pace}")
    if params.base_mb < 0:
        raise ValueError(f"--base-mb must be >= 0, got {params.base_mb}")
    schedule(base_bytes(params))
    topo = topos.build(params.topo)
    fixed = getattr(topo, "receivers", None)
    if fixed is not None and params.members != len(fixed):
        # the testbed's receivers are part of the topology: a different --members would be
        # silently ignored, so it is refused
        raise ValueError(f"--members {params.members}: {params.topo} has its own "
                         f"{len(fixed)} receivers (give --members {len(fixed)}, or another "
                         "--topo to draw a group from)")
    if fixed is None and not 1 <= params.members < len(topo.hosts()):
        raise ValueError(f"--members {params.members} must be 1..{len(topo.hosts()) - 1} "
                         f"on {params.topo}")
    src, members = group_of(topo, params, 0)
    if max(procs_list(params)) > len(members):
        raise ValueError(f"--procs {params.procs}: at most one process per receiver "
                         f"({len(members)})")
    check(params, [repetition(params, 0)[0]])     # what the view cannot run of it


def group_of(topo: topos.Topology, params: OrcaParams, run: int) -> tuple[str, list[str]]:
    """Sender and receivers: the orca testbed's own, else a seeded draw from other racks."""
    if hasattr(topo, "receivers"):
        return topo.sender, list(topo.receivers)   # type: ignore[attr-defined]
    return multicast(topo.hosts(), run_rng(params.seed, run), params.members,
                     rack=topo.access_switch)


def one_copy_bytes(sizes: list[int], chunk: int = PAYLOAD) -> list[int]:
    """Bytes one copy of each file takes on a link (Ethernet, IP, UDP, app headers)."""
    per = ETH_HEADER + protocol.IP_UDP_OVERHEAD + protocol.DATA_HEADER_LEN
    return [s + protocol.datagrams_for(s, chunk) * per for s in sizes]


def busiest_copies(topo: topos.Topology, plan: routing.Plan, src: str,
                   members: list[str]) -> dict[str, int]:
    """Copies of every file on the busiest link, per mode: a tree carries each once; unicast
    paths add up (on the orca testbed: every receiver's copy crosses the sender's link)."""
    tree_edges(topo, src, members)   # raises if a member cannot be reached
    load: dict[tuple[str, str], int] = {}
    for m in members:
        sws = walk(topo, plan, src, m, first_choice)
        for link in path_links(src, sws, m):
            load[link] = load.get(link, 0) + 1
    return {"multicast": 1, "unicast": max(load.values())}


def bound_s(sizes: list[int], copies: int, bw: float) -> list[float]:
    """Per round: seconds the busiest link needs for ``copies`` copies of the file."""
    return [copies * b * 8 / (bw * 1e6) for b in one_copy_bytes(sizes)]


# -- the run -----------------------------------------------------------------------------------

def _cases(params: OrcaParams, run: int) -> list[tuple[float, int, str, int]]:
    """(sender cap, workload, mode, procs) of one repetition: under each cap, both modes at
    every workload, then the extra process counts at the largest; odd repetitions swap the
    modes' order (and the caps' order, so neither always goes first)."""
    loads = workloads(params)
    modes = ["multicast", "unicast"] if run % 2 == 0 else ["unicast", "multicast"]
    caps = sender_caps(params)
    if run % 2:
        caps = caps[::-1]
    cases = []
    for c in caps:
        cases += [(c, w, m, 1) for w in loads for m in modes]
        cases += [(c, loads[-1], "unicast", p) for p in procs_list(params) if p > 1]
    return cases


def _rows(run: int, cap: float, w: int, mode: str, procs: int, sizes: list[int],
          bounds: list[float], res: TransferResult | None
          ) -> tuple[Row, list[Row], list[Row]]:
    """transfers.csv, rounds.csv and receivers.csv rows of one transfer (model-only: None)."""
    base = {"run": run, "sender_cpu": cap, "workload": w, "mode": mode, "procs": procs}
    one = sum(one_copy_bytes(sizes))
    if res is None:
        t = {**base, "total_bytes": sum(sizes), "bound_s": round(sum(bounds), 4)}
        return t, [{**base, "round": i + 1, "size_bytes": s, "bound_s": round(b, 5)}
                   for i, (s, b) in enumerate(zip(sizes, bounds))], []
    snd = res.sender
    throttle = res.throttle
    rounds = [{**base, "round": x["round"], "size_bytes": x["size_bytes"],
               "bound_s": round(b, 5), "send_s": round(x["send_s"], 5),
               "round_s": round(x["round_s"], 5), "bytes_sent": x["bytes_sent"],
               "repairs_sent": x["repairs_sent"], "nacks_received": x["nacks_received"],
               "send_errors": x["send_errors"]}
              for x, b in zip(snd["rounds"], bounds)]
    recv_rows = []
    for r, rep in res.receivers.items():
        recv_rows += [{**base, "receiver": r, "round": x["round"],
                       "bytes_received": x["bytes_received"], "complete": x["complete"],
                       "lost_before_repair": x["lost_before_repair"],
                       "repaired": x["repaired"], "duplicates": x["duplicates"],
                       "wait_s": "" if x["wait_s"] is None else round(x["wait_s"], 5)}
                      for x in rep["rounds"]]
    full = res.dequeue_gaps.get("full_size") or {}
    gaps = full.get("within_10pct")
    t = {**base, "total_bytes": sum(sizes), "bound_s": round(sum(bounds), 4),
         "total_s": round(snd["total_s"], 4),
         "bound_ratio": round(sum(bounds) / snd["total_s"], 4),
         "sender_link_bytes": res.sender_link_bytes,
         "copies": round(res.sender_link_bytes / one, 4),
         "repairs_sent": sum(x["repairs_sent"] for x in snd["rounds"]),
         "lost_before_repair": sum(x["lost_before_repair"] for x in recv_rows),
         "send_errors": sum(x["send_errors"] for x in snd["rounds"]),
         "cpu_mean": res.cpu_mean, "cpu_saturated_share": res.cpu_saturated_share,
         "gaps_within_10pct": "" if gaps is None else gaps,
         # how many busy-link gaps that share is of (a sender that never fills the link
         # leaves few)
         "gap_samples": full.get("samples", ""),
         # the sender's own CPU (every process), and how often its cap held it back
         "sender_cpu_s": snd.get("cpu_s", ""),
         "sender_cores": round(snd["cpu_s"] / snd["total_s"], 4) if snd.get("cpu_s") else "",
         "throttled_periods": "" if throttle is None else int(throttle["nr_throttled"]),
         "periods": "" if throttle is None else int(throttle["nr_periods"]),
         "throttled_s": "" if throttle is None else throttle["throttled_s"],
         "cpu_limit": "" if throttle is None else throttle["limit"]}
    return t, rounds, recv_rows


def repetition(params: OrcaParams, r: int) -> tuple[Transfers, dict[Transfer, tuple[float, int]],
                                                    dict[str, int]]:
    """Repetition ``r``: its network, group and transfers (``_cases``, in order), each
    transfer's (sender cap, workload), and the copies of every file on the busiest link per
    mode (the model's bound)."""
    topo = topos.build(params.topo)
    src, members = group_of(topo, params, r)
    plan = routing.make_plan(topo, "st")
    add_group(topo, plan, GROUP, src, members)
    copies = busiest_copies(topo, plan, src, members)
    files = schedule(base_bytes(params))
    transfers: dict[Transfer, tuple[float, int]] = {}
    for i, (c, w, mode, procs) in enumerate(_cases(params, r)):
        sizes = tuple(f * w for f in files)
        capped = f" cap {c:g}" if c else ""
        t = Transfer(mode, procs, sizes, BASE_PORT + i,  # type: ignore[arg-type]
                     sum(bound_s(list(sizes), copies[mode], params.bw)) / (params.pace or 1.0),
                     f"x{w}-{mode}-p{procs}{f'-cpu{c:g}' if c else ''}",
                     f"run {r}{capped} x{w} {mode} x{procs}", c)
        transfers[t] = (c, w)
    net = Transfers(topo, plan, src, tuple(members), GROUP, params.bw, params.queue,
                    params.seed, r, params.pace, PAYLOAD, tuple(transfers),
                    params.sender_net, SENDER_PIN)  # type: ignore[arg-type]
    return net, transfers, copies


def run(params: OrcaParams, folder: RunFolder) -> None:
    """Every repetition on one network: every workload in both modes, then Fig. 8's procs."""
    backend = make(params, folder)
    files = schedule(base_bytes(params))
    folder.record("workload_bytes", {str(w): sum(files) * w for w in workloads(params)})
    transfers: list[Row] = []
    rounds: list[Row] = []
    recv_rows: list[Row] = []
    for r in repetitions(params, folder):
        net, cases, copies = repetition(params, r)
        run_dir = folder.path / f"run{r:02d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "group.json").write_text(json.dumps(
            {"group": GROUP, "sender": net.src, "receivers": list(net.members),
             "copies": copies, "tree": tree_edges(net.topo, net.src, list(net.members))},
            indent=1))
        # the model measures nothing: the bound alone, for every transfer
        got: list[tuple[Transfer, TransferResult | None]] = \
            [(t, None) for t in net.transfers] if not backend.view.measures else []
        for t, res in itertools.chain(got, ((x.transfer, x) for x in
                                            backend.transfer(net, run_dir))):
            c, w = cases[t]
            row, rr, rv = _rows(r, c, w, t.mode, t.procs, list(t.sizes),
                                bound_s(list(t.sizes), copies[t.mode], params.bw), res)
            transfers.append(row)
            rounds += rr
            recv_rows += rv
            if res is None:
                continue
            row.update(backend=backend.view.name, **res.facts)
            cpu = f", CPU {row['cpu_mean']} %, sender {row['sender_cores']} cores" \
                if res.cpu_mean is not None else ""
            print(f"{t.where} ({backend.view.name}): {row['total_s']:.3f} s (bound "
                  f"{row['bound_s']:.3f} s), copies on the sender's link {row['copies']:.3f}, "
                  f"repairs {row['repairs_sent']}{cpu}", flush=True)
    write_csv(folder.path / "transfers.csv", transfers)
    write_csv(folder.path / "rounds.csv", rounds)
    if backend.view.measures:
        write_csv(folder.path / "receivers.csv", recv_rows)


def plan(params: OrcaParams) -> RunPlan:
    """What a run does (harness/plan.py): one network per repetition, every transfer of
    ``_cases`` a phase on it, each as long as its rounds' busiest-link bounds at the
    sender's pace (unpaced: the bounds themselves)."""
    files = schedule(base_bytes(params))
    nets = []
    for r in range(params.runs):
        topo = topos.build(params.topo)
        src, members = group_of(topo, params, r)
        copies = busiest_copies(topo, routing.make_plan(topo, "st"), src, members)
        cases = _cases(params, r)
        seconds = sum(sum(bound_s([f * w for f in files], copies[mode], params.bw))
                      for _, w, mode, _ in cases) / (params.pace or 1.0)
        nets.append(network(params.topo, len(cases), seconds, len(members), len(members),
                            params.bw, topo))
    return RunPlan(params.runs, tuple(nets), f"one network, {len(_cases(params, 0))} "
                   "transfers on it")
