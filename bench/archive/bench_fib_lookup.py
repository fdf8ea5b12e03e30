"""The switch program's cost with and without the in_port fib lookup, in one run (root).
Prints figures, asserts nothing.

    .venv/bin/python bench/archive/bench_fib_lookup.py [--topo fattree,k=4] [--routing ecmp]
        [--bw 10] [--duration 60] [--phase 4]

switch.bpf.c looks a packet up by (in_port, label) before (0, label) only on a switch whose
table has in_port entries (the port's PORT_IN_RULES flag; only multicast trees have them).
Before that flag, every packet paid the first lookup, which always missed on a unicast plan.
This bench measures what the skipped lookup costs: one TCP permutation (every host sends to
one other, iperf3) runs for ``--duration`` s while the flag is switched on every port for
``--phase`` s ("two lookups", the old program's path) and off for the next ("one lookup",
the plan's own flags), alternating.  Per phase, the program's own run time per invocation
from kernel.bpf_stats_enabled (turned on for the run and restored): both variants see the
same network, flows and load, interleaved, so slow drifts of the machine fall on both.
Prints every phase and, per variant, the median ns per run and the ratio, and the
difference within adjacent phase pairs (two lookups, then one).
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import routing
import topos
from dataplanes.bpf.switch import (
    PORT_IN_RULES,
    bpf_stats,
    prog_stats,
)
from emulator.emulation import Emulation
from emulator.proc import install_signal_handlers
from emulator.shaping import LinkSpec
from harness.traffic import Flow, run_iperf
from topos.traffic import permutation

WARMUP = 4.0    # s after the flows start: iperf3's connections are up by then


def alternate(runtime, pid: int, phase: float, stop: threading.Event,  # type: ignore[no-untyped-def]
              out: list[dict]) -> None:
    """Switch the flag every ``phase`` s until ``stop``; one record per finished phase.
    Starts after WARMUP s, once the flows carry traffic."""
    on = False
    if stop.wait(WARMUP):
        return
    while not stop.is_set():
        on = not on
        runtime.set_port_flag(PORT_IN_RULES, on)
        t0, n0 = prog_stats(pid)
        if stop.wait(phase):
            break
        t1, n1 = prog_stats(pid)
        if n1 > n0:
            out.append({"variant": "two lookups" if on else "one lookup",
                        "ns_per_run": round((t1 - t0) / (n1 - n0), 1), "runs": n1 - n0})
    runtime.set_port_flag(PORT_IN_RULES, False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topo", default="fattree,k=4")
    ap.add_argument("--routing", default="ecmp")
    ap.add_argument("--bw", type=float, default=10.0)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--phase", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    install_signal_handlers()
    topo = topos.build(args.topo)
    plan = routing.make_plan(topo, args.routing)
    if any(m.in_port for sw in plan.switches.values() for m in sw.table):
        sys.exit(f"bench_fib_lookup: {args.routing} on {args.topo} has in_port entries; "
                 "the bench wants a plan without them")
    phases: list[dict] = []
    with bpf_stats():
        with tempfile.TemporaryDirectory(prefix="bench-fib-") as tmp, \
                Emulation(topo, plan, LinkSpec(args.bw, 100), Path(tmp),
                          f"bench-fib-{int(time.time())}", dataplane="bpf") as emu:
            runtime = emu.dataplane.runtime
            flows = [Flow(a, b) for a, b in permutation(topo.hosts(),
                                                        random.Random(args.seed))]
            stop = threading.Event()
            t = threading.Thread(target=alternate, args=(runtime, runtime.prog_id,
                                                         args.phase, stop, phases))
            t.start()
            try:
                run_iperf(emu, flows, "tcp", duration=args.duration, trim=2,
                          out=Path(tmp) / "iperf")
            finally:
                stop.set()
                t.join(timeout=30)
    for p in phases:
        print(json.dumps(p))
    by = {v: [p["ns_per_run"] for p in phases if p["variant"] == v]
          for v in ("one lookup", "two lookups")}
    for v, xs in by.items():
        print(f"{v}: median {statistics.median(xs):.1f} ns per run over {len(xs)} phases "
              f"(min {min(xs):.1f}, max {max(xs):.1f})" if xs else f"{v}: no phase")
    if all(by.values()):
        one, two = (statistics.median(by[v]) for v in ("one lookup", "two lookups"))
        print(f"two/one (medians): {two / one:.3f}; the skipped lookup: {two - one:.1f} ns "
              "per run")
        # each "two lookups" phase against the "one lookup" phase right after it: the
        # machine's drift between two adjacent phases is small against that of the run
        pairs = [b["ns_per_run"] - a["ns_per_run"] for a, b in zip(phases, phases[1:])
                 if (a["variant"], b["variant"]) == ("two lookups", "one lookup")]
        if pairs:
            print(f"adjacent pairs: one - two median {statistics.median(pairs):.1f} ns, "
                  f"{sum(d < 0 for d in pairs)} of {len(pairs)} pairs cheaper with one lookup")


if __name__ == "__main__":
    main()
