"""Work inside the hosts' network namespaces without a process per host.

Bring-up used to fork an ``ethtool``/``ping`` for every interface and host pair: at k=6 (54
hosts, 324 interfaces) that was 1.0 s of offload settings and 2.7 s of all-pairs pings per
network (bench/archive/bench_bringup.py).  Here one short-lived thread enters each namespace in turn
(``setns`` changes only the calling thread's namespace, so the process and its other threads
never leave the root one), opens a socket there, and returns; a socket keeps the namespace
it was made in, so the sockets are then used from any thread.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import re
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

CLONE_NEWNET = 0x40000000
SIOCETHTOOL = 0x8946
ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS, ETHTOOL_GFEATURES, ETHTOOL_SFEATURES = \
    0x37, 0x1B, 0x3A, 0x3B
ETH_SS_FEATURES = 4
ETH_GSTRING_LEN = 32
#: the features ``ethtool -K IF tx off tso off gso off gro off rx off`` turns off, by the
#: kernel's names: tx = every tx-checksum-*, tso = every TCP segmentation (ecn, mangleid,
#: tcp6, accecn: the tcp-segmentation-offload group), gso, gro, rx = rx-checksum
OFF = re.compile(r"tx-checksum-.*|tx-tcp.*-segmentation|tx-generic-segmentation|rx-gro"
                 r"|rx-checksum")

_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def in_namespaces(pids: Iterable[Any], make: Callable[[Any], T],
                  timeout: float = 60.0) -> list[T]:
    """``make(pid)`` called inside the network namespace of each process ``pid`` (a str: a
    namespace file such as /run/netns/NAME; None: the caller's own), in order, on one
    throw-away thread; returns the results.  OSError if that takes longer than
    ``timeout`` s (the thread is left to finish on its own)."""
    pids = list(pids)
    out: list[T] = []
    error: list[BaseException] = []

    def work() -> None:
        try:
            for pid in pids:
                path = "/proc/self/ns/net" if pid is None else \
                    pid if isinstance(pid, str) else f"/proc/{pid}/ns/net"
                with open(path) as ns:    # (/proc/self: the process's, not this thread's)
                    _setns(ns.fileno())
                out.append(make(pid))
        except BaseException as exc:
            error.append(exc)

    t = threading.Thread(target=work, name="netns", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise OSError(f"work in {len(pids)} network namespace(s) still running after "
                      f"{timeout:g} s")
    if error:
        raise error[0]
    return out


def _ethtool(sock: socket.socket, intf: str, request: bytes) -> bytes:
    """One ethtool ioctl on ``intf`` with ``request`` (its struct); returns the struct."""
    buf = ctypes.create_string_buffer(request, len(request))
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL,
                struct.pack("16sP", intf.encode(), ctypes.addressof(buf)))
    return buf.raw


def _feature_names(sock: socket.socket, intf: str) -> list[str]:
    """The kernel's feature names, in bit order (ETH_SS_FEATURES)."""
    info = _ethtool(sock, intf, struct.pack("IIQI", ETHTOOL_GSSET_INFO, 0,
                                            1 << ETH_SS_FEATURES, 0))
    count = struct.unpack("I", info[16:20])[0]
    raw = _ethtool(sock, intf, struct.pack("III", ETHTOOL_GSTRINGS, ETH_SS_FEATURES, count)
                   + bytes(count * ETH_GSTRING_LEN))[12:]
    return [raw[i * ETH_GSTRING_LEN:(i + 1) * ETH_GSTRING_LEN].split(b"\0")[0].decode()
            for i in range(count)]


def _features_off(sock: socket.socket, intf: str, names: list[str]) -> list[str]:
    """Request the OFF features off (ETHTOOL_SFEATURES); returns those still active."""
    bits = [i for i, n in enumerate(names) if OFF.fullmatch(n)]
    blocks = (len(names) + 31) // 32
    valid = [0] * blocks
    for b in bits:
        valid[b // 32] |= 1 << (b % 32)
    _ethtool(sock, intf, struct.pack("II", ETHTOOL_SFEATURES, blocks) +
             b"".join(struct.pack("II", v, 0) for v in valid))
    got = _ethtool(sock, intf, struct.pack("II", ETHTOOL_GFEATURES, blocks) +
                   bytes(16 * blocks))
    active = [struct.unpack("I", got[8 + 16 * k + 8:8 + 16 * k + 12])[0]
              for k in range(blocks)]
    return [names[b] for b in bits if active[b // 32] >> (b % 32) & 1]


RTM_NEWLINK, NLM_F_REQUEST, NLM_F_ACK, NLMSG_ERROR = 16, 1, 4, 2
IFLA_GSO_MAX_SEGS = 40
IFF_UP = 0x1


def _setlink(nl: socket.socket, intf: str, seq: int, flags: int = 0, change: int = 0,
             attrs: bytes = b"") -> None:
    """One acknowledged rtnetlink RTM_NEWLINK on an existing ``intf`` (``ip link set``)."""
    body = struct.pack("BxHiII", socket.AF_UNSPEC, 0, socket.if_nametoindex(intf), flags,
                       change) + attrs
    nl.send(struct.pack("IHHII", 16 + len(body), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK,
                        seq, 0) + body)
    reply = nl.recv(65536)
    _, kind, _, _, _ = struct.unpack("IHHII", reply[:16])
    if kind == NLMSG_ERROR:
        err = struct.unpack("i", reply[16:20])[0]
        if err:
            raise OSError(-err, f"ip link set {intf}: {os.strerror(-err)}")


def _set_gso_max_segs(nl: socket.socket, intf: str, segs: int, seq: int) -> None:
    """``ip link set dev INTF gso_max_segs SEGS``."""
    _setlink(nl, intf, seq, attrs=struct.pack("HHI", 8, IFLA_GSO_MAX_SEGS, segs))


def links_up(where: dict[int | None, list[str]]) -> None:
    """``ip link set dev X up`` for the interfaces of each namespace (pid -> names; None:
    this process's), in one thread."""
    def up(pid: int | None) -> None:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
            for seq, intf in enumerate(where[pid], 1):
                _setlink(nl, intf, seq, flags=IFF_UP, change=IFF_UP)
    in_namespaces(list(where), up)


def offloads_off(where: dict[int | None, list[str]]) -> dict[str, list[str]]:
    """For the interfaces of each namespace (pid -> names; None: this one), in one thread:
    checksum, TSO, GSO and GRO off and ``gso_max_segs`` 1 (why: hostnet.offloads_off); the
    offloads read back after; returns interface -> the ones still on (empty: all off)."""
    def apply(pid: int | None) -> dict[str, list[str]]:
        still: dict[str, list[str]] = {}
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s, \
                socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
            for seq, intf in enumerate(where[pid], 1):
                on = _features_off(s, intf, _feature_names(s, intf))
                _set_gso_max_segs(nl, intf, 1, seq)
                if on:
                    still[intf] = on
        return still
    out: dict[str, list[str]] = {}
    for got in in_namespaces(list(where), apply):
        out.update(got)
    return out


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def _echo(ident: int, seq: int) -> bytes:
    header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    payload = b"dcrepro-reach"
    return struct.pack("!BBHHH", 8, 0, _checksum(header + payload), ident, seq) + payload


def reach_all(hosts: dict[str, tuple[int, str]], timeout: float = 2.0,
              round_gap: float = 0.001) -> list[tuple[str, str]]:
    """All-pairs reachability by ICMP echo through the emulated network: ``hosts`` maps a
    name to (namespace pid, address); returns the (src, dst) pairs with no reply within
    ``timeout`` s of the last request.  One raw socket per host.  The requests go in rounds
    (in round j host i asks host i+j), ``round_gap`` apart, so each host port queues at
    most one request and one reply per round however many hosts there are."""
    names = list(hosts)
    n = len(names)
    if n < 2:
        return []
    socks = in_namespaces([hosts[h][0] for h in names], lambda _: socket.socket(
        socket.AF_INET, socket.SOCK_RAW | socket.SOCK_NONBLOCK, socket.IPPROTO_ICMP))
    ident = {h: (os.getpid() + 7919 * i) & 0xFFFF for i, h in enumerate(names)}
    by_fd = {s.fileno(): i for i, s in enumerate(socks)}
    addr_index = {hosts[h][1]: j for j, h in enumerate(names)}
    missing = {(i, (i + j) % n) for i in range(n) for j in range(1, n)}
    try:
        poller = select.poll()
        for s in socks:
            poller.register(s.fileno(), select.POLLIN)

        def drain(wait_s: float) -> None:
            for fd, _ in poller.poll(max(0, int(wait_s * 1000))):
                i = by_fd[fd]
                while True:
                    try:
                        data, (src, _) = socks[i].recvfrom(2048)
                    except BlockingIOError:
                        break
                    ihl = (data[0] & 0x0F) * 4
                    if len(data) < ihl + 8:
                        continue
                    kind, _, _, rid, _ = struct.unpack("!BBHHH", data[ihl:ihl + 8])
                    if kind == 0 and rid == ident[names[i]] and src in addr_index:
                        missing.discard((i, addr_index[src]))

        for j in range(1, n):
            for i, s in enumerate(socks):
                dst = hosts[names[(i + j) % n]][1]
                try:
                    s.sendto(_echo(ident[names[i]], j), (dst, 0))
                except OSError:
                    pass   # (full buffer, no route, port down): that pair stays missing
            drain(round_gap)
        deadline = time.monotonic() + timeout
        while missing and time.monotonic() < deadline:
            drain(min(0.05, deadline - time.monotonic()))
    finally:
        for s in socks:
            s.close()
    return sorted((names[i], names[k]) for i, k in missing)


RTM_GETTCLASS, NLMSG_DONE, NLM_F_DUMP = 42, 3, 0x300
TCA_KIND, TCA_OPTIONS = 1, 2
TCA_HTB_PARMS, TCA_HTB_RATE64, TCA_HTB_CEIL64 = 1, 6, 7
#: struct tc_htb_opt begins with struct tc_ratespec rate: cell_log, linklayer, overhead,
#: cell_align, mpu, rate (bytes/s, u32)
RATESPEC = struct.Struct("=BBHhHI")


def nl_attrs(data: bytes) -> dict[int, bytes]:
    """Netlink attributes (type -> payload, NLA_F_NESTED cleared) of one level; the caller
    parses nested ones."""
    out: dict[int, bytes] = {}
    i = 0
    while i + 4 <= len(data):
        length, kind = struct.unpack_from("HH", data, i)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[i + 4:i + length]
        i += (length + 3) & ~3
    return out


class HtbClass(NamedTuple):
    """One HTB class as the kernel holds it: rate (bit/s) and its two buckets (bytes)."""

    rate: float
    burst: float
    cburst: float


#: struct tc_htb_opt: rate and ceil (struct tc_ratespec each), then buffer and cbuffer: the
#: buckets as the time to send them at rate and ceil, in psched ticks of 64 ns
#: (PSCHED_SHIFT 6: the kernel keeps ns and reports ns >> 6)
HTB_BUFFERS = struct.Struct("=II")
HTB_BUFFERS_AT = 2 * RATESPEC.size
PSCHED_TICK_NS = 64


def burst_resolution(rate_bps: float) -> float:
    """Bytes a burst read back may differ from the one asked (two 64-ns ticks of the
    rate: tc rounds the bucket down to a tick, the kernel's report drops a tick's
    remainder), plus one byte."""
    return 2 * PSCHED_TICK_NS * rate_bps / 8e9 + 1


def _htb_class_rates(nl: socket.socket, intf: str, seq: int) -> list[HtbClass]:
    """Every HTB class on ``intf`` (rate and buckets): one RTM_GETTCLASS dump."""
    body = struct.pack("BxxxiIII", socket.AF_UNSPEC, socket.if_nametoindex(intf), 0, 0, 0)
    nl.send(struct.pack("IHHII", 16 + len(body), RTM_GETTCLASS, NLM_F_REQUEST | NLM_F_DUMP,
                        seq, 0) + body)
    rates: list[HtbClass] = []
    while True:
        data = nl.recv(65536)
        i = 0
        while i + 16 <= len(data):
            length, kind, _, _, _ = struct.unpack_from("IHHII", data, i)
            if kind == NLMSG_DONE:
                return rates
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("i", data, i + 16)[0]
                raise OSError(-err, f"tc class show dev {intf}: {os.strerror(-err)}")
            attrs = nl_attrs(data[i + 16 + 20:i + length])
            if attrs.get(TCA_KIND, b"").rstrip(b"\0") == b"htb" and TCA_OPTIONS in attrs:
                opts = nl_attrs(attrs[TCA_OPTIONS])
                if TCA_HTB_RATE64 in opts:
                    rate = struct.unpack("Q", opts[TCA_HTB_RATE64][:8])[0]
                else:
                    rate = RATESPEC.unpack_from(opts[TCA_HTB_PARMS])[5]
                ceil = RATESPEC.unpack_from(opts[TCA_HTB_PARMS], RATESPEC.size)[5]
                if TCA_HTB_CEIL64 in opts:
                    ceil = struct.unpack("Q", opts[TCA_HTB_CEIL64][:8])[0]
                buf, cbuf = HTB_BUFFERS.unpack_from(opts[TCA_HTB_PARMS], HTB_BUFFERS_AT)
                rates.append(HtbClass(8.0 * rate, buf * PSCHED_TICK_NS * rate / 1e9,
                                      cbuf * PSCHED_TICK_NS * ceil / 1e9))
            i += (length + 3) & ~3


def htb_rates(where: dict[int | None, list[str]]) -> dict[str, list[float]]:
    """The rates (bit/s) of the HTB classes of each interface, read from the kernel (``tc
    class show``), for the interfaces of each namespace (pid -> names; None: this one)."""
    return {intf: [c.rate for c in cs] for intf, cs in htb_classes(where).items()}


def htb_classes(where: dict[int | None, list[str]]) -> dict[str, list[HtbClass]]:
    """The HTB classes (rate, burst, cburst) of each interface, as htb_rates reads them."""
    def read(pid: int | None) -> dict[str, list[HtbClass]]:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
            return {intf: _htb_class_rates(nl, intf, seq)
                    for seq, intf in enumerate(where[pid], 1)}
    out: dict[str, list[HtbClass]] = {}
    for got in in_namespaces(list(where), read):
        out.update(got)
    return out


RTM_GETQDISC, TCA_STATS, TC_H_ROOT = 38, 3, 0xFFFFFFFF
#: struct tc_stats (TCA_STATS): bytes (u64), packets, drops, overlimits, bps, pps, qlen,
#: backlog (u32 each)
TC_STATS = struct.Struct("=QIIIIIII")


def root_qlen(nl: socket.socket, ifindex: int, timeout: float = 5.0) -> int | None:
    """Packets in the root qdisc of ``ifindex`` now (the kernel's qdisc_qlen_sum: HTB's
    q.qlen, every packet of its tree), read from the rtnetlink socket ``nl`` in-process
    (about a hundred microseconds, where a ``tc`` process takes tens of milliseconds); None
    if the device has no root qdisc.  socket.timeout past ``timeout``.  The kernel dumps
    every qdisc either way, so this is root_qlens' answer for one device."""
    return root_qlens(nl, timeout).get(ifindex)


def root_qlens(nl: socket.socket, timeout: float = 5.0) -> dict[int, int]:
    """ifindex -> packets in its root qdisc now, for every device of ``nl``'s namespace
    that has one: one RTM_GETQDISC dump (the kernel dumps every qdisc either way).
    socket.timeout past ``timeout``."""
    nl.settimeout(timeout)
    body = struct.pack("BxxxiIII", socket.AF_UNSPEC, 0, 0, 0, 0)
    nl.send(struct.pack("IHHII", 16 + len(body), RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP,
                        1, 0) + body)
    found: dict[int, int] = {}
    while True:
        data = nl.recv(1 << 16)
        i = 0
        while i + 16 <= len(data):
            length, kind, _, _, _ = struct.unpack_from("IHHII", data, i)
            if length < 16 or kind == NLMSG_DONE:
                return found
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("i", data, i + 16)[0]
                raise OSError(-err, f"qdisc dump: {os.strerror(-err)}")
            _, dev, _, parent, _ = struct.unpack_from("BxxxiIII", data, i + 16)
            if parent == TC_H_ROOT:
                stats = nl_attrs(data[i + 16 + 20:i + length]).get(TCA_STATS)
                if stats is not None and len(stats) >= TC_STATS.size:
                    found[dev] = TC_STATS.unpack_from(stats)[6]
            i += (length + 3) & ~3


RTM_GETTFILTER = 46
#: clsact's ingress hook as a filter parent: TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)
TC_H_CLSACT_INGRESS = 0xFFFFFFF2
#: TCA_OPTIONS of a "bpf" filter: the kernel id of the program it runs (linux/pkt_cls.h)
TCA_BPF_ID = 11


def parse_bpf_filters(data: bytes) -> tuple[list[int], bool, int]:
    """The program ids of the "bpf" filters in one recv of an RTM_GETTFILTER dump, whether
    the dump ended in it, and the negative errno of an error message (0: none)."""
    ids: list[int] = []
    i = 0
    while i + 16 <= len(data):
        length, kind, _, _, _ = struct.unpack_from("IHHII", data, i)
        if length < 16 or kind == NLMSG_DONE:
            return ids, True, 0
        if kind == NLMSG_ERROR:
            return ids, True, struct.unpack_from("i", data, i + 16)[0]
        attrs = nl_attrs(data[i + 16 + 20:i + length])
        if attrs.get(TCA_KIND, b"").rstrip(b"\0") == b"bpf" and TCA_OPTIONS in attrs:
            got = nl_attrs(attrs[TCA_OPTIONS]).get(TCA_BPF_ID)
            if got is not None and len(got) >= 4:
                ids.append(struct.unpack_from("I", got)[0])
        i += (length + 3) & ~3
    return ids, False, 0


def ingress_bpf_ids(intfs: Iterable[str], timeout: float = 5.0) -> dict[str, list[int]]:
    """Per interface of this namespace: the ids of the BPF programs its clsact ingress hook
    runs ([] when it has none or the interface is gone).  One RTM_GETTFILTER dump each on
    one rtnetlink socket, in-process: what ``bpftool net show`` tells, for only these
    interfaces and without a process that walks every device of the namespace."""
    out: dict[str, list[int]] = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
        nl.settimeout(timeout)
        for seq, intf in enumerate(intfs, 1):
            try:
                index = socket.if_nametoindex(intf)
            except OSError:
                out[intf] = []            # the interface is gone: nothing runs there
                continue
            body = struct.pack("BxxxiIII", socket.AF_UNSPEC, index, 0, TC_H_CLSACT_INGRESS, 0)
            nl.send(struct.pack("IHHII", 16 + len(body), RTM_GETTFILTER,
                                NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body)
            ids: list[int] = []
            while True:
                got, done, err = parse_bpf_filters(nl.recv(1 << 16))
                ids += got
                if err and -err not in (errno.EINVAL, errno.ENOENT, errno.ENODEV):
                    raise OSError(-err, f"tc filter show dev {intf} ingress: "
                                        f"{os.strerror(-err)}")
                if done:
                    break
            out[intf] = ids
    return out
