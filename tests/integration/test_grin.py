"""GRIN on real namespaces (root only): every address of every server reaches every other
one over the horizontal links on both dataplanes, and a short grin run's MPTCP connections
really use those links."""
from __future__ import annotations

import csv
import json
import subprocess
import time
from pathlib import Path

import pytest

import routing
import topos
from emulator.emulation import Emulation
from emulator.hostnet import grin_mptcp_endpoints
from emulator.proc import in_ns
from emulator.shaping import LinkSpec
from harness.traffic import Flow, _wait_listening, data_connection, diag_subflows

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("dataplane,spec,how", [
    ("bpf", "grin,racks=2,servers=4,degree=2", "st"),
    ("ovs", "grin,racks=2,servers=4,degree=1", "st"),
    ("bpf", "multihomed,racks=2,servers=3,extra=2", "st"),
    ("bpf", "grin-fattree,k=4,degree=1,placement=cross", "ecmp")])
def test_every_address_reaches_every_other(dataplane, spec, how, tmp_path):
    topo = topos.build(spec)
    with Emulation(topo, routing.make_plan(topo, how), LinkSpec(10, 50), tmp_path,
                   f"t-grin-{dataplane}", dataplane=dataplane) as emu:
        procs = {}
        for h in topo.hosts():
            mine = topo.addresses(h) + topo.outgoing_addresses(h)
            targets = [(s, d) for s in mine for o in topo.hosts() if o != h
                       for d in topo.addresses(o) + topo.outgoing_addresses(o)]
            # every ping of every host at once: hundreds of echo requests share 50-packet
            # tail-drop queues, so one loss is the burst, not the routing; a pair fails
            # only when none of its three requests is answered
            script = " ".join(f"(ping -c3 -i0.2 -W2 -q -I {s} {d} >/dev/null 2>&1 || "
                              f"echo {s}_{d}) &" for s, d in targets) + " wait"
            procs[h] = subprocess.Popen(in_ns(emu.host(h).pid, ["sh", "-c", script]),
                                        stdout=subprocess.PIPE, text=True)
        failed = {h: p.communicate(timeout=60)[0].split() for h, p in procs.items()}
    assert not any(failed.values()), {h: f[:5] for h, f in failed.items() if f}


def test_short_grin_run_uses_the_horizontal_links(short_run):
    run = short_run("grin", "--racks", "2", "--servers", "4", "--degrees", "0,1",
                    "--multihomed", "1", "--active", "10", "--duration", "4", "--trim", "1",
                    "--runs", "1", "--dataplane", "bpf",
                    files=("flows.csv", "summary.csv", "claims.md", "throughput.png",
                           "run00/active10-grin1/subflows.json",
                           "run00/active10-grin1/fidelity.json"))
    rows = list(csv.DictReader(open(run / "flows.csv")))
    grin1 = [r for r in rows if r["degree"] == "1"]
    assert len(grin1) == 2 and all(int(r["horizontal_subflows"]) >= 1 for r in grin1)
    mh = [r for r in rows if r["network"] == "mh1"]
    assert len(mh) == 2 and all(int(r["horizontal_subflows"]) >= 1 for r in mh)
    # every network carried data; how much more GRIN1 and the multihomed network carry than
    # GRIN0 (> 1.3x each; the h1 optimum is 2x) is a measurement of this host:
    # bench/bench_test_criteria.py --checks grin (with this test's old 10-s flows)
    total = {n: sum(float(r["mbps"]) for r in rows if r["network"] == n)
             for n in ("grin0", "grin1", "mh1")}
    assert all(x > 0 for x in total.values()), total


def test_userspace_path_manager_opens_grin3s_full_mesh(short_run):
    """--pm userspace: 16 subflows per GRIN3 connection (the in-kernel limit is 9), none
    refused.  GRIN3's goodput over GRIN0's (> 2.5x, the star's is ~1.8x) is a measurement:
    bench/bench_test_criteria.py --checks grin-userspace."""
    run = short_run("grin", "--racks", "2", "--servers", "4", "--degrees", "0,3",
                    "--multihomed", "0", "--active", "10", "--duration", "4", "--trim", "1",
                    "--runs", "1", "--pm", "userspace", files=("flows.csv",))
    rows = list(csv.DictReader(open(run / "flows.csv")))
    grin3 = [r for r in rows if r["network"] == "grin3"]
    assert len(grin3) == 2 and all(int(r["subflows"]) == 16 for r in grin3), grin3
    facts = json.loads((run / "config.json").read_text())["runtime"]["run00-active10-grin3"]
    assert facts["path_manager"].startswith("userspace") and facts["pm_refused"] == 0, facts
    assert not facts["pm_error"], facts
    total = {n: sum(float(r["mbps"]) for r in rows if r["network"] == n)
             for n in ("grin0", "grin3")}
    assert all(x > 0 for x in total.values()), total


def test_a_neighbour_pair_opens_every_designed_subflow(tmp_path):
    """In-kernel path manager, GRIN1 pair r0s1 -> r0s0: all (1 + 1)^2 designed subflows come
    up (looked for up to 10 s; about 1 s on a quiet host), both directions at once.  The one from the client's primary address to
    the server's secondary (in the client's own prefix, routed over the horizontal link)
    sat in SYN-SENT while the primary endpoint was bound to the uplink, and died 3 s later
    (the quick GRIN reproduction's flagged repetition 4, 2026-12-03)."""
    topo = topos.build("grin,racks=1,servers=2,degree=1")
    with Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(10, 100), tmp_path,
                   "t-grin-pair") as emu:
        grin_mptcp_endpoints(topo, emu.host_pids)
        pairs = [("r0s1", "r0s0", 5301), ("r0s0", "r0s1", 5302)]
        procs = [subprocess.Popen(in_ns(emu.host(d).pid, ["mptcpize", "run", "iperf3", "-s",
                                                          "-1", "-p", str(p)]),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for _, d, p in pairs]
        try:
            _wait_listening(emu, [Flow(s, d, port=p) for s, d, p in pairs], timeout=20)
            procs += [subprocess.Popen(in_ns(emu.host(s).pid, [
                "mptcpize", "run", "iperf3", "-c", topo.ip(d), "-p", str(p), "-t", "12"]),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for s, d, p in pairs]
            designed = {(s, p): set(topo.designed_subflows(s, d)) for s, d, p in pairs}
            deadline = time.monotonic() + 10
            while True:     # bounded poll: the joins take about a second on a quiet host
                socks = emu.sockets(["r0s0", "r0s1"])
                up = {(s, p): {(x["src_ip"], x["dst_ip"])
                               for x in data_connection(diag_subflows(socks[s], p))}
                      for s, _, p in pairs}
                if up == designed or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            for s, d, p in pairs:
                assert up[(s, p)] == designed[(s, p)], (s, d, sorted(up[(s, p)]))
        finally:
            for proc in procs:
                proc.kill()
                proc.wait(timeout=10)
