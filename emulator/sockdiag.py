"""tcp_info of the TCP sockets in a host's network namespace, read in-process over sock_diag.

Why not `ss`: a look at every sender every half second would fork and exec one `mnexec ...
ss` per host and sample (54 processes a look at k=6, seconds each on a loaded CPU).  A
NETLINK_SOCK_DIAG socket is bound to the network namespace it was created in, so one socket
per host, made once by a thread that joined the host's namespace, answers every later dump
from this process: no process per look, a few hundred microseconds per host.

What a dump returns per socket (``SockInfo``): the 4-tuple, the TCP state, ``struct
tcp_info`` (include/uapi/linux/tcp.h, decoded up to the fields this kernel fills) and the
socket's memory (INET_DIAG_SKMEMINFO: ``wmem_alloc`` is what TCP Small Queues counts).
For MPTCP, a dump of the connection-level sockets (``dump(..., mptcp=True)``) gives each
connection's ``struct mptcp_info`` instead: its data-level sequence numbers and byte counters.
Decoding is pure (``parse``, ``request``), unit-tested on packed bytes.
"""
from __future__ import annotations

import os
import socket
import struct
from collections.abc import Sequence
from typing import NamedTuple

from .netns import in_namespaces, nl_attrs

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
INET_DIAG_INFO, INET_DIAG_SKMEMINFO = 2, 7
#: MPTCP's connection-level sockets answer a dump for IPPROTO_MPTCP, a number too large for
#: the request's one-byte protocol: the request names it in an INET_DIAG_REQ_PROTOCOL
#: attribute (u32), and INET_DIAG_INFO then holds ``struct mptcp_info``
IPPROTO_MPTCP, INET_DIAG_REQ_PROTOCOL = 262, 3
#: the socket's upper-layer protocol (include/uapi/linux/inet_diag.h), sent to a caller with
#: CAP_NET_ADMIN: nested INET_ULP_INFO_NAME and, for an MPTCP subflow, INET_ULP_INFO_MPTCP
#: with the MPTCP_SUBFLOW_ATTR_* of include/uapi/linux/mptcp.h
INET_DIAG_ULP_INFO = 19
INET_ULP_INFO_NAME, INET_ULP_INFO_MPTCP = 1, 3
MPTCP_SUBFLOW_ATTR_TOKEN_REM, MPTCP_SUBFLOW_ATTR_TOKEN_LOC = 1, 2
TCP_ESTABLISHED = 1

NLMSGHDR = struct.Struct("=IHHII")          # len, type, flags, seq, pid (host order)
#: inet_diag_req_v2: family, protocol, ext, pad, states, sockid (sport, dport: big-endian
#: bytes; src[4], dst[4], if, cookie[2])
REQ_V2 = struct.Struct("=BBBxI2s2s16s16sI8s")
#: inet_diag_msg: family, state, timer, retrans, sockid, expires, rqueue, wqueue, uid, inode
DIAG_MSG = struct.Struct("=BBBB2s2s16s16sI8sIIIII")
RTATTR = struct.Struct("=HH")               # len, type
V4_MAPPED = bytes(10) + b"\xff\xff"          # ::ffff:a.b.c.d, an IPv4 peer of an IPv6 socket

#: struct tcp_info field by field (name, struct code); the byte of wscale bit fields and the
#: one of app_limited/fastopen are kept whole
TCP_INFO_FIELDS: tuple[tuple[str, str], ...] = (
    ("state", "B"), ("ca_state", "B"), ("retransmits", "B"), ("probes", "B"),
    ("backoff", "B"), ("options", "B"), ("wscale", "B"), ("app_limited_bits", "B"),
    ("rto", "I"), ("ato", "I"), ("snd_mss", "I"), ("rcv_mss", "I"),
    ("unacked", "I"), ("sacked", "I"), ("lost", "I"), ("retrans", "I"), ("fackets", "I"),
    ("last_data_sent", "I"), ("last_ack_sent", "I"), ("last_data_recv", "I"),
    ("last_ack_recv", "I"),
    ("pmtu", "I"), ("rcv_ssthresh", "I"), ("rtt", "I"), ("rttvar", "I"),
    ("snd_ssthresh", "I"), ("snd_cwnd", "I"), ("advmss", "I"), ("reordering", "I"),
    ("rcv_rtt", "I"), ("rcv_space", "I"), ("total_retrans", "I"),
    ("pacing_rate", "Q"), ("max_pacing_rate", "Q"), ("bytes_acked", "Q"),
    ("bytes_received", "Q"), ("segs_out", "I"), ("segs_in", "I"),
    ("notsent_bytes", "I"), ("min_rtt", "I"), ("data_segs_in", "I"), ("data_segs_out", "I"),
    ("delivery_rate", "Q"), ("busy_time", "Q"), ("rwnd_limited", "Q"),
    ("sndbuf_limited", "Q"), ("delivered", "I"), ("delivered_ce", "I"),
    ("bytes_sent", "Q"), ("bytes_retrans", "Q"), ("dsack_dups", "I"), ("reord_seen", "I"),
    ("rcv_ooopack", "I"), ("snd_wnd", "I"),
)
TCP_INFO = struct.Struct("=" + "".join(code for _, code in TCP_INFO_FIELDS))
#: struct mptcp_info (include/uapi/linux/mptcp.h) with the C compiler's padding spelled out
#: (name None); the data-level sequence numbers and byte counters of one MPTCP connection
MPTCP_INFO_FIELDS: tuple[tuple[str | None, str], ...] = (
    ("subflows", "B"), ("add_addr_signal", "B"), ("add_addr_accepted", "B"),
    ("subflows_max", "B"), ("add_addr_signal_max", "B"), ("add_addr_accepted_max", "B"),
    (None, "2x"), ("flags", "I"), ("token", "I"),
    ("write_seq", "Q"), ("snd_una", "Q"), ("rcv_nxt", "Q"),
    ("local_addr_used", "B"), ("local_addr_max", "B"), ("csum_enabled", "B"), (None, "x"),
    ("retransmits", "I"), ("bytes_retrans", "Q"), ("bytes_sent", "Q"),
    ("bytes_received", "Q"), ("bytes_acked", "Q"), ("subflows_total", "B"), (None, "3x"),
    ("last_data_sent", "I"), ("last_data_recv", "I"), ("last_ack_recv", "I"),
)
MPTCP_INFO = struct.Struct("=" + "".join(code for _, code in MPTCP_INFO_FIELDS))
#: SK_MEMINFO_* (include/uapi/linux/sock_diag.h), in order
SKMEM_FIELDS = ("rmem_alloc", "rcvbuf", "wmem_alloc", "sndbuf", "fwd_alloc", "wmem_queued",
                "optmem", "backlog", "drops")


