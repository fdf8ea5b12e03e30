"""The rates tests/integration/test_cpu_cuts.py judged before it left rates to a bench
(root; run it under the heavy-work lock).  Prints one JSON line per run and one summary
line per criterion; asserts nothing.

    flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_cpu_cut_rates.py [--repeat 5]

- ``--shaper tbf`` on the k=4 fat tree, one TCP flow (8 s, trim 2, as the test ran it):
  0.85 <= Mb/s / goodput_capacity(10) <= 1.01.
- ``--rcvlowat 16384``, two ECMP TCP flows (6 s, trim 1): their sum >= 0.9 of
  goodput_capacity(10), neither above 1.01 of it.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from pathlib import Path

import criteria

from emulator.proc import install_signal_handlers
from model.flowmodel import goodput_capacity

criterion = functools.partial(criteria.criterion, digits=3)
test_cpu_cuts = criteria.integration("test_cpu_cuts")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    install_signal_handlers()
    cap = goodput_capacity(10)
    tbf, lowat_sum, lowat_max = [], [], []
    for rep in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-cuts-") as tmp:
            _found, flow = test_cpu_cuts.tbf_flow(Path(tmp), duration=8, trim=2)
        tbf.append(flow.iperf_mbps / cap)
        print(json.dumps({"what": "tbf", "rep": rep, "mbps": flow.iperf_mbps,
                          "of_ceiling": round(tbf[-1], 4)}), flush=True)
        with tempfile.TemporaryDirectory(prefix="bench-cuts-") as tmp:
            got = test_cpu_cuts.lowat_flows(Path(tmp), duration=6, trim=1)
        if got is None:
            print("no cgroup v2 hierarchy is mounted: --rcvlowat not measured", flush=True)
            continue
        marks, flows, _ = got
        lowat_sum.append(sum(f.iperf_mbps for f in flows) / cap)
        lowat_max.append(max(f.iperf_mbps for f in flows) / cap)
        print(json.dumps({"what": "rcvlowat", "rep": rep, "marks": marks,
                          "mbps": [f.iperf_mbps for f in flows]}), flush=True)
    criterion("tbf 0.85 <= Mb/s / ceiling <= 1.01", tbf, lambda v: 0.85 <= v <= 1.01)
    criterion("rcvlowat sum / ceiling >= 0.9", lowat_sum, lambda v: v >= 0.9)
    criterion("rcvlowat each flow / ceiling <= 1.01", lowat_max, lambda v: v <= 1.01)
    return 0


if __name__ == "__main__":
    sys.exit(main())
