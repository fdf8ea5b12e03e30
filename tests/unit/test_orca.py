"""orca without a network: the workload schedule, copies per mode, validation, the model
backend through the CLI (its claims: tests/unit/test_claims.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import routing
import topos
from dcrepro import cli
from experiments.orca import experiment as orca
from experiments.orca import figures as aorca
from harness.params import typed
from harness.transfer import Transfer, TransferResult
from routing.multicast import add_group


def _params(**kw):
    return typed(orca, {**orca.PARAMS.defaults(), **kw})


def test_schedule_keeps_the_papers_proportions_and_doubles_exactly():
    base = orca.schedule(440_000)
    assert len(base) == 33 and sum(base) == 440_000 and min(base) > 0
    # the largest file is 141/1408 of the total, as in the paper's 1.4 GB workload
    assert max(base) == round(440_000 * 141 / 1408)
    assert sorted(base)[-2] < max(base)
    assert orca.schedule(880_000) != base
    assert orca.schedule(440_000) == base            # the same files in every run
    with pytest.raises(ValueError, match="cannot fill"):
        orca.schedule(20)


def test_base_workload_scales_the_papers_88_mb_at_10_gbps_by_link_rate():
    assert orca.base_bytes(_params(bw=50.0)) == 440_000
    assert orca.base_bytes(_params(bw=100.0)) == 880_000
    assert orca.base_bytes(_params(base_mb=2.5)) == 2_500_000


@pytest.mark.parametrize("spec,src,members,unicast", [
    ("orca,receivers=4,racks=2", "snd", None, 4),
    ("orca,receivers=6,racks=3", "snd", None, 6),
    ("fattree,k=4", "0_0_2", ["0_0_3", "1_1_2", "3_1_3"], 3),
])
def test_unicast_copies_add_up_on_the_busiest_link(spec, src, members, unicast):
    topo = topos.build(spec)
    members = members or topo.receivers
    plan = routing.make_plan(topo, "st")
    add_group(topo, plan, orca.GROUP, src, members)
    assert orca.busiest_copies(topo, plan, src, members) == {"multicast": 1,
                                                              "unicast": unicast}


def test_bound_counts_headers_and_copies():
    sizes = [1436, 1437]                 # one full datagram; one full plus one byte
    one = orca.one_copy_bytes(sizes)
    assert one == [1436 + 78, 1437 + 2 * 78]
    assert orca.bound_s(sizes, 4, 8.0) == pytest.approx([4 * b * 8 / 8e6 for b in one])


@pytest.mark.parametrize("kw,msg", [
    ({"workloads": "1,x"}, "--workloads"),
    ({"workloads": "2,2"}, "distinct"),
    ({"procs": "1,5"}, "at most one process per receiver"),
    ({"pace": 1.5}, "--pace"),
    ({"base_mb": -1.0}, "--base-mb"),
    ({"base_mb": 0.00001}, "cannot fill"),
    ({"topo": "fattree,k=4", "members": 16}, "--members"),
    # the sender's CPU caps
    ({"sender_cpu": "x"}, "--sender-cpu"),
    ({"sender_cpu": "0.2,0.2"}, "distinct"),
    ({"sender_cpu": "-0.1"}, "must be 0"),
    ({"sender_cpu": "999"}, "cores"),
    ({"sender_cpu": "0.0000001"}, "smallest"),
    ({"sender_cpu": "0.2", "backend": "model"}, "needs --backend emulated"),
])
def test_bad_parameters_are_one_line_errors(kw, msg, one_line_error):
    with one_line_error(msg):
        orca.validate(_params(**kw))


def test_every_workload_multiplies_the_same_files(tmp_path: Path):
    assert cli.main(["run", "orca", "--backend", "model", "--workloads", "1,2", "--procs", "1",
                     "--runs", "1", "--out", str(tmp_path)]) == 0
    rows = aorca.read_csv(next((tmp_path / "orca").iterdir()) / "rounds.csv")
    size = {(r["workload"], r["mode"], r["round"]): int(r["size_bytes"]) for r in rows}
    assert all(size[("2", m, n)] == 2 * size[("1", m, n)] for (_, m, n) in size)


def test_cases_cover_both_modes_at_every_workload_then_the_process_counts():
    cases = orca._cases(_params(workloads="4,1", procs="2,4"), 0)
    assert cases == [(0, 1, "multicast", 1), (0, 1, "unicast", 1), (0, 4, "multicast", 1),
                     (0, 4, "unicast", 1), (0, 4, "unicast", 2), (0, 4, "unicast", 4)]
    assert orca._cases(_params(workloads="1", procs="1"), 1) == [(0, 1, "unicast", 1),
                                                                  (0, 1, "multicast", 1)]


def test_every_case_runs_under_every_sender_cap_in_alternating_order():
    cases = orca._cases(_params(workloads="16", procs="1,2", sender_cpu="0,0.2"), 0)
    assert cases == [(0, 16, "multicast", 1), (0, 16, "unicast", 1), (0, 16, "unicast", 2),
                     (0.2, 16, "multicast", 1), (0.2, 16, "unicast", 1),
                     (0.2, 16, "unicast", 2)]
    odd = orca._cases(_params(workloads="16", procs="1", sender_cpu="0,0.2"), 1)
    assert odd == [(0.2, 16, "unicast", 1), (0.2, 16, "multicast", 1),
                   (0, 16, "unicast", 1), (0, 16, "multicast", 1)]


@pytest.mark.parametrize("text,caps", [("0", [0.0]), ("0.2", [0.2]), ("0,0.25,0.1",
                                                                        [0.0, 0.25, 0.1])])
def test_sender_caps_parse_in_order(text, caps):
    assert orca.sender_caps(_params(sender_cpu=text)) == caps


def test_summary_keeps_caps_apart_and_measures_the_sender():
    def t(cap, mode, procs, total, link_bytes, thr="", per=""):
        return {"run": "0", "sender_cpu": cap, "workload": "16", "mode": mode,
                "procs": str(procs), "total_bytes": "7040000", "bound_s": "1",
                "total_s": str(total), "copies": "1", "repairs_sent": "0",
                "sender_link_bytes": str(link_bytes), "sender_cores": "0.2",
                "throttled_periods": thr, "periods": per}
    rows = aorca.summarize([t("0", "multicast", 1, 1.0, 6_250_000),
                            t("0", "unicast", 4, 4.0, 25_000_000),
                            t("0.2", "multicast", 1, 2.0, 6_250_000, "50", "100"),
                            t("0.2", "unicast", 4, 5.0, 25_000_000, "10", "100")])
    by = {(r["sender_cpu"], r["mode"]): r for r in rows}
    assert by[(0.0, "unicast")]["speedup_of_multicast"] == 4.0
    assert by[(0.2, "unicast")]["speedup_of_multicast"] == 2.5
    assert by[(0.2, "multicast")]["mbps_per_process"] == 25.0       # 6.25 MB in 2 s
    assert by[(0.2, "unicast")]["mbps_per_process"] == 10.0         # 25 MB in 5 s, 4 procs
    assert by[(0.2, "multicast")]["throttled_share"] == 0.5
    assert by[(0.0, "multicast")]["throttled_share"] == ""
    # a folder from before the flag has no column: uncapped
    assert aorca.sender_cpu({"workload": "1"}) == 0.0


def test_model_backend_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code = cli.main(["run", "orca", "--backend", "model", "--quick", "--out", str(tmp_path)])
    assert code == 0
    run = next((tmp_path / "orca").iterdir())
    # the run ends with its answer: the claims' verdicts and the figures, not summary.csv
    out = capsys.readouterr().out
    assert f"(every one with its cause: {run / 'claims.md'}):" in out
    assert "trust: no repetition flagged" in out and "figure: " in out
    assert (run / "summary.csv").read_text().splitlines()[0] not in out
    assert json.loads((run / "status.json").read_text())["status"] == "ok"
    summary = {(r["workload"], r["mode"], r["procs"]): r
               for r in aorca.summarize(aorca.read_csv(run / "transfers.csv"))}
    assert summary[(16, "unicast", 1)]["speedup_of_multicast"] == pytest.approx(4.0, rel=1e-3)
    assert {p.name for p in run.glob("*.png")} == {"exec_time.png", "send_cdf.png",
                                                   "procs.png", "headlines.png"}
    assert "model bound, not a measurement" in (run / "claims.md").read_text()  # written by
    # analysis.plot from experiments/orca/claims.py (tests/unit/test_claims.py judges them)


# -- --backend sim: the event-driven transfer (harness/simxfer.py) without ns-3 ------------

class FakeNet:
    """A tiny discrete-event network for SimTransfer, in Python: every host sends through
    its own link of ``rate_mbps`` (one datagram after the other, IP bytes + 14), every
    datagram arrives ``delay_s`` after it left; a group datagram reaches every socket bound
    to the group's port on another host.  ``drop(src_host, dst_host, data)`` may lose a
    datagram on its way."""

    def __init__(self, addrs: dict[str, str], rate_mbps: float = 10.0, delay_s: float = 1e-4,
                 drop=None) -> None:  # type: ignore[no-untyped-def]
        import heapq
        self.heapq, self.addrs, self.rate, self.delay = heapq, addrs, rate_mbps, delay_s
        self.drop = drop or (lambda s, d, data: False)
        self.t, self.seq, self.events = 0.0, 0, []  # type: ignore[var-annotated]
        self.eps: list[tuple[str, str, int]] = []
        self.busy: dict[str, float] = {}
        self.sent: dict[str, list[bytes]] = {}
        self.app = None

    def host_addr(self, host: str) -> str:
        return self.addrs[host]

    def open(self, host: str, addr: str, port: int) -> int:
        self.eps.append((host, addr, port))
        return len(self.eps) - 1

    def now(self) -> float:
        return self.t

    def at(self, delay: float, fn) -> None:  # type: ignore[no-untyped-def]
        self.seq += 1
        self.heapq.heappush(self.events, (self.t + max(0.0, delay), self.seq, fn))

    def send(self, ep: int, data: bytes, dst: tuple[str, int]) -> bool:
        host, addr, port = self.eps[ep]
        src = (self.addrs[host] if addr == "0.0.0.0" else addr, port)
        self.sent.setdefault(host, []).append(data)
        leave = max(self.t, self.busy.get(host, 0.0)) + (len(data) + 28 + 14) * 8 / (
            self.rate * 1e6)
        self.busy[host] = leave
        for k, (h, a, p) in enumerate(self.eps):
            group = dst[0].startswith("239.") and a == "0.0.0.0" and p == dst[1] and h != host
            if (group or (a == dst[0] and p == dst[1])) and not self.drop(host, h, data):
                self.at(leave - self.t + self.delay,
                        lambda k=k, src=src: self.app.on_datagram(k, data, src))
        return True

    def run(self, app, limit: float = 600.0) -> None:  # type: ignore[no-untyped-def]
        self.app = app
        app.start(self)
        while self.events and self.t < limit:
            self.t, _, fn = self.heapq.heappop(self.events)
            fn()


MEMBERS3 = ["r1", "r2", "r3"]


def _fake_transfer(mode: str, procs: int = 1, sizes=(30_000, 5_000, 12_345), drop=None,
                   rate: float = 9.0, chunk: int = 1000):  # type: ignore[no-untyped-def]
    import random

    from harness.simxfer import SimTransfer
    addrs = {"snd": "10.0.0.1", **{m: f"10.1.0.{i + 1}" for i, m in enumerate(MEMBERS3)}}
    net = FakeNet(addrs, drop=drop)
    dests = {m: addrs[m] for m in MEMBERS3}
    xfer = SimTransfer("snd", MEMBERS3, mode, procs, list(sizes), chunk, rate, 6000,
                       "239.1.1.1" if mode == "multicast" else None, 5.0, dests,
                       {m: addrs["snd"] for m in MEMBERS3}, random.Random(1))
    net.run(xfer)
    return net, xfer


def _data_sent(net: FakeNet) -> int:
    from apps.filexfer import protocol
    return sum(protocol.decode(d).kind == protocol.DATA for d in net.sent["snd"])


@pytest.mark.parametrize("mode,procs,copies", [("multicast", 1, 1), ("unicast", 1, 3),
                                               ("unicast", 2, 3), ("unicast", 3, 3)])
def test_sim_transfer_sends_one_copy_a_receiver_or_one_for_the_group(mode, procs, copies):
    """Every round completes at every receiver with every byte; the sender sends each DATA
    datagram once (multicast) or once per receiver (unicast, any number of processes), no
    repair on a lossless network; the report has one entry a round."""
    net, xfer = _fake_transfer(mode, procs)
    snd = xfer.sender_report()
    assert snd["ok"] and len(snd["rounds"]) == 3 and snd["procs"] == procs
    assert _data_sent(net) == copies * (30 + 5 + 13)        # datagrams of 1000 file bytes
    assert sum(r["repairs_sent"] for r in snd["rounds"]) == 0
    for rep in xfer.receiver_reports().values():
        assert [r["bytes_received"] for r in rep["rounds"]] == [30_000, 5_000, 12_345]
        assert all(r["complete"] for r in rep["rounds"])
    assert sorted(snd["bye_confirmed"]) == sorted(snd["receivers"])


def test_sim_transfer_paces_the_sender():
    """The real token bucket on simulated time: its burst is 16 x 1500 = 24000 bytes, then
    1 Mb/s; a 30 kB round is 30 datagrams of 1000 + 36 + 28 = 1064 IP bytes, so its last
    datagram leaves (30 x 1064 - 24000) x 8 / 1 Mb/s = 63.36 ms after the first (the
    10 Mb/s link would have taken 25.5 ms)."""
    net, xfer = _fake_transfer("multicast", sizes=(30_000,), rate=1.0)
    send_s = xfer.sender_report()["rounds"][0]["send_s"]
    assert send_s == pytest.approx((30 * 1064 - 24000) * 8 / 1e6, abs=1e-9)


def test_sim_transfer_repairs_what_the_network_lost():
    """Every 7th first copy to r2 is lost: r2 NACKs after the END, the sender repairs (to
    the group in multicast), every round still completes with every byte."""
    from apps.filexfer import protocol
    seen: dict[bytes, int] = {}

    def drop(src: str, dst: str, data: bytes) -> bool:
        if dst != "r2" or protocol.decode(data).kind != protocol.DATA:
            return False
        seen[data] = seen.get(data, 0) + 1
        return seen[data] == 1 and len(seen) % 7 == 0

    net, xfer = _fake_transfer("multicast", drop=drop)
    snd = xfer.sender_report()
    assert snd["ok"] and sum(r["repairs_sent"] for r in snd["rounds"]) > 0
    reps = xfer.receiver_reports()
    assert sum(r["lost_before_repair"] for r in reps["r2"]["rounds"]) == len(seen) // 7
    assert all(r["complete"] for rep in reps.values() for r in rep["rounds"])


def test_sim_rows_count_copies_as_the_emulated_run():
    """A simulated transfer's result makes the emulated run's rows: copies = the sender
    link's Ethernet-counted bytes over one copy of every file: 3 for three unicast
    receivers, plus two END markers (36 + 28 + 14 bytes) a receiver and round and one BYE
    (16 + 28 + 14) a receiver."""
    sizes = [30_000, 5_000, 12_345]
    net, xfer = _fake_transfer("unicast", sizes=tuple(sizes), chunk=orca.PAYLOAD)
    t = Transfer("unicast", 1, tuple(sizes), 6000, 1.0, "x1-unicast-p1", "run 0 x1 unicast x1")
    res = TransferResult(t, xfer.sender_report(), xfer.receiver_reports(),
                         sum(len(d) + 28 + 14 for d in net.sent["snd"]))
    t, rounds, recv = orca._rows(0, 0.0, 1, "unicast", 1, sizes, orca.bound_s(sizes, 3, 10.0),
                                 res)
    one = sum(orca.one_copy_bytes(sizes))
    assert t["copies"] == pytest.approx(3 + (3 * 3 * 2 * 78 + 3 * 58) / one, abs=1e-4)
    assert len(rounds) == 3 and len(recv) == 9 and all(r["complete"] for r in recv)
    assert t["total_s"] > 0 and t["sender_cpu_s"] == "" and t["repairs_sent"] == 0


def test_sim_refuses_a_cpu_cap(one_line_error):
    with one_line_error("simulator has no CPU"):
        orca.validate(_params(sender_cpu="0.2", backend="sim"))
