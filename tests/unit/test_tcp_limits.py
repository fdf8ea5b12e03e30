"""What limited a TCP flow, from its tcp_info samples (analysis.fidelity.limit_shares), and
the run-level judgement (limits_note): flows held at two packets in flight by their own
sender (TCP Small Queues counting the fabric) make a run suspect; congestion-limited flows,
and flows at their own link's rate, do not; --wmem, the send-buffer knob."""
import pytest

from analysis.fidelity import LIMIT_CWND_SHARE, LIMIT_LINK_SHARE, limit_shares, limits_note, report


def validate(values: dict[str, object]) -> None:
    """``values`` checked as a permutation run's parameters are (Params.check), the others
    its defaults; the bpf dataplane unless given (the door resolves 'auto' first)."""
    from experiments.permutation.experiment import PermutationParams
    PermutationParams(**{"dataplane": "bpf", **values}).check()


def samples(n: int, cwnd: int, in_flight: int, rwnd_us_per_s: int = 0, t0: float = 100.0,
            wmem: int = 4560) -> list[dict]:
    return [{"time": t0 + 0.5 * i, "snd_cwnd": cwnd, "in_flight": in_flight,
             "busy_time": 500_000 * i, "rwnd_limited": rwnd_us_per_s * i // 2,
             "sndbuf_limited": 0, "wmem_alloc": wmem, "bytes_acked": 1 + 625_000 * i}
            for i in range(n)]


def test_a_flow_with_its_window_full_is_cwnd_limited():
    got = limit_shares(samples(10, 40, 40), 0, 1e9)
    assert got["samples"] == 10 and got["cwnd_limited"] == 1.0
    assert got["rwnd_limited"] == 0.0 and got["cwnd_median"] == 40


def test_one_short_of_the_window_still_counts_two_packets_of_twenty_do_not():
    assert limit_shares(samples(6, 20, 19), 0, 1e9)["cwnd_limited"] == 1.0
    got = limit_shares(samples(6, 20, 2), 0, 1e9)
    assert got["cwnd_limited"] == 0.0 and got["in_flight_median"] == 2


def test_rwnd_share_is_the_chrono_counter_over_the_sampled_time():
    # 250 ms of every second limited by the receive window
    got = limit_shares(samples(9, 20, 5, rwnd_us_per_s=250_000), 0, 1e9)
    assert got["rwnd_limited"] == 0.25


def test_acked_goodput_is_over_the_samples_inside_the_window_in_absolute_time():
    # 625,000 bytes per 0.5 s sample = 10 Mb/s; samples at 100.0 .. 104.5 s
    assert limit_shares(samples(10, 40, 40), 99.9, 1e9)["acked_mbps"] == 10.0
    # only 102.0 .. 103.0 s inside: 1,250,000 bytes in 1 s
    assert limit_shares(samples(10, 40, 40), 101.9, 103.1)["acked_mbps"] == 10.0
    # one sample inside: no span, no rate
    assert limit_shares(samples(10, 40, 40), 101.9, 102.1)["acked_mbps"] is None
    # a socket born at 100.0 s into a window that opened at 96.0 s: 4.5 s of 10 Mb/s over
    # the 8.5 s since the window opened
    got = limit_shares(samples(10, 40, 40), 96.0, 120.0)["acked_mbps"]
    assert abs(got - 10.0 * 4.5 / 8.5) < 0.01, got


def test_only_samples_inside_the_window_count():
    rows = samples(4, 20, 20, t0=100) + samples(4, 20, 2, t0=110)
    assert limit_shares(rows, 109, 200)["cwnd_limited"] == 0.0
    assert limit_shares(rows, 0, 50)["samples"] == 0


def flow(cwnd_limited: float, link_share: float, rwnd: float = 0.0, n: int = 20) -> dict:
    return {"samples": n, "cwnd_limited": cwnd_limited, "rwnd_limited": rwnd,
            "sndbuf_limited": 0.0, "link_share": link_share, "in_flight_median": 2,
            "cwnd_median": 24}


