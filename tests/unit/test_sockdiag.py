"""sock_diag decoding without root: a dump answer packed by hand (as the kernel lays it out)
decodes to the sockets, tcp_info fields and memory counters it holds; a short tcp_info (an
older kernel) keeps the fields it has; an error answer raises; a real dump of this process's
own loopback sockets finds them."""
import socket
import struct

import pytest

from emulator import sockdiag as sd


def _attr(kind: int, payload: bytes) -> bytes:
    a = sd.RTATTR.pack(sd.RTATTR.size + len(payload), kind) + payload
    return a + bytes(-len(a) % 4)


def diag_message(saddr: str, sport: int, daddr: str, dport: int, info: dict[str, int],
                 mem: tuple[int, ...] = (), info_len: int | None = None,
                 family: int = socket.AF_INET, ulp: bytes = b"") -> bytes:
    """One SOCK_DIAG_BY_FAMILY message as the kernel sends it."""
    values = [info.get(name, 0) for name, _ in sd.TCP_INFO_FIELDS]
    raw_info = sd.TCP_INFO.pack(*values)[:info_len]
    body = sd.DIAG_MSG.pack(family, 1, 0, 0, sport.to_bytes(2, "big"), dport.to_bytes(2, "big"),
                            socket.inet_aton(saddr) + bytes(12),
                            socket.inet_aton(daddr) + bytes(12), 0, bytes(8), 0, 0, 0, 0, 0)
    attrs = b""
    for kind, payload in ((sd.INET_DIAG_INFO, raw_info),
                          (sd.INET_DIAG_SKMEMINFO, struct.pack(f"={len(mem)}I", *mem)),
                          (sd.INET_DIAG_ULP_INFO | 0x8000, ulp)):     # NLA_F_NESTED set
        if not payload:
            continue
        a = sd.RTATTR.pack(sd.RTATTR.size + len(payload), kind) + payload
        attrs += a + bytes(-len(a) % 4)
    body += attrs
    return sd.NLMSGHDR.pack(sd.NLMSGHDR.size + len(body), sd.SOCK_DIAG_BY_FAMILY, 2, 1, 0) + body


def done() -> bytes:
    return sd.NLMSGHDR.pack(sd.NLMSGHDR.size + 4, sd.NLMSG_DONE, 2, 1, 0) + bytes(4)


def test_tcp_info_layout_is_the_kernels():
    # include/uapi/linux/tcp.h: snd_cwnd at 80, busy_time at 168, snd_wnd at 228, 232 bytes
    offsets, off = {}, 0
    for name, code in sd.TCP_INFO_FIELDS:
        offsets[name] = off
        off += struct.calcsize("=" + code)
    assert (offsets["unacked"], offsets["snd_cwnd"], offsets["bytes_acked"]) == (24, 80, 120)
    assert (offsets["busy_time"], offsets["rwnd_limited"], offsets["sndbuf_limited"]) == \
        (168, 176, 184)
    assert offsets["snd_wnd"] == 228 and sd.TCP_INFO.size == 232


def test_a_dump_answer_decodes_to_its_sockets():
    info = {"snd_cwnd": 21, "unacked": 20, "sacked": 1, "lost": 2, "retrans": 1,
            "bytes_acked": 2**40, "busy_time": 5_000_000, "rwnd_limited": 7, "snd_wnd": 65535}
    data = (diag_message("10.0.0.2", 40000, "10.0.0.1", 5201, info, mem=tuple(range(9))) +
            diag_message("10.0.0.2", 40001, "10.0.0.1", 5201, {"snd_cwnd": 10}) + done())
    socks, finished = sd.parse(data)
    assert finished and len(socks) == 2
    a = socks[0]
    assert (a.saddr, a.sport, a.daddr, a.dport, a.state) == ("10.0.0.2", 40000, "10.0.0.1",
                                                             5201, 1)
    assert {k: a.info[k] for k in info} == info
    assert a.in_flight() == 20 - 1 - 2 + 1
    assert a.mem["wmem_alloc"] == 2 and a.mem["drops"] == 8
    assert socks[1].mem == {} and socks[1].info["snd_cwnd"] == 10


def test_a_shorter_tcp_info_keeps_what_it_has():
    data = diag_message("1.2.3.4", 1, "5.6.7.8", 2, {"snd_cwnd": 3, "busy_time": 9},
                        info_len=104) + done()
    (s,), _ = sd.parse(data)
    assert s.info["snd_cwnd"] == 3 and "busy_time" not in s.info and "total_retrans" in s.info


