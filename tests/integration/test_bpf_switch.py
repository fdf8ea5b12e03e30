"""The tc-BPF switch program on a real (tiny) network, maps filled by hand.

Everything lives in network namespaces named ``dcbt<pid>-*``: hosts h1, h2, h3 (one
``eth0`` each) and one switch namespace holding the ports of all three switches, as the
real dataplane holds them all in the root namespace (bpf_redirect stays within one
namespace).  Every switch port has HTB 10 Mb/s + ``pfifo limit 100`` on egress, as dcrepro
shapes links.  Traffic comes from Python sockets in the namespaces (and ping), never iperf3.

    s1: 1-h1  2=s2.2 (link A)  3=s2.3 (link B)
    s2: 1-h2  2,3 = s1         4=s3.2
    s3: 1-h3  2=s2.4

Each test gets a fresh network, program and bpffs (under /run/dcrepro/bpffs, removed by the
teardown that tests/integration/conftest.py checks).
"""
from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dataplanes.bpf import switch as bs  # noqa: E402
from emulator.netns import in_namespaces  # noqa: E402
from emulator.registry import BPFFS_DIR, bpf_mounts  # noqa: E402
from emulator.shaping import tc_lines  # noqa: E402

pytestmark = pytest.mark.integration

PFX = f"dcbt{os.getpid() % 100000}"
NS = {n: f"{PFX}-{n}" for n in ("h1", "h2", "h3", "sw")}
MAC = {"h1": "02:00:00:00:00:01", "h2": "02:00:00:00:00:02", "h3": "02:00:00:00:00:03"}
IP = {"h1": "10.0.0.1", "h2": "10.0.0.2", "h3": "10.0.0.3"}
SEED = {1: 0x1111, 2: 0x2222, 3: 0x3333}
# (switch, port) -> what is behind it: a host, or (switch, port) of the other end
WIRING = {(1, 1): "h1", (2, 1): "h2", (3, 1): "h3",
          (1, 2): (2, 2), (1, 3): (2, 3), (2, 4): (3, 2)}
ROUTES = {1: {"h1": 1, "h2": 2, "h3": 2}, 2: {"h1": 2, "h2": 1, "h3": 4},
          3: {"h1": 2, "h2": 2, "h3": 1}}
MCAST1, MCAST2 = "01:00:5e:01:02:03", "01:00:5e:01:02:04"
UDP_PORT = 7000
FWD, REP = bs.ACT_FORWARD, bs.ACT_REPLICATE


def mac(s: str) -> bytes:
    return bytes.fromhex(s.replace(":", ""))


def sh(*argv: str, input_text: str | None = None, timeout: float = 20) -> str:
    p = subprocess.run(argv, input=input_text, capture_output=True, text=True,
                       timeout=timeout, check=False)
    assert p.returncode == 0, f"{' '.join(argv)}: {p.stderr.strip()}"
    return p.stdout


def port_name(sw: int, port: int) -> str:
    return f"s{sw}-eth{port}"


def ns_socket(host: str, family: int, kind: int, proto: int = 0) -> socket.socket:
    """A socket that lives in the namespace of ``host`` (emulator.netns.in_namespaces)."""
    return in_namespaces([f"/run/netns/{NS[host]}"],
                         lambda _: socket.socket(family, kind, proto), timeout=10)[0]


def checksum(b: bytes) -> int:
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    return ~(s + (s >> 16)) & 0xFFFF


