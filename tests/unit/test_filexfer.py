"""The Orca paper's UDP file-transfer application (apps/filexfer): wire format, NACK ranges,
the repair logic on an in-process network, and whole transfers between real processes on
loopback (no root, no multicast routing needed; the real-multicast test skips without it)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # apps/ is not an installed package: import it from the checkout
    sys.path.insert(0, str(ROOT))

from apps.filexfer import protocol as p  # noqa: E402
from apps.filexfer.receiver import ReceiverSession  # noqa: E402
from apps.filexfer.sender import Channel, Pacer, Receiver, SenderCore  # noqa: E402
from emulator.proc import first_line  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
APP = [sys.executable, "-m", "apps.filexfer"]


# --- wire format ------------------------------------------------------------------------------

def test_every_kind_round_trips():
    payload = p.content(3, 1, 1400)
    d = p.decode(p.encode_data(77, 3, 1, 3000, 1400, payload))
    assert (d.kind, d.session, d.round, d.seq, d.total, d.size, d.chunk) == \
        (p.DATA, 77, 3, 1, 3, 3000, 1400)
    assert bytes(d.payload) == payload
    last = p.decode(p.encode_data(77, 3, 2, 3000, 1400, p.content(3, 2, 200)))
    assert len(last.payload) == 200
    e = p.decode(p.encode_end(77, 3, 3000, 1400))
    assert (e.kind, e.total, e.size, e.chunk) == (p.END, 3, 3000, 1400)
    n = p.decode(p.encode_nack(5, 77, 3, [(0, 2), (9, 10)]))
    assert (n.kind, n.node, n.ranges) == (p.NACK, 5, ((0, 2), (9, 10)))
    a = p.decode(p.encode_ack(5, 77, 12))
    assert (a.kind, a.node, a.round, a.text) == (p.ACK, 5, 12, b"ack_12")
    assert p.decode(p.encode_bye(77, 33)).round == 33
    assert p.decode(p.encode_bye_ack(5, 77, 33)).kind == p.BYE_ACK
    # header 16 + geometry 20 + 1400 payload + 28 IP/UDP = 1464: one 1500-MTU packet
    assert len(p.encode_data(1, 1, 0, 5000, 1400, payload)) + p.IP_UDP_OVERHEAD == 1464


@pytest.mark.parametrize("bad, why", [
    (b"XXXX" + p.encode_ack(1, 2, 3)[4:], "bad magic"),
    (b"OFX1\x04", "short"),
    (p.encode_ack(1, 2, 3)[:-1] + b"4", "does not name round"),
    (p.HEADER.pack(p.MAGIC, 99, 0, 0, 1, 1), "unknown kind"),
    (p.HEADER.pack(p.MAGIC, p.DATA, 0, 0, 1, 1) + p.INFO.pack(0, 5, 3000, 1400, 0),
     "inconsistent geometry"),
    (p.encode_data(1, 1, 0, 3000, 1400, b"x" * 10), "carries 10 bytes"),
    (p.HEADER.pack(p.MAGIC, p.DATA, 0, 0, 1, 1) + p.INFO.pack(3, 3, 3000, 1400, 0),
     "beyond total"),
    (p.HEADER.pack(p.MAGIC, p.NACK, 0, 0, 1, 1) + p.COUNT.pack(2) + p.RANGE.pack(0, 1),
     "does not hold"),
])
def test_malformed_datagrams_are_rejected(bad, why):
    with pytest.raises(p.ProtocolError, match=why):
        p.decode(bad)


def test_nack_ranges_are_compressed_and_bounded():
    assert p.expand_ranges([(1, 4), (3, 6), (8, 20)], 10) == [1, 2, 3, 4, 5, 8, 9]
    have = bytearray(b"\x01\x00\x00\x01\x00\x01\x01\x00")
    assert p.missing_ranges(have) == [(1, 3), (4, 5), (7, 8)]
    assert p.missing_ranges(have, limit=2) == [(1, 3), (4, 5)]
    assert p.missing_ranges(bytearray(b"\x01" * 5)) == []
    every_other = bytearray(b"\x00\x01" * 1000)
    ranges = p.missing_ranges(every_other)
    assert len(ranges) == p.MAX_RANGES and ranges[0] == (0, 1)
    msg = p.encode_nack(1, 1, 1, ranges + [(5000, 5001)])
    assert len(msg) == p.HEADER.size + 2 + 8 * p.MAX_RANGES  # extra ranges are cut, not sent
    assert len(p.decode(msg).ranges) == p.MAX_RANGES


def test_command_line_values():
    assert p.parse_sizes("1500,64K,2M, 0") == [1500, 65536, 2 * 1024 ** 2, 0]
    assert p.parse_addrs("127.0.0.1:5000,localhost:6") == [("127.0.0.1", 5000), ("127.0.0.1", 6)]
    for bad in ("1.5M", "-3", "K"):
        with pytest.raises(ValueError):
            p.parse_size(bad)
    with pytest.raises(ValueError):
        p.parse_addr("127.0.0.1")
    assert p.content(2, 5, 100) == p.content(2, 5, 100) != p.content(2, 6, 100)


# --- repair logic on an in-process network ----------------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class FakeNet:
    """Channels to in-process ReceiverSessions; ``lose(receiver, packet)`` drops a datagram
    on its way to a receiver, ``lose_reply(receiver, packet)`` one on its way back.  Waiting
    advances the fake clock to the next receiver timer, so no test sleeps."""

    def __init__(self, rxs, members, clock, lose=None, lose_reply=None) -> None:
        self.rxs, self.members, self.clock = rxs, members, clock
        self.lose = lose or (lambda i, pkt: False)
        self.lose_reply = lose_reply or (lambda i, pkt: False)
        self.channel_of = {m: ch for ch, ms in enumerate(members) for m in ms}
        self.queue: deque = deque()
        self.sent: list[tuple[int, p.Packet]] = []

    @staticmethod
    def addr(i: int) -> tuple[str, int]:
        return (f"10.1.0.{i + 1}", 5000)

    def _out(self, i: int, replies: list[bytes]) -> None:
        for r in replies:
            if not self.lose_reply(i, p.decode(r)):
                self.queue.append((self.channel_of[i], r, self.addr(i)))
        if replies:
            self.rxs[i].note_sent(self.clock.t)

    def send(self, ch: int, data: bytes) -> bool:
        pkt = p.decode(data)
        self.sent.append((ch, pkt))
        for i in self.members[ch]:
            if not self.lose(i, pkt):
                self._out(i, self.rxs[i].on_datagram(data, ("10.0.0.1", 4000), self.clock.t))
        return True

    def poll(self, timeout: float):
        if not self.queue and timeout > 0:
            ticks = [t for t in (rx.next_tick() for rx in self.rxs) if t is not None]
            self.clock.t = max(self.clock.t, min(ticks + [self.clock.t + timeout]))
            for i, rx in enumerate(self.rxs):
                self._out(i, rx.on_tick(self.clock.t))
        return self.queue.popleft() if self.queue else None


def _end_seen(rx: ReceiverSession, rnd: int) -> bool:
    """Whether ``rx`` saw round ``rnd``'s END already (test losses hit the first pass only)."""
    return rx.cur is not None and rx.cur.rnd == rnd and rx.cur.end_seen