def test_flows_held_back_by_their_sender_make_the_run_suspect():
    note = limits_note([flow(0.0, 0.3)] * 12 + [flow(0.0, 0.95)] * 4)
    assert note is not None and "12 of 12" in note and "sender's own stack" in note


def test_congestion_limited_flows_and_flows_at_their_link_rate_do_not():
    assert limits_note([flow(1.0, 0.3)] * 12) is None
    # at its own link's rate a sender may be held back by its NIC, as a real host is
    assert limits_note([flow(0.0, LIMIT_LINK_SHARE + 0.1)] * 12) is None
    # half or fewer held back: not "mostly"
    assert limits_note([flow(0.0, 0.3)] * 6 + [flow(1.0, 0.3)] * 6) is None
    # too few samples say nothing
    assert limits_note([flow(0.0, 0.3, n=3)] * 12) is None
    # two held-back flows among 54 that run at their link's rate: not "mostly" (plts, RR)
    assert limits_note([flow(0.0, 0.7)] * 2 + [flow(0.0, 0.95)] * 52) is None
    assert limits_note([flow(0.0, 0.7)] * 14 + [flow(0.0, 0.95)] * 40) is not None


def test_the_note_names_the_receive_window_when_that_held_them():
    note = limits_note([flow(LIMIT_CWND_SHARE - 0.1, 0.5, rwnd=0.8)] * 4)
    assert note is not None and "receive window" in note


def test_the_fidelity_report_flags_the_run_with_the_note():
    fid = report({"a": 5.0}, {"a": 5.0}, 10.0,
                 {"tcp_limits": {"note": "held back", "cwnd_limited_median": 0.0}})
    assert fid["suspect"] and "held back" in fid["reasons"]
    assert report({"a": 5.0}, {"a": 5.0}, 10.0, {"tcp_limits": {"note": None}})["suspect"] \
        is False


def test_a_stalled_flow_is_named_a_starved_one_is_the_result():
    from harness.traffic import STALL_S, stall_note
    # SIGSTOP of a client 7 s into a 20-s run: 10 s of silence, nothing in flight
    note = stall_note([{"flow": "a -> b:5201", "silent_s": 10.0, "cwnd_limited": 0.0},
                       {"flow": "c -> d:5202", "silent_s": 0.0, "cwnd_limited": 1.0}])
    assert note is not None and "a -> b:5201" in note and "10 s" in note
    # behind a full tail-drop queue in RTO backoff (the Outcast): cwnd-limited, not a fault
    assert stall_note([{"flow": "lone", "silent_s": 12.0, "cwnd_limited": 0.95}]) is None
    assert stall_note([{"flow": "x", "silent_s": STALL_S - 0.5, "cwnd_limited": 0.0}]) is None
    assert stall_note([{"flow": "never sampled", "silent_s": 4.0, "cwnd_limited": None}])


def _msk(times_sent_acked: list[tuple[float, int, int]]) -> list[dict[str, object]]:
    return [{"time": t, "host": "a", "saddr": "10.0.0.1", "sport": 40000,
             "daddr": "10.0.0.2", "dport": 5201, "bytes_sent": sent, "bytes_acked": acked}
            for t, sent, acked in times_sent_acked]


def test_data_level_stands_tells_a_held_connection_from_an_idle_one():
    from analysis.fidelity import data_level_stands
    # moving, then 3 s with 50 kB sent and unacked (a subflow's hole), then moving again
    rows = _msk([(0.0, 0, 0), (0.5, 100, 50), (1.0, 200, 150), (2.0, 250, 150),
                 (4.0, 260, 150), (4.5, 400, 300)])
    assert data_level_stands(rows, 0.0, 10.0) == (3.0, 0.0)
    # a stopped end: everything sent is acked and nothing more goes out
    stopped = _msk([(0.0, 0, 0), (0.5, 100, 100), (1.0, 100, 100), (4.0, 100, 100)])
    assert data_level_stands(stopped, 0.0, 10.0) == (0.0, 3.5)
    # only samples inside the window count
    assert data_level_stands(rows, 1.5, 4.2) == (2.0, 0.0)
    assert data_level_stands(rows, 20.0, 30.0) == (0.0, 0.0)


