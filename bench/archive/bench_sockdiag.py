"""What one sock_diag dump costs in a host's namespace, with the root namespace's TCP table
shared (the kernel's default) or with a table of its own (root).  Prints figures, asserts
nothing.

    sudo .venv/bin/python bench/archive/bench_sockdiag.py [--dumps 200] [--rounds 5]
        [--buckets 1024]

Every round makes one network namespace of each kind (``net.ipv4.tcp_child_ehash_entries``
0, then ``--buckets``; the sysctl is restored after), and times ``--dumps`` dumps of its
established TCP sockets (emulator.sockdiag.dump, what the run's tcp_info sampler and the
subflow looks call once per host) and as many of its MPTCP connections; the namespaces hold
no socket, so the figures are the walk alone.  Medians over the rounds, ms per dump.  A dump
in a namespace that shares the root one's table walks all of its buckets
(net.ipv4.tcp_ehash_entries in the root namespace), whichever namespace asks.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from emulator.sockdiag import dump, netns_sockets
from emulator.sysinfo import read_sysctl

SYSCTL = "net.ipv4.tcp_child_ehash_entries"


def one_round(buckets: int, dumps: int) -> dict[str, float]:
    """ms per dump, TCP and MPTCP, in a fresh namespace made with ``buckets`` (0: shared)."""
    name = f"dcrepro-bench-diag-{os.getpid()}"
    subprocess.run(["sysctl", "-qw", f"{SYSCTL}={buckets}"], check=True, timeout=10)
    subprocess.run(["ip", "netns", "add", name], check=True, timeout=10)
    holder = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "600"])
    try:
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{holder.pid}/ns/net") == os.readlink("/proc/self/ns/net"):
            if time.monotonic() > deadline:   # else the dumps would time the root namespace
                sys.exit(f"bench_sockdiag: `ip netns exec {name}` did not enter it in 10 s")
            time.sleep(0.01)     # `ip netns exec` has not entered the namespace yet
        sock = netns_sockets([holder.pid])[0]
        out = {}
        for what, mptcp in (("tcp", False), ("mptcp", True)):
            t = time.perf_counter()
            for _ in range(dumps):
                dump(sock, mptcp=mptcp)
            out[what] = (time.perf_counter() - t) / dumps * 1e3
        sock.close()
        return out
    finally:
        holder.kill()
        holder.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dumps", type=int, default=200, help="dumps of each kind per round")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (each kind once a round)")
    ap.add_argument("--buckets", type=int, default=1024,
                    help="the namespace's own table (a power of two)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_sockdiag: needs root (it makes network namespaces)")
    old = read_sysctl(SYSCTL)
    if not old:
        sys.exit(f"bench_sockdiag: this kernel has no {SYSCTL} (Linux 6.1+)")
    print(f"root namespace's TCP table: {read_sysctl('net.ipv4.tcp_ehash_entries')} buckets")
    got: dict[int, list[dict[str, float]]] = {0: [], args.buckets: []}
    try:
        for _ in range(args.rounds):
            for buckets in got:
                got[buckets].append(one_round(buckets, args.dumps))
    finally:
        subprocess.run(["sysctl", "-qw", f"{SYSCTL}={old}"], check=False, timeout=10)
    print("| namespace's TCP table | TCP dump, ms (median; rounds) | MPTCP dump, ms |")
    print("|---|---|---|")
    for buckets, rows in got.items():
        cells = []
        for what in ("tcp", "mptcp"):
            vals = [r[what] for r in rows]
            cells.append(f"{statistics.median(vals):.3f} "
                         f"({', '.join(f'{v:.3f}' for v in vals)})")
        label = "shared with the root namespace" if buckets == 0 else f"its own, {buckets}"
        print(f"| {label} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