def test_an_ipv6_socket_with_ipv4_mapped_ends_reads_as_ipv4_a_native_one_is_skipped():
    def message(src: bytes, dst: bytes) -> bytes:
        body = sd.DIAG_MSG.pack(socket.AF_INET6, 1, 0, 0, (5201).to_bytes(2, "big"),
                                (40000).to_bytes(2, "big"), src, dst, 0, bytes(8), 0, 0, 0,
                                0, 0)
        return sd.NLMSGHDR.pack(sd.NLMSGHDR.size + len(body), sd.SOCK_DIAG_BY_FAMILY, 2, 1,
                                0) + body
    mapped = message(sd.V4_MAPPED + socket.inet_aton("10.2.1.2"),
                     sd.V4_MAPPED + socket.inet_aton("10.0.0.2"))
    native = message(socket.inet_pton(socket.AF_INET6, "fe80::1"),
                     socket.inet_pton(socket.AF_INET6, "fe80::2"))
    socks, _ = sd.parse(mapped + native + done())
    assert [(s.saddr, s.sport, s.daddr, s.dport) for s in socks] == [
        ("10.2.1.2", 5201, "10.0.0.2", 40000)]


def test_non_ipv4_and_partial_reads_are_skipped_and_not_done():
    data = diag_message("1.2.3.4", 1, "5.6.7.8", 2, {}, family=socket.AF_INET6)
    socks, finished = sd.parse(data + data[:10])
    assert socks == [] and not finished


def test_an_error_answer_raises():
    err = sd.NLMSGHDR.pack(sd.NLMSGHDR.size + 4, sd.NLMSG_ERROR, 0, 1, 0) + struct.pack("=i", -1)
    with pytest.raises(sd.DiagError):
        sd.parse(err)


def test_the_request_asks_for_tcp_info_and_memory_of_established_tcp():
    req = sd.request()
    length, kind, flags, _, _ = sd.NLMSGHDR.unpack_from(req)
    assert length == len(req) == sd.NLMSGHDR.size + sd.REQ_V2.size == 72
    assert kind == sd.SOCK_DIAG_BY_FAMILY and flags & sd.NLM_F_DUMP
    family, proto, ext, states = struct.unpack_from("=BBBxI", req, sd.NLMSGHDR.size)
    assert (family, proto, states) == (socket.AF_INET, socket.IPPROTO_TCP, 2)
    assert ext == (1 << 1) | (1 << 6)


def test_a_real_dump_finds_this_processes_loopback_connection():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    cli = socket.create_connection(srv.getsockname())
    acc, _ = srv.accept()
    try:
        cli.sendall(b"x" * 10000)
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, sd.NETLINK_SOCK_DIAG)
        with nl:
            socks = sd.dump(nl)
        port = cli.getsockname()[1]
        mine = [s for s in socks if s.sport == port and s.dport == srv.getsockname()[1]]
        assert len(mine) == 1 and mine[0].info["snd_cwnd"] >= 1
        assert mine[0].info["bytes_acked"] >= 1 and "wmem_alloc" in mine[0].mem
    finally:
        for s in (cli, acc, srv):
            s.close()


def test_an_mptcp_subflow_carries_its_tokens():
    """INET_DIAG_ULP_INFO (nested: name "mptcp", then the subflow's attributes) gives the
    remote and local tokens; a socket without it, or with another ULP, is plain TCP."""
    mptcp = _attr(sd.INET_ULP_INFO_NAME, b"mptcp\0") + _attr(
        sd.INET_ULP_INFO_MPTCP | 0x8000,
        _attr(sd.MPTCP_SUBFLOW_ATTR_TOKEN_REM, struct.pack("=I", 0)) +
        _attr(sd.MPTCP_SUBFLOW_ATTR_TOKEN_LOC, struct.pack("=I", 0x7071CC93)) +
        _attr(8, struct.pack("=I", 5)))                     # flags: ignored
    tls = _attr(sd.INET_ULP_INFO_NAME, b"tls\0")
    data = (diag_message("10.0.0.2", 40000, "10.0.0.1", 5201, {"bytes_acked": 9}, ulp=mptcp) +
            diag_message("10.0.0.2", 40001, "10.0.0.1", 5201, {}, ulp=tls) +
            diag_message("10.0.0.2", 40002, "10.0.0.1", 5201, {}) + done())
    socks, _ = sd.parse(data)
    assert socks[0].mptcp == {"token_rem": 0, "token_loc": 0x7071CC93}
    assert socks[0].info["bytes_acked"] == 9
    assert socks[1].mptcp is None and socks[2].mptcp is None