def _multicast_setup(n, **net):
    clock = FakeClock()
    rxs = [ReceiverSession(node=i + 1, start=clock.t) for i in range(n)]
    rxs[-1].node = 0  # no --id: the sender must fall back on the source address
    fake = FakeNet(rxs, [list(range(n))], clock, **net)
    receivers = [Receiver(i, FakeNet.addr(i), i + 1, 0) for i in range(n)]
    core = SenderCore(fake, [Channel(("239.1.1.1", 5000), list(range(n)), "group")], receivers,
                      multicast=True, session=42, chunk=100, clock=clock)
    return clock, rxs, fake, core


def test_multicast_repairs_go_to_the_group_until_every_receiver_has_every_byte():
    first_end = set()
    acks_lost = set()

    def lose(i, pkt):
        if pkt.kind == p.DATA and pkt.round == 1 and not _end_seen(rxs[i], 1):
            return (i == 0 and pkt.seq in (3, 4, 5)) or (i == 1 and pkt.seq % 4 == 0)
        if pkt.kind == p.END and i == 2 and (pkt.round, i) not in first_end:
            first_end.add((pkt.round, i))
            return True  # receiver 3 misses the first END copy of every round
        return False

    def lose_reply(i, pkt):
        if pkt.kind == p.ACK and i == 1 and pkt.round == 2 and pkt.round not in acks_lost:
            acks_lost.add(pkt.round)
            return True  # receiver 2's first ack_2 is lost: END re-sent, ACK repeated
        return False

    clock, rxs, fake, core = _multicast_setup(3, lose=lose, lose_reply=lose_reply)
    sizes = [1000, 0, 250]
    stats = [core.run_round(r, size, timeout=5.0) for r, size in enumerate(sizes, start=1)]
    assert core.finish(len(sizes), 1.0) == [0, 1, 2]
    for rx in rxs:
        rep = rx.report()
        assert [r["bytes_received"] for r in rep["rounds"]] == sizes
        assert all(r["complete"] for r in rep["rounds"]) and rep["rounds_announced"] == 3
    r0, r1 = rxs[0].report()["rounds"][0], rxs[1].report()["rounds"][0]
    assert (r0["lost_before_repair"], r0["repaired"]) == (3, 3)
    assert (r1["lost_before_repair"], r1["repaired"]) == (3, 3)  # seqs 0, 4, 8 of 10
    # One repair to the group serves everyone: the receiver that lost nothing sees duplicates,
    # and seq 4, NACKed by two receivers at the same instant, is sent once.
    assert stats[0]["repairs"] == {"group": 5} and stats[0]["suppressed"] == 1
    assert rxs[2].report()["rounds"][0]["duplicates"] == 5
    assert all(ch == 0 for ch, _ in fake.sent)
    assert [sorted(a["index"] for a in s["acks"]) for s in stats] == [[0, 1, 2]] * 3
    assert {a["id"] for a in stats[0]["acks"]} == {1, 2, 0}
    assert rxs[1].report()["rounds"][1]["acks_sent"] == 2
    first_pass = [pk for ch, pk in fake.sent if pk.kind == p.DATA and pk.round == 1]
    assert len(first_pass) == 10 + 5  # each datagram once to the group, plus the repairs


