"""How dcrepro's BPF congestion controls share links (root; run it under the heavy-work
lock).  Prints one JSON line per run and one summary line per criterion; asserts nothing.

    flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_cc_share.py [--repeat 5]
        [--what shared,disjoint,ecn,emulated] [--ccs lia,balia,olia,reno] [--queues 20]

The setups are tests/integration/test_cc.py's (plain namespaces, the bottleneck in a router
namespace, Python senders; the second subflow joins before the data), with the windows the
tests used before they stopped judging rates (warm-up 4 s, measured window 14 s):

- ``shared``: an MPTCP connection of two subflows and one TCP flow on one 10 Mb/s tail-drop
  bottleneck (``--queues``, packets; the criteria are judged at test_cc.SHARED_QUEUE, other
  sizes print their figures: why the ratio grows with the queue, docs/transports.md).
  ``ratio`` is MPTCP's Mb/s over TCP's.  Criteria: coupled (lia, balia, olia) ratio <= 1.2;
  reno ratio >= 1.4; a coupled run's ratio < the same repetition's reno ratio - 0.3; the
  link used: MPTCP + TCP > 0.85 of the rate.  A run the kernel's ssthresh fault hit
  (``stats["repaired"]`` > 0, docs/transports.md) or without both subflows is counted and
  excluded from the ratio criteria.
- ``disjoint``: lia, balia, olia over two disjoint 10 Mb/s links (100-packet queues):
  MPTCP >= 1.7 links; each link carried > 0.3 of the bytes.
- ``ecn``: one dctcp flow over a shaped link (1 + 2 s): the receiver > 0.8 of the rate; the
  alpha estimator ran more than 10 windows.
- ``emulated``: an Emulation with --cc lia, one MPTCP iperf3 flow on the k=2 fat tree (10 s,
  trim 2): > 0.8 of the rate.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from criteria import criterion, integration

test_cc = integration("test_cc")

COUPLED = ("lia", "balia", "olia")




def faults(r: dict[str, Any]) -> list[str]:
    """Why a shared-bottleneck run's ratio is not judged (empty: it is)."""
    why = []
    if r["stats"].get("repaired"):
        why.append("fault")
    if r["subflows"] != 2 or r["joined_before_data"] != 2:
        why.append("subflow")
    return why


def shared(ccs: list[str], queues: list[int], repeat: int) -> None:
    for q in queues:
        runs: dict[str, list[dict[str, Any]]] = {cc: [] for cc in ccs}
        for rep in range(repeat):
            for cc in ccs:
                r = test_cc.shared_bottleneck(cc, q, test_cc.BENCH_WARM, test_cc.BENCH_WINDOW)
                r["rep"] = rep
                r["excluded"] = faults(r)
                runs[cc].append(r)
                print(json.dumps(r), flush=True)
        for cc in ccs:
            rs = runs[cc]
            clean = [r for r in rs if not r["excluded"]]
            nf = sum("fault" in r["excluded"] for r in rs)
            ns = sum("subflow" in r["excluded"] for r in rs)
            ex = (f" ({len(rs) - len(clean)} of {len(rs)} runs excluded: {nf} with the "
                  f"ssthresh fault, {ns} missing a subflow)")
            print(f"{cc} queue {q}: ratio over all {len(rs)} runs "
                  f"{sorted(r['ratio'] for r in rs)}; ssthresh fault in {nf}, missing "
                  f"subflow in {ns}", flush=True)
            criterion(f"link used (mptcp+tcp)/rate > 0.85 ({cc}, queue {q})",
                      [(r["mptcp_mbps"] + r["tcp_mbps"]) / test_cc.RATE for r in rs],
                      lambda v: v > 0.85)
            if q != test_cc.SHARED_QUEUE:
                continue
            ratios = [r["ratio"] for r in clean]
            if cc in COUPLED:
                criterion(f"mptcp/tcp <= 1.2 ({cc})", ratios, lambda v: v <= 1.2, ex)
            elif cc == "reno":
                criterion(f"mptcp/tcp >= 1.4 ({cc})", ratios, lambda v: v >= 1.4, ex)
        if q == test_cc.SHARED_QUEUE and "reno" in runs:
            for cc in (c for c in ccs if c in COUPLED):
                pairs = [(a, b) for a, b in zip(runs[cc], runs["reno"])
                         if not a["excluded"] and not b["excluded"]]
                criterion(f"coupled ratio < reno ratio - 0.3, as reno - {cc} ({cc})",
                          [b["ratio"] - a["ratio"] for a, b in pairs], lambda v: v > 0.3,
                          f" ({repeat - len(pairs)} of {repeat} pairs excluded: fault or "
                          f"missing subflow in either)")


