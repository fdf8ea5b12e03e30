"""ns-3's own cost per packet transmission, against what issue #24's wall-time goal needs.

Builds bench/archive/ns3_floor.cc (a chain of point-to-point links, TCP bulk flows end to
end, no dcrepro code) against every ns-3 it finds: the PyPI wheel in .venv (`setup.sh
--with-sim`, the one `--backend sim` uses) and Debian's libns3-dev, if installed.  Runs each
variant REPEATS times, interleaved, pinned to one core, and prints the median µs per
transmission beside the figure the goal needs: plts at k=6, 1 Gb/s, 10 simulated seconds of
each of its five networks in 10 minutes.  The transmissions one simulated second of such a
network makes come from a real run (docs/sim.md: RR, 19.6 M).

  .venv/bin/python bench/archive/bench_ns3_floor.py [--repeats 3] [--seconds 0.5]

Needs g++ and at least one ns-3: `./setup.sh --with-sim`, and/or Debian's packages
libns3-dev and libtcmalloc-minimal4 (apt-get install), which setup.sh does not install.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).resolve().parent / "ns3_floor.cc"
MODULES = ("core", "network", "internet", "point-to-point", "applications", "traffic-control")
#: plts k=6 at 1 Gb/s: packet transmissions in one simulated second (RR, docs/sim.md)
PLTS_TX_PER_SIM_S = 19.6e6
GOAL_WALL_S, GOAL_SIM_S, PLTS_NETWORKS = 600.0, 10.0, 5


#: a faster allocator for the same binary (Debian's libtcmalloc-minimal4): malloc and free
#: are a tenth of ns-3's profile
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def builds() -> dict[str, list[str]]:
    """The g++ arguments for each ns-3 found: name -> flags after the source."""
    found: dict[str, list[str]] = {}
    wheel = glob.glob(str(ROOT / ".venv/lib/python3*/site-packages/ns3"))
    if wheel and glob.glob(f"{wheel[0]}/lib64/libns3.*-core.so"):
        lib = f"{wheel[0]}/lib64"
        ver = re.search(r"libns3\.(\d+)-core", glob.glob(f"{lib}/libns3.*-core.so")[0])
        assert ver
        # the wheel is built with logging and asserts (its cmake files say so)
        found[f"wheel 3.{ver.group(1)}"] = [
            "-std=c++20", "-DNS3_LOG_ENABLE", "-DNS3_ASSERT_ENABLE", f"-I{wheel[0]}/include",
            f"-L{lib}", f"-Wl,-rpath,{lib}"] + [f"-lns3.{ver.group(1)}-{m}" for m in MODULES]
    if Path("/usr/include/ns3/core-module.h").exists():
        found["debian"] = ["-std=c++17"] + [f"-lns3-{m}" for m in MODULES]
    return found


def run(binary: str, args: list[str], preload: str = "") -> dict[str, float]:
    """One run of the program on CPU 0; its key=value line as numbers where they are."""
    env = dict(os.environ, LD_PRELOAD=preload) if preload else None
    out = subprocess.run(["taskset", "-c", "0", binary, *args], capture_output=True,
                         text=True, timeout=3600, check=True, env=env).stdout
    line = out.strip().splitlines()[-1]
    fields = dict(kv.split("=", 1) for kv in line.split())
    return {k: float(v) for k, v in fields.items() if re.fullmatch(r"[0-9.]+", v)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=0.5, help="simulated seconds a run")
    ap.add_argument("--case", action="append", default=None, metavar="HOPS:FLOWS[:SCHED]",
                    help="path length, flows and ns-3 scheduler (default 4:1 4:27 "
                         "8:27 4:27:Heap)")
    args = ap.parse_args()
    found = builds()
    if not found:
        print("bench_ns3_floor: no ns-3 here (setup.sh --with-sim, or Debian's libns3-dev)",
              file=sys.stderr)
        return 2
    cases = args.case or ["4:1", "4:27", "8:27", "4:27:Heap"]
    with tempfile.TemporaryDirectory(prefix="ns3-floor-") as tmp:
        binaries: dict[str, tuple[str, str]] = {}  # variant -> (binary, LD_PRELOAD)
        for name, flags in found.items():
            binary = os.path.join(tmp, name.replace(" ", "-"))
            subprocess.run(["g++", "-O2", str(SOURCE), "-o", binary, *flags], check=True,
                           timeout=600)
            binaries[name] = (binary, "")
            if Path(TCMALLOC).exists():
                binaries[f"{name} + tcmalloc"] = (binary, TCMALLOC)
        per: dict[tuple[str, str], list[float]] = {}
        # (case, build) -> [(wall s, transmissions)], for the cost of a forwarding hop alone
        raw: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for rep in range(args.repeats):
            for case in cases:
                hops, flows, *sched = case.split(":")
                argv = [f"--hops={hops}", f"--flows={flows}", f"--seconds={args.seconds}"]
                if sched:
                    argv.append(f"--scheduler=ns3::{sched[0]}Scheduler")
                for name, (binary, preload) in binaries.items():
                    r = run(binary, argv, preload)
                    per.setdefault((case, name), []).append(r["us_per_transmission"])
                    raw.setdefault((case, name), []).append((r["wall_s"], r["transmissions"]))
                    print(f"# rep {rep + 1} {case} {name}: {r['transmissions']:.0f} "
                          f"transmissions, {r['wall_s']:.2f} s, "
                          f"{r['us_per_transmission']:.2f} us each", flush=True)
    one = GOAL_WALL_S / (GOAL_SIM_S * PLTS_TX_PER_SIM_S) * 1e6
    print(f"\nthe goal needs: {one:.2f} us per transmission for one plts network, "
          f"{one / PLTS_NETWORKS:.2f} us for all {PLTS_NETWORKS}")
    print("| case (hops:flows[:scheduler]) | " + " | ".join(binaries) + " |")
    print("|---|" + "---|" * len(binaries))
    for case in cases:
        cells = []
        for name in binaries:
            v = per[(case, name)]
            cells.append(f"{statistics.median(v):.2f} ({', '.join(f'{x:.2f}' for x in v)})")
        print(f"| {case} | " + " | ".join(cells) + " |")
    if "4:27" in cases and "8:27" in cases:
        # four more forwarding hops, the same TCP ends: what a hop alone costs
        for name in binaries:
            hop = [1e6 * (w8 - w4) / (t8 - t4) for (w4, t4), (w8, t8)
                   in zip(raw[("4:27", name)], raw[("8:27", name)])]
            print(f"{name}: a forwarding hop alone (8:27 minus 4:27, per added "
                  f"transmission): median {statistics.median(hop):.2f} us "
                  f"({', '.join(f'{x:.2f}' for x in hop)})")
    best = min(statistics.median(v) for v in per.values())
    print(f"\nfastest median {best:.2f} us: {best / one:.1f}x what one network needs, "
          f"{best / (one / PLTS_NETWORKS):.1f}x what all {PLTS_NETWORKS} need")
    return 0


if __name__ == "__main__":
    sys.exit(main())
