"""The switch program of this checkout against another revision's, side by side in one run:
what the verifier walks, how long a load takes, how long a network's bring-up takes, and
what one run of the program costs per packet under traffic (root; one emulation at a time,
so under the heavy-work lock).  Prints figures, asserts nothing.

    flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_bpf_load.py --against REV
        [--rounds 3] [--loads 10] [--seconds 10] [--topo fattree,k=4]

Per variant:
- the instructions the verifier processed (``bpftool -d prog load``, once);
- the wall time of ``--loads`` loads on a private bpffs (emulator.bpfobj.load_pinned, what
  every bring-up does), alternating between the variants;
- per round, in turn: a ``--topo`` network's bring-up (Emulation.__enter__) with that
  variant, then a TCP permutation for ``--seconds`` through it, with the program's own
  run time per invocation from kernel.bpf_stats_enabled (turned on for the bench and
  restored after).  Rounds alternate which variant goes first, so slow drifts of the
  machine fall on both.
REV's switch.bpf.c and the headers beside it (aqm.h) come from ``git show``.
"""
from __future__ import annotations

import argparse
import random
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import routing
import topos
from dataplanes.bpf import switch as bpfswitch
from emulator.bpfobj import build, load_pinned, local_sources, unmount
from emulator.emulation import Emulation
from emulator.proc import install_signal_handlers
from emulator.shaping import LinkSpec
from harness.traffic import Flow, run_iperf
from topos.traffic import permutation

ROOT = Path(__file__).resolve().parents[1]


def object_at(rev: str, work: Path) -> Path:
    """The switch object built from revision ``rev``'s sources (in ``work``)."""
    src = work / f"src-{rev}"
    src.mkdir(parents=True)
    rel = bpfswitch.SOURCE.relative_to(ROOT)
    for path in [bpfswitch.SOURCE, *local_sources(bpfswitch.SOURCE)]:
        r = path.relative_to(ROOT)
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{r}"],
                              capture_output=True, text=True)
        if text.returncode == 0:        # a header the revision did not have yet: skipped
            (src / r.name).write_text(text.stdout)
        elif r == rel:
            raise SystemExit(f"bench_bpf_load: git show {rev}:{r}: {text.stderr.strip()}")
    return build(work / "cache", src / bpfswitch.SOURCE.name)


def verified(obj: Path, pin: Path) -> int:
    """Instructions the verifier processed loading ``obj`` (its log's own count)."""
    pin.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "bpf", "bpf", str(pin)], check=True)
    try:
        out = subprocess.run(["bpftool", "-d", "prog", "load", str(obj), str(pin / "p"),
                              "type", "classifier", "pinmaps", str(pin / "m")],
                             capture_output=True, text=True, timeout=300)
    finally:
        unmount(pin)
    m = re.search(r"processed (\d+) insns", out.stderr)
    return int(m.group(1)) if m else -1


def load_s(obj: Path, pin: Path) -> float:
    t = time.monotonic()
    load_pinned(obj, pin, "classifier")
    took = time.monotonic() - t
    unmount(pin)
    return took


def network(obj: Path, topo: topos.Topology, plan: routing.Plan, bw: float, seconds: float,
            seed: int, tag: str) -> tuple[float, float]:
    """(bring-up s, ns per program run under a TCP permutation) with ``obj`` loaded."""
    real = bpfswitch.build_program
    bpfswitch.build_program = lambda _cache: obj      # what BpfDataplane.prepare loads
    try:
        with tempfile.TemporaryDirectory(prefix="bench-bpf-load-") as tmp:
            t = time.monotonic()
            with Emulation(topo, plan, LinkSpec(bw, 100), Path(tmp),
                           f"bench-bpf-{tag}-{int(time.time())}", dataplane="bpf") as emu:
                up = time.monotonic() - t
                pid = emu.dataplane.runtime.prog_id
                flows = [Flow(a, b) for a, b in permutation(topo.hosts(), random.Random(seed))]
                t0, n0 = bpfswitch.prog_stats(pid)
                run_iperf(emu, flows, "tcp", duration=seconds, trim=1, out=Path(tmp) / "iperf")
                t1, n1 = bpfswitch.prog_stats(pid)
    finally:
        bpfswitch.build_program = real
    return up, (t1 - t0) / (n1 - n0) if n1 > n0 else float("nan")


def line(name: str, xs: list[float], unit: str, digits: int = 3) -> str:
    return (f"{name}: median {statistics.median(xs):.{digits}f} {unit} over {len(xs)} "
            f"(min {min(xs):.{digits}f}, max {max(xs):.{digits}f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="git revision to compare with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loads", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--topo", default="fattree,k=4")
    ap.add_argument("--bw", type=float, default=10.0)
    args = ap.parse_args()
    install_signal_handlers()
    topo = topos.build(args.topo)
    plan = routing.make_plan(topo, "ecmp")
    with tempfile.TemporaryDirectory(prefix="bench-bpf-load-") as tmp:
        work = Path(tmp)
        objs = {"this checkout": bpfswitch.build_program(work / "cache-now"),
                args.against: object_at(args.against, work)}
        pin = work / "pin"
        for name, obj in objs.items():
            print(f"{name}: {obj.name}, verifier processed {verified(obj, pin)} insns",
                  flush=True)
        loads: dict[str, list[float]] = {n: [] for n in objs}
        for _ in range(args.loads):
            for name, obj in objs.items():
                loads[name].append(load_s(obj, pin))
        ups: dict[str, list[float]] = {n: [] for n in objs}
        ns: dict[str, list[float]] = {n: [] for n in objs}
        with bpfswitch.bpf_stats():
            for r in range(args.rounds):
                order = list(objs) if r % 2 == 0 else list(reversed(objs))
                for name in order:
                    up, per = network(objs[name], topo, plan, args.bw, args.seconds, r,
                                      f"{r}{len(ups[name])}")
                    ups[name].append(up)
                    ns[name].append(per)
                    print(f"round {r} {name}: bring-up {up:.3f} s, {per:.1f} ns per run",
                          flush=True)
    for name in objs:
        print(line(f"{name} load", loads[name], "s"))
        print(line(f"{name} bring-up ({args.topo})", ups[name], "s"))
        print(line(f"{name} run", ns[name], "ns", 1))
    a, b = objs
    for what, d in (("load", loads), ("bring-up", ups), ("ns per run", ns)):
        print(f"{what}: {a} / {b} (medians) {statistics.median(d[a]) / statistics.median(d[b]):.3f}")


if __name__ == "__main__":
    main()