class SockInfo(NamedTuple):
    """One TCP socket of a dump: addresses (dotted IPv4), TCP state, tcp_info fields (a dict;
    fields the kernel did not fill are absent) and memory (SKMEM_FIELDS; {} if not sent)."""

    saddr: str
    sport: int
    daddr: str
    dport: int
    state: int
    info: dict[str, int]
    mem: dict[str, int]
    #: an MPTCP subflow's tokens: {"token_rem": .., "token_loc": ..}; None for plain TCP
    mptcp: dict[str, int] | None = None

    def in_flight(self) -> int | None:
        """Packets in flight as TCP counts them (tcp_packets_in_flight): unacked - sacked -
        lost + retransmitted."""
        i = self.info
        if "unacked" not in i:
            return None
        return i["unacked"] - i["sacked"] - i["lost"] + i["retrans"]


def request(states: int = 1 << TCP_ESTABLISHED, seq: int = 1,
            family: int = socket.AF_INET, mptcp: bool = False) -> bytes:
    """A SOCK_DIAG_BY_FAMILY dump request for TCP sockets in ``states`` (a TCPF_* mask),
    with tcp_info and the memory counters; ``mptcp``: for MPTCP connection-level sockets
    instead, with their mptcp_info."""
    ext = (1 << (INET_DIAG_INFO - 1)) | (0 if mptcp else 1 << (INET_DIAG_SKMEMINFO - 1))
    body = REQ_V2.pack(family, socket.IPPROTO_TCP, ext, states, bytes(2), bytes(2), bytes(16),
                       bytes(16), 0, bytes(8))
    if mptcp:
        body += RTATTR.pack(RTATTR.size + 4, INET_DIAG_REQ_PROTOCOL) + \
            struct.pack("=I", IPPROTO_MPTCP)
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY,
                         NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body


class DiagError(OSError):
    """The kernel answered the dump with an error."""


def _align4(n: int) -> int:
    return (n + 3) & ~3


def _fields(raw: bytes, fields: Sequence[tuple[str | None, str]]) -> dict[str, int]:
    """The fields that fit in ``raw`` (an older kernel sends a shorter struct); a field
    named None is padding."""
    out: dict[str, int] = {}
    off = 0
    for name, code in fields:
        size = struct.calcsize("=" + code)
        if off + size > len(raw):
            break
        if name is not None:
            out[name] = struct.unpack_from("=" + code, raw, off)[0]
        off += size
    return out


def _tcp_info(raw: bytes) -> dict[str, int]:
    """The tcp_info fields in ``raw``."""
    return _fields(raw, TCP_INFO_FIELDS)


def _mptcp_info(raw: bytes) -> dict[str, int]:
    """The mptcp_info fields in ``raw``."""
    return _fields(raw, MPTCP_INFO_FIELDS)


def _mptcp_tokens(ulp: bytes) -> dict[str, int] | None:
    """An MPTCP subflow's tokens from an INET_DIAG_ULP_INFO payload (None: not MPTCP)."""
    nested = nl_attrs(ulp)
    if nested.get(INET_ULP_INFO_NAME, b"").rstrip(b"\0") != b"mptcp" or \
            INET_ULP_INFO_MPTCP not in nested:
        return None
    sub = nl_attrs(nested[INET_ULP_INFO_MPTCP])
    out = {}
    for key, attr in (("token_rem", MPTCP_SUBFLOW_ATTR_TOKEN_REM),
                      ("token_loc", MPTCP_SUBFLOW_ATTR_TOKEN_LOC)):
        if len(sub.get(attr, b"")) >= 4:
            out[key] = struct.unpack_from("=I", sub[attr], 0)[0]
    return out


