"""When does a shaped link release its next packet, against when its HTB timer fired? (root)
Prints figures, asserts nothing.

    .venv/bin/python bench/bench_release_latency.py [--seconds 15] [--delay 10] \\
        [--late-us 121] -- run permutation --topo fattree,k=6 --transport tcp --runs 1 \\
        --duration 30 --trim 5 --bw 10

A busy link's dequeue gaps (emulator/qgap.py) are late when its next packet leaves late.
At these rates every such packet waits for HTB's watchdog, an hrtimer (``qdisc_watchdog``)
that raises the NET_TX softirq; the softirq then dequeues.  This bench runs the dcrepro
command after ``--``, waits ``--delay`` s after the traffic starts and, for ``--seconds``,
has bpftrace (Debian's package) watch the machine:

- the timer: at each ``timer:hrtimer_expire_entry`` of a qdisc watchdog, how late it fired
  against its programmed expiry (``hrtimer_start``);
- the release: at the next ``qdisc:qdisc_dequeue`` with a packet on that qdisc, the time
  since its timer fired, and, for releases later than ``--late-us`` (default 121 µs: 10 %
  of a 1514-byte frame's time at 10 Mb/s, the gap check's tolerance), the context that
  dequeued (the kernel stack: the softirq run at an interrupt's exit, at the end of a
  section with bottom halves disabled, in ksoftirqd, or a transmit that found the qdisc
  idle) and whether it ran on the CPU the timer fired on.

So a late gap is put on the timer (it fired late: the hypervisor or interrupts held off)
or on the softirq (it fired on time, the dequeue waited).  The timer's ``now`` is read once
per timer interrupt, so a long interrupt counts on the softirq's side.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from typing import Any

from bench_profile import add_traffic_args, dcrepro_run, first_client

SCRIPT = r"""
tracepoint:timer:hrtimer_start /args->function == kaddr("qdisc_watchdog")/ {
  @exp[args->hrtimer] = args->expires;
}
tracepoint:timer:hrtimer_expire_entry /args->function == kaddr("qdisc_watchdog")/ {
  $e = @exp[args->hrtimer];
  if ($e > 0) {
    $l = (uint64)(args->now - $e);
    @fires = count();
    if ($l > LATE_NS) { @fires_late = count(); }
    delete(@exp[args->hrtimer]);
  }
  $q = ((struct qdisc_watchdog *)args->hrtimer)->qdisc;
  @fired[$q] = (uint64)args->now;
  @firecpu[$q] = (uint64)cpu;
}
tracepoint:qdisc:qdisc_dequeue /args->packets > 0 && @fired[args->qdisc] > 0/ {
  $d = nsecs - @fired[args->qdisc];
  @releases = count();
  if ($d > LATE_NS) {
    @late = count();
    @late_same_cpu[@firecpu[args->qdisc] == (uint64)cpu] = count();
    @late_stack[kstack(6)] = count();
  }
  delete(@fired[args->qdisc]);
}
interval:s:SECONDS { exit(); }
"""

#: the context of a late release, by a frame of its stack (the first rule that matches)
CONTEXTS = [("ksoftirqd", "run_ksoftirqd"), ("softirq at an interrupt's exit", "irq_exit"),
            ("softirq at the end of a bottom-halves-off section", "local_bh_enable"),
            ("transmit that found the qdisc idle", "__dev_queue_xmit")]


def parse(text: str) -> dict[str, Any]:
    """bpftrace's printed maps -> counters and late releases by context."""
    out: dict[str, Any] = {}
    for name in ("fires", "fires_late", "releases", "late"):
        m = re.search(rf"^@{name}: (\d+)$", text, re.M)
        out[name] = int(m.group(1)) if m else 0
    same = dict(re.findall(r"^@late_same_cpu\[(\d)\]: (\d+)$", text, re.M))
    out["late_same_cpu"] = int(same.get("1", 0))
    by: dict[str, int] = {}
    for stack, n in re.findall(r"^@late_stack\[\n(.*?)\n\]: (\d+)$", text, re.M | re.S):
        ctx = next((label for label, frame in CONTEXTS if frame in stack), "other")
        by[ctx] = by.get(ctx, 0) + int(n)
    out["late_by_context"] = dict(sorted(by.items(), key=lambda kv: -kv[1]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=15, help="how long bpftrace watches")
    add_traffic_args(ap, 10.0)
    ap.add_argument("--late-us", type=float, default=121.0,
                    help="a release later than this after its timer counts as late")
    ap.add_argument("command", nargs="+", help="dcrepro arguments (after --)")
    args = ap.parse_args()
    if shutil.which("bpftrace") is None:
        print("bench_release_latency: bpftrace is missing (apt-get install bpftrace)",
              file=sys.stderr)
        return 2
    if not os.path.ismount("/sys/kernel/tracing"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    script = SCRIPT.replace("LATE_NS", str(int(args.late_us * 1000))).replace(
        "SECONDS", str(args.seconds))
    print("bench_release_latency: dcrepro " + " ".join(args.command))
    with dcrepro_run(args.command) as run:
        if not first_client(300, args.clients):
            print("bench_release_latency: no traffic within 300 s", file=sys.stderr)
            return 1
        time.sleep(args.delay)
        bt = subprocess.run(["bpftrace", "-e", script], capture_output=True, text=True,
                            timeout=args.seconds + 120)
        err = run.communicate(timeout=1800)[1]
    if run.returncode != 0:
        print(f"bench_release_latency: the run failed: {err.strip()[-300:]}", file=sys.stderr)
    r = parse(bt.stdout)
    fires, rel, late = r["fires"], r["releases"], r["late"]
    if not rel:
        print(f"bench_release_latency: bpftrace saw no release: {bt.stderr.strip()[-300:]}",
              file=sys.stderr)
        return 1
    print(f"timer fires {fires}; later than {args.late_us:g} µs after their expiry: "
          f"{r['fires_late']} ({r['fires_late'] / max(1, fires):.3%})")
    print(f"releases after a timer {rel}; later than {args.late_us:g} µs after it fired: "
          f"{late} ({late / rel:.3%}), on the timer's own CPU {r['late_same_cpu']}")
    for ctx, n in r["late_by_context"].items():
        print(f"  {ctx:52s} {n:7d}  {n / max(1, late):6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
