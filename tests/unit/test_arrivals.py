"""Bottleneck arrivals: the tracer's record and ring layouts, the counter check, the per-port
statistics (blackouts, inter-arrival regularity), the TCP MIB counters and the figure."""
from __future__ import annotations

import json
import socket
import struct

import pytest

from analysis.arrivals import (
    drop_runs,
    flat,
    gap_stats,
    idle_share,
    in_idle,
    parse_run_lengths,
    port_stats,
    resend_delays,
    run_histogram,
    service_time_s,
)
from emulator.qarrive import (
    ARRIVAL,
    COUNT_NAMES,
    COUNTS,
    FIELDS,
    RELEASED,
    SOURCE,
    check_counts,
    unpack_record,
    walk_ring,
)
from harness.arrivals import arrival_rows, sender_counts
from harness.tcpevents import delta, parse_mib


def test_service_time_of_a_full_frame():
    assert service_time_s(10) == pytest.approx(1.2112e-3)
    assert service_time_s(100) == pytest.approx(121.12e-6)
    with pytest.raises(ValueError, match="positive"):
        service_time_s(0)


def test_drop_runs_are_maximal_runs_of_drops():
    assert drop_runs([]) == []
    assert drop_runs([False, False]) == []
    assert drop_runs([True]) == [1]
    assert drop_runs([True, True, False, True, False, False, True, True, True]) == [2, 1, 3]
    assert run_histogram([2, 1, 3, 1]) == {1: 2, 2: 1, 3: 1}


def test_gap_stats_of_a_regular_and_a_bursty_port():
    s = 0.001
    regular = gap_stats([i * s for i in range(101)], s)
    assert regular["gaps"] == 100
    assert regular["gap_p50"] == pytest.approx(1.0)
    assert regular["gap_within10"] == 1.0 and regular["gap_below_half"] == 0.0
    # pairs back to back, then two service times of silence: half the gaps are bursts
    t = [k * 2 * s + d for k in range(50) for d in (0.0, 0.0001)]
    bursty = gap_stats(t, s)
    assert bursty["gap_below_half"] == pytest.approx(0.5, abs=0.02)
    assert bursty["gap_p90"] == pytest.approx(1.9, abs=0.01)
    assert gap_stats([1.0], s)["gap_p50"] is None


def test_resend_delay_pairs_a_drop_with_the_same_segment_accepted_later():
    rows = [{"t": 0.0, "sender": "a1", "sport": 1, "seq": 100, "payload": 1448, "dropped": 1},
            {"t": 0.001, "sender": "a2", "sport": 1, "seq": 100, "payload": 1448,
             "dropped": 0},
            {"t": 0.0015, "sender": "a1", "sport": 1, "seq": 100, "payload": 1448,
             "dropped": 1},
            {"t": 0.002, "sender": "a1", "sport": 1, "seq": 100, "payload": 1448,
             "dropped": 0},
            {"t": 0.003, "sender": "a1", "sport": 1, "seq": 200, "payload": 1448,
             "dropped": 1}]
    assert resend_delays(rows) == [pytest.approx(0.002)]   # from the first drop; 200 never
    st = port_stats([{**r, "port": "p"} for r in rows], 0.0005)[0]
    assert st["resent"] == 1 and st["resent_within_2_service"] == 0
    assert st["resent_p50_ms"] == pytest.approx(2.0)


def test_port_stats_blackouts_ignore_the_other_ports_packets():
    # port B loses 3 in a row while port A's packets are accepted between them: one
    # blackout of 3 for B; A's single drop is a run of 1
    seq = [("A", 0), ("B", 1), ("A", 0), ("B", 1), ("A", 0), ("B", 1), ("B", 0), ("A", 1),
           ("A", 0), ("B", 0)]
    rows = [{"t": i * 0.001, "port": p, "dropped": d} for i, (p, d) in enumerate(seq)]
    by = {s["port"]: s for s in port_stats(rows, 0.001)}
    assert by["B"]["drops"] == 3 and by["B"]["blackouts"] == 1
    assert by["B"]["blackout_max"] == 3 and by["B"]["run_lengths"] == {3: 1}
    assert by["B"]["drops_in_runs_ge2"] == 3
    assert by["A"]["run_lengths"] == {1: 1} and by["A"]["drops_in_runs_ge2"] == 0
    assert by["B"]["drop_share"] == 0.75 and by["A"]["drop_rate"] == 0.2
    assert by["A"]["gap_p50"] == pytest.approx(2.0)      # every other slot
    # the window excludes what lies outside it
    assert sum(s["arrivals"] for s in port_stats(rows, 0.001, 0.0025, 1)) == 7
    csv_rows = flat(port_stats(rows, 0.001), flows=6, run=0)
    assert csv_rows[1]["run_lengths"] == "3:1" and csv_rows[1]["flows"] == 6
    assert parse_run_lengths("1:40 2:3") == {1: 40, 2: 3} and parse_run_lengths("") == {}



