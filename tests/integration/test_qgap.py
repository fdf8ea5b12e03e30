"""The dequeue-gap probe on a real shaped link: two namespaces, one veth, HTB + pfifo, TCP.

Everything lives in network namespaces named ``dcqg-<pid>-*`` (no root-namespace veth),
traffic comes from a small Python sender/receiver (not iperf3).  The tests assert that the
probe counts what the qdisc released (exactly, give or take the tracepoint hits it counts
as untraced) and that only queued packets make samples; how close the gaps come to the
packet time and the goodput are this host's timing, measured by bench/bench_qgap.py
(``flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_qgap.py --repeat 5``).
Manual runs at other rates:

    sudo .venv/bin/python tests/integration/test_qgap.py 10 50 100    # rates in Mb/s
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from emulator.proc import first_line  # noqa: E402
from emulator.qgap import QueueGapProbe, summarize  # noqa: E402
from emulator.registry import BPFFS_DIR  # noqa: E402
from emulator.shaping import tc_lines  # noqa: E402

PORT = 5301
RECEIVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.2", int(sys.argv[1]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    n += len(b)
print(n, flush=True)
"""
BURSTS = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n, k, pause = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
s.sendto(b"w", ("10.77.0.2", 9)); time.sleep(0.2)   # resolve the neighbour first
for i in range(n):
    for j in range(k):
        s.sendto(b"x" * 1000, ("10.77.0.2", 9))
    time.sleep(pause)
"""
SENDER = """
import socket, sys, time
s = socket.create_connection(("10.77.0.2", int(sys.argv[1])))
end, buf, n = time.monotonic() + float(sys.argv[2]), b"x" * (1 << 16), 0
while time.monotonic() < end:
    n += s.send(buf)
