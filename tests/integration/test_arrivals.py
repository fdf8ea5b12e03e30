"""The bottleneck arrival tracer in a short outcast run (root), on both dataplanes: its
files exist, every arrival is attributed to an input port, and the drops it traced equal
the pfifo's own drop counter over the same window; the packets it saw released, the root
qdisc's packet counter; the per-sender counts of flows.csv agree exactly with
arrivals.csv over the measured window.

Tolerance: drops and releases traced may fall short of the counters by at most max(2, 5 %): BPF runs on
tracepoints are occasionally skipped on this machine (emulator/bpf/qgap.bpf.c) and the
check counts them as missed rather than assuming none.  The skipped share grows with host
load: of 2026-12-01's Outcast reference networks, the 29 whose log warned of a difference
missed at worst 5 of 173 drops (2.9 %), and the fresh-clone CI of de47c22, on a busy VM,
missed 5 of 159 (3.1 %) here against the earlier 1 %; 5 % keeps a margin of 1.6x over the
worst seen.  Releases miss for the same reason, about 10 a second: 0.31-0.67 % in three quiet
runs of this test on ovs (2026-12-02), and 1.08 % (52 of 4,809) in a fresh-clone CI of
3cebb81 that failed the earlier 1 % allowance; no list was cut short of its records
(``released_unlisted`` 0, checked exactly).  Accepted packets are counted by the qdisc, not
traced, so they keep 1 % (the root's released packets plus what it still holds).
"""
from __future__ import annotations

import argparse
import json

import pytest

from experiments.outcast import experiment as outcast
from experiments.outcast.figures import plot_outcast
from harness.common import checked, resolve
from harness.runfolder import RunFolder
from store import read_csv

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("dataplane", ["bpf", "ovs"])
def test_arrivals_traced_and_drops_match_the_qdisc_counter(tmp_path, dataplane):
    p = argparse.ArgumentParser()
    outcast.add_arguments(p)
    args = p.parse_args(["--flows", "6", "--duration", "5", "--trim", "1", "--runs", "1",
                         "--dataplane", dataplane, "--out", str(tmp_path),
                         "--repeat-flagged", "0"])   # one repetition's rows, whatever the timing
    params = checked(outcast, resolve(args, outcast.PARAMS.defaults(), outcast.QUICK))
    folder = RunFolder(tmp_path, outcast.NAME, params)
    outcast.run(params, folder)
    folder.set_status("ok")
    run = folder.path
    point = run / "n06-run00"
    for f in ("arrivals.csv", "releases.csv", "arrivals_summary.csv", "tcp_events.csv"):
        assert (point / f).exists(), f
    assert (run / "arrivals_summary.csv").exists()
    facts = json.loads((run / "config.json").read_text())["runtime"]["n06-run00"]
    arr = facts["arrivals"]
    assert arr["traced"] == "s1-eth1" and arr["records"] > 1000, arr
    check = arr["check"]
    assert check["qdisc_drops"] > 0, "a 20-packet queue under 7 TCP flows drops"
    assert 0 <= check["drops_missed"] <= max(2, 0.05 * check["qdisc_drops"]), check
    assert abs(check["accepted_missed"]) <= 0.01 * check["qdisc_accepted"] + 2, check
    assert check["ring_full"] == 0, check
    # every packet the bottleneck released, with its time (releases.csv)
    assert check["released_unlisted"] == 0, check
    assert 0 <= check["released_missed"] <= max(2, 0.05 * check["qdisc_released"]), check
    released = read_csv(point / "releases.csv")
    assert len(released) == arr["releases"] == check["traced_released"] > 1000
    assert {r["port"] for r in released} >= {"s1 port 2 (lone)", "s1 port 3 (from s2, 6 flows)"}
    rows = read_csv(point / "arrivals.csv")
    ports = {r["port"] for r in rows}
    assert ports == {"s1 port 2 (lone)", "s1 port 3 (from s2, 6 flows)"}, ports
    assert {r["sender"] for r in rows} == {"lone", *(f"a{i}" for i in range(1, 7))}
    if dataplane == "bpf":
        # the switch's ingress port as the kernel recorded it (skb_iif) agrees with the
        # attribution by source address: one ingress per port, a different one for each
        by_port: dict[str, set[str]] = {}
        for r in rows:
            by_port.setdefault(r["port"], set()).add(r["iif"])
        assert all(len(v) == 1 for v in by_port.values()), by_port
        assert len({next(iter(v)) for v in by_port.values()}) == 2, by_port
    flows = read_csv(run / "flows.csv")
    assert all(r["rtos"] != "" and r["fast_retrans"] != "" for r in flows), flows[0]
    # queue_arrivals/queue_drops: each sender's records in the window, exactly.  A sender
    # with no record in the window has both empty (harness.arrivals.sender_counts lists only
    # senders it saw): in an Outcast run the six flows' port can be blacked out throughout
    # the window (an [ovs] run in the full suite, 2026-12-01: a6 sent nothing in [2, 6] s,
    # and int("") failed the test)
    lo, hi = arr["window_s"]
    seen: dict[str, list[int]] = {}
    for r in rows:
        if lo <= float(r["t"]) <= hi:
            c = seen.setdefault(r["sender"], [0, 0])
            c[0] += 1
            c[1] += int(r["dropped"])
    for r in flows:
        want = seen.get(r["sender"])
        got = [int(r["queue_arrivals"]), int(r["queue_drops"])] \
            if r["queue_arrivals"] != "" else None
        assert got == want and (r["queue_drops"] == "") == (want is None), (r, want)
    figs = plot_outcast(run, json.loads((run / "config.json").read_text()))
    assert "outcast_arrivals.png" in [f.name for f in figs]