def test_mptcp_info_layout_is_the_kernels():
    # include/uapi/linux/mptcp.h with C padding: flags at 8, write_seq at 16, retransmits at
    # 44, bytes_received at 64, bytes_acked at 72, last_ack_recv at 92: 96 bytes
    offsets, off = {}, 0
    for name, code in sd.MPTCP_INFO_FIELDS:
        if name:
            offsets[name] = off
        off += struct.calcsize("=" + code)
    assert (offsets["flags"], offsets["write_seq"], offsets["retransmits"]) == (8, 16, 44)
    assert (offsets["bytes_received"], offsets["bytes_acked"]) == (64, 72)
    assert offsets["last_ack_recv"] == 92 and sd.MPTCP_INFO.size == 96


def test_an_mptcp_request_names_the_protocol_in_an_attribute():
    """IPPROTO_MPTCP (262) does not fit the request's protocol byte: it goes in an
    INET_DIAG_REQ_PROTOCOL attribute after the request, which asks for the info only."""
    req = sd.request(mptcp=True)
    length, _, flags, _, _ = sd.NLMSGHDR.unpack_from(req)
    assert length == len(req) == 72 + 8 and flags & sd.NLM_F_DUMP
    _, _, ext, _ = struct.unpack_from("=BBBxI", req, sd.NLMSGHDR.size)
    assert ext == 1 << (sd.INET_DIAG_INFO - 1)
    alen, kind = sd.RTATTR.unpack_from(req, 72)
    assert (alen, kind, struct.unpack_from("=I", req, 76)[0]) == \
        (8, sd.INET_DIAG_REQ_PROTOCOL, sd.IPPROTO_MPTCP)


def test_an_mptcp_answer_decodes_to_mptcp_info():
    values = {"subflows": 7, "token": 0xABCD, "write_seq": 2**63 + 5, "snd_una": 2**63,
              "bytes_received": 123456789, "bytes_acked": 987654321, "last_ack_recv": 4}
    raw = sd.MPTCP_INFO.pack(*[values.get(n, 0) for n, _ in sd.MPTCP_INFO_FIELDS if n])
    body = sd.DIAG_MSG.pack(socket.AF_INET, 1, 0, 0, (40000).to_bytes(2, "big"),
                            (5202).to_bytes(2, "big"), socket.inet_aton("10.0.0.1") + bytes(12),
                            socket.inet_aton("10.0.0.2") + bytes(12), 0, bytes(8), 0, 0, 0, 0, 0)
    body += _attr(sd.INET_DIAG_INFO, raw)
    msg = sd.NLMSGHDR.pack(sd.NLMSGHDR.size + len(body), sd.SOCK_DIAG_BY_FAMILY, 2, 1, 0) + body
    socks, finished = sd.parse(msg + done(), mptcp=True)
    assert finished and len(socks) == 1 and socks[0].dport == 5202
    assert {k: socks[0].info[k] for k in values} == values


def test_a_real_mptcp_dump_counts_this_processes_bytes():
    """Both ends of a loopback MPTCP connection: the receiver's connection counts the bytes
    it took in, the sender's the bytes it sent.  The server listens on "::" as iperf3's
    does, so its end is an IPv6 socket with an IPv4-mapped peer, and the dump finds it."""
    try:
        srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM, sd.IPPROTO_MPTCP)
    except OSError:
        pytest.skip("no MPTCP sockets on this kernel")
    srv.bind(("::", 0))
    srv.listen()
    cli = socket.socket(socket.AF_INET, socket.SOCK_STREAM, sd.IPPROTO_MPTCP)
    cli.connect(("127.0.0.1", srv.getsockname()[1]))
    acc, _ = srv.accept()
    try:
        cli.sendall(b"x" * 100_000)
        got = 0
        while got < 100_000:
            got += len(acc.recv(65536))
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, sd.NETLINK_SOCK_DIAG)
        with nl:
            conns = sd.dump(nl, mptcp=True)
        port = srv.getsockname()[1]
        sender = [c for c in conns if c.dport == port and c.sport == cli.getsockname()[1]]
        receiver = [c for c in conns if c.sport == port and c.dport == cli.getsockname()[1]]
        assert len(sender) == 1 and sender[0].info["bytes_sent"] == 100_000
        assert len(receiver) == 1 and receiver[0].info["bytes_received"] == 100_000
    finally:
        for s in (cli, acc, srv):
            s.close()
