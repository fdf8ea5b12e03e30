"""Where the CPU goes while an experiment runs: `perf record -a -g` in the middle of its
traffic, every sample given to one component by its call stack (root).  Prints figures,
asserts nothing.

    .venv/bin/python bench/bench_profile.py [--seconds 10] [--delay 8] -- \\
        run permutation --topo fattree,k=4 --transport tcp --runs 1 --duration 30

Everything after ``--`` is a dcrepro command line; the bench starts it, waits ``--delay``
seconds after the first iperf3 client appears, records ``--seconds`` of samples on every
CPU, and counts the packets that entered switch ports meanwhile (sysfs rx of every switch
port: packet-hops).  Output: per component, its share of the busy samples, CPU-seconds per
second, and nanoseconds per packet-hop; idle is left out of "busy".

A sample's component is decided by its stack, read from the leaf up: the first frame that
a rule names decides (so work that a component calls into, e.g. HTB under the switch
program's redirect, counts where it happens).  A sample in user space counts for its
process (iperf3, bwm-ng, dcrepro's Python, ss, ovs-vswitchd).  On a VM without a PMU the
event is cpu-clock, which lands where interrupts are enabled again
(_raw_spin_unlock_irqrestore): the stack, not the leaf, says who did the work.
``--perf-data FILE`` classifies an existing recording instead.

Then the switch program's own samples by source line of switch.bpf.c: the line whose
native code was running or, for time in a helper or map function the program called (a
hash-map lookup, a clone), the line of that call, read from the loaded program's line info
while the run is up (emulator.bpfsys.prog_lines): which map lookups cost what.
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from emulator.proc import stop_process
from emulator.sysinfo import cpu_model, mitigations

REPO = Path(__file__).resolve().parent.parent

#: (component, frame pattern, caller pattern or None), tried on every frame from the leaf up
RULES: list[tuple[str, str, str | None]] = [
    ("idle", r"^(pv_native_safe_halt|default_idle|do_idle|cpuidle_\w+|arch_cpu_idle)", None),
    ("dequeue-gap probe", r"^(bpf_prog_\w+_on_(dequeue|enqueue)|bpf_trace_run\d+|"
     r"__bpf_trace_qdisc\w*|trace_event_raw_event_qdisc\w*|perf_trace_qdisc\w*)$", None),
    ("socket release: clone at the first switch", r"^bpf_clone_redirect$", None),
    ("socket release: original consumed at ingress", r"^consume_skb$",
     r"^(tcx_run|tc_run|sch_handle_ingress\w*|__netif_receive_skb_core\w*)$"),
    ("switch program and maps", r"^bpf_prog_\w+_dcrepro_switch$", None),
    ("HTB and pfifo", r"^(htb_\w+|pfifo_\w+|qdisc_\w+|__qdisc_run|sch_direct_xmit|"
     r"dequeue_skb|qdisc_dequeue\w*|__qdisc_\w+)$", None),
    ("veth", r"^(veth_\w+|__veth_\w+)$", None),
    # MPTCP's own functions apart from the TCP under them (its subflows' tcp_* count as TCP)
    ("MPTCP (hosts)", r"^(mptcp_\w+|__mptcp_\w+|subflow_\w+)$", None),
    ("TCP/UDP/IP stack", r"^(tcp_\w+|__tcp_\w+|ip_\w+|__ip_\w+|inet_\w+|udp_\w+|__udp\w*|"
     r"ipv4_\w+|__inet_\w+|raw_\w+|icmp_\w+|sk_stream_\w+|"
     r"sock_sendmsg|sock_recvmsg)$", None),
    ("netdev core and softirq", r"^(net_rx_action|__netif_receive_skb\w*|netif_receive_\w+|"
     r"process_backlog|__dev_queue_xmit|dev_hard_start_xmit|netif_rx\w*|__netif_rx\w*|"
     r"enqueue_to_backlog|handle_softirqs|__do_softirq|do_softirq\w*|net_tx_action|"
     r"skb_do_redirect|__bpf_redirect\w*|tcf_classify|tcx_run|tc_run|"
     r"sch_handle_(ingress|egress)\w*)$", None),
    ("scheduler and timers", r"^(__schedule|schedule\w*|finish_task_switch\S*|"
     r"try_to_wake_up|hrtimer_\w+|__hrtimer_\w+|tick_\w+|__sysvec_\w+|sysvec_\w+)$", None),
]
USER_PROCS = {"iperf3": "iperf3", "bwm-ng": "bwm-ng", "ss": "ss", "python": "dcrepro (Python)",
              "python3": "dcrepro (Python)", "dcrepro": "dcrepro (Python)",
              "ovs-vswitchd": "ovs-vswitchd", "perf": "perf itself"}
SWITCH = re.compile(r"^bpf_prog_\w+_dcrepro_switch$")
SOURCE = REPO / "dataplanes" / "bpf" / "switch.bpf.c"
COMPILED = [(name, re.compile(f), re.compile(c) if c else None) for name, f, c in RULES]
_HEADER = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]")


def classify(comm: str, frames: list[tuple[str, str]]) -> str:
    """The component of one sample: ``frames`` are its (address, symbol) from the leaf up;
    ``comm`` is the process name (``samples`` renames processes that are not the run's)."""
    syms = [sym for _, sym in frames]
    for i, sym in enumerate(syms):
        for name, frame, caller in COMPILED:
            if frame.match(sym) and (caller is None or any(
                    caller.match(s) for s in syms[i + 1:i + 4])):
                return name
    user = USER_PROCS.get(comm, f"{comm} (other process)")
    in_kernel = bool(frames) and frames[0][0].startswith("ffff")
    return f"kernel, other ({user})" if in_kernel else user


def samples(text: str, mine: set[int] | None = None
            ) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(process name, frames) of every sample of `perf script` output (header line, then one
    frame a line: address and symbol); frames are (address, symbol) from the leaf up.  With
    ``mine`` (the run's pids), a Python process that is not the run's is renamed as another
    process (a test suite beside the bench, say)."""
    comm: str | None = None
    frames: list[tuple[str, str]] = []
    for line in text.splitlines() + [""]:
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
            continue
        m = _HEADER.match(line)
        if m and not line.startswith(("\t", " ")):
            comm, frames = m.group(1).strip(), []
            if mine is not None and comm.startswith("python") and int(m.group(2)) not in mine:
                comm = "python, not this run"
            continue
        parts = line.split(None, 1)
        if comm is not None and len(parts) == 2:
            # symbol without its offset and without a compiler suffix (.isra.0, .constprop.0)
            frames.append((parts[0], parts[1].split("+")[0].strip().split(".")[0]))


#: the kernel's CPU-vulnerability mitigation thunks: every return through one with SRSO's
#: Safe RET (AMD Zen), every indirect call through one with retpolines
THUNK = re.compile(r"^(srso_\w+|__x86_return_thunk|retbleed_\w+|entry_untrain_ret|"
                   r"__x86_indirect_(call_)?thunk_\w+)$")


def classified(text: str, mine: set[int] | None = None) -> list[tuple[str, bool]]:
    """Every sample of `perf script` output (see ``samples``) as (its component, whether its
    leaf is a mitigation thunk): one pass for per_component and thunk_samples alike."""
    return [(classify(comm, frames), bool(frames) and bool(THUNK.match(frames[0][1])))
            for comm, frames in samples(text, mine)]


def thunk_samples(rows: list[tuple[str, bool]]) -> tuple[int, int]:
    """(busy samples whose leaf is a mitigation thunk, busy samples) of ``classified``
    samples.  A lower bound of the thunks' own time: where the PMU is missing, cpu-clock
    samples taken while interrupts were off land later, elsewhere."""
    busy = [thunk for comp, thunk in rows if comp != "idle"]
    return sum(busy), len(busy)


def per_component(rows: list[tuple[str, bool]]) -> Counter[str]:
    """Samples per component of ``classified`` samples."""
    return Counter(comp for comp, _ in rows)


def thunk_line(rows: list[tuple[str, bool]]) -> str:
    """The report's line on the mitigation thunks, with the machine's mitigations."""
    leaf, busy = thunk_samples(rows)
    listed = "; ".join(f"{k}: {v}" for k, v in mitigations().items()) or "none listed"
    return (f"  leaf in a mitigation thunk: {leaf / max(1, busy):.1%} of busy samples "
            f"(a lower bound; {listed})")


def switch_sites(text: str, lines: list[tuple[int, int]]) -> Counter[tuple[int, str]]:
    """Samples inside the switch program (or below it) by (source line, what ran there):
    the line of switch.bpf.c whose native code holds the sampled address or, for a sample
    in a helper or map function the program called, the call's return address; ``lines``
    is emulator.bpfsys.prog_lines (line 0, compiler-made code, is folded into the line
    before it)."""
    starts = [a for a, ln in lines if ln]
    nums = [ln for _, ln in lines if ln]
    out: Counter[tuple[int, str]] = Counter()
    for _, frames in samples(text):
        at = next((i for i, (_, sym) in enumerate(frames) if SWITCH.match(sym)), None)
        if at is None:
            continue
        addr = int(frames[at][0], 16) - (1 if at else 0)   # a return address: the call
        k = bisect.bisect_right(starts, addr) - 1
        out[(nums[k] if k >= 0 else 0, frames[at - 1][1] if at else "(the program)")] += 1
    return out


def switch_rx_packets() -> tuple[int, int]:
    """(packets received by every switch port, by the ports that face a host): root
    namespace veths named <switch>-eth<N>; a host-facing one has its peer in another
    network namespace (``link_netnsid``), a switch-to-switch one has both ends here."""
    links = json.loads(subprocess.run(["ip", "-j", "link", "show"], capture_output=True,
                                      text=True, check=True).stdout or "[]")
    total = host = 0
    for link in links:
        dev = link["ifname"]
        if not re.search(r"-eth\d+$", dev):
            continue
        try:
            n = int(Path(f"/sys/class/net/{dev}/statistics/rx_packets").read_text())
        except OSError:
            continue
        total += n
        host += n if "link_netnsid" in link else 0
    return total, host


def run_pids(root: int) -> set[int]:
    """``root`` and every process below it (the run's own processes)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        pid, ppid = (int(x) for x in line.split())
        children.setdefault(ppid, []).append(pid)
    seen, todo = set(), [root]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo += children.get(p, [])
    return seen


def first_client(timeout: float, clients: int = 1) -> bool:
    """Wait until ``clients`` iperf3 clients run (the traffic started); False after
    ``timeout``.  More than one skips a run's single-flow calibration, which comes first on
    a network of its own."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = subprocess.run(["pgrep", "-c", "-f", "iperf3 -c"], capture_output=True, text=True)
        if int(p.stdout.strip() or 0) >= clients:
            return True
        time.sleep(0.2)
    return False


def add_traffic_args(ap: argparse.ArgumentParser, delay: float) -> None:
    """The flags that say when a bench starts looking at a run's traffic."""
    ap.add_argument("--delay", type=float, default=delay,
                    help="seconds after the traffic starts before looking")
    ap.add_argument("--clients", type=int, default=2,
                    help="iperf3 clients that mark the traffic's start (2: after a run's "
                         "one-flow calibration)")


@contextmanager
def dcrepro_run(argv: list[str]) -> Iterator[subprocess.Popen]:
    """``dcrepro ARGV`` in its own process group while the block runs (stdout discarded,
    stderr kept); a run still going when the block ends is stopped (SIGTERM to its group,
    so it cleans up; SIGKILL after 120 s) and reaped."""
    run = subprocess.Popen([str(REPO / ".venv/bin/dcrepro"), *argv],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        yield run
    finally:
        stop_process(run, 120.0)


def report(counts: Counter[str], seconds: float, hops: int, cpus: int,
           entering: int = 0) -> None:
    """Print the table (``entering``: packets that entered the fabric from a host)."""
    busy = sum(n for c, n in counts.items() if c != "idle")
    total = sum(counts.values())
    print(f"samples {total} on {cpus} CPUs over {seconds:.1f} s; busy {busy / max(1, total):.1%}"
          f"; packet-hops {hops} ({hops / seconds:.0f}/s), {entering} of them entering the "
          f"fabric from a host")
    small = Counter({c: n for c, n in counts.items() if c != "idle" and n < 0.003 * busy})
    shown = [(c, n) for c, n in counts.most_common() if c != "idle" and c not in small]
    if small:
        shown.append((f"everything else ({len(small)} components under 0.3 %)",
                      sum(small.values())))
    for comp, n in shown:
        cpu_s = n / total * cpus * seconds
        per = f"{1e9 * cpu_s / hops:8.0f} ns/packet-hop" if hops else ""
        print(f"  {comp:48s} {n / busy:6.1%} of busy  {cpu_s / seconds:5.3f} CPU  {per}")
    for comp in [c for c in counts if c.startswith("socket release")]:
        if entering:
            cpu_s = counts[comp] / total * cpus * seconds
            print(f"  {comp}: {1e9 * cpu_s / entering:.0f} ns per packet entering the fabric")
    ours = sum(n for c, n in counts.items() if c != "idle" and "(other process)" not in c)
    for label, n in (("all busy CPU", busy), ("busy CPU of this run (no other process)", ours)):
        cpu_s = n / total * cpus * seconds
        per = f"{1e9 * cpu_s / hops:8.0f} ns/packet-hop" if hops else ""
        print(f"  {label:48s} {n / max(1, busy):6.1%} of busy  {cpu_s / seconds:5.3f} CPU  {per}")


def switch_lines() -> list[tuple[int, int]]:
    """Line info of every loaded switch program (emulator.bpfsys.prog_lines); read while
    the run is up, since the program goes with its network."""
    from emulator.bpfsys import prog_lines
    out = subprocess.run(["bpftool", "-j", "prog", "show", "name", "dcrepro_switch"],
                         capture_output=True, text=True).stdout.strip()
    progs = json.loads(out) if out else []
    return sorted(x for p in (progs if isinstance(progs, list) else [progs])
                  for x in prog_lines(int(p["id"])))


def report_sites(sites: Counter[tuple[int, str]], total: int, busy: int, cpus: int,
                 seconds: float, hops: int, top: int = 14) -> None:
    """Print where the switch program's samples fall, by source line and callee."""
    src = SOURCE.read_text().splitlines()
    inside = sum(sites.values())
    print(f"switch program by source line ({inside} samples, {inside / max(1, busy):.1%} of "
          f"busy; the line of the call for time spent in what it called):")
    for (line, callee), n in sites.most_common(top):
        text = src[line - 1].strip() if 0 < line <= len(src) else "?"
        cpu_s = n / total * cpus * seconds
        per = f"{1e9 * cpu_s / hops:6.0f} ns/packet-hop" if hops else ""
        print(f"  {n / busy:6.1%} of busy {per}  line {line:4d} {callee:28s} {text[:60]}")
    by_callee: Counter[str] = Counter()
    for (_, callee), n in sites.items():
        by_callee[callee] += n
    print("  by what ran: " + "; ".join(f"{c} {n / max(1, busy):.1%}"
                                        for c, n in by_callee.most_common(8)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0, help="how long perf records")
    add_traffic_args(ap, 8.0)
    ap.add_argument("--freq", type=int, default=499, help="samples per second per CPU")
    ap.add_argument("--perf-data", default=None, help="classify this recording, run nothing")
    ap.add_argument("command", nargs="*", help="dcrepro arguments (after --)")
    args = ap.parse_args()
    if shutil.which("perf") is None:
        print("bench_profile: perf is missing (apt-get install linux-perf)", file=sys.stderr)
        return 2
    cpus = os.cpu_count() or 1
    if args.perf_data:
        text = subprocess.run(["perf", "script", "-i", args.perf_data, "-F",
                               "comm,pid,tid,cpu,ip,sym"], capture_output=True, text=True,
                              check=True).stdout
        rows = classified(text)
        report(per_component(rows), args.seconds, 0, cpus)
        print(thunk_line(rows))
        return 0
    if not args.command:
        ap.error("give a dcrepro command after --, e.g. -- run permutation --transport tcp")
    tmp = Path(tempfile.mkdtemp(prefix="dcrepro-profile-"))
    try:
        with dcrepro_run([*args.command,
                          *([] if "--out" in args.command else ["--out", str(tmp)])]) as run:
            if not first_client(300, args.clients):
                print("bench_profile: no traffic started within 300 s", file=sys.stderr)
                return 1
            time.sleep(args.delay)
            data = tmp / "perf.data"
            (h0, e0), t0 = switch_rx_packets(), time.monotonic()
            subprocess.run(["perf", "record", "-a", "-g", "-F", str(args.freq), "-o", str(data),
                            "--", "sleep", str(args.seconds)], capture_output=True, check=True)
            (h1, e1), seconds = switch_rx_packets(), time.monotonic() - t0
            if run.poll() is not None or h1 <= h0:
                # perf's start-up (it lists every task of the machine first) can take seconds
                print("bench_profile: the recording outlasted the traffic (the run ended or its "
                      "network went meanwhile); give the run a longer --duration",
                      file=sys.stderr)
                run.communicate(timeout=600)
                return 1
            mine = run_pids(run.pid)
            lines = switch_lines() if "dcrepro_switch" in subprocess.run(
                ["bpftool", "prog", "show"], capture_output=True, text=True).stdout else []
            _, err = run.communicate(timeout=600)
            if run.returncode != 0:
                print(f"bench_profile: the run failed ({err.strip()[-300:]})", file=sys.stderr)
            text = subprocess.run(["perf", "script", "-i", str(data), "-F",
                                   "comm,pid,tid,cpu,ip,sym"], capture_output=True, text=True,
                                  check=True).stdout
            print(f"bench_profile: dcrepro {' '.join(args.command)} ({os.cpu_count()} CPUs, "
                  f"{cpu_model()})")
            rows = classified(text, mine)   # one pass over the samples for both
            counts = per_component(rows)
            report(counts, seconds, h1 - h0, cpus, e1 - e0)
            print(thunk_line(rows))
            if lines:
                report_sites(switch_sites(text, lines), sum(counts.values()),
                             sum(n for c, n in counts.items() if c != "idle"), cpus, seconds,
                             h1 - h0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