s.close(); print(n, flush=True)
"""


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=20).stdout


def drained(ns: str, dev: str, timeout: float = 5.0) -> None:
    """Wait (bounded) until the device's qdiscs hold no packet: a probe read before the
    last burst left the queue misses its releases (the sender's own pause is no guarantee
    on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while any(q.get("qlen", 0) or q.get("backlog", 0)
              for q in json.loads(sh("tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev))):
        assert time.monotonic() < deadline, f"{dev} in {ns} did not drain in {timeout} s"
        time.sleep(0.01)


@contextmanager
def veth_pair(rate_mbit: float, limit: int = 100, one_segment: bool = True,
              shaper: str = "htb") -> Iterator[tuple[str, str]]:
    """Namespaces A and B joined by a veth (offloads off), A's end shaped like dcrepro's
    (``shaper`` htb or tbf, each with its pfifo).

    Offloads off is not enough for the qdisc to see one skb per packet: TCP always builds
    GSO skbs and the stack segments them after the qdisc (validate_xmit_skb) when the device
    cannot; ``gso_max_segs 1`` makes TCP send one segment per skb (``one_segment``)."""
    a, b = f"dcqg-{os.getpid()}-a", f"dcqg-{os.getpid()}-b"
    try:
        for ns in (a, b):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            # no IPv6: its router solicitations and MLD reports leave through HTB at random
            # times, one more packet than the test sent (as dcrepro's own runs disable it)
            for scope in ("all", "default"):
                sh("ip", "netns", "exec", ns, "sysctl", "-qw",
                   f"net.ipv6.conf.{scope}.disable_ipv6=1")
        sh("ip", "-n", a, "link", "add", "qg0", "type", "veth", "peer", "name", "qg1", "netns", b)
        for ns, intf, addr in ((a, "qg0", "10.77.0.1/24"), (b, "qg1", "10.77.0.2/24")):
            sh("ip", "netns", "exec", ns, "ethtool", "-K", intf, "tx", "off", "tso", "off",
               "gso", "off", "gro", "off", "rx", "off")
            if one_segment:
                sh("ip", "-n", ns, "link", "set", "dev", intf, "gso_max_segs", "1")
            sh("ip", "-n", ns, "addr", "add", addr, "dev", intf)
            sh("ip", "-n", ns, "link", "set", intf, "up")
        # no ARP either: a neighbour probe (a stale entry re-confirmed in the middle of a
        # burst) is one more packet through HTB than the test sent (fresh clone, 2026-11-26:
        # probe 500, HTB 501)
        macs = {ns: json.loads(subprocess.run(
            ["ip", "-n", ns, "-j", "link", "show", "dev", intf], capture_output=True,
            text=True, timeout=10, check=True).stdout)[0]["address"]
            for ns, intf in ((a, "qg0"), (b, "qg1"))}
        for ns, intf, peer, mac in ((a, "qg0", "10.77.0.2", macs[b]),
                                    (b, "qg1", "10.77.0.1", macs[a])):
            sh("ip", "-n", ns, "neigh", "replace", peer, "lladdr", mac, "dev", intf,
               "nud", "permanent")
        for cmd in tc_lines("qg0", rate_mbit, limit, shaper=shaper):
            sh("tc", "-n", a, *cmd.split())
        yield a, b
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def bulk_transfer(a: str, b: str, seconds: float) -> int:
    """A TCP bulk transfer from A to B; bytes received."""
    rx = subprocess.Popen(["ip", "netns", "exec", b, sys.executable, "-c", RECEIVER, str(PORT)],
                          stdout=subprocess.PIPE, text=True)
    try:
        assert first_line(rx, 10.0).strip() == "ready"   # a bind takes ms
        sh("ip", "netns", "exec", a, sys.executable, "-c", SENDER, str(PORT), str(seconds))
        out, _ = rx.communicate(timeout=20)
        return int(out.strip())
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()


def htb_packets(ns: str, root: str = "htb") -> int:
    """Packets the root qdisc (HTB or TBF) of qg0 has released so far (its own counter)."""
    qdiscs = json.loads(sh("tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", "qg0"))
    return next(q["packets"] for q in qdiscs if q["kind"] == root)


def measure(rate_mbit: float, seconds: float = 10, one_segment: bool = True,
            shaper: str = "htb") -> dict[str, Any]:
    """Busy-gap summary of the shaped veth end during a bulk transfer, with the packets
    the root qdisc says it released meanwhile (``htb_released``) for comparison."""
    with veth_pair(rate_mbit, one_segment=one_segment, shaper=shaper) as (a, b):
        with QueueGapProbe({(a, "qg0"): rate_mbit}, BPFFS_DIR / f"dcqg-{os.getpid()}+qgap",
                           shaper=shaper) as probe:
            before = htb_packets(a, shaper)
            t0 = time.monotonic()
            got = bulk_transfer(a, b, seconds)
            took = time.monotonic() - t0
            gaps = probe.read()[(a, "qg0")]
            released = htb_packets(a, shaper) - before
        tc = json.loads(sh("tc", "-n", a, "-s", "-j", "qdisc", "show", "dev", "qg0"))
    return {"rate_mbit": rate_mbit, "goodput_mbit": round(got * 8 / took / 1e6, 2),
            "tc_drops": sum(q.get("drops", 0) for q in tc if q["kind"] == "pfifo"),
            "htb_released": released, **summarize(gaps)}


def _single_and_bursts() -> tuple[Any, dict[str, Any], Any, int]:
    """Paced single datagrams, then 50 bursts of 10, each under a fresh probe: the single
    datagrams' gaps, the probe's counters after one datagram, the bursts' gaps, and what HTB
    released during the bursts."""
    with veth_pair(10) as (a, b):
        with QueueGapProbe({(a, "qg0"): 10}, BPFFS_DIR / f"dcqg-{os.getpid()}+qgap") as probe:
            sh("ip", "netns", "exec", a, sys.executable, "-c", BURSTS, "50", "1", "0.003")
            drained(a, "qg0")
            single = probe.read()[(a, "qg0")]
        with QueueGapProbe({(a, "qg0"): 10}, BPFFS_DIR / f"dcqg-{os.getpid()}+qgap") as probe:
            # one datagram first, so that the probe has seen HTB's counter once before the
            # bursts: a hit the probe misses is then counted as untraced, not lost
            sh("ip", "netns", "exec", a, sys.executable, "-c", BURSTS, "0", "1", "0")
            drained(a, "qg0")
            first = probe.read()[(a, "qg0")].diag
            before = htb_packets(a)
            sh("ip", "netns", "exec", a, sys.executable, "-c", BURSTS, "50", "10", "0.02")
            drained(a, "qg0")
            bursts = probe.read()[(a, "qg0")]
            released = htb_packets(a) - before
    return single, first, bursts, released


@pytest.mark.integration
def test_only_queued_packets_make_samples():
    """The busy criterion (the root HTB's q.qlen, which counts the packets in its pfifo
    leaf): paced single datagrams never find a queue; bursts of 10 do, after the first
    few (HTB's 1600-byte burst lets two out at once, and the sender is still writing).
    The share of burst gaps within 10 % of the packet time is this host's timing, not the
    probe's arithmetic, so it is printed, not judged: it was 0.8 or more on quiet days, 0.73
    once in CI (2026-11-28) and 0.62-0.79 in three tries on a machine 1.8 times slower per
    packet (2026-11-29).  So are the burst gaps' median ratio (1.0) and how many of each
    burst's gaps find a queue (5-9 of 9: a sender descheduled mid-burst makes fewer): both
    are judged by bench/bench_qgap.py.  Timing is judged by every run's fidelity report."""
    single, first, bursts, released = _single_and_bursts()
    assert single.diag["releases"] >= 50 and single.all.samples == 0, single.diag
    # every packet HTB released was seen by the probe or counted as untraced: BPF runs on
    # the tracepoint are now and then skipped on this guest (qgap.bpf.c), and the 500-vs-501
    # failures of the exact equality were such a miss.  Once in a while one of the 500
    # datagrams never reaches the qdisc: the probe must agree with HTB, not with the sender.
    # The probe reconciles HTB's counter with its hits at each hit it sees, so a skipped
    # run on the very last release is counted nowhere: one short at most, by construction
    # (CI of a1c4dae, 2026-12-02: 500 seen of 501, untraced 0, after the permanent ARP and
    # no IPv6 above had removed every other packet)
    seen = (bursts.diag["releases"] - first["releases"]
            + bursts.diag["untraced"] - first["untraced"])
    assert released - 1 <= seen <= released and released >= 490, \
        (first, bursts.diag, released)
    assert bursts.diag["untraced"] - first["untraced"] <= 20, bursts.diag
    assert bursts.diag["qlen_backlog_disagree"] == 0
    # queued packets made samples; at most 9 gaps per burst of 10 (the first finds none)
    assert 0 < bursts.full.samples <= 50 * 9, bursts.diag
    s = summarize(bursts)["full_size"]
    print(f"burst gap samples {bursts.full.samples}, median ratio {s['median_ratio']}, "
          f"within 10 %: {s['within_10pct']}")


@pytest.mark.integration
@pytest.mark.parametrize("shaper", ["htb", "tbf"])
def test_busy_gaps_on_a_shaped_veth(shaper: str):
    """Either shaper's busy link is seen by the probe, told which frame each shaper's gap
    belongs to, and the probe counts every packet the root qdisc released.  That the link
    paces at its rate (goodput 8-10.5 Mb/s, median ratio 0.95-1.05, busy-rate ratio
    0.9-1.1, within 10 % > 0.5 of the gaps; TBF measured against HTB's rule gave a median
    of 0.04 on gaps before an ACK: docs/measured.md) is judged by bench/bench_qgap.py."""
    s = measure(10, seconds=3, shaper=shaper)
    print(json.dumps(s))
    full = s["full_size"]
    # a 10 Mb/s link sends ~825 full-size frames a second, ~2,400 in 3 s, most of them
    # gaps in a busy period: 200 is under a tenth of the link, "the probe saw the busy link"
    assert full["samples"] > 200, s
    # every packet HTB released was seen by the probe, or counted as untraced
    assert abs(s["diag"]["releases"] + s["diag"]["untraced"] - s["htb_released"]) <= 3, s
    assert s["diag"]["untraced"] < 0.02 * s["htb_released"], s


if __name__ == "__main__":
    for r in sys.argv[1:] or ["10", "50", "100"]:
        print(json.dumps(measure(float(r))), flush=True)
