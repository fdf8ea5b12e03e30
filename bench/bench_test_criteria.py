"""The rate and timing criteria that left tests/integration (issue #51): each check runs the
test's own set-up with the test's old traffic window, ``--repeat`` times, prints one JSON line
per run and then one summary line per criterion (median, min-max, runs that met it).  Asserts
nothing.  Root, one emulation at a time:

    flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_test_criteria.py \\
        [--checks single-flow-bpf,single-flow-ovs,...] [--repeat 5]

Checks (the test each one came from, and its old criterion):

* ``single-flow-bpf``, ``single-flow-ovs``: test_emulation.py::test_single_tcp_flow_reaches_
  link_rate.  One TCP flow over a 20 Mb/s k=4 fat-tree, 12-s flow, 2-s trim: iperf3 and
  bwm-ng each >= 0.85 of the link.
* ``many-to-one``: test_emulation.py::test_many_to_one_flows_each_get_their_own_port.  Three
  senders into one host at 10 Mb/s, 8-s flows: 0.8 < their iperf3 sum / goodput capacity
  <= 1.02.
* ``grin``: test_grin.py::test_short_grin_run_uses_the_horizontal_links (10-s flows): GRIN1's
  and the multihomed network's mean goodput > 1.3 x GRIN0's.
* ``grin-userspace``: test_grin.py::test_userspace_path_manager_opens_grin3s_full_mesh: GRIN3's
  mean goodput > 2.5 x GRIN0's.
* ``orca-bpf``, ``orca-ovs``: test_orca.py::test_short_orca_run: unicast takes longer than
  multicast at each workload (figure: the smaller unicast/multicast time ratio, > 1).
* ``outcast``: test_outcast.py::test_short_outcast_run_writes_run_folder_and_figures (6-s
  flows): the bottleneck's acked total > 0.6 x 10 Mb/s.
* ``cgroup``: test_cgroup.py::test_a_cap_limits_one_busy_process: a 0.2-core cap gives a busy
  loop more than 0.1 cores, and an uncapped one more than twice the capped one.
* ``bpf-switch-plain``: test_bpf_switch.py::test_plain_forwarding_is_shaped_by_the_egress_htb:
  1 MB over a 10 Mb/s HTB port at more than 5 Mb/s.
* ``fault-surface``: test_faults.py (every test's ``took < SURFACE_S + 5``): from a SIGKILL of
  an iperf3 client during a k=4 bpf permutation to the run's exit (teardown included), < 8 s.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from criteria import integration

ROOT = Path(__file__).resolve().parents[1]

#: a criterion: (name, figure key in the run's record, predicate on the figure)
Criterion = tuple[str, str, Callable[[float], bool]]


def _cli(tmp: Path, *args: str) -> Path:
    """`dcrepro run ...` into tmp; the run folder (raises when the run failed)."""
    p = subprocess.run([sys.executable, "-m", "dcrepro.cli", "run", *args, "--out", str(tmp)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if p.returncode != 0:
        raise RuntimeError(f"dcrepro run {' '.join(args)}: exit {p.returncode}: "
                           f"{(p.stdout + p.stderr)[-400:]}")
    return next((tmp / args[0]).iterdir())


def single_flow(dataplane: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        import routing
        import topos
        from emulator.emulation import Emulation
        from emulator.shaping import LinkSpec
        from harness.traffic import Flow, run_iperf
        topo = topos.build("fattree,k=4")
        with Emulation(topo, routing.make_plan(topo, "ecmp"), LinkSpec(20, 100), tmp,
                       "b-single", dataplane=dataplane) as emu:
            flows = [Flow("0_0_2", "3_1_3")]
            run_iperf(emu, flows, "tcp", duration=12, trim=2, out=tmp / "tcp")
        return {"iperf_mbps": flows[0].iperf_mbps, "bwm_mbps": flows[0].bwm_mbps,
                "subflows": len(flows[0].subflows)}
    return run


def many_to_one(tmp: Path) -> dict[str, Any]:
    import routing
    import topos
    from emulator.emulation import Emulation
    from emulator.shaping import LinkSpec
    from harness.traffic import Flow, run_iperf
    from model.flowmodel import goodput_capacity
    topo = topos.build("fattree,k=4")
    with Emulation(topo, routing.make_plan(topo, "ecmp"), LinkSpec(10, 100), tmp,
                   "b-many", dataplane="bpf") as emu:
        flows = [Flow("0_0_2", "3_1_3"), Flow("1_0_2", "3_1_3"), Flow("2_0_2", "3_1_3"),
                 Flow("0_0_2", "1_1_3")]
        run_iperf(emu, flows, "tcp", duration=8, trim=2, out=tmp / "tcp")
    into = [f.iperf_mbps for f in flows[:3]]
    return {"into_mbps": into, "sum_over_capacity": sum(into) / goodput_capacity(10)}


def _grin_means(run: Path, nets: tuple[str, ...]) -> dict[str, float]:
    with open(run / "flows.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {n: sum(float(r["mbps"]) for r in rows if r["network"] == n) / 2 for n in nets}


def grin(tmp: Path) -> dict[str, Any]:
    run = _cli(tmp, "grin", "--racks", "2", "--servers", "4", "--degrees", "0,1",
               "--multihomed", "1", "--active", "10", "--duration", "10", "--trim", "2",
               "--runs", "1", "--dataplane", "bpf")
    mean = _grin_means(run, ("grin0", "grin1", "mh1"))
    return {"mean_mbps": mean, "grin1_over_grin0": mean["grin1"] / mean["grin0"],
            "mh1_over_grin0": mean["mh1"] / mean["grin0"]}


def grin_userspace(tmp: Path) -> dict[str, Any]:
    run = _cli(tmp, "grin", "--racks", "2", "--servers", "4", "--degrees", "0,3",
               "--multihomed", "0", "--active", "10", "--duration", "10", "--trim", "2",
               "--runs", "1", "--pm", "userspace")
    mean = _grin_means(run, ("grin0", "grin3"))
    return {"mean_mbps": mean, "grin3_over_grin0": mean["grin3"] / mean["grin0"]}


def orca(dataplane: str) -> Callable[[Path], dict[str, Any]]:
    def run(tmp: Path) -> dict[str, Any]:
        folder = _cli(tmp, "orca", "--runs", "1", "--workloads", "1,2", "--procs", "1,2",
                      "--base-mb", "0.3", "--dataplane", dataplane)
        with open(folder / "transfers.csv", newline="") as fh:
            transfers = list(csv.DictReader(fh))
        mc = {t["workload"]: float(t["total_s"]) for t in transfers if t["mode"] == "multicast"}
        uni = {t["workload"]: float(t["total_s"]) for t in transfers
               if t["mode"] == "unicast" and t["procs"] == "1"}
        return {"multicast_s": mc, "unicast_s": uni,
                "min_unicast_over_multicast": min(uni[w] / mc[w] for w in mc)}
    return run


def outcast(tmp: Path) -> dict[str, Any]:
    import math

    from store import cell, read_csv
    run = _cli(tmp, "outcast", "--flows", "2", "--duration", "6", "--trim", "1", "--runs", "1",
               "--rto-min", "10ms")
    acked = [cell(r["acked_mbps"]) for r in read_csv(run / "flows.csv")]
    return {"acked_mbps": acked, "acked_total_mbps": sum(x for x in acked if not math.isnan(x))}


def cgroup_cap(tmp: Path) -> dict[str, Any]:
    from emulator import cgroup
    t = integration("test_cgroup")
    hier = cgroup.find_hierarchy()
    assert hier is not None, "no cpu controller on this machine"
    cap = cgroup.CpuCap(hier, f"bench{os.getpid()}+busy")
    cap.create()
    try:
        cap.set(0.2)
        capped = t._busy_cores(cgroup.wrap([sys.executable, "-c", t.BUSY], cap.procs_file,
                                           pin=0))
        free = t._busy_cores([sys.executable, "-c", t.BUSY])
    finally:
        cgroup.remove(cap.path)
    return {"capped_cores": capped, "free_cores": free, "free_over_capped": free / capped}


def bpf_switch_plain(tmp: Path) -> dict[str, Any]:
    from dataplanes.bpf import switch as bs
    t = integration("test_bpf_switch")
    net = t.Net(bs.build_program(tmp))
    try:
        net.create()
        net.ping("h1", "h2")
        got, secs = t.tcp_transfer(net, "h1", "h2", 1_000_000)
    finally:
        net.destroy()
    return {"bytes": got, "mbps": 8 * got / secs / 1e6}


def fault_surface(tmp: Path) -> dict[str, Any]:
    faults = integration("test_faults")
    p = faults._start(tmp, "bpf")
    faults._wait_traffic(p, tmp)
    t = time.monotonic()
    os.kill(faults._pids("iperf3 -c")[0], signal.SIGKILL)
    p.communicate(timeout=60)
    return {"exit": p.returncode, "took_s": time.monotonic() - t}


CHECKS: dict[str, tuple[Callable[[Path], dict[str, Any]], list[Criterion]]] = {
    "single-flow-bpf": (single_flow("bpf"), [
        ("iperf3 >= 0.85 x 20 Mb/s", "iperf_mbps", lambda x: x >= 0.85 * 20),
        ("bwm-ng >= 0.85 x 20 Mb/s", "bwm_mbps", lambda x: x >= 0.85 * 20)]),
    "single-flow-ovs": (single_flow("ovs"), [
        ("iperf3 >= 0.85 x 20 Mb/s", "iperf_mbps", lambda x: x >= 0.85 * 20),
        ("bwm-ng >= 0.85 x 20 Mb/s", "bwm_mbps", lambda x: x >= 0.85 * 20)]),
    "many-to-one": (many_to_one, [
        ("0.8 < sum into one host / goodput capacity <= 1.02", "sum_over_capacity",
         lambda x: 0.8 < x <= 1.02)]),
    "grin": (grin, [("grin1/grin0 > 1.3", "grin1_over_grin0", lambda x: x > 1.3),
                    ("mh1/grin0 > 1.3", "mh1_over_grin0", lambda x: x > 1.3)]),
    "grin-userspace": (grin_userspace, [
        ("grin3/grin0 > 2.5", "grin3_over_grin0", lambda x: x > 2.5)]),
    "orca-bpf": (orca("bpf"), [("unicast/multicast time > 1 at every workload",
                                "min_unicast_over_multicast", lambda x: x > 1)]),
    "orca-ovs": (orca("ovs"), [("unicast/multicast time > 1 at every workload",
                                "min_unicast_over_multicast", lambda x: x > 1)]),
    "outcast": (outcast, [("acked total > 0.6 x 10 Mb/s", "acked_total_mbps",
                           lambda x: x > 0.6 * 10)]),
    "cgroup": (cgroup_cap, [("0.1 < capped cores", "capped_cores", lambda x: x > 0.1),
                            ("capped cores < 0.25", "capped_cores", lambda x: x < 0.25),
                            ("free > 2 x capped", "free_over_capped", lambda x: x > 2)]),
    "bpf-switch-plain": (bpf_switch_plain, [("5 < Mb/s", "mbps", lambda x: x > 5),
                                            ("Mb/s < 10.2", "mbps", lambda x: x < 10.2)]),
    "fault-surface": (fault_surface, [("fault to exit < 8 s (SURFACE_S + 5)", "took_s",
                                       lambda x: x < 8.0)]),
}


def summary(check: str, records: list[dict[str, Any]], criteria: list[Criterion]) -> None:
    for name, key, ok in criteria:
        xs = [float(r[key]) for r in records if key in r]
        if not xs:
            print(f"criterion {name} ({check}): no run finished of {len(records)}", flush=True)
            continue
        met = sum(1 for x in xs if ok(x))
        print(f"criterion {name} ({check}): met in {met} of {len(records)} runs; median "
              f"{statistics.median(xs):.3f}, min {min(xs):.3f}, max {max(xs):.3f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checks", default=",".join(CHECKS), help="comma list of: "
                    + ", ".join(CHECKS))
    ap.add_argument("--repeat", type=int, default=5, help="runs of each check")
    args = ap.parse_args()
    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        ap.error(f"unknown checks {unknown}; known: {', '.join(CHECKS)}")
    for check in checks:
        fn, criteria = CHECKS[check]
        records: list[dict[str, Any]] = []
        for i in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="dcrepro-bench-") as tmp:
                t0 = time.monotonic()
                try:
                    rec = fn(Path(tmp))
                except Exception as exc:   # a failed run is a result: reported, not retried
                    rec = {"error": f"{type(exc).__name__}: {exc}"[:500]}
                rec = {"check": check, "run": i, **rec, "wall_s": round(time.monotonic() - t0, 1)}
            records.append(rec)
            print(json.dumps(rec, default=float), flush=True)
        summary(check, records, criteria)
    return 0


if __name__ == "__main__":
    sys.exit(main())
