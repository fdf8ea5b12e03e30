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
receivers and an event-driven copy of its sender in simulated time (``simxfer``); it writes
the emulated run's tables, without CPU (the sender is never CPU-bound there).
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import routing
import topos
from apps.filexfer import protocol
from emulator import cgroup
from emulator.emulation import Emulation
from emulator.proc import RunError, first_line, how_ended
from harness.common import add_backend, add_shared, run_rng
from harness.params import NetworkParams, check_topo
from harness.plan import RunPlan, network
from harness.runfolder import RunFolder
from harness.sampling import cpu_sampler
from harness.session import judge_measurement, session
from harness.traffic import port_counters
from model.network import path_links
from routing.multicast import add_group, tree_edges
from routing.walk import first_choice, walk
from sim import require_ns3
from store import write_csv
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
QUICK: dict[str, Any] = {"runs": 1, "workloads": "1,4,16", "procs": "1,4"}

ROUNDS = 33
#: the paper's base workload (88 MB), its largest (1.4 GB) and that one's largest file
PAPER_BASE_MB, PAPER_LARGEST_MB, PAPER_LARGEST_FILE_MB = 88.0, 1408.0, 141.0
PAPER_BW_MBPS = 10_000.0
GROUP = "239.1.1.1"
BASE_PORT = 6000
#: file bytes a datagram: 1436 + 36 (app headers) + 28 (IP, UDP) = a full 1500-byte packet
PAYLOAD = 1500 - protocol.DATA_HEADER_LEN - protocol.IP_UDP_OVERHEAD
ETH_HEADER = 14
SENDER_NET = ("away", "same")
BACKENDS = ("emulated", "model", "sim")
#: IP bytes a simulated link carries per frame byte: a point-to-point frame adds 2 bytes
SIM_FRAME = 2
#: the CPU a capped sender is pinned to with --sender-net away (RPS sends the rest elsewhere)
SENDER_PIN = 0
SCHEDULE_SEED = 33  # fixed: every run sends the same files, like the paper's data set


def add_arguments(p: Any) -> None:
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
    if params.backend != "emulated" and any(caps):
        raise ValueError(f"--sender-cpu caps a real sending process: it needs --backend "
                         f"emulated (the {'simulator' if params.backend == 'sim' else 'model'}"
                         " has no CPU)")
    if params.backend == "sim":
        require_ns3()
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
    load: dict[Any, int] = {}
    for m in members:
        sws = walk(topo, plan, src, m, first_choice)
        for link in path_links(src, sws, m):
            load[link] = load.get(link, 0) + 1
    return {"multicast": 1, "unicast": max(load.values())}


def bound_s(sizes: list[int], copies: int, bw: float) -> list[float]:
    """Per round: seconds the busiest link needs for ``copies`` copies of the file."""
    return [copies * b * 8 / (bw * 1e6) for b in one_copy_bytes(sizes)]


# -- one transfer through the emulated network ---------------------------------------------

def _app(emu: Emulation, host: str, args: list[str], log: Path,
         cap: cgroup.CpuCap | None = None, pin: int | None = None) -> subprocess.Popen[str]:
    """Start the file-transfer app in ``host``.  Its working folder is its log's folder (an
    absolute path, like every path in ``args``), so neither where dcrepro was started nor
    where this module sits matters; the app is found as an installed package."""
    fh = open(log, "w")  # noqa: SIM115 - the child holds it; closed when we return
    try:
        return emu.popen(emu.host(host), [sys.executable, "-m", "apps.filexfer", *args],
                         cwd=str(log.resolve().parent), cgroup=cap, pin=pin,
                         stdout=subprocess.PIPE, stderr=fh, text=True)
    finally:
        fh.close()


def _tail(path: Path) -> str:
    text = path.read_text(errors="replace").strip() if path.exists() else ""
    return text.splitlines()[-1][:300] if text else "no message"


def transfer_limit(expected_s: float, rounds: int) -> float:
    """Seconds a transfer of ``rounds`` rounds expected to take ``expected_s`` may take in
    all (the emulated run's bound wait, and the simulated run's limit)."""
    return 60 + 3 * expected_s + 2 * rounds


