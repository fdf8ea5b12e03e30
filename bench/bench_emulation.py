"""Emulator benchmark: both dataplanes side by side on this machine (root). Prints figures,
asserts nothing.

    sudo .venv/bin/python bench/bench_emulation.py [--dataplanes bpf,ovs] [--topo fattree,k=4]
        [--topo fattree,k=6] [--reps 3] [--seeds 3] [--duration 30] [--rates 10]
        [--skip-permutation]

Per topology, each section runs every dataplane back to back, so they share the same
machine state:
A. bring-up (network up + the plan confirmed by every switch) and teardown, median of reps
B. one TCP flow at 10 and 50 Mb/s (``dcrepro calibrate``): utilisation of the link
C. permutation, TCP-ECMP and MPTCP-ECMP (8 subflows), 30-s flows, 3 seeds, per link rate
   (``dcrepro run permutation``): mean normalized throughput, CPU, packets lost outside the
   tail-drop queues, agreement with the flow model on the traced paths, and the share of
   busy-link dequeue gaps within 10 % of the packet time (Mininet-HiFi's check)
Run it on an otherwise idle machine: every other process competes for the same 2 cores.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import routing
import topos
from emulator.emulation import Emulation
from emulator.proc import install_signal_handlers
from emulator.shaping import LinkSpec

REPO = Path(__file__).resolve().parent.parent


def bringup_teardown(spec: str, dataplane: str, reps: int) -> None:
    """Section A."""
    topo = topos.build(spec)
    plan = routing.make_plan(topo, "ecmp")
    up, rules, down = [], [], []
    for i in range(reps):
        with tempfile.TemporaryDirectory() as tmp:
            with Emulation(topo, plan, LinkSpec(10, 100), Path(tmp), f"bench-{i}",
                           dataplane=dataplane) as emu:
                up.append(emu.facts.bringup_s)
                rules.append(emu.facts.rules_s)
                t0 = time.monotonic()
            down.append(time.monotonic() - t0)
    print(f"A {spec} {dataplane}: bring-up (plan confirmed) median {statistics.median(up):.2f} s "
          f"(all {', '.join(f'{x:.2f}' for x in up)}; installing + confirming the plan: median "
          f"{statistics.median(rules):.2f} s); teardown median {statistics.median(down):.2f} s "
          f"(all {', '.join(f'{x:.2f}' for x in down)})", flush=True)


class Failed(Exception):
    """A benchmarked run failed: reported as a result, and the bench goes on."""


def dcrepro(*args: str) -> None:
    """Run the CLI; on interrupt let it tear down (SIGTERM), never SIGKILL it."""
    # DCREPRO may name another dcrepro command line, as for the sweep scripts
    cmd = os.environ.get("DCREPRO", "").split() or [str(REPO / ".venv/bin/dcrepro")]
    child = subprocess.Popen([*cmd, *args], cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        _, err = child.communicate()
    except KeyboardInterrupt:
        child.terminate()
        child.wait(timeout=120)
        raise
    if child.returncode != 0:
        why = next((l for l in err.splitlines() if l.startswith("dcrepro:")), err.strip()[-300:])
        raise Failed(f"dcrepro {' '.join(args)} failed with {child.returncode}: {why}")


def single_flow(spec: str, dataplane: str, out: Path) -> None:
    """Section B."""
    dcrepro("calibrate", "--topo", spec, "--bw", "10,50", "--duration", "20", "--trim", "3",
            "--out", str(out), "--dataplane", dataplane)
    cal = json.loads((out / "calibration.json").read_text())
    for key, e in sorted(cal.items(), key=lambda kv: float(kv[0].split("|")[1])):
        t, bw, dp = key.split("|")
        if (t, dp) != (spec, dataplane):
            continue
        print(f"B {spec} {dataplane}: single TCP flow {bw} Mb/s: {e['utilisation']:.3f} of the "
              f"link (payload ceiling {e['payload_ceiling']:.3f}), CPU {e['cpu_mean']}%, "
              f"losses outside the queues {e['emulator_loss_share']:.3%}", flush=True)


def permutation(spec: str, dataplane: str, out: Path, seeds: int, duration: float,
                bw: float, transports: list[str]) -> None:
    """Section C at one link rate."""
    dest = out / f"{spec.replace(',', '_').replace('=', '')}-{safe(dataplane)}"
    dcrepro("run", "permutation", "--topo", spec, "--runs", str(seeds), "--duration",
            str(duration), "--trim", "5", "--bw", str(bw), "--subflows", "8", "--out",
            str(dest), "--dataplane", dataplane, "--transport", ",".join(transports))
    run = sorted((dest / "permutation").iterdir())[-1]
    with open(run / "summary.csv", newline="") as fh:
        summary = {(r["transport"], r["run"], r["measure"]): r for r in csv.DictReader(fh)}
    reports = json.loads((run / "fidelity.json").read_text())["reports"]
    for t in transports:
        means = [float(summary[(t, str(i), "norm_iperf")]["mean"]) for i in range(seeds)]
        model = [float(summary[(t, str(i), "norm_model")]["mean"]) for i in range(seeds)]
        mine = [f for f in reports if f["transport"] == t]
        err = statistics.median(x["median_abs_error"] for x in mine)
        agg = statistics.median(x["aggregate_ratio"] for x in mine)
        cpu = statistics.median(x["cpu_mean"] for x in mine)
        sat = statistics.median(x["cpu_saturated_share"] for x in mine)
        loss = statistics.median(x["emulator_loss_share"] for x in mine)
        qd = sum(x["queue_drops"] for x in mine)
        ed = sum(x["emulator_drops"] for x in mine)
        gaps = [x["gaps_within_10pct"] for x in mine if x.get("gaps_within_10pct") is not None]
        every = [x["dequeue_gaps"]["within_10pct"] for x in mine
                 if (x.get("dequeue_gaps") or {}).get("within_10pct") is not None]
        hop = [x["cpu_us_per_packet_hop"] for x in mine if x.get("cpu_us_per_packet_hop")]
        cwnd = [x["tcp_limits"]["cwnd_limited_median"] for x in mine
                if (x.get("tcp_limits") or {}).get("cwnd_limited_median") is not None]
        gap_text = (f"; busy-link dequeue gaps within 10 %: full-size frames "
                    f"{statistics.median(gaps):.4f}, all packets {statistics.median(every):.3f}"
                    if gaps else "")
        print(f"C {spec} {dataplane} {t.upper()}-ECMP permutation {bw:g} Mb/s, "
              f"{duration:g}-s flows, {seeds} seeds: "
              f"mean normalized {statistics.median(means):.3f} (per seed "
              f"{', '.join(f'{m:.3f}' for m in means)}); model on traced paths "
              f"{statistics.median(model):.3f}; aggregate emulated/model {agg:.2f}; median "
              f"per-flow |emu-model|/model {err:.2f}; CPU median {cpu}% (saturated share "
              f"{sat:.2f}); tail drops {qd}, lost outside the queues {ed} ({loss:.3%} "
              f"median){gap_text}"
              + (f"; CPU per packet-hop {statistics.median(hop):.2f} us" if hop else "")
              + (f"; subflows cwnd-limited in {statistics.median(cwnd):.0%} of samples "
                 "(median)" if cwnd else ""), flush=True)
    print(f"  run folder: {run}", flush=True)


def safe(dataplane: str) -> str:
    """A dataplane spec as a folder name part."""
    return dataplane.replace(",", "_").replace("=", "-")


def dataplane_specs(text: str) -> list[str]:
    """'bpf,bpf,socket=keep,ovs' -> ['bpf', 'bpf,socket=keep', 'ovs']: an item with '=' is
    an option of the dataplane before it."""
    out: list[str] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        if "=" in item and out:
            out[-1] += "," + item
        else:
            out.append(item)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataplanes", default="bpf,ovs", help="comma list, compared side by side; "
                    "options follow their dataplane: bpf,bpf,socket=keep,ovs")
    ap.add_argument("--topo", action="append", help="topology spec (repeatable; default "
                    "fattree,k=4)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--rates", default="10", help="comma list of link rates for section C")
    ap.add_argument("--out", default=None, help="results root (default: a temp folder)")
    ap.add_argument("--sections", default="A,B,C", help="which sections to run (comma list)")
    ap.add_argument("--transports", default="tcp,mptcp", help="section C's transports")
    ap.add_argument("--skip-permutation", action="store_true", help="same as --sections A,B")
    args = ap.parse_args()
    install_signal_handlers()
    out = Path(args.out or tempfile.mkdtemp(prefix="dcrepro-bench-"))
    print(f"bench_emulation on {subprocess.run(['uname', '-r'], capture_output=True, text=True).stdout.strip()}, "
          f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; out {out}")
    dps = dataplane_specs(args.dataplanes)
    for spec in args.topo or ["fattree,k=4"]:
        sections = set(args.sections.split(",")) - ({"C"} if args.skip_permutation else set())
        for dp in dps if "A" in sections else []:
            bringup_teardown(spec, dp, args.reps)
        for dp in dps if "B" in sections else []:
            try:
                single_flow(spec, dp, out)
            except Failed as exc:
                print(f"B {spec} {dp}: {exc}", flush=True)
        if "C" in sections:
            for bw in (float(x) for x in args.rates.split(",")):
                for dp in dps:
                    try:
                        permutation(spec, dp, out, args.seeds, args.duration, bw,
                                    args.transports.split(","))
                    except Failed as exc:
                        print(f"C {spec} {dp} {bw:g} Mb/s: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
