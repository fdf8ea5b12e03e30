"""What the bottleneck arrival tracer costs (root). Prints figures, asserts nothing.

    .venv/bin/python bench/bench_arrivals.py [--flows 12] [--reps 2] [--duration 20]
        [--trim 4] [--dataplane bpf]

One outcast point (lone flow vs N flows), run ``--reps`` times with the tracer and as often
without it, alternating (on, off, on, off, ...) so that a drift of the machine falls on
both; per run the machine's mean CPU over the measurement window and its CPU per
packet-hop (harness/traffic.run_iperf's figures), the records traced, the share of the
root qdisc's releases the tracer missed (skipped BPF runs) and the lone flow's share of its
fair share.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import routing
import topos
from emulator.proc import install_signal_handlers
from experiments.outcast import experiment as outcast
from harness.common import checked, resolve, run_rng
from harness.runfolder import RunFolder
from harness.workload import make


def one(params: object, n: int, traced: bool, rep: int, work: Path) -> dict:
    """One outcast point, run as the experiment runs it (its workload on the emulated
    backend); its CPU figures."""
    topo = topos.build(f"outcast,n={n}")
    tag = f"{'on' if traced else 'off'}{rep}"
    folder = RunFolder(work / tag, outcast.NAME, params)
    w = outcast.many_to_one_workload(topo, routing.make_plan(topo, outcast.ROUTING), params,
                                     outcast.bottleneck_of(topo, arrivals=traced),
                                     topo.senders(), rep, run_rng(1, rep), tag)
    (m,) = make(params, folder).run(w, folder.path / tag)
    facts = json.loads((folder.path / "config.json").read_text())["runtime"][tag]
    lone = next(r for r in m.flows if r.spec.src == topo.lone)
    fair = params.bw / (n + 1)  # type: ignore[attr-defined]
    arr = facts.get("arrivals") or {}
    chk = arr.get("check", {})
    return {"traced": traced, "cpu_mean": facts["cpu_mean"],
            "cpu_us_per_packet_hop": facts["cpu_us_per_packet_hop"],
            "records": arr.get("records"), "drops_agree": chk.get("drops_agree"),
            # releases the tracer missed (skipped BPF runs) and lists it cut short
            "released_missed": chk.get("released_missed"),
            "released_of": chk.get("qdisc_released"),
            "released_unlisted": chk.get("released_unlisted"),
            "lone_share": round(lone.goodput_mbps / fair, 3)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--flows", type=int, default=12)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--trim", type=float, default=4.0)
    p.add_argument("--dataplane", default="bpf")
    args = p.parse_args()
    install_signal_handlers()
    ep = argparse.ArgumentParser()
    outcast.add_arguments(ep)
    with tempfile.TemporaryDirectory(prefix="bench-arrivals-") as tmp:
        eargs = ep.parse_args(["--flows", str(args.flows), "--duration", str(args.duration),
                               "--trim", str(args.trim), "--runs", "1", "--dataplane",
                               args.dataplane, "--out", tmp])
        params = checked(outcast, resolve(eargs, outcast.PARAMS.defaults(), outcast.QUICK))
        rows = []
        for rep in range(args.reps):
            for traced in (True, False):
                r = one(params, args.flows, traced, rep, Path(tmp))
                print(r, flush=True)
                rows.append(r)
    for traced in (True, False):
        mine = [r for r in rows if r["traced"] == traced]
        print(f"tracer {'on ' if traced else 'off'}: cpu_mean "
              f"{statistics.mean(r['cpu_mean'] for r in mine):.1f} % "
              f"({', '.join(str(r['cpu_mean']) for r in mine)}), cpu per packet-hop "
              f"{statistics.mean(r['cpu_us_per_packet_hop'] for r in mine):.2f} us "
              f"({', '.join(str(r['cpu_us_per_packet_hop']) for r in mine)})")
    on = [r for r in rows if r["traced"] and r["released_of"]]
    if on:
        shares = sorted(100 * r["released_missed"] / r["released_of"] for r in on)
        print(f"releases missed: median {statistics.median(shares):.2f} % "
              f"(range {shares[0]:.2f}-{shares[-1]:.2f} %), lists cut short: "
              f"{sum(r['released_unlisted'] or 0 for r in on)} packets")


if __name__ == "__main__":
    main()