def transfer(emu: Emulation, src: str, members: list[str], mode: str, procs: int,
             sizes: list[int], port: int, rate_mbps: float, expected_s: float,
             out: Path, cap: cgroup.CpuCap | None = None,
             pin: int | None = None) -> dict[str, Any]:
    """Run the app once (33 rounds) and check that every round delivered every byte.  With
    ``cap``, the sender (every one of its processes) runs in that cgroup, whose limit the
    caller has set; its throttling counters are read around the transfer."""
    out = out.resolve()   # the apps run in other folders: hand them absolute paths only
    out.mkdir(parents=True, exist_ok=True)
    topo = emu.topo
    recv_timeout = 30 + 2 * max(1.0, expected_s / len(sizes))  # silence a receiver accepts
    recvs = {}
    for i, r in enumerate(members, start=1):
        ip = topo.ip(r)
        args = ["recv", "--listen", f"0.0.0.0:{port}" if mode == "multicast" else f"{ip}:{port}",
                "--id", str(i), "--report", str(out / f"recv-{r}.json"),
                "--timeout", f"{recv_timeout:.0f}"]
        if mode == "multicast":
            args += ["--group", GROUP, "--iface", ip]
        recvs[r] = _app(emu, r, args, out / f"recv-{r}.log")
    deadline = time.monotonic() + 30
    for r, p in recvs.items():               # readiness: each prints 'listening ...'
        line = first_line(p, deadline - time.monotonic())
        if not line.startswith("listening"):
            raise RunError(f"receiver {r} not ready in 30 s: {_tail(out / f'recv-{r}.log')}")
    dest = ",".join(f"{topo.ip(r)}:{port}" for r in members)
    args = ["send", "--receivers", dest, "--mode", mode, "--procs", str(procs),
            "--sizes", ",".join(map(str, sizes)), "--payload", str(PAYLOAD),
            "--rate-mbps", f"{rate_mbps:.4f}", "--timeout", "20",
            "--report", str(out / "sender.json"), "--mcast-if", topo.ip(src)]
    if mode == "multicast":
        args += ["--group", f"{GROUP}:{port}", "--ttl", "8"]
    before = port_counters(emu)
    access = topo.access_switch(src)
    cpu = cpu_sampler(out / "cpu.csv", interval=0.25)   # transfers can be under a second
    cpu.start()
    limit = transfer_limit(expected_s, len(sizes))
    throttle0 = cap.stat() if cap is not None else None
    with emu.dequeue_gaps() as gaps:
        sender = _app(emu, src, args, out / "sender.log", cap, pin)
        end = time.monotonic() + limit
        while sender.poll() is None:
            if time.monotonic() > end:
                raise RunError(f"{mode} x{procs}: the sender did not finish in {limit:.0f} s")
            emu.check_alive()
            for r, p in recvs.items():
                if p.poll() not in (None, 0):
                    raise RunError(f"receiver {r} ended with {how_ended(p)}: "
                                   f"{_tail(out / f'recv-{r}.log')}")
            try:
                sender.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
    samples = cpu.stop()
    throttle: dict[str, Any] | None = None
    if cap is not None and throttle0 is not None:
        end_stat = cap.stat()
        throttle = {k: round(end_stat[k] - throttle0[k], 4) for k in end_stat}
        throttle["limit"] = cap.read_limit()
    if sender.returncode != 0:
        raise RunError(f"{mode} x{procs}: sender ended with {how_ended(sender)}: "
                       f"{_tail(out / 'sender.log')}")
    for r, p in recvs.items():
        try:
            p.wait(timeout=recv_timeout + 10)
        except subprocess.TimeoutExpired:
            raise RunError(f"receiver {r} did not end after the sender's BYE") from None
    after = port_counters(emu)
    key = (access, topo.port(access, src))
    sender_rep = json.loads((out / "sender.json").read_text())
    receivers = {r: json.loads((out / f"recv-{r}.json").read_text()) for r in members}
    for r, rep in receivers.items():
        got = [x["bytes_received"] for x in rep["rounds"]]
        if not rep["ok"] or got != sizes or not all(x["complete"] for x in rep["rounds"]):
            raise RunError(f"{mode} x{procs}: receiver {r} did not get every byte "
                           f"({rep.get('error') or 'rounds incomplete'})")
    window = [u for _, u in samples]
    return {"sender": sender_rep, "receivers": receivers, "dequeue_gaps": gaps,
            "throttle": throttle,
            "sender_link_bytes": after[key].rx_bytes - before[key].rx_bytes,
            "cpu_mean": round(sum(window) / len(window), 1) if window else None,
            "cpu_saturated_share": round(sum(u > 90 for u in window) / len(window), 3)
            if window else None}


