"""How an MPTCP connection of two subflows shares one 10 Mb/s tail-drop bottleneck with one
TCP flow, coupled (``lia``) and uncoupled (``reno`` subflows), by queue size (root; run it
under the heavy-work lock).  Prints one JSON line per run, asserts nothing.

    flock /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_cc_share.py [--queues 20,50,100]
        [--ccs lia,reno] [--repeat 1]

The setup is the shared-bottleneck test's (tests/integration/test_cc.py: plain namespaces,
the bottleneck in a router namespace, Python senders); ``ratio`` is MPTCP's Mb/s over TCP's
in the measured window.  Why the ratio grows with the queue: docs/transports.md.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests" / "integration"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from test_cc import shared_bottleneck  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queues", default="20,50,100", help="pfifo sizes, packets")
    ap.add_argument("--ccs", default="lia,reno", help="congestion controls of the run")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each combination")
    args = ap.parse_args()
    for q in (int(x) for x in args.queues.split(",")):
        for _ in range(args.repeat):
            for cc in args.ccs.split(","):
                r = shared_bottleneck(cc, q)
                r.pop("stats", None)
                print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