def test_idle_share_counts_gaps_longer_than_two_service_times():
    # a port at line rate (1 ms apart) for 0-10 ms, silent to 20 ms, again to 30 ms
    t = [i * 0.001 for i in range(11)] + [0.020 + i * 0.001 for i in range(11)]
    assert idle_share(t, 0.001, 0.0, 0.030) == pytest.approx(10 / 30, abs=1e-4)
    # silence before the first packet of the window counts; a silent port is idle throughout
    assert idle_share([0.010, 0.011], 0.001, 0.0, 0.011) == pytest.approx(10 / 11, abs=1e-4)
    assert idle_share([], 0.001, 0.0, 0.5) == 1.0
    # gaps of up to two service times are not idle
    assert idle_share([0.0, 0.002, 0.004], 0.001, 0.0, 0.004) == 0.0
    with pytest.raises(ValueError, match="empty window"):
        idle_share([0.1], 0.001, 0.2, 0.2)


def test_accepted_in_others_idle_names_packets_that_came_while_the_other_port_was_silent():
    # the busy port B sends every ms except 10-20 ms; A's accepted packets at 5 and 15 ms
    # (inside B's silence) and at 25 ms (B busy); A's drop at 16 ms does not count
    b = [i * 0.001 for i in range(11)] + [0.020 + i * 0.001 for i in range(11)]
    assert list(in_idle([0.005, 0.015, 0.025], b, 0.001, 0.0, 0.030)) == [False, True, False]
    rows = ([{"t": x, "port": "B", "dropped": 0} for x in b]
            + [{"t": x, "port": "A", "dropped": d}
               for x, d in ((0.0055, 0), (0.015, 0), (0.016, 1), (0.0255, 0))])
    by = {s["port"]: s for s in port_stats(rows, 0.001, 0.0, 0.030)}
    assert by["A"]["accepted_in_others_idle"] == pytest.approx(1 / 3, abs=1e-4)
    assert by["B"]["idle_share"] == pytest.approx(10 / 30, abs=1e-4)
    # A is silent most of the window, so B's packets mostly came while A was idle
    assert by["B"]["accepted_in_others_idle"] > 0.5
    # one port alone: nobody else to be idle
    assert port_stats(rows[:3], 0.001, 0.0, 0.030)[0]["accepted_in_others_idle"] is None


def _record(**kw):
    v = {"ts_ns": 5_000_000_000, "saddr": "10.0.0.2", "daddr": "10.0.0.1", "sport": 40000,
         "dport": 5201, "seq": 123456789, "qlen": 19, "q_drops": 7, "q_sent": 1000,
         "iif": 42, "len": 1514, "payload": 1448, "segs": 1, "dropped": 1, "proto": 6,
         "tcp_flags": 0x10, "slot": 0, "reason": 64, **kw}
    raw = [v[f] for f in FIELDS]
    raw[1], raw[2] = socket.inet_aton(raw[1]), socket.inet_aton(raw[2])
    return ARRIVAL.pack(*raw)