def test_sender_gives_up_on_a_silent_receiver_naming_the_round():
    clock, rxs, fake, core = _multicast_setup(2, lose_reply=lambda i, pkt: i == 1)
    start = clock.t
    with pytest.raises(p.WaitExpired, match=r"round 1: no ack from id 2 at 10\.1\.0\.2:5000 "
                                            r"within 2 s \(1/2 acked\)"):
        core.run_round(1, 300, timeout=2.0)
    assert 2.0 <= clock.t - start < 2.2


def test_unicast_repairs_only_the_receiver_that_asked():
    clock = FakeClock()
    rxs = [ReceiverSession(node=0, start=clock.t) for _ in range(2)]
    lose = (lambda i, pkt: i == 1 and pkt.kind == p.DATA and pkt.seq in (0, 9)
            and not _end_seen(rxs[i], 1))
    fake = FakeNet(rxs, [[0], [1]], clock, lose=lose)
    receivers = [Receiver(i, FakeNet.addr(i), i + 1, i) for i in range(2)]
    channels = [Channel(FakeNet.addr(i), [i], f"r{i}") for i in range(2)]
    core = SenderCore(fake, channels, receivers, multicast=False, session=7, chunk=100,
                      clock=clock)
    st = core.run_round(1, 1000, timeout=5.0)
    assert st["repairs"] == {"r1": 2} and st["datagrams"]["r0"] == 10 + 2  # data + END copies
    assert rxs[0].report()["rounds"][0]["duplicates"] == 0
    assert rxs[1].report()["rounds"][0]["lost_before_repair"] == 2


def test_a_long_hole_list_is_asked_for_in_bounded_nacks_without_idling():
    clock = FakeClock()
    rx = ReceiverSession(node=1, start=clock.t)
    total = 3 * p.MAX_RANGES * 2
    out = []
    for seq in range(1, total, 2):  # every even seq lost: 3 * MAX_RANGES holes
        out += rx.on_datagram(p.encode_data(9, 1, seq, total * 10, 10, p.content(1, seq, 10)),
                              ("10.0.0.1", 1), clock.t)
    out += rx.on_datagram(p.encode_end(9, 1, total * 10, 10), ("10.0.0.1", 1), clock.t)
    nacks = [p.decode(m) for m in out]
    assert len(nacks) == 1 and len(nacks[0].ranges) == p.MAX_RANGES
    asked = 0
    while nacks:
        nack = nacks.pop()
        asked += 1
        replies = []
        for seq in p.expand_ranges(nack.ranges, total):  # repair exactly what was asked
            replies += rx.on_datagram(
                p.encode_data(9, 1, seq, total * 10, 10, p.content(1, seq, 10)),
                ("10.0.0.1", 1), clock.t)
        kinds = [p.decode(m).kind for m in replies]
        assert kinds in ([p.NACK], [p.ACK])  # the next NACK follows at once, same instant
        nacks = [p.decode(m) for m in replies if p.decode(m).kind == p.NACK]
    assert asked == 3 and rx.cur.complete