def udp_frame(src: str, dst_mac: str, dst_ip: str, sport: int, payload: bytes,
              ethertype: int = 0x0800) -> bytes:
    """An Ethernet/IPv4/UDP frame from host ``src`` (UDP checksum 0: none)."""
    udp = struct.pack("!HHHH", sport, UDP_PORT, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(IP[src]), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return mac(dst_mac) + mac(MAC[src]) + struct.pack("!H", ethertype) + ip + udp


def arp_request(src: str, target_ip: str) -> bytes:
    return (b"\xff" * 6 + mac(MAC[src]) + struct.pack("!HHHBBH", 0x0806, 1, 0x0800, 6, 4, 1)
            + mac(MAC[src]) + socket.inet_aton(IP[src]) + bytes(6)
            + socket.inet_aton(target_ip))


class Net:
    """The namespaces, links, shaping and the loaded program of one test."""

    def __init__(self, obj: Path) -> None:
        self.obj = obj
        self.rt: bs.SwitchRuntime | None = None
        self.pin_dir = BPFFS_DIR / f"{PFX}-test"
        self.intfs = [port_name(*k) for k in sorted(WIRING)] + \
            [port_name(*v) for v in WIRING.values() if isinstance(v, tuple)]

    def create(self) -> None:
        for ns in NS.values():
            sh("ip", "netns", "add", ns)
            # no IPv6: router solicitations and listener reports would count as misses
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
        sw = NS["sw"]
        lines = []
        for (s, p), peer in WIRING.items():
            if isinstance(peer, str):
                lines.append(f"link add {port_name(s, p)} type veth peer name eth0 "
                             f"netns {NS[peer]}")
            else:
                lines.append(f"link add {port_name(s, p)} type veth peer name "
                             f"{port_name(*peer)}")
        lines += [f"link set {i} up" for i in self.intfs]
        sh("ip", "-n", sw, "-batch", "-", input_text="\n".join(lines) + "\n")
        shaping = [l for i in self.intfs for l in tc_lines(i, 10, 100)]
        sh("tc", "-n", sw, "-batch", "-", input_text="\n".join(shaping) + "\n")
        for h in MAC:
            lines = ["link set lo up", f"link set eth0 address {MAC[h]}",
                     f"addr add {IP[h]}/24 dev eth0", "link set eth0 up"]
            lines += [f"neigh replace {IP[o]} lladdr {MAC[o]} dev eth0 nud permanent"
                      for o in MAC if o != h]
            sh("ip", "-n", NS[h], "-batch", "-", input_text="\n".join(lines) + "\n")
            # as dcrepro's hosts: one skb = one wire packet
            sh("ip", "netns", "exec", NS[h], "ethtool", "-K", "eth0", "tx", "off", "tso",
               "off", "gso", "off", "gro", "off")

        self.rt = bs.SwitchRuntime(self.pin_dir, self.obj, netns=sw)
        idx = bs.ifindexes(self.intfs, sw)
        ports = {idx[port_name(s, p)]: (s, p, SEED[s]) for s, p in self.switch_ports()}
        egress = {(s, p): idx[port_name(s, p)] for s, p in self.switch_ports()}
        fib = {bs.FibKey(s, 0, 0, bs.KIND_ETH, mac(MAC[h])):
               bs.FibAction(FWD, 0, 0, 1, (out,), (0,))
               for s, table in ROUTES.items() for h, out in table.items()}
        self.rt.fill(ports, egress, fib)
        assert self.rt.verify(ports, egress, fib) == ""
        self.rt.attach(self.intfs)

    def switch_ports(self) -> list[tuple[int, int]]:
        return sorted(list(WIRING) + [v for v in WIRING.values() if isinstance(v, tuple)])

    def destroy(self) -> None:
        try:
            if self.rt is not None:
                self.rt.close()
        finally:
            for ns in NS.values():
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20,
                               check=False)
            bs.teardown(self.pin_dir)   # in case the runtime never got made

    # helpers for the tests
    def fib(self, sw: int, dst: str, action: tuple | None, label: int = 0, in_port: int = 0,
            kind: int = bs.KIND_ETH) -> None:
        """Set (None: delete) one entry; ``dst`` a MAC, or an IPv4 address for KIND_ARP."""
        addr = mac(dst) if kind == bs.KIND_ETH else socket.inet_aton(dst) + b"\0\0"
        assert self.rt is not None
        if in_port:   # as plan.port_entries does: the switch now looks input ports up
            self.rt.set_port_flag(bs.PORT_IN_RULES, True, sw)
        self.rt.set_fib(bs.FibKey(sw, in_port, label, kind, addr), action)

    def tx(self) -> dict[tuple[int, int], int]:
        assert self.rt is not None
        return {tuple(k): v.tx_packets for k, v in self.rt.read_egress().items()}

    def port_stats(self) -> dict[tuple[int, int], bs.PortInfo]:
        assert self.rt is not None
        return {(p.sw, p.port): p for p in self.rt.read_ports().values()}

    def flows(self, **match: Any) -> list[dict[str, Any]]:
        assert self.rt is not None
        return sorted((f for f in self.rt.read_flows()
                       if all(f[k] == v for k, v in match.items())),
                      key=lambda f: (f["sw"], f["out_port"]))

    def ping(self, src: str, dst: str, count: int = 3, ok: bool = True) -> bool:
        p = subprocess.run(["ip", "netns", "exec", NS[src], "ping", "-n", "-q", "-c",
                            str(count), "-i", "0.2", "-W", "1", IP[dst]],
                           capture_output=True, text=True, timeout=20, check=False)
        if ok:
            assert p.returncode == 0, f"ping {src}->{dst}: {p.stdout}{p.stderr}"
        return p.returncode == 0

    def udp_receiver(self, host: str) -> socket.socket:
        s = ns_socket(host, socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind(("0.0.0.0", UDP_PORT))
        return s

    def udp_send(self, src: str, dst: str, sport: int, count: int, size: int = 100,
                 sizes: tuple[int, ...] = ()) -> None:
        """``count`` datagrams of one flow, paced (20 per 5 ms) so no queue overflows;
        ``sizes`` cycles through payload sizes in place of the one ``size``."""
        s = ns_socket(src, socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind((IP[src], sport))
            for i in range(count):
                n = sizes[i % len(sizes)] if sizes else size
                s.sendto(i.to_bytes(4, "big") + bytes(n - 4), (IP[dst], UDP_PORT))
                if i % 20 == 19:
                    time.sleep(0.005)
        finally:
            s.close()

    def raw(self, host: str) -> socket.socket:
        s = ns_socket(host, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        s.bind(("eth0", 0x0003))               # ETH_P_ALL
        return s


def receive(s: socket.socket, want: int, quiet: float = 0.5) -> list[bytes]:
    """Datagrams until ``want`` arrived or none for ``quiet`` seconds."""
    got: list[bytes] = []
    s.settimeout(quiet)
    while len(got) < want:
        try:
            got.append(s.recv(65536))
        except TimeoutError:
            break
    return got


def tcp_transfer(net: Net, src: str, dst: str, nbytes: int, port: int = 7100) -> tuple[int, float]:
    """Send ``nbytes`` over TCP; (bytes received, seconds from connect to the last byte)."""
    srv = ns_socket(dst, socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((IP[dst], port))
    srv.listen(1)
    srv.settimeout(10)
    got: dict[str, Any] = {}

    def serve() -> None:
        try:
            c, _ = srv.accept()
            c.settimeout(10)
            n = 0
            while True:
                b = c.recv(1 << 16)
                if not b:
                    break
                n += len(b)
            got["n"], got["t"] = n, time.monotonic()
            c.close()
        except OSError as exc:
            got["err"] = exc
    t = threading.Thread(target=serve)
    t.start()
    cli = ns_socket(src, socket.AF_INET, socket.SOCK_STREAM)
    cli.settimeout(10)
    t0 = time.monotonic()
    try:
        cli.connect((IP[dst], port))
        cli.sendall(bytes(nbytes))
        cli.shutdown(socket.SHUT_WR)
        t.join(15)
    finally:
        cli.close()
        srv.close()
    assert "err" not in got, got.get("err")
    return got["n"], got["t"] - t0


@pytest.fixture(scope="module")
def obj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bs.build_program(tmp_path_factory.mktemp("bpf"))


@pytest.fixture
def net(obj: Path) -> Iterator[Net]:
    n = Net(obj)
    try:
        n.create()
        yield n
    finally:
        n.destroy()


def test_plain_forwarding_is_shaped_by_the_egress_htb(net: Net) -> None:
    net.ping("h1", "h2")
    net.ping("h2", "h3")
    got, secs = tcp_transfer(net, "h1", "h2", 1_000_000)
    assert got == 1_000_000
    mbps = 8 * got / secs / 1e6
    print(f"plain: 1 MB h1->h2 at {mbps:.2f} Mb/s")
    # never faster than the 10 Mb/s HTB (a busy host can only make it slower); how close to
    # the link it gets (> 5 Mb/s) is a measurement: bench/bench_test_criteria.py
    # --checks bpf-switch-plain
    assert 0 < mbps < 10.2, f"{mbps:.1f} Mb/s over a 10 Mb/s link"
    # the redirected packets went through the egress HTB of s1 port 2
    q = json.loads(sh("tc", "-n", NS["sw"], "-s", "-j", "qdisc", "show", "dev", "s1-eth2"))
    htb = next(x for x in q if x["kind"] == "htb")
    assert htb["bytes"] >= 1_000_000
    (rec1,) = net.flows(sw=1, daddr=IP["h2"], proto=6)
    (rec2,) = net.flows(sw=2, daddr=IP["h2"], proto=6)
    assert (rec1["out_port"], rec2["out_port"]) == (2, 1)
    # (a tail drop in s1's queue happens after s1 counted the packet)
    assert rec1["packets"] >= rec2["packets"] > 1_000_000 / 1500
    assert rec1["in_label"] == rec1["out_label"] == 0
    stats = net.port_stats()
    assert sum(p.miss_packets for p in stats.values()) == 0
    assert stats[(1, 1)].rx_packets == net.tx()[(1, 2)] > 0   # h1's packets all went to s2


def test_hash_select_puts_different_flows_on_different_links(net: Net) -> None:
    net.fib(1, MAC["h2"], (FWD, bs.MODE_HASH, 0, 1, (2, 3), (0, 0)))
    rx = net.udp_receiver("h2")
    sports = list(range(40000, 40032))
    for sport in sports:
        net.udp_send("h1", "h2", sport, 5)
        time.sleep(0.002)                      # s2's port to h2 queues at most 100
    assert len(receive(rx, 5 * len(sports))) == 5 * len(sports)
    rx.close()
    per_port = {2: 0, 3: 0}
    for sport in sports:
        recs = net.flows(sw=1, sport=sport, proto=17)
        assert len(recs) == 1, recs            # one flow, one link
        want = (2, 3)[bs.flow_hash(SEED[1], IP["h1"], IP["h2"], 17, sport, UDP_PORT) % 2]
        assert recs[0]["out_port"] == want     # the program's hash is flow_hash()
        assert recs[0]["packets"] == 5
        per_port[want] += 5
    print(f"hash: packets per link {per_port}")
    assert per_port[2] > 0 and per_port[3] > 0
    tx = net.tx()
    assert (tx[(1, 2)], tx[(1, 3)]) == (per_port[2], per_port[3])
    # s2 hashes nothing here: everything leaves by its port 1
    assert sum(r["packets"] for r in net.flows(sw=2, proto=17, out_port=1)) == 5 * len(sports)


@pytest.mark.parametrize("mode", ["rnd", "rr", "cnt"])
def test_per_packet_modes_spray_one_flow_over_both_links(net: Net, mode: str) -> None:
    net.fib(1, MAC["h2"], (FWD, bs.MODES[mode], 0, 7, (2, 3), (0, 0)))
    rx = net.udp_receiver("h2")
    n = 400
    net.udp_send("h1", "h2", 41000, n)
    got = receive(rx, n)
    rx.close()
    assert len(got) == n
    recs = {r["out_port"]: r["packets"] for r in net.flows(sw=1, sport=41000)}
    print(f"{mode}: packets of one flow per link {recs}")
    assert set(recs) == {2, 3} and sum(recs.values()) == n, recs
    tx = net.tx()
    assert (tx[(1, 2)], tx[(1, 3)]) == (recs[2], recs[3])
    if mode == "rnd":
        assert min(recs.values()) > 0.3 * n, recs          # binomial: 8 sd margin
    else:   # alternation (rr) and least-bytes (cnt) on equal packets: even to a few
        assert abs(recs[2] - recs[3]) <= 4, recs
    if mode == "rr":
        ((key, last),) = net.rt.read_rr().items()
        assert (key.sw, key.group, key.sport, key.dport) == (1, 7, 41000, UDP_PORT)
        assert last in (0, 1)
    assert len(net.flows(sw=2, sport=41000)) == 1          # s2 joins them again on port 1


@pytest.mark.parametrize("count", ["bytes", "packets"])
def test_cnt_balances_bytes_or_with_the_ablation_flag_packets(net: Net, count: str) -> None:
    """Alternating 1,000-B and 40-B datagrams of one flow: least bytes (the default) keeps
    the two links' bytes within about one large datagram; least packets (CONF_CNT_PACKETS,
    ``bpf,cnt=packets``) alternates the links, so one takes every large datagram."""
    assert net.rt is not None
    net.rt.count_packets(count == "packets")
    assert bool(net.rt.read_conf().flags & bs.CONF_CNT_PACKETS) == (count == "packets")
    net.fib(1, MAC["h2"], (FWD, bs.MODES["cnt"], 0, 7, (2, 3), (0, 0)))
    rx = net.udp_receiver("h2")
    n = 200
    net.udp_send("h1", "h2", 41000, n, sizes=(1000, 40))
    assert len(receive(rx, n)) == n
    rx.close()
    eg = {tuple(k): v for k, v in net.rt.read_egress().items()}
    pkts = (eg[(1, 2)].tx_packets, eg[(1, 3)].tx_packets)
    byts = (eg[(1, 2)].tx_bytes, eg[(1, 3)].tx_bytes)
    print(f"cnt={count}: packets {pkts}, bytes {byts}")
    assert sum(pkts) == n
    if count == "packets":
        assert abs(pkts[0] - pkts[1]) <= 2 and max(byts) > 10 * min(byts), (pkts, byts)
    else:
        assert abs(byts[0] - byts[1]) <= 2 * 1042, (pkts, byts)


def test_label_push_transit_pop(net: Net) -> None:
    label = 100
    # s1: only what comes from h1 (in_port 1, untagged) gets the label: ingress push
    net.fib(1, MAC["h3"], (FWD, 0, 0, 1, (2,), (label,)), in_port=1)
    # s2: no untagged route to h3 any more; only the label carries the packet: transit
    net.fib(2, MAC["h3"], None)
    net.fib(2, MAC["h3"], (FWD, 0, 0, 1, (4,), (0,)), label=label)
    # s3: any tagged packet to h3 is popped on the way out: egress, via the ANY entry
    net.fib(3, MAC["h3"], (FWD, 0, 1, 1, (1,), (0,)), label=bs.LABEL_ANY)
    net.ping("h1", "h3")
    got, _ = tcp_transfer(net, "h1", "h3", 200_000)
    assert got == 200_000
    hops = [(r["sw"], r["in_label"], r["out_label"], r["out_port"])
            for r in net.flows(saddr=IP["h1"], daddr=IP["h3"], proto=6)]
    assert hops == [(1, 0, label, 2), (2, label, label, 4), (3, label, 0, 1)]
    icmp = [(r["sw"], r["in_label"], r["out_label"])
            for r in net.flows(saddr=IP["h1"], daddr=IP["h3"], proto=1)]
    assert icmp == [(1, 0, label), (2, label, label), (3, label, 0)]
    # the way back (h3 -> h1) is untagged on the default entries
    back = net.flows(saddr=IP["h3"], daddr=IP["h1"], proto=6)
    assert [r["sw"] for r in back] == [1, 2, 3] and all(r["out_label"] == 0 for r in back)
    assert sum(p.miss_packets for p in net.port_stats().values()) == 0
    # untagged traffic to h3 entering s2 (from h2) has no entry left there
    assert not net.ping("h2", "h3", count=1, ok=False)
    assert net.port_stats()[(2, 1)].miss_packets >= 1


def test_replicate_reaches_two_hosts_one_copy_labelled(net: Net) -> None:
    for group, ports, push in ((MCAST1, (4, 1), (200, 0)),     # the labelled copy is a clone
                               (MCAST2, (1, 4), (0, 200))):    # the labelled copy is last
        net.fib(1, group, (FWD, 0, 0, 1, (2,), (0,)))
        net.fib(2, group, (REP, 0, 0, 3, ports, push))
        net.fib(3, group, (FWD, 0, 1, 1, (1,), (0,)), label=200)
    r2, r3 = net.udp_receiver("h2"), net.udp_receiver("h3")
    tx = net.raw("h1")
    try:
        tx0 = net.tx()
        for i, group in enumerate((MCAST1, MCAST2)):
            tx.send(udp_frame("h1", group, "255.255.255.255", 42000 + i, b"copy%d" % i))
        # a UDP socket only gets untagged frames: both copies left without a label
        assert sorted(receive(r2, 2)) == [b"copy0", b"copy1"]
        assert sorted(receive(r3, 2)) == [b"copy0", b"copy1"]
        assert receive(r2, 1, quiet=0.2) == [] and receive(r3, 1, quiet=0.2) == []
    finally:
        for s in (r2, r3, tx):
            s.close()
    tx1 = net.tx()
    assert {k: tx1[k] - tx0[k] for k in tx1 if tx1[k] != tx0[k]} == \
        {(1, 2): 2, (2, 1): 2, (2, 4): 2, (3, 1): 2}
    for i in (0, 1):
        recs = [(r["sw"], r["out_port"], r["in_label"], r["out_label"])
                for r in net.flows(sport=42000 + i)]
        assert recs == [(1, 2, 0, 0), (2, 1, 0, 0), (2, 4, 0, 200), (3, 1, 200, 0)]


def test_arp_request_is_routed_by_target_address(net: Net) -> None:
    sh("ip", "-n", NS["h3"], "neigh", "del", IP["h1"], "dev", "eth0")
    raw = net.raw("h3")
    try:
        before = net.port_stats()[(3, 1)].miss_packets
        raw.send(arp_request("h3", IP["h1"]))
        # no ARP entry yet: the broadcast request is a miss, not flooded
        assert not [f for f in receive(raw, 10, quiet=0.3) if f[12:14] == b"\x08\x06"
                    and f[20:22] == b"\x00\x02"]
        assert net.port_stats()[(3, 1)].miss_packets == before + 1
        for sw, port in ((3, 2), (2, 2), (1, 1)):
            net.fib(sw, IP["h1"], (FWD, 0, 0, 1, (port,), (0,)), kind=bs.KIND_ARP)
        tx0 = net.tx()
        raw.send(arp_request("h3", IP["h1"]))
        replies = [f for f in receive(raw, 10, quiet=0.3)
                   if f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x02"]
    finally:
        raw.close()
    assert len(replies) == 1
    assert replies[0][22:28] == mac(MAC["h1"]) and replies[0][28:32] == socket.inet_aton(IP["h1"])
    tx1 = net.tx()
    assert tx1[(2, 1)] == tx0[(2, 1)]        # routed, not flooded: h2 saw nothing
    assert (tx1[(1, 1)] - tx0[(1, 1)], tx1[(3, 1)] - tx0[(3, 1)]) == (1, 1)
    # and the kernel's own resolution works through it
    net.ping("h3", "h1", count=2)
    neigh = sh("ip", "-n", NS["h3"], "neigh", "show", IP["h1"], "dev", "eth0")
    assert MAC["h1"] in neigh


def test_misses_are_dropped_and_counted(net: Net) -> None:
    net.fib(1, "02:00:00:00:00:77", (FWD, 0, 0, 1, (9,), (0,)))   # port 9 has no egress
    rx = net.udp_receiver("h2")
    tx = net.raw("h1")
    try:
        s0, t0 = net.port_stats()[(1, 1)], net.tx()
        frames = [udp_frame("h1", "02:00:00:00:00:99", IP["h2"], 43000, b"x")] * 5   # no entry
        frames += [udp_frame("h1", MAC["h2"], IP["h2"], 43001, b"y", 0x86DD)] * 3   # not IPv4
        frames += [udp_frame("h1", "02:00:00:00:00:77", IP["h2"], 43002, b"z")] * 2  # bad port
        for f in frames:
            tx.send(f)
        time.sleep(0.2)
        assert receive(rx, 1, quiet=0.2) == []
    finally:
        rx.close()
        tx.close()
    s1 = net.port_stats()[(1, 1)]
    assert (s1.rx_packets - s0.rx_packets, s1.miss_packets - s0.miss_packets) == (10, 10)
    assert net.tx() == t0
    assert not net.flows(sport=43000) and not net.flows(sport=43002)


def test_teardown_of_a_crashed_run_removes_everything(net: Net, obj: Path) -> None:
    """A runtime that is never closed (its process died): teardown(dir) finds the program's
    attachments through its pin, detaches them, unmounts and removes the directory."""
    assert net.rt is not None
    pin_dir = net.rt.pin_dir
    assert sorted(net.rt.attached_to()) == sorted(net.intfs)
    for m in net.rt.maps.values():      # what the dead process's exit would have done
        m.close()
    net.rt.maps, net.rt.attached, net.rt = {}, [], None
    done = bs.teardown(pin_dir, NS["sw"])
    assert len(done) == 2, done
    assert str(pin_dir) not in bpf_mounts() and not pin_dir.exists()
    out = sh("tc", "-n", NS["sw"], "filter", "show", "dev", "s1-eth1", "ingress")
    assert out.strip() == ""
    assert bs.teardown(pin_dir, NS["sw"]) == []                        # idempotent
    # the directory is free again: a new runtime loads there and closes cleanly
    with bs.SwitchRuntime(pin_dir, obj, netns=NS["sw"]) as rt:
        rt.attach(["s1-eth1"])
        assert rt.attached_to() == ["s1-eth1"]
    assert not pin_dir.exists()