def test_record_layout_mirrors_the_program():
    assert ARRIVAL.size == 56
    r = unpack_record(_record())
    assert (r.saddr, r.sport, r.seq, r.dropped, r.qlen, r.payload) == \
        ("10.0.0.2", 40000, 123456789, 1, 19, 1448)
    # the C struct's fields, in order, as the Python side reads them
    src = SOURCE.read_text()
    body = src[src.index("struct arrival {"):src.index("};", src.index("struct arrival {"))]
    names = [line.split()[1].rstrip(";") for line in body.splitlines()[1:] if ";" in line]
    c_to_py = {"ts": "ts_ns", "drops": "q_drops", "sent": "q_sent"}
    assert [c_to_py.get(n, n) for n in names] == list(FIELDS)
    # the counters, and the release records' mark
    body = src[src.index("struct counts {"):src.index("};", src.index("struct counts {"))]
    names = [line.split()[1].rstrip(";") for line in body.splitlines()[1:] if ";" in line]
    assert names == list(COUNT_NAMES) and COUNTS.size == 8 * len(names)
    assert f"#define RELEASED {RELEASED:#x}u" in src


def test_ring_walk_reads_records_skips_discarded_and_stops_at_busy():
    size = 256                        # a power of two, as the kernel requires
    rec = _record()
    hdr = struct.Struct("<II")        # length (bit 31 busy, bit 30 discarded), page offset
    area = bytearray(size)
    for i, flags in enumerate((0, 1 << 30, 0, 1 << 31)):
        area[i * 64:(i + 1) * 64] = hdr.pack(len(rec) | flags, 0) + rec
    got = list(walk_ring(bytes(area) * 2, 0, 256, size - 1))
    assert [p for p, _ in got] == [64, 128, 192]          # stops at the busy fourth
    assert got[1][1] is None                              # discarded
    assert unpack_record(got[2][1]).seq == 123456789      # type: ignore[arg-type]
    # a record across the end of the area reads contiguously: the kernel maps the data
    # area twice in a row
    wrapped = bytearray(size)
    for i, b in enumerate(hdr.pack(len(rec), 0) + rec):
        wrapped[(224 + i) % size] = b
    (nxt, payload), = walk_ring(bytes(wrapped) * 2, 224, 288, size - 1)
    assert nxt == 288 and unpack_record(payload).sport == 40000  # type: ignore[arg-type]


def test_counter_check_names_what_the_tracer_missed():
    before = {"pfifo_drops": 100, "root_sent": 5000, "root_qlen": 0}
    after = {"pfifo_drops": 160, "root_sent": 9000, "root_qlen": 3}
    c = check_counts({"accepted": 4000, "dropped": 58, "ring_full": 0, "not_ipv4": 1},
                     before, after)
    assert c["qdisc_drops"] == 60 and c["drops_missed"] == 2 and not c["drops_agree"]
    assert c["qdisc_accepted"] == 4003 and c["accepted_missed"] == 3
    ok = check_counts({"accepted": 4003, "dropped": 60, "ring_full": 0, "not_ipv4": 0,
                       "traced_segments": 4003}, before, after)
    assert ok["drops_agree"] and ok["accepted_missed"] == 0


def test_arrival_rows_attribute_ports_by_source_address():
    recs = [unpack_record(_record(ts_ns=2_000_000_000 + i, saddr=a, dropped=d))
            for i, (a, d) in enumerate([("10.0.0.3", 0), ("10.0.0.2", 1), ("10.9.9.9", 0)])]
    rows = arrival_rows(recs, mono_to_wall=100.0, t0=101.0,
                        sender_of={"10.0.0.2": "lone", "10.0.0.3": "a1"},
                        port_of={"lone": "s1 port 2 (lone)", "a1": "s1 port 3"})
    assert [r["port"] for r in rows] == ["s1 port 3", "s1 port 2 (lone)", "other"]
    assert rows[0]["t"] == pytest.approx(1.0) and rows[2]["sender"] == "10.9.9.9"
    c = sender_counts(rows, 0, 2)
    assert c["lone"] == {"queue_arrivals": 1, "queue_drops": 1}


def test_mib_counters_per_namespace():
    text = ("Tcp: RtoAlgorithm RetransSegs\nTcp: 1 17\n"
            "TcpExt: TCPTimeouts TCPSynRetrans TCPFastRetrans\nTcpExt: 5 2 30\n")
    mib = parse_mib(text)
    assert mib == {"Tcp.RtoAlgorithm": 1, "Tcp.RetransSegs": 17, "TcpExt.TCPTimeouts": 5,
                   "TcpExt.TCPSynRetrans": 2, "TcpExt.TCPFastRetrans": 30}
    d = delta({"TCPTimeouts": 1, "TCPSynRetrans": 0, "TCPFastRetrans": 3},
              {"TCPTimeouts": 5, "TCPSynRetrans": 2, "TCPFastRetrans": 30})
    assert d["rto_data"] == 2 and d["TCPFastRetrans"] == 27
    with pytest.raises(ValueError, match="out of step"):
        parse_mib("Tcp: A\nUdp: 1\n")


