"""What releasing the sender's socket at the first switch does to rates (root; run it under
the heavy-work lock).  Prints one JSON line per run and one summary line per criterion;
asserts nothing.

    flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_sender_socket.py [--repeat 5]
        [--what chain,outcast]

- ``chain``: one Reno flow three hops from its bottleneck (tests/integration/
  test_sender_socket.py's Chain, 20-packet queues, 8-s flow, trim 2, as the test ran it
  before), on ``bpf`` and ``bpf,socket=keep``.  Criteria: the flow's rate 4.0 <= Mb/s <= 5.2
  (the 5-Mb/s bottleneck's payload rate; both dataplanes), and with the socket released
  the share of tcp_info samples where the window limited it >= 0.8.
- ``outcast``: ``dcrepro``'s Outcast experiment at six flows (10 s, trim 2), ``--repeat``
  repetitions in one run: the lone flow's share of its fair share per repetition, and the
  test's old criterion, the median over the repetitions < 0.5 (about one repetition in ten
  flips: the six flows' port is the one blacked out and the lone flow takes ~96 % of the
  link).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from criteria import criterion, integration

from emulator.proc import install_signal_handlers
from experiments.outcast import experiment as outcast
from harness.common import checked, resolve
from harness.runfolder import RunFolder
from store import read_csv

chain_flow = integration("test_sender_socket").chain_flow


def chain(repeat: int) -> None:
    rates: dict[str, list[float]] = {"bpf": [], "bpf,socket=keep": []}
    cwnd: list[float] = []
    for rep in range(repeat):
        for dp in rates:
            with tempfile.TemporaryDirectory(prefix="bench-sock-") as tmp:
                r = chain_flow(Path(tmp), dp, duration=8.0, trim=2.0)
            lim = float(r["limits"]["cwnd_limited"])
            print(json.dumps({"what": "chain", "rep": rep, "dataplane": dp,
                              "mbps": round(r["mbps"], 3), "cwnd_limited": lim,
                              "max_in_flight": max(r["flight"], default=None),
                              "drops": r["drops"], "note": r["note"]}), flush=True)
            rates[dp].append(r["mbps"])
            if dp == "bpf":
                cwnd.append(lim)
    for dp, v in rates.items():
        criterion(f"4.0 <= Mb/s <= 5.2 ({dp})", v, lambda x: 4.0 <= x <= 5.2)
    criterion("cwnd_limited >= 0.8 (bpf, socket released)", cwnd, lambda x: x >= 0.8)


def outcast_six(repeat: int) -> None:
    p = argparse.ArgumentParser()
    outcast.add_arguments(p)
    with tempfile.TemporaryDirectory(prefix="bench-sock-") as tmp:
        args = p.parse_args(["--flows", "6", "--duration", "10", "--trim", "2", "--runs",
                             str(repeat), "--out", tmp])
        params = checked(outcast, resolve(args, outcast.PARAMS.defaults(), outcast.QUICK))
        folder = RunFolder(Path(tmp), outcast.NAME, params)
        try:
            outcast.run(params, folder)
        finally:
            folder.set_status("ok")
        lone = [float(r["share_of_fair"]) for r in read_csv(folder.path / "flows.csv")
                if r["sender"] == "lone"]
    for i, v in enumerate(lone):
        print(json.dumps({"what": "outcast", "run": i, "lone_share_of_fair": v}), flush=True)
    criterion("lone share_of_fair < 0.5 (each repetition)", lone, lambda x: x < 0.5)
    med = statistics.median(lone) if lone else float("nan")
    print(f"criterion median lone share_of_fair over {len(lone)} repetitions < 0.5: "
          f"{'met' if med < 0.5 else 'not met'}; median {med:.2f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", default="chain,outcast", help="chain, outcast")
    ap.add_argument("--repeat", type=int, default=5, help="runs (outcast: repetitions)")
    args = ap.parse_args()
    install_signal_handlers()
    what = args.what.split(",")
    if "chain" in what:
        chain(args.repeat)
    if "outcast" in what:
        outcast_six(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