def test_an_mptcp_flow_held_by_its_data_level_is_recorded_not_flagged():
    from harness.traffic import STALL_S, Flow, connections, held_note, sender_stands, stall_note
    held = {"flow": "a -> b:5201", "silent_s": 5.0, "cwnd_limited": 0.1,
            "held_s": 4.5, "idle_s": 0.0}
    assert stall_note([held]) is None
    note = held_note([held])
    assert note is not None and "a -> b:5201" in note and "4.5 s" in note
    # lia reference rerun f1d34d, run 0: silent 2.0 s, its sender stood 1.54 s between
    # half-second samples with 0.86-1.2 MB sent and unacked, then 1.3 MB arrived at once
    assert stall_note([{**held, "silent_s": 2.0, "held_s": 1.54}]) is None
    # a stopped end (idle), a hold under half the silence, no samples: each still flags
    for stands in ({"held_s": 0.0, "idle_s": 5.0}, {"held_s": STALL_S, "idle_s": 0.0},
                   {"held_s": 3.0, "idle_s": 0.0, "silent_s": 11.5},
                   {"held_s": 4.5, "idle_s": STALL_S}, {}):
        f = {**held, "held_s": None, "idle_s": None, **stands}
        assert stall_note([f]) is not None and held_note([f]) is None, stands
    # the sender's busiest connection to the flow's port, over the flow's window
    rows = _msk([(100.0 + t, s, a) for t, s, a in
                 [(0.0, 0, 0), (4.0, 900, 500), (8.0, 910, 500), (16.0, 2000, 2000)]])
    rows += [{**r, "sport": 40001, "bytes_acked": 0, "bytes_sent": 0} for r in rows]
    rows += [{**r, "host": "b"} for r in rows]   # the receiver's own connection: not it
    f = Flow("a", "b", port=5201, start=100.0)
    assert sender_stands(f, connections(rows), duration=20.0, trim=4.0) == {"held_s": 4.0, "idle_s": 0.0}
    assert sender_stands(Flow("a", "b", port=5202, start=100.0), connections(rows), 20.0,
                         4.0) == {}


def test_every_experiment_judges_a_measurement_by_the_same_reasons():
    from analysis.fidelity import measurement_reasons
    assert measurement_reasons({"cpu_saturated_share": 0.2, "emulator_loss_share": 0.0,
                                "tcp_limits": {"note": None, "stall_note": None}}) == []
    got = measurement_reasons({"cpu_saturated_share": 0.8, "emulator_loss_share": 0.01,
                               "dequeue_gaps": {"full_size": {"within_10pct": 0.5}},
                               "measurement_note": "bwm-ng partial",
                               "tcp_limits": {"note": "held back", "stall_note": "stalled"}})
    assert len(got) == 6 and got[0] == "CPU above 90 % in 80% of samples"


def test_restarted_flows_measured_apart_are_named():
    """A flow started again late (its window past the others') makes the run suspect; one
    started again at its designed moment (trim - 0.5 s) does not; late TCP connections that
    were never restarted (Outcast's starved senders) are not judged."""
    from analysis.fidelity import measurement_reasons
    from harness.traffic import Flow, apart_note

    def flows(restart_at: float, restarted: bool = True) -> list[Flow]:
        out = [Flow(f"h{i}", "r", start=100.0) for i in range(3)]
        out.append(Flow("late", "r", start=100.0 + restart_at, restarts=int(restarted)))
        return out

    # quick mode: 15 s, trim 3 -> a 9 s window; the others' is 103..112
    assert apart_note(flows(2.5), 15.0, 3.0) is None          # 105.5..112 of 103..112: 72 %
    late = apart_note(flows(13.0), 15.0, 3.0)                 # 116..125: nothing shared
    assert late is not None and "as little as 0%" in late and "13.0 s after" in late
    assert measurement_reasons({"apart_note": late}) == [late]
    assert apart_note(flows(5.0), 15.0, 3.0) is not None      # 108..112: 4/9 = 44 % < 50 %
    assert apart_note(flows(13.0, restarted=False), 15.0, 3.0) is None
    assert apart_note(flows(13.0), 6.0, 3.0) is None          # no window to share


