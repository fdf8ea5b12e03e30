"""Where a network's bring-up goes, and the two per-host steps done in this process
(emulator/netns.py) against the programs they replaced, side by side on the same network.

    .venv/bin/python bench/archive/bench_bringup.py [--specs fattree,k=4 fattree,k=6] [--reps 5]

Prints, per topology, the median bring-up (Emulation.__enter__) and teardown, then per
step the median of ``reps`` alternating calls of each way:
- all-pairs reachability: one ``ping -c1`` per pair from a shell per host (before) vs one
  raw ICMP socket per host (netns.reach_all, now);
- offloads off on every switch port: ``ethtool -K`` + ``ip link set gso_max_segs`` per
  interface in one shell (before) vs ioctl + rtnetlink in this process (now).
Root; one emulation at a time.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import routing
import topos
from emulator import netns
from emulator.emulation import Emulation
from emulator.proc import in_ns
from emulator.shaping import LinkSpec


def ping_processes(emu: Emulation, timeout: float = 2.0) -> list[tuple[str, str]]:
    """The replaced all-pairs check: a shell per host, a ``ping`` process per pair."""
    procs = []
    for h in emu.net.hosts:
        targets = [emu.topo.node(o).ip for o in emu.topo.hosts() if o != h.name]
        script = " ".join(f"(ping -c1 -W{int(timeout)} -q {ip} >/dev/null 2>&1 || "
                          f"echo {ip}) &" for ip in targets) + " wait"
        procs.append((h.name, subprocess.Popen(in_ns(h.pid, ["sh", "-c", script]),
                                               stdout=subprocess.PIPE, text=True)))
    try:
        return [(name, ip) for name, p in procs
                for ip in p.communicate(timeout=30)[0].split()]
    finally:
        for _, p in procs:       # (after a timeout: none is left running or unreaped)
            if p.poll() is None:
                p.kill()
                p.wait()


def ethtool_processes(intfs: list[str]) -> None:
    """The replaced offload setting: two programs per interface in one shell."""
    script = "".join(f"ethtool -K {i} tx off tso off gso off gro off rx off 2>/dev/null "
                     f"&& ip link set dev {i} gso_max_segs 1 || echo FAIL {i}; "
                     for i in intfs)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout
    assert "FAIL" not in out, out


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t = time.monotonic()
    out = fn()
    return time.monotonic() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", nargs="+", default=["fattree,k=4", "fattree,k=6"])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    for spec in args.specs:
        topo = topos.build(spec)
        plan = routing.make_plan(topo, "ecmp")
        up, down = [], []
        steps: dict[str, list[float]] = {k: [] for k in (
            "ping processes", "reach_all", "ethtool processes", "netns.offloads_off")}
        for r in range(args.reps):
            emu = Emulation(topo, plan, LinkSpec(10.0, 100), Path(tempfile.mkdtemp()),
                            f"bench-bringup-{r}")
            t, _ = timed(emu.__enter__)
            up.append(t)
            try:
                intfs = emu.switch_intfs()
                ways = {"ping processes": lambda: ping_processes(emu),
                        "reach_all": emu.ping_all,
                        "ethtool processes": lambda: ethtool_processes(intfs),
                        "netns.offloads_off": lambda: netns.offloads_off({None: intfs})}
                for name, fn in ways.items():
                    t, out = timed(fn)
                    assert not out, (name, out)   # every pair reached, every offload off
                    steps[name].append(t)
            finally:
                t, _ = timed(lambda: emu.__exit__(None, None, None))
                down.append(t)
        print(f"{spec}: {len(topo.hosts())} hosts, {len(intfs)} switch ports; median of "
              f"{args.reps}: bring-up {statistics.median(up):.2f} s, teardown "
              f"{statistics.median(down):.2f} s")
        for before, now in (("ping processes", "reach_all"),
                            ("ethtool processes", "netns.offloads_off")):
            b, n = statistics.median(steps[before]), statistics.median(steps[now])
            print(f"  {before:18s} {b:6.3f} s   {now:18s} {n:6.3f} s   ratio {b / n:6.1f}x")


if __name__ == "__main__":
    main()
