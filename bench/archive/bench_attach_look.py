"""What the BPF switch's attachment check costs per look (root). Prints figures, asserts
nothing.

    .venv/bin/python bench/archive/bench_attach_look.py [--ports 270] [--looks 20]

check_alive (dataplanes/bpf/dataplane.py) asks the kernel every ATTACH_LOOK_S whether the
switch program still runs on every switch port.  This builds ``--ports`` veth ends in a
scratch namespace (270: a k = 6 fat tree's 45 switches x 6 ports), attaches the switch
program to each as a run does, and times, alternating, the two ways to ask: ``bpftool -j net
show`` (switch.attachments, a process walking every device) and the in-process rtnetlink
dump per attached port (SwitchRuntime.attached_to).  Both must name every port.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from dataplanes.bpf import switch as bs

NS = "dcrepro-bench-attach"


def sh(*argv: str, text: str | None = None) -> None:
    subprocess.run(argv, input=text, text=True, check=True, capture_output=True, timeout=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ports", type=int, default=270)
    ap.add_argument("--looks", type=int, default=20)
    args = ap.parse_args()
    obj = bs.build_program(Path("/var/cache/dcrepro/bpf"))
    pairs = (args.ports + 1) // 2
    intfs = [f"p{i}{end}" for i in range(pairs) for end in "ab"][:args.ports]
    subprocess.run(["ip", "netns", "del", NS], capture_output=True, check=False)
    sh("ip", "netns", "add", NS)
    try:
        sh("ip", "-n", NS, "-batch", "-", text="".join(
            f"link add p{i}a type veth peer name p{i}b\n" for i in range(pairs)))
        with tempfile.TemporaryDirectory(prefix="dcrepro-bench-") as tmp:
            with bs.SwitchRuntime(Path(tmp) / "pin", obj, netns=NS) as rt:
                rt.attach(intfs)
                assert rt.prog_id is not None
                ways = {"bpftool net show": lambda: bs.attachments(rt.prog_id, NS),
                        "rtnetlink per port": rt.attached_to}
                times: dict[str, list[float]] = {w: [] for w in ways}
                for _ in range(args.looks):
                    for name, look in ways.items():
                        c0, t0 = time.process_time(), time.perf_counter()
                        r0 = _children_cpu()
                        got = look()
                        wall = time.perf_counter() - t0
                        cpu = time.process_time() - c0 + _children_cpu() - r0
                        if sorted(got) != sorted(intfs):
                            raise SystemExit(f"{name}: named {len(got)} of {len(intfs)} ports")
                        times[name].append(cpu if cpu > 0 else wall)
                        times.setdefault(name + " wall", []).append(wall)
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True, check=False)
    print(f"{args.ports} ports, {args.looks} looks each, alternating; median per look:")
    for name in ways:
        cpu, wall = statistics.median(times[name]), statistics.median(times[name + " wall"])
        print(f"  {name:<20} CPU {cpu * 1e3:7.1f} ms   wall {wall * 1e3:7.1f} ms   "
              f"= {100 * cpu:5.1f} % of a core at one look a second")
    a, b = (statistics.median(times[n]) for n in ways)
    print(f"  ratio bpftool / rtnetlink CPU: {a / b:.1f}x")


def _children_cpu() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


if __name__ == "__main__":
    main()