def test_a_flow_whose_transfer_began_late_is_named_as_measured_apart():
    """iperf3 counts a flow's window from its own test start: a flow whose first data was
    acked 7 s after its client started (its set-up in RTO backoff, Outcast reference
    ablation, N = 6, repetition 9) was measured on an emptier network; one that began within
    a second was not; a flow never sampled is not judged."""
    from analysis.fidelity import measurement_reasons
    from harness.traffic import Flow, late_note

    def flows(first_ack: float) -> list[Flow]:
        out = [Flow(f"h{i}", "r", start=100.0, first_ack_s=0.5) for i in range(3)]
        out.append(Flow("late", "r", start=100.0, first_ack_s=first_ack))
        return out

    # 12 s, trim 2 -> each flow's window is 102..110 (8 s)
    assert late_note(flows(0.6), 12.0, 2.0) is None
    assert late_note(flows(3.5), 12.0, 2.0) is None           # 105.5..113.5: 4.5/8 = 56 %
    late = late_note(flows(7.0), 12.0, 2.0)                   # 109..117: 1/8 = 12 %
    assert late is not None and "late -> r" in late and "7 s after" in late and "12%" in late
    assert measurement_reasons({"late_note": late}) == [late]
    assert late_note(flows(float("nan")), 12.0, 2.0) is None
    never = flows(7.0)
    never[-1].connected = False
    assert late_note(never, 12.0, 2.0) is None
    # a flow started later than the others (an MPTCP restart, apart_note's case) is judged
    # against its own start: 0.9 s late is not measured apart (CI's quick fairness run
    # flagged such flows before this was so)
    staggered = flows(0.9)
    staggered[-1].start = 104.0
    assert late_note(staggered, 12.0, 2.0) is None


@pytest.mark.parametrize("bad", ["4096,8192", "4096,8192,x", "1024,4096,8192", "8192,4096,16384",
                                 "4096,16384,8192", "4096 16384 65536"])
@pytest.mark.parametrize("name", ["wmem", "rmem"])
def test_wmem_is_three_ordered_byte_counts(bad, name, one_line_error):
    """--wmem and --rmem (the hosts' net.ipv4.tcp_wmem / tcp_rmem, to test whether the send
    or the receive buffer holds flows back): three whole numbers from 4096 up,
    non-decreasing; anything else is one line naming the flag."""
    from harness.params import parse_buffers
    assert parse_buffers(name, "4096,16384,4194304") == (4096, 16384, 4194304)
    assert parse_buffers(name, "4194304,4194304,4194304") == (4194304,) * 3
    with one_line_error(f"--{name} wants MIN,DEFAULT,MAX"):
        parse_buffers(name, bad)


def test_wmem_is_for_the_emulated_hosts_only(one_line_error):
    base = {"bw": 10.0, "queue": 100, "burst": "default", "dataplane": "bpf",
            "wmem": "4096,16384,4194304"}
    validate(base)
    validate({**base, "wmem": "", "backend": "model"})
    with one_line_error("--wmem sets the emulated hosts' send buffers: use it with --backend "
                        "emulated"):
        validate({**base, "backend": "model"})
    with one_line_error("--rmem sets the emulated hosts' receive buffers"):
        validate({**base, "wmem": "", "rmem": "4096,87380,6291456", "backend": "model"})