def test_stack_counters_of_a_session():
    """harness/tcpevents.stack_totals / stack_delta: every STACK counter, summed over the
    hosts' namespaces (here this process's own, twice), and the shares."""
    import os

    from harness.tcpevents import STACK, stack_delta, stack_totals
    one = stack_totals([os.getpid()])
    assert set(one) == {name for _, name in STACK}
    assert all(isinstance(v, int) and v >= 0 for v in one.values())
    assert stack_totals([os.getpid()] * 2)["OutSegs"] >= 2 * one["OutSegs"]
    base = dict.fromkeys(one, 0)
    d = stack_delta(base, {**base, "OutSegs": 1000, "InSegs": 800, "RetransSegs": 30,
                           "MPTCPRetrans": 10, "DuplicateData": 8, "TCPRcvQDrop": 3,
                           "TCPOFODrop": 1, "OFOQueue": 80})
    assert (d["retrans_share"], d["mptcp_retrans_share"], d["mptcp_dup_share"],
            d["rcv_drop_share"], d["mptcp_ofo_share"]) == (0.03, 0.01, 0.01, 0.005, 0.1)
    assert stack_delta(base, base)["retrans_share"] is None


def test_arrivals_figure_from_a_run_folder(tmp_path):
    from experiments.outcast.figures import plot_arrivals
    point = tmp_path / "n06-run00"
    point.mkdir()
    lines = ["t,port,sender,sport,dport,seq,payload,len,segs,dropped,qlen,iif"]
    for i in range(400):
        port, sender = ("s1 port 2 (lone)", "lone") if i % 3 == 0 else ("s1 port 3", "a1")
        lines.append(f"{2 + i * 0.0012:.6f},{port},{sender},1,2,{i},1448,1514,1,"
                     f"{int(i % 7 == 0)},{i % 20},5")
    (point / "arrivals.csv").write_text("\n".join(lines) + "\n")
    rows = [dict(zip(lines[0].split(","), ln.split(","))) for ln in lines[1:]]
    stats = flat(port_stats(rows, service_time_s(10), 2, 6))
    (point / "arrivals_summary.csv").write_text(
        ",".join(stats[0]) + "\n" + "\n".join(",".join(f'"{v}"' for v in s.values())
                                              for s in stats) + "\n")
    config = {"experiment": "outcast", "run_id": "test", "params": {
        "bw": 10, "trim": 2, "duration": 8, "interval": 0.5, "cc": "reno", "queue": 20}}
    out = plot_arrivals(tmp_path, config, [("N=6", point), ("N=12", tmp_path / "absent")])
    assert [p.name for p in out] == ["outcast_arrivals.png"]
    assert (tmp_path / "outcast_arrivals.png").stat().st_size > 10_000
    assert "blackout" in json.loads((tmp_path / "figures.json").read_text())[
        "outcast_arrivals.png"]


def test_no_figure_when_nothing_was_traced(tmp_path):
    from experiments.outcast.figures import plot_arrivals
    assert plot_arrivals(tmp_path, {"params": {}}, [("N=2", tmp_path)]) == []


def test_flow_columns_from_the_measurement():
    from harness.bottleneck import flow_events
    meas = {"tcp_events": {"lone": {"rto_data": 3, "TCPSynRetrans": 1, "TCPFastRetrans": 9,
                                    "TCPLossProbes": 2}},
            "arrivals": {"senders": {"lone": {"queue_arrivals": 50, "queue_drops": 4}}}}
    assert flow_events(meas, "lone") == {"rtos": 3, "syn_rtos": 1, "fast_retrans": 9,
                                         "loss_probes": 2, "queue_arrivals": 50,
                                         "queue_drops": 4}
    assert flow_events({}, "a1")["rtos"] == ""