def test_receiver_follows_one_sender_and_ignores_strangers():
    rx = ReceiverSession(node=3)
    src = ("10.0.0.1", 4000)
    assert rx.on_datagram(p.encode_bye(5, 2), src, 1.0) == [] and not rx.done  # stale BYE
    assert rx.on_datagram(b"hello", src, 1.0) == [] and rx.malformed == 1
    assert rx.on_datagram(p.encode_data(6, 1, 0, 5, 100, p.content(1, 0, 5)), src, 1.0) \
        == [p.encode_ack(3, 6, 1)]
    assert rx.on_datagram(p.encode_data(5, 2, 0, 5, 100, p.content(2, 0, 5)), src, 1.1) == []
    assert rx.foreign == 2 and len(rx.rounds) == 1
    wrong = p.encode_data(6, 2, 0, 5, 100, p.content(9, 9, 5))  # content of another datagram
    assert rx.on_datagram(wrong, src, 1.2) == [] and rx.cur.corrupt == 1
    assert rx.on_datagram(p.encode_bye(6, 2), src, 1.3) == [p.encode_bye_ack(3, 6, 2)]
    assert rx.done and rx.report()["rounds_announced"] == 2


def test_pacing_holds_the_rate_after_one_burst():
    clock = FakeClock()

    def sleep(d: float) -> None:
        clock.t += d

    pacer = Pacer(8.0, clock, sleep)  # 1 MB/s; the burst allowance is 16 * 1500 B
    for _ in range(100):
        pacer.consume(1372)  # 1400 bytes on the wire with IP and UDP headers
    assert clock.t - 1000.0 == pytest.approx((100 * 1400 - 16 * 1500) / 1e6)
    unpaced = Pacer(0, clock, lambda d: pytest.fail("slept"))
    unpaced.consume(10 ** 9)


# --- real processes on loopback -------------------------------------------------------------