def test_an_mptcp_flows_connection_rates_come_from_its_busiest_connection_at_each_end():
    """mptcp_samples rows: at the sender the connection to the flow's port (iperf3's control
    connection moves next to nothing), at the receiver the one on it; each end over the
    flow's window in absolute time, whatever else the hosts carry."""
    from harness.traffic import Flow, connection_rates, connections

    def conn(host: str, sport: int, dport: int, per_sample: int) -> list[dict]:
        return [{"time": 100.0 + 0.5 * i, "host": host, "saddr": "10.0.0.1", "sport": sport,
                 "daddr": "10.0.0.2", "dport": dport, "bytes_acked": per_sample * i,
                 "bytes_received": per_sample * i} for i in range(21)]

    f = Flow("h1", "h2", port=5203, start=98.0)
    rows = (conn("h1", 40000, 5203, 600) +          # control connection
            conn("h1", 40001, 5203, 312_500) +      # data: 5 Mb/s acked
            conn("h1", 40002, 5204, 625_000) +      # another flow's
            conn("h2", 5203, 40001, 250_000) +      # data, received in order: 4 Mb/s
            conn("h2", 5203, 40000, 600))
    connection_rates([f], connections(rows), duration=14.0, trim=3.0)   # window 101 .. 109 s
    assert f.msk_acked_mbps == 5.0 and f.msk_received_mbps == 4.0
    lone = Flow("h3", "h4", port=5299, start=98.0)
    connection_rates([lone], connections(rows), duration=14.0, trim=3.0)
    assert lone.msk_acked_mbps != lone.msk_acked_mbps    # nothing sampled: NaN


def test_idle_cpus_is_halt_or_spin_and_for_the_emulated_hosts_only(one_line_error):
    from emulator.emulation import Emulation
    validate({"idle_cpus": "spin"})
    validate({"idle_cpus": "halt", "backend": "model"})
    with one_line_error("--idle-cpus must be one of auto, halt, spin, got 'nap'"):
        validate({"idle_cpus": "nap"})
    with one_line_error("--idle-cpus spin keeps the emulation's CPUs awake: use it with "
                        "--backend emulated"):
        validate({"idle_cpus": "spin", "backend": "sim"})
    with one_line_error("--idle-cpus must be one of auto, halt, spin"):
        Emulation(None, None, None, None, "t", idle_cpus="nap")   # type: ignore[arg-type]


def test_idle_cpus_auto_spins_an_emulation_only_where_the_kernel_has_no_cpuidle_driver(
        tmp_path):
    """'auto' (the default) is resolved once: spin for an emulation on a machine whose
    kernel has no cpuidle driver (its idle vCPUs halt and wake late), halt where a driver
    exists or for a model or simulation run; explicit modes are kept."""
    from emulator.emulation import cpuidle_driver, resolve_idle_cpus
    from harness.params import NetworkParams
    none, haltpoll, absent = (tmp_path / "none", tmp_path / "haltpoll", tmp_path / "absent")
    none.write_text("none\n")
    haltpoll.write_text("haltpoll\n")
    assert cpuidle_driver(absent) == "none" and cpuidle_driver(haltpoll) == "haltpoll"
    assert resolve_idle_cpus("auto", "emulated", none) == "spin"
    assert resolve_idle_cpus("auto", "emulated", absent) == "spin"
    assert resolve_idle_cpus("auto", "emulated", haltpoll) == "halt"
    for backend in ("model", "sim"):
        assert resolve_idle_cpus("auto", backend, none) == "halt"
    assert resolve_idle_cpus("halt", "emulated", none) == "halt"
    assert resolve_idle_cpus("spin", "emulated", haltpoll) == "spin"
    assert NetworkParams().idle_cpus == "auto"


def test_softirq_batch_is_0_or_a_packet_count(one_line_error):
    from emulator.emulation import SOFTIRQ_BATCH
    from harness.params import NetworkParams
    assert NetworkParams().softirq_batch == SOFTIRQ_BATCH == 16   # the flag's default
    validate({"softirq_batch": 0})
    validate({"softirq_batch": 16, "backend": "model"})
    for bad in (-1, 10001):
        with one_line_error(r"--softirq-batch must be 0 \(the kernel's own\) or 1..10000 "
                            f"packets, got {bad}"):
            validate({"softirq_batch": bad})


