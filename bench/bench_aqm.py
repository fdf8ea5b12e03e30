"""AQM benchmark: the bottleneck queue with droptail vs --aqm (root). Prints figures,
asserts nothing.

    sudo .venv/bin/python bench/bench_aqm.py [--aqm droptail --aqm ecn,k=20] [--cc reno]
        [--ecn 1] [--duration 30] [--bw 10] [--queue 100] [--repeat 1]
    flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_aqm.py --suite tests \
        [--repeat 5]

``--suite tests``: the flows tests/integration/test_aqm.py ran before it stopped judging the
queue (10 s, trim 2, 10 Mb/s, 100 packets), ``--repeat`` times each, and one summary line
per criterion the test had, over all samples of the flow with a queue (``busy_*``):
reno+ECN through ecn,k=20: busy median 10-30, busy max < 60, no tail drop, and the
switch's copy of the queue length within the kernel's count read between two reads of the
copy (+-1) in >= 98 % of the pairs; dctcp (tcp_ecn 0) through ecn,k=20: busy median
10-30, and in runs the ssthresh fault missed p95 <= 30 and no tail drop (runs it hit are
counted and excluded); dctcp through droptail: busy median >= 80; reno through
red,min=10,max=30,p=0.1,w=4 (no ECN): busy median 5-40, max < 80.

One TCP flow 0_0_2 -> 1_0_2 across the k=2 fat tree (bpf dataplane), ECN on in both hosts
(``--ecn 0`` for off).  The sender's own link runs at 10x the rate, so that the first switch
port on the path (0_0_1-eth2) is the bottleneck (with every link at one rate the queue would
build in the sender's qdisc, where no switch AQM acts).  Per AQM: that port's queue length
read with tc every 20 ms inside the measurement window (percentiles, share of samples at or
above K), the flow's rate, marks and drops (AQM early, pfifo tail), and the switch program's
CPU per packet (kernel.bpf_stats_enabled, turned on for the run and restored), and for a BPF
congestion control its counters (``cc_stats``: e.g. ``repaired``, the kernel ssthresh faults
its guard repaired; docs/transports.md).
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from criteria import criterion, integration

import routing
import topos
from dataplanes.bpf.switch import bpf_stats, prog_id, prog_stats
from emulator.emulation import Emulation
from emulator.proc import in_ns, install_signal_handlers
from emulator.shaping import LinkSpec, queue_lengths
from harness.sampling import Sampler
from harness.traffic import Flow, run_iperf

pairs_sampler = integration("test_aqm").pairs_sampler

SRC, DST, BOTTLENECK = "0_0_2", "1_0_2", "0_0_1-eth2"


def one(aqm: str, args: argparse.Namespace, work: Path) -> dict:
    """One flow through the bottleneck with this AQM; its figures."""
    topo = topos.build("fattree,k=2")
    with Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(args.bw, args.queue,
                                                                  aqm=aqm),
                   work, f"bench-aqm-{int(time.time())}", cc=args.cc, dataplane="bpf") as emu:
        for h in (SRC, DST):
            emu.host_cmd(emu.host(h), ["sysctl", "-qw", f"net.ipv4.tcp_ecn={args.ecn}"])
        subprocess.run(in_ns(emu.host(SRC).pid, [
            "tc", "class", "change", "dev", emu.host_intf[SRC], "parent", "1:", "classid",
            "1:1", "htb", "rate", f"{10 * args.bw}mbit", "ceil", f"{10 * args.bw}mbit"]),
            check=True, timeout=10)
        pid = emu.dataplane.runtime.prog_id
        qlen = emu.dataplane.qlen
        tps = [prog_id(qlen.prog_dir / n) for n in ("on_enqueue", "on_dequeue")] \
            if qlen is not None else []
        sampler = Sampler("queue", lambda: queue_lengths([BOTTLENECK])[BOTTLENECK],
                          interval=args.sample)
        flow = Flow(SRC, DST)
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        pairs = pairs_sampler(emu, nl) if aqm != "droptail" else None
        sampler.start()
        if pairs is not None:
            pairs.start()
        t0, n0 = prog_stats(pid)
        tp0 = [prog_stats(i) for i in tps if i is not None]
        try:
            meas = run_iperf(emu, [flow], "tcp", duration=args.duration, trim=args.trim,
                             out=work / f"{aqm.replace(',', '_')}-{args.cc}-{time.time_ns()}")
        finally:
            samples = sampler.stop()
            paired_samples = pairs.stop() if pairs is not None else []
            nl.close()
        t1, n1 = prog_stats(pid)
        tp1 = [prog_stats(i) for i in tps if i is not None]
    cc_stats = (emu.facts.cc_bpf or {}).get("stats", {})     # read at teardown
    lo, hi = flow.start + args.trim, flow.start + args.duration - args.trim
    q = sorted(v for t, v in samples if lo <= t <= hi)
    k = int(aqm.split("k=")[1]) if "k=" in aqm else 20

    def pct(p: float) -> int:
        return q[min(len(q) - 1, int(p * len(q)))]
    busy = [v for _, v in samples if v > 0]        # as the test judged: the whole flow
    seen = [(a, k, b) for _, (a, k, b) in paired_samples if max(a, k, b) > 0]
    inside = sum(min(a, b) - 1 <= k <= max(a, b) + 1 for a, k, b in seen)
    return {"aqm": aqm, "cc": args.cc, "ecn": args.ecn,
            "busy_median": statistics.median(busy) if busy else None,
            "busy_p95": statistics.quantiles(busy, n=20)[18] if len(busy) > 1 else None,
            "busy_max": max(busy, default=None),
            "pairs": len(seen), "pairs_inside": round(inside / len(seen), 4) if seen else None,
            "samples": len(q), "p5": pct(0.05), "p25": pct(0.25),
            "median": statistics.median(q), "p75": pct(0.75), "p95": pct(0.95),
            "max": q[-1], "mean": round(statistics.fmean(q), 1),
            f"share>={k}": round(sum(v >= k for v in q) / len(q), 3),
            "mbps": round(flow.iperf_mbps, 2), "retransmits": flow.retransmits,
            "aqm_marks": meas["aqm_marks"], "aqm_drops": meas["aqm_drops"],
            "tail_drops": meas["queue_drops"], "emulator_drops": meas["emulator_drops"],
            "switch_ns_per_run": round((t1 - t0) / (n1 - n0), 1) if n1 > n0 else None,
            "switch_runs": n1 - n0,
            "tracepoint_ns_per_run": [round((b[0] - a[0]) / (b[1] - a[1]), 1)
                                      for a, b in zip(tp0, tp1) if b[1] > a[1]],
            "tracepoint_runs": [b[1] - a[1] for a, b in zip(tp0, tp1)],
            "cc_stats": cc_stats}


#: (aqm, cc, tcp_ecn) of the flows tests/integration/test_aqm.py judged the queue of
SUITE = [("ecn,k=20", "reno", 1), ("ecn,k=20", "dctcp", 0), ("droptail", "dctcp", 0),
         ("red,min=10,max=30,p=0.1,w=4", "reno", 0)]




def judge(rows: list[dict]) -> None:
    """The summary lines of ``--suite tests``."""
    def of(aqm: str, cc: str) -> list[dict]:
        return [r for r in rows if r["aqm"] == aqm and r["cc"] == cc]
    ecn = of("ecn,k=20", "reno")
    criterion("busy median 10-30 (reno, ecn,k=20)", [r["busy_median"] for r in ecn],
              lambda v: 10 <= v <= 30)
    criterion("busy max < 60 (reno, ecn,k=20)", [r["busy_max"] for r in ecn],
              lambda v: v < 60)
    criterion("tail drops == 0 (reno, ecn,k=20)", [r["tail_drops"] for r in ecn],
              lambda v: v == 0)
    criterion("copy within the kernel's count +-1 in >= 98 % of pairs (reno, ecn,k=20)",
              [r["pairs_inside"] for r in ecn if r["pairs_inside"] is not None],
              lambda v: v >= 0.98)
    dc = of("ecn,k=20", "dctcp")
    clean = [r for r in dc if not r["cc_stats"].get("repaired")]
    ex = f" ({len(dc) - len(clean)} of {len(dc)} runs excluded: ssthresh fault)"
    criterion("busy median 10-30 (dctcp, ecn,k=20)", [r["busy_median"] for r in dc],
              lambda v: 10 <= v <= 30)
    criterion("busy p95 <= 30 (dctcp, ecn,k=20)", [r["busy_p95"] for r in clean],
              lambda v: v <= 30, ex)
    criterion("tail drops == 0 (dctcp, ecn,k=20)", [r["tail_drops"] for r in clean],
              lambda v: v == 0, ex)
    criterion("busy median >= 80 (dctcp, droptail)",
              [r["busy_median"] for r in of("droptail", "dctcp")], lambda v: v >= 80)
    red = of("red,min=10,max=30,p=0.1,w=4", "reno")
    criterion("busy median 5-40 (reno, red)", [r["busy_median"] for r in red],
              lambda v: 5 <= v <= 40)
    criterion("busy max < 80 (reno, red)", [r["busy_max"] for r in red], lambda v: v < 80)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aqm", action="append", default=None)
    ap.add_argument("--cc", default="reno")
    ap.add_argument("--ecn", type=int, default=1)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--trim", type=float, default=5)
    ap.add_argument("--bw", type=float, default=10)
    ap.add_argument("--queue", type=int, default=100)
    ap.add_argument("--sample", type=float, default=0.02, help="queue sampling, s")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--suite", choices=["tests"], default=None,
                    help="tests: test_aqm.py's flows and criteria (10 s, trim 2, 50 ms)")
    args = ap.parse_args()
    install_signal_handlers()
    if args.suite == "tests":
        args.duration, args.trim, args.sample = 10.0, 2.0, 0.05
        combos = SUITE
    else:
        combos = [(a, args.cc, args.ecn) for a in args.aqm or ["droptail", "ecn,k=20"]]
    rows = []
    with bpf_stats(), tempfile.TemporaryDirectory(prefix="bench-aqm-") as tmp:
        for _ in range(args.repeat):
            for aqm, cc, ecn in combos:
                args.cc, args.ecn = cc, ecn
                rows.append(one(aqm, args, Path(tmp)))
                print(json.dumps(rows[-1]), flush=True)
    if args.suite == "tests":
        judge(rows)


if __name__ == "__main__":
    main()