def parse(data: bytes, mptcp: bool = False) -> tuple[list[SockInfo], bool]:
    """Sockets in one read of a dump's answer, and whether the dump is done (NLMSG_DONE).
    DiagError on an NLMSG_ERROR with a non-zero code.  ``mptcp``: the answer to an MPTCP
    request (request(mptcp=True)), whose ``info`` is mptcp_info."""
    socks: list[SockInfo] = []
    done = False
    off = 0
    decode = _mptcp_info if mptcp else _tcp_info
    while off + NLMSGHDR.size <= len(data):
        length, kind, _, _, _ = NLMSGHDR.unpack_from(data, off)
        if length < NLMSGHDR.size or off + length > len(data):
            break
        body = data[off + NLMSGHDR.size: off + length]
        off += _align4(length)
        if kind == NLMSG_DONE:
            done = True
            break
        if kind == NLMSG_ERROR:
            code = struct.unpack_from("=i", body, 0)[0]
            if code:
                raise DiagError(-code, f"sock_diag dump: {os.strerror(-code)}")
            continue
        if kind != SOCK_DIAG_BY_FAMILY or len(body) < DIAG_MSG.size:
            continue
        (family, state, _, _, sport, dport, src, dst, _, _, _, _, _, _, _) = \
            DIAG_MSG.unpack_from(body, 0)
        if family == socket.AF_INET:
            src, dst = src[:4], dst[:4]
        elif family == socket.AF_INET6 and src[:12] == V4_MAPPED and dst[:12] == V4_MAPPED:
            # a dual-stack socket (iperf3's server listens on "::") with IPv4 peers
            src, dst = src[12:], dst[12:]
        else:
            continue
        attrs = nl_attrs(body[DIAG_MSG.size:])
        info = decode(attrs[INET_DIAG_INFO]) if INET_DIAG_INFO in attrs else {}
        mem: dict[str, int] = {}
        if INET_DIAG_SKMEMINFO in attrs:
            raw = attrs[INET_DIAG_SKMEMINFO]
            n = min(len(SKMEM_FIELDS), len(raw) // 4)
            mem = dict(zip(SKMEM_FIELDS, struct.unpack_from(f"={n}I", raw, 0)))
        tokens = _mptcp_tokens(attrs[INET_DIAG_ULP_INFO]) if INET_DIAG_ULP_INFO in attrs \
            else None
        socks.append(SockInfo(socket.inet_ntoa(src), int.from_bytes(sport, "big"),
                              socket.inet_ntoa(dst), int.from_bytes(dport, "big"),
                              state, info, mem, tokens))
    return socks, done


def netns_sockets(pids: list[int]) -> list[socket.socket]:
    """A sock_diag netlink socket in the network namespace of each process in ``pids`` (a
    Mininet host's shell), made by netns.in_namespaces on one thread, so this process stays
    where it is."""
    return in_namespaces(pids, lambda _: socket.socket(
        socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG), timeout=10)


def dump(sock: socket.socket, states: int = 1 << TCP_ESTABLISHED,
         timeout: float = 5.0, mptcp: bool = False) -> list[SockInfo]:
    """Every IPv4 TCP socket in ``states`` of the namespace ``sock`` was made in; ``mptcp``:
    every MPTCP connection-level socket with IPv4 ends instead (``info``: mptcp_info), those
    of IPv6 sockets with IPv4-mapped peers included: a server listening on "::" (iperf3's
    default) accepts its connections as IPv6 sockets."""
    sock.settimeout(timeout)
    out: list[SockInfo] = []
    for family in (socket.AF_INET, socket.AF_INET6) if mptcp else (socket.AF_INET,):
        sock.sendto(request(states, family=family, mptcp=mptcp), (0, 0))
        while True:
            data = sock.recv(1 << 16)
            socks, done = parse(data, mptcp)
            out += socks
            if done or not data:
                break
    return out


class HostSockets:
    """One sock_diag socket per host (pid) for repeated dumps; a context manager."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.socks = dict(zip(pids, netns_sockets(list(pids.values()))))

    def __enter__(self) -> HostSockets:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def dump(self) -> dict[str, list[SockInfo]]:
        """Established TCP sockets of every host."""
        return {name: dump(s) for name, s in self.socks.items()}

    def dump_mptcp(self) -> dict[str, list[SockInfo]]:
        """Established MPTCP connection-level sockets of every host (info: mptcp_info)."""
        return {name: dump(s, mptcp=True) for name, s in self.socks.items()}

    def close(self) -> None:
        """Close every socket (idempotent)."""
        for s in self.socks.values():
            s.close()
        self.socks = {}