def test_rcvlowat_is_0_or_bytes_and_for_emulated_tcp_flows_only(one_line_error):
    """--rcvlowat (emulator/rcvlowat.py): 0 is off (the default), 1..1 MiB a mark; a model
    or sim run has no receivers to wake, and an MPTCP connection's reader is woken by its
    own socket, so both are one line naming the flag."""
    from harness.params import FlowParams
    assert FlowParams().rcvlowat == 0
    validate({"rcvlowat": 0, "backend": "model", "transport": "mptcp"})
    validate({"rcvlowat": 16384, "transport": "tcp"})
    for bad in (-1, (1 << 20) + 1):
        with one_line_error(rf"--rcvlowat must be 0 \(off\) or 1..1048576 bytes, got {bad}"):
            validate({"rcvlowat": bad})
    with one_line_error("--rcvlowat changes when the emulated hosts' receivers wake: use it "
                        "with --backend emulated"):
        validate({"rcvlowat": 16384, "backend": "model"})
    with one_line_error("--rcvlowat applies to TCP flows"):
        validate({"rcvlowat": 16384, "transport": "tcp,mptcp"})


def test_rcvlowat_watches_the_ports_iperf3_listens_on():
    """The session's port range starts where the iperf3 runner's servers do."""
    from emulator.rcvlowat import CONFIG, cgroup2_root
    from harness.session import RECEIVER_PORTS
    from harness.traffic import BASE_PORT
    assert RECEIVER_PORTS[0] == BASE_PORT and RECEIVER_PORTS[1] - BASE_PORT >= 1024
    assert CONFIG.size == 24                        # struct config in rcvlowat.bpf.c
    mounts = ("tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
              "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
              "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n")
    assert cgroup2_root(mounts) == "/sys/fs/cgroup/unified"
    assert cgroup2_root("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n") == "/sys/fs/cgroup"
    assert cgroup2_root(mounts.splitlines()[1]) is None


def _flow_rows(t0: float, n: int) -> list[dict]:
    return [{**r, "host": "h1", "saddr": "10.0.0.1", "sport": 40000, "dport": 5201}
            for r in samples(n, 10, 10, t0=t0)]


@pytest.mark.parametrize("first_sample,acked", [(100.0, "positive"), (200.0, 0.0)])
def test_a_sender_whose_connection_came_after_its_window_acked_nothing_in_it(first_sample,
                                                                             acked):
    """An Outcast sender whose SYN sat in RTO backoff until after its window is measured at
    0 Mb/s there (not NaN: that left the hashed fat-tree claim "not measured", and not
    iperf3's own later window on an empty link: harness.bottleneck.measured_mbps)."""
    from types import SimpleNamespace

    from harness.bottleneck import measured_mbps
    from harness.traffic import Flow, flow_limits
    topo = SimpleNamespace(access_switch=lambda h: "s1")
    emu = SimpleNamespace(rates={("h1", "s1"): 10.0}, topo=topo)
    f = Flow("h1", "h2")
    f.port, f.start, f.iperf_mbps = 5201, 100.0, 9.56   # window: 103 .. 109
    flow_limits(emu, [f], "tcp", _flow_rows(first_sample, 10), 12.0, 3.0)  # type: ignore[arg-type]
    if acked == "positive":
        assert f.acked_mbps > 0 and measured_mbps(f) == f.acked_mbps
    else:
        assert f.acked_mbps == 0.0 and measured_mbps(f) == 0.0


def test_a_sender_that_never_connected_measures_zero_not_nan():
    from harness.bottleneck import measured_mbps
    from harness.traffic import Flow
    f = Flow("h1", "h2")
    f.connected, f.iperf_mbps = False, 0.0
    assert measured_mbps(f) == 0.0