def disjoint(ccs: list[str], repeat: int) -> None:
    runs: dict[str, list[dict[str, Any]]] = {cc: [] for cc in ccs}
    for _ in range(repeat):
        for cc in ccs:
            r = test_cc.disjoint_paths(cc, test_cc.QUEUE, test_cc.BENCH_WARM,
                                       test_cc.BENCH_WINDOW)
            runs[cc].append(r)
            print(json.dumps({"what": "disjoint", **r}), flush=True)
    for cc in ccs:
        rs = runs[cc]
        criterion(f"disjoint paths mptcp/rate >= 1.7 ({cc})", [r["links"] for r in rs],
                  lambda v: v >= 1.7)
        criterion(f"disjoint paths smaller link's share of bytes > 0.3 ({cc})",
                  [r["min_link_share"] for r in rs], lambda v: v > 0.3)
        print(f"{cc} disjoint: ssthresh fault in "
              f"{sum(bool(r['stats'].get('repaired')) for r in rs)} of {len(rs)} runs",
              flush=True)


def ecn(repeat: int) -> None:
    mbps, windows = [], []
    for _ in range(repeat):
        sender, receiver, stats = test_cc.ecn_flow("dctcp", warm=1.0, window=2.0)
        print(json.dumps({"what": "ecn", "sender": sender, "receiver": receiver,
                          "stats": stats}), flush=True)
        mbps.append(receiver["mbps"] / test_cc.RATE)
        windows.append(float(stats.get("windows", 0)))
    criterion("dctcp receiver/rate > 0.8", mbps, lambda v: v > 0.8)
    criterion("dctcp alpha windows > 10 (3-s transfer)", windows, lambda v: v > 10)


def emulated(repeat: int) -> None:
    rates = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-cc-") as tmp:
            r = test_cc.emulated_lia(Path(tmp), duration=10, trim=2)
        f = r["flow"]
        print(json.dumps({"what": "emulated", "mbps": f.iperf_mbps,
                          "subflows": len(f.subflows),
                          "stats": (r["facts"].cc_bpf or {}).get("stats")}), flush=True)
        rates.append(f.iperf_mbps / test_cc.RATE)
    criterion("emulated lia flow/rate > 0.8", rates, lambda v: v > 0.8)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", default="shared,disjoint,ecn,emulated",
                    help="setups to run: shared, disjoint, ecn, emulated")
    ap.add_argument("--queues", default=str(test_cc.SHARED_QUEUE),
                    help="pfifo sizes of the shared bottleneck, packets (e.g. 20,50,100)")
    ap.add_argument("--ccs", default="lia,balia,olia,reno",
                    help="congestion controls of the shared (and disjoint: coupled) runs")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each combination")
    args = ap.parse_args()
    what = args.what.split(",")
    ccs = args.ccs.split(",")
    if "shared" in what:
        shared(ccs, [int(x) for x in args.queues.split(",")], args.repeat)
    if "disjoint" in what:
        disjoint([c for c in ccs if c in COUPLED], args.repeat)
    if "ecn" in what:
        ecn(args.repeat)
    if "emulated" in what:
        emulated(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
