"""What releasing the sender's socket at the first switch costs per packet (root).  Prints
figures, asserts nothing.

    .venv/bin/python bench/archive/bench_socket_release.py [--reps 3] [--bw 100] [--load 0.3]
        [--duration 20] [--topo fattree,k=4]

The same constant-rate UDP workload runs on ``bpf`` (release: every packet from a host is
cloned at its first switch and the original, with its socket reference, consumed) and on
``bpf,socket=keep`` (the packet itself is redirected), alternating, ``--reps`` times each.
UDP does not react to the fabric, so both carry the same packets and the CPU difference is
the cost of the release.  Every host sends to its permutation partner at ``load`` x the link
rate (0.3: three flows colliding on one link still fit, so no queue builds and no socket
waits for buffer space).  CPU is the whole machine's busy time (/proc/stat) over the middle
of the traffic; packets are counted at the switch ports (sysfs rx).  Figures: busy CPU
microseconds per packet-hop and per packet entering the fabric, medians over reps, and the
difference per released packet.  Run it on an idle machine.
"""
from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import routing
import topos
from emulator.emulation import Emulation
from emulator.proc import install_signal_handlers, stop_all
from emulator.shaping import LinkSpec
from harness.sampling import cpu_times
from topos.traffic import permutation

VARIANTS = ("bpf", "bpf,socket=keep")


def rx_packets(emu: Emulation) -> tuple[int, int]:
    """(packets entering every switch port, packets entering host-facing ports)."""
    total = first = 0
    for sw in emu.topo.switches():
        for port, (peer, _) in emu.topo.ports(sw).items():
            n = int(Path(f"/sys/class/net/{sw}-eth{port}/statistics/rx_packets").read_text())
            total += n
            if not emu.topo.is_switch(peer):
                first += n
    return total, first


def one(spec: str, dataplane: str, bw: float, load: float, duration: float, seed: int,
        tag: str) -> dict[str, float]:
    """One run of the workload: CPU and packets over the middle of the traffic."""
    topo = topos.build(spec)
    plan = routing.make_plan(topo, "ecmp")
    pairs = dict(permutation(topo.hosts(), random.Random(seed)))
    with tempfile.TemporaryDirectory() as tmp, \
            Emulation(topo, plan, LinkSpec(bw, 100), Path(tmp), f"bench-sock-{tag}",
                      dataplane=dataplane) as emu:
        procs = [emu.popen(emu.host(d), ["iperf3", "-s", "-1", "-p", str(5201 + i)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i, d in enumerate(pairs.values())]
        time.sleep(1.0)   # servers listening (a bench, not a measurement of readiness)
        procs += [emu.popen(emu.host(s), ["iperf3", "-u", "-c", topo.node(d).ip, "-p",
                                          str(5201 + i), "-b", f"{bw * load:g}M", "-l", "1400",
                                          "-t", str(duration)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for i, (s, d) in enumerate(pairs.items())]
        try:
            time.sleep(3.0)                      # every client sending
            c0, (p0, f0), t0 = cpu_times()["busy"], rx_packets(emu), time.monotonic()
            time.sleep(duration - 5.0)
            c1, (p1, f1), t1 = cpu_times()["busy"], rx_packets(emu), time.monotonic()
        finally:
            stop_all(procs)
    secs = t1 - t0
    return {"cpu_share": (c1 - c0) / secs / 2, "hops_per_s": (p1 - p0) / secs,
            "first_per_s": (f1 - f0) / secs, "us_per_hop": 1e6 * (c1 - c0) / (p1 - p0),
            "us_per_first": 1e6 * (c1 - c0) / (f1 - f0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topo", default="fattree,k=4")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bw", type=float, default=100.0, help="link rate, Mb/s")
    ap.add_argument("--load", type=float, default=0.3, help="each flow's rate / link rate")
    ap.add_argument("--duration", type=float, default=20.0)
    args = ap.parse_args()
    install_signal_handlers()
    print(f"bench_socket_release: {args.topo}, UDP permutation at {args.load:g} x "
          f"{args.bw:g} Mb/s, {args.duration:g} s, {args.reps} reps per variant, alternating",
          flush=True)
    got: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    for rep in range(args.reps):
        order = VARIANTS if rep % 2 == 0 else VARIANTS[::-1]
        for v in order:
            r = one(args.topo, v, args.bw, args.load, args.duration, rep + 1, f"{rep}")
            got[v].append(r)
            print(f"  rep {rep} {v:16s}: CPU {r['cpu_share']:.1%} of 2 cores, "
                  f"{r['hops_per_s']:.0f} packet-hops/s ({r['first_per_s']:.0f} entering), "
                  f"{r['us_per_hop']:.3f} us per packet-hop", flush=True)
    med = {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in got.items()}
    for v in VARIANTS:
        m = med[v]
        print(f"{v:16s} median: CPU {m['cpu_share']:.1%}, {m['hops_per_s']:.0f} packet-hops/s, "
              f"{m['us_per_hop']:.3f} us per packet-hop, {m['us_per_first']:.3f} us per packet "
              f"entering the fabric", flush=True)
    rel, keep = med["bpf"], med["bpf,socket=keep"]
    print(f"release - keep: {rel['us_per_first'] - keep['us_per_first']:+.3f} us per released "
          f"packet ({rel['us_per_hop'] / keep['us_per_hop']:.3f}x the CPU per packet-hop; "
          f"packet rates {rel['hops_per_s'] / keep['hops_per_s']:.3f}x)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
