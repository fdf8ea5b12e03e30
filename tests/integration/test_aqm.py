"""The switch's AQM and the links' HTB burst on real emulated networks (root only).

One TCP Reno flow 0_0_2 -> 1_0_2 across the k=2 fat tree at 10 Mb/s with 100-packet
queues.  The sender's own link is raised to 100 Mb/s for the test, so the first switch
port on the path (0_0_1-eth2) is the bottleneck: with every link at the same rate the
queue would build in the sender's own qdisc, which no switch AQM sees.  That port's queue
length is read with tc every 50 ms while the flow runs.

The tests check what the port counts (marks, early and tail drops, each at its port and
apart) and whether the queue filled, with 4-5 s flows.  Where the queue settles (near K for
ECN, inside RED's thresholds), the copy of the queue length against the kernel's and the
queue a droptail DCTCP run holds are measurements of this host: bench/bench_aqm.py
``--suite tests`` runs the same flows for the old 10 s and judges them with the old criteria:

    flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_aqm.py --suite tests --repeat 5
"""
from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import routing
import topos
from emulator.emulation import Emulation
from emulator.netns import root_qlen
from emulator.proc import RunError, in_ns
from emulator.shaping import LinkSpec, queue_lengths
from harness.sampling import Sampler
from harness.traffic import Flow, run_iperf

pytestmark = pytest.mark.integration
SRC, DST, BOTTLENECK = "0_0_2", "1_0_2", "0_0_1-eth2"
REPO = Path(__file__).resolve().parents[2]



def pairs_sampler(emu: Emulation, nl: socket.socket) -> Sampler:
    """Every 10 ms, the bottleneck's queue length as the switch program's copy has it, the
    kernel's own count (read over the route netlink socket ``nl``, ~0.1 ms), and the copy
    again (bench/bench_aqm.py too)."""
    ifindex = socket.if_nametoindex(BOTTLENECK)

    def copy() -> int:
        return emu.dataplane.runtime.read_aqm()[ifindex].qlen

    def paired() -> tuple[int, int, int]:
        return copy(), root_qlen(nl, ifindex) or 0, copy()
    return Sampler("pairs", paired, interval=0.01)

def one_flow(tmp_path: Path, aqm: str, ecn: bool, seconds: float = 5, trim: float = 1,
             burst: str = "default", cc: str = "reno", pairs_too: bool = False
             ) -> tuple[dict[str, Any], list[int], Any]:
    """Run the flow; returns run_iperf's facts, the bottleneck's queue samples and the
    dataplane's AQM state read after the flow (None for droptail).  ``pairs_too``: also
    sample the dataplane's copy of the queue length around the kernel's own count
    (``meas["pairs"]``, every 10 ms; bench/bench_aqm.py)."""
    topo = topos.build("fattree,k=2")
    with Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(10, 100, burst, aqm),
                   tmp_path, f"t-aqm-{aqm.split(',')[0]}", cc=cc,
                   dataplane="bpf") as emu:
        for h in (SRC, DST):
            emu.host_cmd(emu.host(h), ["sysctl", "-qw", f"net.ipv4.tcp_ecn={int(ecn)}"])
        src = emu.host(SRC)
        subprocess.run(in_ns(src.pid, ["tc", "class", "change", "dev", emu.host_intf[SRC],
                                       "parent", "1:", "classid", "1:1", "htb", "rate",
                                       "100mbit", "ceil", "100mbit"]), check=True, timeout=10)
        sampler = Sampler("queue", lambda: queue_lengths([BOTTLENECK])[BOTTLENECK],
                          interval=0.05)
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        pairs = pairs_sampler(emu, nl) if aqm != "droptail" and pairs_too else None
        sampler.start()
        if pairs is not None:
            pairs.start()
        try:
            meas = run_iperf(emu, [Flow(SRC, DST)], "tcp", duration=seconds, trim=trim,
                             out=tmp_path / "tcp")
        finally:
            sampler.stop()
            if pairs is not None:
                pairs.stop()
            nl.close()
        meas["pairs"] = [v for _, v in pairs.samples] if pairs is not None else []
        state = emu.dataplane.aqm_state() if aqm != "droptail" else None
        facts = emu.dataplane.facts()
    meas["facts"] = facts
    meas["cc_stats"] = (emu.facts.cc_bpf or {}).get("stats", {})     # read at teardown
    return meas, [v for _, v in sampler.samples], state


def _busy(samples: list[int]) -> list[int]:
    """Samples taken while the flow kept the queue non-empty (not its start or end)."""
    return [q for q in samples if q > 0]


#: the queue is sampled every 50 ms; over a 5-s flow (4 s for the droptail-like ones) the
#: queue is busy nearly throughout, so about 80-100 samples are busy: 10 is "it was seen"
SEEN = 10


