"""AQM benchmark: the bottleneck queue with droptail vs --aqm (root). Prints figures,
asserts nothing.

    sudo .venv/bin/python bench/bench_aqm.py [--aqm droptail --aqm ecn,k=20] [--cc reno]
        [--ecn 1] [--duration 30] [--bw 10] [--queue 100]

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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import routing  # noqa: E402
import topos  # noqa: E402
from dataplanes.bpf.switch import bpf_stats, prog_id, prog_stats  # noqa: E402
from emulator.emulation import Emulation  # noqa: E402
from emulator.proc import in_ns, install_signal_handlers  # noqa: E402
from emulator.shaping import LinkSpec, queue_lengths  # noqa: E402
from harness.sampling import Sampler  # noqa: E402
from harness.traffic import Flow, run_iperf  # noqa: E402

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
                          interval=0.02)
        flow = Flow(SRC, DST)
        sampler.start()
        t0, n0 = prog_stats(pid)
        tp0 = [prog_stats(i) for i in tps if i is not None]
        try:
            meas = run_iperf(emu, [flow], "tcp", duration=args.duration, trim=args.trim,
                             out=work / aqm.replace(",", "_"))
        finally:
            samples = sampler.stop()
        t1, n1 = prog_stats(pid)
        tp1 = [prog_stats(i) for i in tps if i is not None]
    cc_stats = (emu.facts.cc_bpf or {}).get("stats", {})     # read at teardown
    lo, hi = flow.start + args.trim, flow.start + args.duration - args.trim
    q = sorted(v for t, v in samples if lo <= t <= hi)
    k = int(aqm.split("k=")[1]) if "k=" in aqm else 20

    def pct(p: float) -> int:
        return q[min(len(q) - 1, int(p * len(q)))]
    return {"aqm": aqm, "samples": len(q), "p5": pct(0.05), "p25": pct(0.25),
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aqm", action="append", default=None)
    ap.add_argument("--cc", default="reno")
    ap.add_argument("--ecn", type=int, default=1)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--trim", type=float, default=5)
    ap.add_argument("--bw", type=float, default=10)
    ap.add_argument("--queue", type=int, default=100)
    args = ap.parse_args()
    install_signal_handlers()
    with bpf_stats(), tempfile.TemporaryDirectory(prefix="bench-aqm-") as tmp:
        for aqm in args.aqm or ["droptail", "ecn,k=20"]:
            print(json.dumps(one(aqm, args, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