# -- one transfer in ns-3 (--backend sim) ---------------------------------------------------

def simulate_transfer(topo: topos.Topology, plan: routing.Plan, src: str, members: list[str],
                      mode: str, procs: int, sizes: list[int], params: OrcaParams, run: int,
                      port: int, expected_s: float, out: Path) -> dict[str, Any]:
    """transfer()'s counterpart in ns-3: the same reports (sender.json, recv-*.json, written
    into ``out``) and the bytes on the sender's link counted as Ethernet frames (IP + 14 a
    packet, what the emulated switch port counts), plus sim.json.  Every round must deliver
    every byte (RunError otherwise)."""
    from sim.ns3run import simulate_datagrams
    from sim.spec import SimConfig, build, group_of_plan, reply_routes

    from .simxfer import SimTransfer
    out.mkdir(parents=True, exist_ok=True)
    limit = transfer_limit(expected_s, len(sizes))
    cfg = SimConfig(duration=limit, trim=0.0, interval=limit, bw=params.bw,
                    queue=params.queue, seed=params.seed, run=run + 1)
    rng = run_rng(params.seed, run)
    net = build(topo, plan, [(src, m) for m in members], cfg, rng)
    flows = {f.dst: f for f in net.flows}
    multicast = mode == "multicast"
    group = group_of_plan(topo, plan, GROUP, src, members) if multicast else None
    dests = {m: net.host_addr(m) if multicast else flows[m].dst_addr for m in members}
    sources = {m: flows[m].src_addr for m in members}
    # the pacer counts IP bytes; a simulated link's frame adds SIM_FRAME, not ETH_HEADER
    rate = params.pace * params.bw * 1500 / (1500 + SIM_FRAME)
    app = SimTransfer(src, members, mode, procs, sizes, PAYLOAD, rate, port,
                      GROUP if multicast else None, 20.0, dests, sources, rng)
    try:
        res = simulate_datagrams(net, cfg, app, group,
                                 reply_routes(net, group) if group else None, limit)
    except protocol.WaitExpired as e:
        raise RunError(f"{mode} x{procs} (sim): {e}") from None
    snd, receivers = app.sender_report(), app.receiver_reports()
    protocol.write_report(str(out / "sender.json"), snd)
    for m, rep in receivers.items():
        protocol.write_report(str(out / f"recv-{m}.json"), rep)
    if not snd["ok"]:
        raise RunError(f"{mode} x{procs} (sim): the transfer did not finish in {limit:.0f} "
                       f"simulated s ({len(snd['rounds'])} of {len(sizes)} rounds)")
    for r, rep in receivers.items():
        got = [x["bytes_received"] for x in rep["rounds"]]
        if got != sizes or not all(x["complete"] for x in rep["rounds"]):
            raise RunError(f"{mode} x{procs} (sim): receiver {r} did not get every byte")
    port_out = next(p for p in res.ports if p.node == src)
    (out / "sim.json").write_text(json.dumps({
        "config": {"bw": params.bw, "queue": params.queue, "seed": params.seed,
                   "run": run + 1, "rate_mbps": rate}, "ns3": res.ns3_version,
        "wall_s": round(res.wall_s, 3), "import_s": round(res.import_s, 3),
        "end_s": res.end_s, "group": None if group is None else
        [{"switch": h.switch, "from": h.parent, "to": list(h.children)} for h in group.hops],
        "flows": [{"dst": f.dst, "path": f.path, "rev_path": f.rev_path,
                   "src_addr": f.src_addr, "dst_addr": f.dst_addr} for f in net.flows],
        "ports": [{"node": p.node, "peer": p.peer, "sent": p.sent, "sent_bytes": p.sent_bytes,
                   "drops": p.drops} for p in res.ports]}, indent=1))
    return {"sender": snd, "receivers": receivers, "dequeue_gaps": {}, "throttle": None,
            "sender_link_bytes": port_out.sent_bytes + ETH_HEADER * port_out.sent,
            "link_drops": sum(p.drops for p in res.ports),
            "cpu_mean": None, "cpu_saturated_share": None, "sim_wall_s": res.wall_s}


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
          bounds: list[float], res: dict[str, Any] | None
          ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """transfers.csv, rounds.csv and receivers.csv rows of one transfer (model-only: None)."""
    base = {"run": run, "sender_cpu": cap, "workload": w, "mode": mode, "procs": procs}
    one = sum(one_copy_bytes(sizes))
    if res is None:
        t = {**base, "total_bytes": sum(sizes), "bound_s": round(sum(bounds), 4)}
        return t, [{**base, "round": i + 1, "size_bytes": s, "bound_s": round(b, 5)}
                   for i, (s, b) in enumerate(zip(sizes, bounds))], []
    snd = res["sender"]
    throttle = res.get("throttle")
    rounds = [{**base, "round": x["round"], "size_bytes": x["size_bytes"],
               "bound_s": round(b, 5), "send_s": round(x["send_s"], 5),
               "round_s": round(x["round_s"], 5), "bytes_sent": x["bytes_sent"],
               "repairs_sent": x["repairs_sent"], "nacks_received": x["nacks_received"],
               "send_errors": x["send_errors"]}
              for x, b in zip(snd["rounds"], bounds)]
    recv_rows = []
    for r, rep in res["receivers"].items():
        recv_rows += [{**base, "receiver": r, "round": x["round"],
                       "bytes_received": x["bytes_received"], "complete": x["complete"],
                       "lost_before_repair": x["lost_before_repair"],
                       "repaired": x["repaired"], "duplicates": x["duplicates"],
                       "wait_s": "" if x["wait_s"] is None else round(x["wait_s"], 5)}
                      for x in rep["rounds"]]
    full = res["dequeue_gaps"].get("full_size") or {}
    gaps = full.get("within_10pct")
    t = {**base, "total_bytes": sum(sizes), "bound_s": round(sum(bounds), 4),
         "total_s": round(snd["total_s"], 4),
         "bound_ratio": round(sum(bounds) / snd["total_s"], 4),
         "sender_link_bytes": res["sender_link_bytes"],
         "copies": round(res["sender_link_bytes"] / one, 4),
         "repairs_sent": sum(x["repairs_sent"] for x in snd["rounds"]),
         "lost_before_repair": sum(x["lost_before_repair"] for x in recv_rows),
         "send_errors": sum(x["send_errors"] for x in snd["rounds"]),
         "cpu_mean": res["cpu_mean"], "cpu_saturated_share": res["cpu_saturated_share"],
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


def run(params: OrcaParams, folder: RunFolder) -> None:
    """Every repetition on one network: every workload in both modes, then Fig. 8's procs."""
    emulated = params.backend == "emulated"
    bw = params.bw
    base = base_bytes(params)
    files = schedule(base)
    sizes_of = {w: [s * w for s in files] for w in workloads(params)}
    folder.record("workload_bytes", {str(w): sum(s) for w, s in sizes_of.items()})
    transfers: list[dict[str, Any]] = []
    rounds: list[dict[str, Any]] = []
    recv_rows: list[dict[str, Any]] = []
    for r in range(params.runs):
        topo = topos.build(params.topo)
        src, members = group_of(topo, params, r)
        plan = routing.make_plan(topo, "st")
        add_group(topo, plan, GROUP, src, members)
        copies = busiest_copies(topo, plan, src, members)
        run_dir = folder.path / f"run{r:02d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "group.json").write_text(json.dumps(
            {"group": GROUP, "sender": src, "receivers": members, "copies": copies,
             "tree": tree_edges(topo, src, members)}, indent=1))
        cases = _cases(params, r)
        if params.backend == "sim":
            for i, (c, w, mode, procs) in enumerate(cases):
                bounds = bound_s(sizes_of[w], copies[mode], bw)
                folder.log.info("run %d: workload x%d, %s, %d process(es), simulated", r, w,
                                mode, procs)
                res = simulate_transfer(topo, plan, src, members, mode, procs, sizes_of[w],
                                        params, r, BASE_PORT + i,
                                        sum(bounds) / (params.pace or 1.0),
                                        run_dir / f"x{w}-{mode}-p{procs}")
                t, rr, rv = _rows(r, c, w, mode, procs, sizes_of[w], bounds, res)
                t.update(backend="sim", link_drops=res["link_drops"],
                         sim_wall_s=round(res["sim_wall_s"], 2))
                transfers.append(t)
                rounds += rr
                recv_rows += rv
                print(f"run {r} x{w} {mode} procs={procs} (sim): {t['total_s']:.3f} s "
                      f"(bound {t['bound_s']:.3f} s), copies on the sender's link "
                      f"{t['copies']:.3f}, repairs {t['repairs_sent']}, wall "
                      f"{res['sim_wall_s']:.1f} s", flush=True)
            folder.record(f"run{r:02d}", {"backend": "sim", "sender": src,
                                          "receivers": members})
            continue
        if not emulated:
            for c, w, mode, procs in cases:
                t, rr, _ = _rows(r, c, w, mode, procs, sizes_of[w],
                                 bound_s(sizes_of[w], copies[mode], bw), None)
                transfers.append(t)
                rounds += rr
            continue
        # the pacer counts IP bytes, the link's HTB Ethernet frames too
        rate = params.pace * bw * 1500 / (1500 + ETH_HEADER)
        with session(topo, plan, params, run_dir, f"{folder.id}-{r}") as s:
            emu = s.emu
            folder.record(f"run{r:02d}", s.facts)   # (again below, with the queue check)
            # one cgroup for the sender of every capped transfer, its limit set per transfer
            cap = emu.cpu_cap("sender") if any(c for c, *_ in cases) else None
            access = topo.access_switch(src)
            sender_port = f"{access}-eth{topo.port(access, src)}"
            if cap is not None:
                folder.record(f"run{r:02d}_sender_cgroup",
                              {"path": str(cap.path), "cgroup_version": cap.hier.version})
            for i, (c, w, mode, procs) in enumerate(cases):
                bounds = bound_s(sizes_of[w], copies[mode], bw)
                folder.log.info("run %d: cap %g, workload x%d, %s, %d process(es)", r, c, w,
                                mode, procs)
                nproc = procs if mode == "unicast" else 1
                away = bool(c) and params.sender_net == "away"
                if cap is not None:
                    if c:   # every sending process gets c cores: the group c x nproc
                        cap.set(c * nproc)
                    # the first switch and what follows on other CPUs, or back in the
                    # sender's softirq (the kernel's default, and every uncapped transfer's)
                    rps = emu.steer_rx(sender_port, [k for k in range(os.cpu_count() or 1)
                                                     if k != SENDER_PIN] if away else [])
                    folder.log.info("sender port %s rps_cpus %s", sender_port, rps)
                # a capped sender may take far longer than the link: its bounded waits grow
                expected = sum(bounds) / (params.pace or 1.0) * (max(1.0, 0.5 / c) if c else 1)
                res = transfer(emu, src, members, mode, procs, sizes_of[w], BASE_PORT + i,
                               rate, expected,
                               run_dir / f"x{w}-{mode}-p{procs}{f'-cpu{c:g}' if c else ''}",
                               cap if c else None, SENDER_PIN if away else None)
                t, rr, rv = _rows(r, c, w, mode, procs, sizes_of[w], bounds, res)
                transfers.append(t)
                rounds += rr
                recv_rows += rv
                capped = f" cap {c:g}" if c else ""
                print(f"run {r}{capped} x{w} {mode} procs={procs}: {t['total_s']:.2f} s "
                      f"(bound {t['bound_s']:.2f} s), copies on the sender's link "
                      f"{t['copies']:.3f}, repairs {t['repairs_sent']}, CPU {t['cpu_mean']} %, "
                      f"sender {t['sender_cores']} cores", flush=True)
                # the same judgement as every iperf3 experiment (analysis.fidelity)
                judge_measurement(folder, res, f"run {r}{capped} x{w} {mode} x{procs}")
        folder.record(f"run{r:02d}", s.facts)
    write_csv(folder.path / "transfers.csv", transfers)
    write_csv(folder.path / "rounds.csv", rounds)
    if params.backend in ("emulated", "sim"):
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
