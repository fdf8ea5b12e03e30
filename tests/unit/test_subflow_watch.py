"""Subflows watched like links (issue #56 part 1): an MPTCP connection that loses subflows
inside its window is a reason to doubt the run, named with when, from mptcp_info's count of
extra subflows (harness.traffic.subflow_drops, subflow_note) on hand-made samples."""
from analysis.fidelity import measurement_reasons
from emulator.sockdiag import SockInfo
from emulator.sysinfo import ss_subflows
from harness.traffic import Flow, SubflowWatch, connections, subflow_drops, subflow_note


def _rows(src: str, port: int, counts: list[int], t0: float = 100.0,
          acked: int = 1000) -> list[dict]:
    """One sender connection's samples every 0.5 s from t0: its extra subflows."""
    return [{"time": t0 + 0.5 * i, "host": src, "saddr": "10.0.0.1", "sport": 40000 + port,
             "daddr": "10.0.0.2", "dport": port, "subflows": n, "bytes_acked": acked * i}
            for i, n in enumerate(counts)]


def _flow(src: str, port: int) -> Flow:
    f = Flow(src, "h9", port)
    f.start = 100.0
    return f


def test_a_connection_that_loses_its_subflows_is_named_with_when():
    # 20-s flow, 3-s trim: its window is 103..117 s; 7 extra subflows until 107 s, then 0
    counts = [7] * 14 + [0] * 26
    by = connections(_rows("h1", 5201, counts) + _rows("h2", 5202, [3] * 40))
    drops = subflow_drops([_flow("h1", 5201), _flow("h2", 5202)], by, 20.0, 3.0)
    assert drops == [{"flow": "h1 -> h9:5201", "subflows_before": 8, "subflows_after": 1,
                      "at_s": 4.0}]
    note = subflow_note(drops)
    assert note == ("1 MPTCP connection(s) lost subflows inside their window, e.g. "
                    "h1 -> h9:5201: 8 -> 1 subflows 4 s into its window; single-path from "
                    "then on")
    assert note in measurement_reasons({"subflow_note": note})


def test_start_up_one_low_sample_and_the_window_edges_are_no_loss():
    # subflows joining during start-up, one sample low while
    # a subflow is replaced, and the connection closing after its window: no drop
    counts = [0, 1, 2, 3] + [3] * 10 + [2] + [3] * 20 + [0] * 5
    by = connections(_rows("h1", 5201, counts))
    assert subflow_drops([_flow("h1", 5201)], by, 20.0, 3.0) == []
    # a flow with no MPTCP samples (TCP, or never connected) is not judged here
    assert subflow_drops([_flow("h3", 5203)], by, 20.0, 3.0) == []
    assert subflow_note([]) is None


def test_the_sender_connection_is_the_busiest_to_the_flows_port():
    """iperf3's control connection (few bytes, no extra subflows) is not the flow."""
    control = _rows("h1", 5201, [0] * 40, acked=1)
    for r in control:
        r["sport"] = 39999
    data = _rows("h1", 5201, [2] * 40)
    assert subflow_drops([_flow("h1", 5201)], connections(control + data), 20.0, 3.0) == []


class _Sampler:
    """What SubflowWatch reads of the MPTCP sampler: its samples so far, (time, dumps)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, dict[str, list[SockInfo]]]] = []

    def add(self, when: float, extra: int) -> None:
        info = {"subflows": extra, "bytes_acked": int(when * 1000), "bytes_received": 0,
                "write_seq": 0, "snd_una": 0}
        self.samples.append((when, {"h1": [SockInfo("10.0.0.1", 45201, "10.0.0.2", 5201, 1,
                                                     info, {})]}))


def test_the_live_watch_names_a_fall_at_its_second_low_sample(caplog):
    """Issue #56: a lost subflow set is named while the traffic runs, not at its end."""
    sampler, f = _Sampler(), _flow("h1", 5201)
    watch = SubflowWatch(sampler, [f], 20.0, 3.0)    # type: ignore[arg-type]
    watch.look()                                     # no sample yet: nothing to do
    for i in range(14):                              # 100.0 .. 106.5 s: 7 extra subflows
        sampler.add(100.0 + 0.5 * i, 7)
    watch.look()
    sampler.add(107.0, 0)                            # one low sample: not yet a loss
    watch.look()
    assert watch.seen == {} and not caplog.records
    sampler.add(107.5, 0)                            # the second: named at this look
    watch.look()
    assert list(watch.seen) == ["h1 -> h9:5201"]
    assert "h1 -> h9:5201 lost subflows: 8 -> 1, 4 s into its window" in caplog.text
    sampler.add(108.0, 0)
    watch.look()                                     # named once
    assert len(caplog.records) == 1


def test_ss_subflows_counts_each_connection_by_its_token():
    # two subflows of one connection (the first and a join) and a lone control connection,
    # as `ss -tniH state established` prints them (lines cut to what matters)
    text = (
        "0 0 10.0.0.1:47292 10.0.1.2:5201\n"
        "\t bbr wscale:9,9 rto:204 tcp-ulp-mptcp flags:mc token:0000(id:0)/3b3ba3d6(id:0) seq:3\n"
        "0 0 10.0.0.1:47302 10.0.1.2:5201\n"
        "\t bbr cwnd:16 tcp-ulp-mptcp flags:mc token:0000(id:0)/964fbb86(id:0) seq:0 sfseq:0\n"
        "0 0 10.0.0.5:40011 10.0.1.6:5201\n"
        "\t bbr cwnd:10 tcp-ulp-mptcp flags:Jjec token:0000(id:2)/964fbb86(id:0) seq:0\n"
        "0 0 10.0.0.1:40000 10.0.1.2:22\n\t cubic cwnd:10 bytes_sent:100\n")
    assert ss_subflows(text) == {"3b3ba3d6": 1, "964fbb86": 2}
    assert ss_subflows("") == {}
