"""The userspace path manager's netlink encoding and decoding, against layouts written out by
hand from the kernel's uapi (linux/netlink.h, linux/genetlink.h, linux/mptcp_pm.h)."""
from __future__ import annotations

import socket
import struct

from emulator import mptcp_pm as pm


def _attr(kind: int, payload: bytes) -> bytes:
    return struct.pack("=HH", 4 + len(payload), kind) + payload + b"\0" * (-len(payload) % 4)


def test_subflow_create_message_layout() -> None:
    attrs = (pm.nla(pm.ATTR_TOKEN, struct.pack("=I", 0xDEADBEEF))
             + pm.addr_attr(pm.ATTR_ADDR, "10.0.1.130", 3)
             + pm.addr_attr(pm.ATTR_ADDR_REMOTE, "10.0.2.2", port=5201))
    msg = pm.genl_message(0x1F, pm.CMD_SUBFLOW_CREATE, attrs, 7, pm.NLM_F_REQUEST | pm.NLM_F_ACK)
    length, family, flags, seq, pid = struct.unpack_from("=IHHII", msg)
    assert (length, family, flags, seq, pid) == (len(msg), 0x1F, 5, 7, 0)
    assert msg[16:20] == bytes([10, 1, 0, 0])          # cmd 10, version 1, reserved
    # token: 8 bytes; local: nested header + family (8) + addr4 (8) + id (8, padded)
    assert msg[20:28] == struct.pack("=HHI", 8, 4, 0xDEADBEEF)
    assert struct.unpack_from("=HH", msg, 28) == (4 + 24, 1 | 0x8000)
    assert msg[32:40] == struct.pack("=HHH", 6, 1, socket.AF_INET) + b"\0\0"
    assert msg[40:48] == struct.pack("=HH", 8, 3) + bytes([10, 0, 1, 130])
    assert msg[48:56] == struct.pack("=HHB", 5, 2, 3) + b"\0\0\0"
    # remote: family, addr4, port in host order (the kernel applies htons), no id
    assert struct.unpack_from("=HH", msg, 56) == (4 + 24, 6 | 0x8000)
    assert msg[76:84] == struct.pack("=HHH", 6, 5, 5201) + b"\0\0"
    assert len(msg) == 84


def test_parse_error_with_extended_ack_message() -> None:
    request = pm.genl_message(0x1F, pm.CMD_SUBFLOW_CREATE, b"", 3, 5)
    text = b"invalid token\0"
    payload = struct.pack("=i", -22) + request + _attr(pm.NLMSGERR_ATTR_MSG, text)
    assert pm.parse_error(pm.NLM_F_ACK_TLVS, payload) == (22, "invalid token")
    # capped: only the request's header is echoed
    capped = struct.pack("=i", -22) + request[:16] + _attr(pm.NLMSGERR_ATTR_MSG, text)
    assert pm.parse_error(pm.NLM_F_ACK_TLVS | pm.NLM_F_CAPPED, capped) == (22, "invalid token")
    assert pm.parse_error(0, struct.pack("=i", 0) + request) == (0, "")


def test_split_messages_two_in_one_datagram() -> None:
    a = pm.genl_message(20, 2, b"abc", 1, 0)   # 23 bytes, padded to 24 on the wire
    b = pm.genl_message(21, 3, b"", 2, 0)
    got = pm.split_messages(a + b"\0" + b)
    assert [(k, s) for k, _f, s, _p in got] == [(20, 1), (21, 2)]
    assert got[0][3][4:] == b"abc"


def test_parse_family_reply() -> None:
    grp = _attr(1, _attr(pm.CTRL_ATTR_MCAST_GRP_NAME, b"mptcp_pm_events\0")
                + _attr(pm.CTRL_ATTR_MCAST_GRP_ID, struct.pack("=I", 9)))
    payload = (_attr(pm.CTRL_ATTR_FAMILY_NAME, b"mptcp_pm\0")
               + _attr(pm.CTRL_ATTR_FAMILY_ID, struct.pack("=H", 0x1F))
               + _attr(pm.CTRL_ATTR_MCAST_GROUPS | 0x8000, grp))
    assert pm.parse_family(payload) == (0x1F, {"mptcp_pm_events": 9})


def test_parse_established_event_client_and_server_side() -> None:
    attrs = (_attr(pm.EA_TOKEN, struct.pack("=I", 1234))
             + _attr(pm.EA_SADDR4, bytes([10, 0, 1, 1]))
             + _attr(pm.EA_DADDR4, bytes([10, 0, 2, 1]))
             + _attr(pm.EA_SPORT, struct.pack("!H", 40000))    # be16 on the wire
             + _attr(pm.EA_DPORT, struct.pack("!H", 5201)))
    ev = pm.parse_event(bytes([pm.EV_ESTABLISHED, 1, 0, 0]) + attrs)
    assert ev == pm.Event(pm.EV_ESTABLISHED, 1234, "10.0.1.1", "10.0.2.1", 40000, 5201)
    assert ev.name == "established" and not ev.server_side
    side = pm.parse_event(bytes([pm.EV_ESTABLISHED, 1, 0, 0]) + attrs
                          + _attr(pm.EA_SERVER_SIDE, b"\1"))
    flags = pm.parse_event(bytes([pm.EV_ESTABLISHED, 1, 0, 0]) + attrs
                           + _attr(pm.EA_FLAGS, struct.pack("=I", 2)))
    assert side.server_side and flags.server_side