def _recv(tmp: Path, name: str, *extra: str, timeout: float = 10.0):
    report = tmp / f"{name}.json"
    proc = subprocess.Popen(APP + ["recv", "--listen", "127.0.0.1:0", "--report", str(report),
                                   "--timeout", str(timeout), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env=ENV)
    line = first_line(proc, 10.0).split()
    assert line[:1] == ["listening"], proc.stderr.read()
    return proc, line[1], report


def _send(*args: str, timeout: float = 20.0) -> subprocess.CompletedProcess:
    return subprocess.run(APP + ["send", *args], capture_output=True, text=True, cwd=ROOT,
                          env=ENV, timeout=timeout)


def _finish(procs) -> None:
    for proc in procs:
        try:
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()


SIZES = [20000, 1, 45000]


@pytest.mark.parametrize("procs, order", [(1, "sequential"), (2, "interleaved")])
def test_unicast_transfer_to_two_receivers(tmp_path, procs, order):
    (r1, a1, rep1), (r2, a2, rep2) = _recv(tmp_path, "r1", "--id", "1"), _recv(tmp_path, "r2")
    try:
        res = _send("--receivers", f"{a1},{a2}", "--sizes", ",".join(map(str, SIZES)),
                    "--procs", str(procs), "--order", order, "--report",
                    str(tmp_path / "s.json"), "--timeout", "5")
        assert res.returncode == 0, res.stderr
    finally:
        _finish([r1, r2])
    assert (r1.returncode, r2.returncode) == (0, 0)
    snd = json.loads((tmp_path / "s.json").read_text())
    assert snd["ok"] and snd["procs"] == procs and len(snd["rounds"]) == 3
    assert sorted(snd["bye_confirmed"]) == sorted([a1, a2])
    for i, rnd in enumerate(snd["rounds"], start=1):
        assert rnd["size_bytes"] == SIZES[i - 1]
        assert [a["receiver"] for a in rnd["acks"]] == [a1, a2]
        assert {a["ack"] for a in rnd["acks"]} == {f"ack_{i}"}
        assert set(rnd["bytes_sent"]) == {a1, a2}  # one socket a receiver
        assert all(v >= SIZES[i - 1] for v in rnd["file_bytes_sent"].values())
        assert 0 <= rnd["send_s"] <= rnd["round_s"] < 5
    for rep, rid in ((rep1, 1), (rep2, 0)):
        doc = json.loads(rep.read_text())
        assert doc["ok"] and doc["id"] == rid and doc["rounds_announced"] == 3
        assert doc["session"] == snd["session"]
        rounds = doc["rounds"]
        assert [r["round"] for r in rounds] == [1, 2, 3]
        assert [r["bytes_received"] for r in rounds] == [r["bytes_expected"] for r in rounds] \
            == SIZES
        assert all(r["complete"] and r["corrupt"] == 0 and r["acks_sent"] >= 1 for r in rounds)
        assert rounds[0]["wait_s"] is None and all(r["wait_s"] >= 0 for r in rounds[1:])
        assert all(r["completion_s"] >= 0 for r in rounds)


def test_injected_loss_is_repaired_and_recorded(tmp_path):
    (r1, a1, rep1), (r2, a2, rep2) = (_recv(tmp_path, "r1"),
                                      _recv(tmp_path, "r2", "--drop-every", "4"))
    try:
        res = _send("--receivers", f"{a1},{a2}", "--sizes", ",".join(map(str, SIZES)),
                    "--drop-every", "3", "--report", str(tmp_path / "s.json"), "--timeout", "5")
        assert res.returncode == 0, res.stderr
    finally:
        _finish([r1, r2])
    snd = json.loads((tmp_path / "s.json").read_text())
    d1, d2 = (json.loads(r.read_text())["rounds"] for r in (rep1, rep2))
    for i, size in enumerate(SIZES):
        total = p.datagrams_for(size, p.DEFAULT_CHUNK)
        rnd = snd["rounds"][i]
        assert rnd["dropped_for_test"] == 2 * (total // 3)  # on both sockets' first pass
        assert d1[i]["lost_before_repair"] == d1[i]["repaired"] == total // 3
        assert d2[i]["lost_before_repair"] == d2[i]["repaired"] >= total // 3
        assert d1[i]["bytes_received"] == d2[i]["bytes_received"] == size
        assert rnd["repairs_sent"] >= d1[i]["repaired"] + d2[i]["repaired"]
        assert rnd["repairs_by_socket"].get(a1, 0) >= d1[i]["repaired"]
        if total // 3:
            assert rnd["nacks_received"] >= 2 and d2[i]["nacks_sent"] >= 1


@pytest.mark.parametrize("procs", [1, 2])
def test_a_receiver_that_never_answers_fails_the_sender_within_its_timeout(tmp_path, procs):
    dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # bound, never read: no ICMP
    dead.bind(("127.0.0.1", 0))
    dead_addr = p.label(dead.getsockname())
    live = [_recv(tmp_path, "r1")] if procs == 2 else []
    addrs = [a for _, a, _ in live] + [dead_addr]
    try:
        t0 = time.monotonic()
        res = _send("--receivers", ",".join(addrs), "--procs", str(procs), "--sizes", "3000,10",
                    "--report", str(tmp_path / "s.json"), "--timeout", "1")
        took = time.monotonic() - t0
    finally:
        dead.close()
        for proc, _, _ in live:
            proc.terminate()
        _finish([proc for proc, _, _ in live])
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "round 1" in lines[0] and dead_addr in lines[0], res.stderr
    assert "within 1 s" in lines[0]
    assert took < 5
    doc = json.loads((tmp_path / "s.json").read_text())
    assert not doc["ok"] and "round 1" in doc["error"] and doc["rounds"] == []


def test_a_receiver_without_sender_times_out_naming_the_round(tmp_path):
    proc, _, rep = _recv(tmp_path, "r1", timeout=0.5)
    try:
        err = proc.stderr.read()
    finally:
        _finish([proc])
    assert proc.returncode == 1
    assert err == "filexfer recv: timeout: round 1: nothing from the sender within 0.5 s\n"
    doc = json.loads(rep.read_text())
    assert not doc["ok"] and doc["error"] == err.strip().removeprefix("filexfer recv: ")


def test_help_exits_0_and_bad_arguments_exit_2():
    for side in ("send", "recv"):
        res = subprocess.run(APP + [side, "--help"], capture_output=True, text=True, cwd=ROOT,
                             env=ENV, timeout=10)
        assert res.returncode == 0 and "--timeout" in res.stdout and "--report" in res.stdout
    for args in (["send", "--receivers", "127.0.0.1:1", "--sizes", "1", "--mode", "multicast"],
                 ["send", "--receivers", "127.0.0.1:1", "--sizes", "1.5M"],
                 ["send", "--receivers", "127.0.0.1", "--sizes", "1"],
                 ["recv", "--listen", "127.0.0.1:1", "--group", "10.0.0.1"]):
        res = subprocess.run(APP + args, capture_output=True, text=True, cwd=ROOT, env=ENV,
                             timeout=10)
        assert res.returncode == 2, (args, res.stderr)


def test_multicast_mode_to_one_stand_in_receiver(tmp_path):
    """The group is any destination: one unicast receiver exercises the multicast path."""
    r1, a1, rep1 = _recv(tmp_path, "r1", "--id", "1", "--drop-every", "5")
    try:
        res = _send("--mode", "multicast", "--group", a1, "--receivers", a1, "--sizes",
                    "30000,7", "--report", str(tmp_path / "s.json"), "--timeout", "5")
        assert res.returncode == 0, res.stderr
    finally:
        _finish([r1])
    snd = json.loads((tmp_path / "s.json").read_text())
    assert snd["group"] == a1 and list(snd["rounds"][0]["bytes_sent"]) == [a1]
    d1 = json.loads(rep1.read_text())["rounds"]
    assert [r["bytes_received"] for r in d1] == [30000, 7] and d1[0]["repaired"] > 0


def _loopback_multicast_works(group: str) -> bool:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind(("0.0.0.0", 0))
        rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                      socket.inet_aton(group) + socket.inet_aton("127.0.0.1"))
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        tx.sendto(b"probe", (group, rx.getsockname()[1]))
        rx.settimeout(0.5)
        return rx.recv(16) == b"probe"
    except OSError:
        return False
    finally:
        rx.close()
        tx.close()


def test_real_multicast_on_loopback(tmp_path):
    group = "239.255.77.%d" % (os.getpid() % 200 + 1)
    if not _loopback_multicast_works(group):
        pytest.skip("this host cannot send multicast over loopback")
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("0.0.0.0", 0))
    port = probe.getsockname()[1]
    probe.close()
    common = ["--group", group, "--iface", "127.0.0.1"]
    rs = []
    for i in (1, 2):
        report = tmp_path / f"m{i}.json"
        proc = subprocess.Popen(
            APP + ["recv", "--listen", f"0.0.0.0:{port}", "--id", str(i), "--report",
                   str(report), "--timeout", "10", *common]
            + (["--drop-every", "6"] if i == 2 else []),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
        assert first_line(proc, 10.0).startswith("listening"), proc.stderr.read()
        rs.append((proc, report))
    try:
        res = _send("--mode", "multicast", "--group", f"{group}:{port}", "--mcast-if",
                    "127.0.0.1", "--receivers", f"127.0.0.1:{port},127.0.0.1:{port}",
                    "--sizes", ",".join(map(str, SIZES)), "--report", str(tmp_path / "s.json"),
                    "--timeout", "5")
        assert res.returncode == 0, res.stderr
    finally:
        _finish([proc for proc, _ in rs])
    snd = json.loads((tmp_path / "s.json").read_text())
    for i, rnd in enumerate(snd["rounds"]):
        total = p.datagrams_for(SIZES[i], p.DEFAULT_CHUNK)
        # each datagram left once, for both receivers
        assert rnd["datagrams_sent"] == {f"{group}:{port}": total + rnd["repairs_sent"]
                                         + rnd["end_markers_sent"]}
        assert sorted(a["id"] for a in rnd["acks"]) == [1, 2]
    for proc, report in rs:
        assert proc.returncode == 0
        rounds = json.loads(report.read_text())["rounds"]
        assert [r["bytes_received"] for r in rounds] == SIZES