def test_ecn_port_marks_ect_packets_and_keeps_them_from_the_tail(tmp_path):
    """Reno with ECN through an ecn port (K = 20): marks at that port only, no early drop,
    no tail drop, no loss of the emulator's.  Reno halves its window at the first mark of a
    round trip, so the queue oscillates around K (median 19, p95 24, max < 60 measured)
    and never comes near its 100 packets: a tail drop here means ECT packets were not
    marked.  Where the queue settles (median 10-30, max < 60) and the dataplane's copy of
    the queue length against the kernel's (98 % within the two reads +-1): bench_aqm.py."""
    meas, samples, state = one_flow(tmp_path, "ecn,k=20", ecn=True)
    busy = _busy(samples)
    print(f"queue median {statistics.median(busy) if busy else None}, max "
          f"{max(busy, default=None)}, marks {meas['aqm_marks']}")
    assert len(busy) > SEEN, samples
    assert meas["aqm_marks"] > 0 and meas["aqm_drops"] == 0, meas
    assert meas["queue_drops"] == 0, (busy, meas["queue_drops"])
    assert meas["emulator_drops"] == 0, meas
    port = state[BOTTLENECK]
    assert port["marks"] == meas["aqm_marks"]          # every mark happened at this port
    # the tracepoints' copy of the queue length: fed, and empty once the flow is over
    assert port["events"] > 0 and port["qlen"] == 0
    assert meas["facts"]["aqm"] == "ecn,k=20"


def test_dctcp_through_an_ecn_port_is_marked_droptail_fills_the_queue(tmp_path):
    """DCTCP (--cc dctcp, BPF) through an ecn port with K = 20: marked, the kernel's
    ssthresh fault counter read and reported; the same flow through droptail tail-drops
    and is never marked.  The hosts' tcp_ecn stays 0: DCTCP negotiates ECN by its own
    flag.  Where the queue settles (median 10-30, p95 <= 30 and no tail drop in a run the
    fault missed; droptail median >= 80) is measured by bench_aqm.py: 20 s, five runs,
    2026-11-28: median 19-20 in every run, p95 21 in the one the fault missed (21-28 and
    maxima 22-81 in the four it hit), 2,534-3,119 marks; droptail median 100, 250-283 tail
    drops."""
    runs = {}
    for aqm in ("ecn,k=20", "droptail"):
        out = tmp_path / aqm.split(",")[0]
        out.mkdir()
        runs[aqm] = one_flow(out, aqm, ecn=False, cc="dctcp", seconds=4)
    meas, samples, _ = runs["ecn,k=20"]
    assert len(_busy(samples)) > SEEN, samples
    assert meas["aqm_marks"] > 0 and meas["aqm_drops"] == 0, meas
    assert meas["facts"]["aqm"] == "ecn,k=20"
    # the kernel's ssthresh fault (docs/transports.md) is counted by the control and read
    # at teardown; the run reports it rather than hoping it stayed away
    assert "repaired" in meas["cc_stats"], meas["cc_stats"]
    print(f"kernel ssthresh fault repaired {meas['cc_stats']['repaired']} time(s); "
          f"{meas['queue_drops']} tail drop(s) behind the ecn port")
    meas, samples, _ = runs["droptail"]
    assert meas["queue_drops"] > 0 and meas["aqm_marks"] == 0, meas


def test_ecn_port_leaves_non_ect_packets_to_the_tail_drop(tmp_path):
    """Without ECN the port neither marks nor drops early: the queue fills to its 100
    packets and tail-drops.  (Reno's sawtooth spends several round trips of ~0.12 s at 95
    or more each cycle, against a sample every 50 ms.)"""
    meas, samples, _ = one_flow(tmp_path, "ecn,k=20", ecn=False, seconds=4)
    assert meas["aqm_marks"] == 0 and meas["aqm_drops"] == 0, meas
    assert meas["queue_drops"] > 0 and max(samples) >= 95, (meas, max(samples))


def test_red_port_drops_non_ect_early_and_counts_it_apart(tmp_path):
    """RED (min 10, max 30) drops early, so the 100-packet pfifo never tail-drops, and its
    drops are counted apart from the emulator's.  Where the queue settles (median 5-40,
    max < 80): bench_aqm.py."""
    meas, samples, state = one_flow(tmp_path, "red,min=10,max=30,p=0.1,w=4", ecn=False)
    busy = _busy(samples)
    print(f"queue median {statistics.median(busy) if busy else None}, max "
          f"{max(busy, default=None)}, early drops {meas['aqm_drops']}")
    assert len(busy) > SEEN, samples
    assert meas["aqm_drops"] > 0 and meas["aqm_marks"] == 0, meas
    # early drops instead of tail drops
    assert meas["queue_drops"] == 0, meas
    # the conservation check subtracts the AQM's drops: they are not the emulator's
    assert meas["emulator_drops"] == 0 and meas["switch_lost_packets"] == meas["aqm_drops"]
    assert state[BOTTLENECK]["drops"] == meas["aqm_drops"]


def test_droptail_is_unchanged_no_aqm_loaded(tmp_path):
    meas, samples, _ = one_flow(tmp_path, "droptail", ecn=True, seconds=4)
    assert meas["aqm_marks"] == 0 and meas["aqm_drops"] == 0
    # the queue fills to its 100 packets and tail-drops, ECN-capable packets or not
    assert meas["queue_drops"] > 0 and max(samples) >= 95, (meas, max(samples))
    assert meas["facts"]["aqm"] == "droptail"


def test_droptail_loads_nothing_and_flags_no_port(tmp_path):
    topo = topos.build("fattree,k=2")
    with Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(10, 100), tmp_path,
                   "t-aqm-none", dataplane="bpf") as emu:
        dp = emu.dataplane
        assert dp.qlen is None and dp.runtime.read_aqm() == {}
        assert all(e.aqm == 0 for e in dp.runtime.read_egress().values())
        assert not (dp.runtime.pin_dir / "qlen").exists()
    with Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(10, 100, aqm="red"),
                   tmp_path, "t-aqm-red", dataplane="bpf") as emu:
        dp = emu.dataplane
        flagged = {e.ifindex for e in dp.runtime.read_egress().values() if e.aqm}
        assert len(flagged) == len(emu.switch_intfs()) == len(dp.runtime.read_aqm())
        assert sorted(p.name for p in (dp.runtime.pin_dir / "qlen").iterdir()) == \
            ["on_dequeue", "on_enqueue"]


@pytest.mark.ovs
def test_ovs_refuses_aqm_before_building(tmp_path):
    topo = topos.build("fattree,k=2")
    with pytest.raises(ValueError, match="needs aqm, which the ovs dataplane"):
        Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(10, 100, aqm="ecn"),
                  tmp_path, "t-aqm-ovs", dataplane="ovs")


def test_htb_class_reads_back_with_the_asked_burst(tmp_path):
    """Both buckets of every link's class hold the asked burst (read back by rtnetlink), and
    a class changed to another burst is refused by name."""
    topo = topos.build("fattree,k=2")
    with Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(10, 100, "10p"),
                   tmp_path, "t-burst") as emu:
        got = emu.facts.qdisc
        assert got["burst"] == "10p"
        lo, hi = got["burst_bytes_read_back"]
        assert abs(lo - 15140) <= 2 and abs(hi - 15140) <= 2, got
        intf = emu.switch_intfs()[0]
        subprocess.run(["tc", "class", "change", "dev", intf, "parent", "1:", "classid",
                        "1:1", "htb", "rate", "10mbit", "ceil", "10mbit", "burst", "3000",
                        "cburst", "3000"], check=True, timeout=10)
        with pytest.raises(RunError, match=f"{intf}: HTB burst/cburst 300[0-9]/300[0-9] "
                                           "bytes, not 15140"):
            emu.verify_qdiscs()
    with Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(10, 100), tmp_path,
                   "t-burst-default") as emu:
        lo, hi = emu.facts.qdisc["burst_bytes_read_back"]
        # tc's own default (read back as 1600 bytes at 10 Mb/s on this machine)
        assert emu.facts.qdisc["burst"] == "default" and 1600 <= lo <= hi <= 4000


def _qlen_programs() -> set[int]:
    """Ids of the loaded qlen.bpf.c programs: on_enqueue, and the on_dequeue that shares
    its map (the dequeue-gap probe has an on_dequeue of its own)."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    progs = json.loads(out or "[]")
    maps = {m for p in progs if p.get("name") == "on_enqueue" for m in p.get("map_ids", [])}
    return {p["id"] for p in progs if p.get("name") in ("on_enqueue", "on_dequeue")
            and maps & set(p.get("map_ids", []))}


def test_a_run_with_red_records_it_and_sigkill_then_clean_leaves_nothing(tmp_path):
    """The whole path from the command line: --aqm and --burst recorded in config.json; a
    run killed with SIGKILL loses its tracepoint attachments with its process, and
    `dcrepro clean` removes the pinned programs with the run's bpffs."""
    before = _qlen_programs()   # (a previous test's may still await the kernel's free)
    p = subprocess.Popen([sys.executable, "-m", "dcrepro.cli", "run", "permutation", "--topo",
                          "fattree,k=2", "--runs", "1", "--duration", "30", "--trim", "1",
                          "--transport", "tcp", "--dataplane", "bpf", "--aqm", "red",
                          "--burst", "15k", "--out", str(tmp_path)], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    deadline = time.monotonic() + 90
    while not list(tmp_path.glob("permutation/*/run00/tcp/iperf-client-*.json")):
        assert p.poll() is None and time.monotonic() < deadline, "run did not start"
        time.sleep(0.2)
    config = json.loads(next(tmp_path.glob("permutation/*/config.json")).read_text())
    assert config["params"]["aqm"] == "red" and config["params"]["burst"] == "15k", config
    ours = _qlen_programs() - before
    assert len(ours) == 2, ours
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    clean = subprocess.run([sys.executable, "-m", "dcrepro.cli", "clean"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0 and "removed bpffs" in clean.stdout, clean
    # the kernel frees an unreferenced tracing program after an RCU grace period
    deadline = time.monotonic() + 20
    while ours & _qlen_programs():
        assert time.monotonic() < deadline, f"programs {ours & _qlen_programs()} still loaded"
        time.sleep(0.5)
