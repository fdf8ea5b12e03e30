"""The queue watch (emulator.queuewatch): qdisc and class messages built by hand as the kernel
lays them out (linux/rtnetlink.h, pkt_sched.h; the layouts checked against what a veth's
tc changes broadcast on RTMGRP_TC), and the one-line cause decided from them."""
from __future__ import annotations

import errno
import socket
import struct

from emulator import queuewatch as Q
from emulator.netns import NLMSG_DONE, NLMSG_ERROR, RATESPEC

PORTS = {7: Q.Port("3_3_1-eth4", "3_3_1 port 4 (to 4_2_2)", 10.0),
         8: Q.Port("3_3_1-eth3", "3_3_1 port 3 (to 4_2_1)", 10.0)}
WHO = "the queue of link 3_3_1 port 4 (to 4_2_2) was"


def _attr(kind: int, payload: bytes) -> bytes:
    data = struct.pack("HH", 4 + len(payload), kind) + payload
    return data + b"\0" * (-len(data) % 4)


def _msg(kind: int, body: bytes) -> bytes:
    return struct.pack("IHHII", 16 + len(body), kind, 0, 0, 0) + body


def _tc(kind: int, tc_kind: bytes, handle: int, parent: int, opts: bytes = b"",
        ifindex: int = 7) -> bytes:
    """One qdisc or class message: struct tcmsg, TCA_KIND, TCA_OPTIONS."""
    body = struct.pack("BxxxiIII", 0, ifindex, handle, parent, 1) + \
        _attr(Q.TCA_KIND, tc_kind + b"\0") + _attr(Q.TCA_OPTIONS, opts)
    return _msg(kind, body)


def _pfifo(limit: int, kind: int = Q.RTM_NEWQDISC, parent: int = 0x10001,
           ifindex: int = 7) -> bytes:
    return _tc(kind, b"pfifo", Q.LEAF_HANDLE, parent, struct.pack("I", limit), ifindex)


def _rate(mbit: float) -> bytes:
    """TCA_*_PARMS beginning with struct tc_ratespec (bytes/s), as HTB and TBF send it."""
    return _attr(1, RATESPEC.pack(0, 1, 0, -1, 0, int(mbit * 1e6 / 8)) + bytes(24))


def _parse(data: bytes) -> list[Q.TcMsg]:
    return Q.parse_tc(data)[0]


HTB_ROOT = _tc(Q.RTM_NEWQDISC, b"htb", Q.ROOT_HANDLE, Q.TC_H_ROOT, _attr(2, bytes(20)))
HTB_CLASS = _tc(Q.RTM_NEWTCLASS, b"htb", 0x10001, Q.TC_H_ROOT, _rate(10))
CLSACT = _tc(Q.RTM_NEWQDISC, b"clsact", 0xFFFF0000, Q.TC_H_INGRESS)


def test_parse_keeps_qdiscs_and_classes_and_notes_a_link_message():
    link = _msg(Q.RTM_NEWLINK, bytes(16))
    bpf_filter = _tc(44, b"bpf", 1, Q.TC_H_INGRESS)
    msgs, links, done, err = Q.parse_tc(link + HTB_ROOT + bpf_filter + _pfifo(100)
                                        + _tc(Q.RTM_DELTCLASS, b"htb", 0x10001, Q.TC_H_ROOT))
    assert (links, done, err) == (True, False, 0)
    assert [(m.type, m.ifindex, m.kind, Q.handle_text(m.handle)) for m in msgs] == [
        (36, 7, "htb", "1:"), (36, 7, "pfifo", "10:"), (41, 7, "htb", "1:1")]
    assert Q.fifo_limit(msgs[1]) == 100 and Q.fifo_limit(msgs[0]) is None


def test_a_dump_ends_at_done_and_an_error_is_its_errno():
    done = struct.pack("IHHII", 20, NLMSG_DONE, 2, 1, 0) + struct.pack("i", 0)
    assert Q.parse_tc(HTB_ROOT + done)[1:] == (False, True, 0)
    err = struct.pack("IHHII", 36, NLMSG_ERROR, 0, 1, 0) + struct.pack("i", -1) + bytes(16)
    assert Q.parse_tc(err) == ([], False, True, -1)


def test_messages_of_bring_up_would_name_nothing_once_the_ports_are_not_watched():
    bring_up = _parse(HTB_ROOT + HTB_CLASS + _pfifo(100) + CLSACT)
    assert Q.queue_fault(bring_up, {}, 100) is None


def test_a_deleted_root_qdisc_names_the_link_and_the_interface():
    got = Q.queue_fault(_parse(_tc(Q.RTM_DELQDISC, b"htb", Q.ROOT_HANDLE, Q.TC_H_ROOT)),
                        PORTS, 100)
    assert got == f"{WHO} deleted during the run: its root qdisc htb 1: on 3_3_1-eth4"


def test_a_deleted_class_or_leaf_is_a_deletion_too():
    got = Q.queue_fault(_parse(_tc(Q.RTM_DELTCLASS, b"htb", 0x10001, Q.TC_H_ROOT)), PORTS, 100)
    assert got == f"{WHO} deleted during the run: its class htb 1:1 on 3_3_1-eth4"
    got = Q.queue_fault(_parse(_pfifo(100, Q.RTM_DELQDISC)), PORTS, 100)
    assert got == f"{WHO} deleted during the run: its qdisc pfifo 10: on 3_3_1-eth4"


def test_a_changed_limit_says_from_what_to_what():
    # `tc qdisc change dev X handle 10: pfifo limit 5`: the kernel reports parent 0
    got = Q.queue_fault(_parse(_pfifo(5, parent=0)), PORTS, 100)
    assert got == f"{WHO} changed during the run: its qdisc pfifo 10: on 3_3_1-eth4, limit 100 -> 5"
    got = Q.queue_fault(_parse(_pfifo(100)), PORTS, 100)
    assert got == f"{WHO} changed during the run: its qdisc pfifo 10: on 3_3_1-eth4 (limit still 100)"


def test_a_changed_rate_of_the_htb_class_or_the_tbf_root():
    got = Q.queue_fault(_parse(_tc(Q.RTM_NEWTCLASS, b"htb", 0x10001, Q.TC_H_ROOT, _rate(5))),
                        PORTS, 100)
    assert got == f"{WHO} changed during the run: its class htb 1:1 on 3_3_1-eth4, rate 10 -> 5 Mb/s"
    rate64 = _rate(0) + _attr(Q.RATE64["tbf"], struct.pack("Q", int(25e9 / 8)))
    got = Q.queue_fault(_parse(_tc(Q.RTM_NEWQDISC, b"tbf", Q.ROOT_HANDLE, Q.TC_H_ROOT,
                                   rate64)), PORTS, 100)
    assert got == (f"{WHO} changed during the run: its root qdisc tbf 1: on 3_3_1-eth4, "
                   "rate 10 -> 25000 Mb/s")
    # an HTB root's options hold no rate: "changed" and no more
    got = Q.queue_fault(_parse(HTB_ROOT), PORTS, 100)
    assert got == f"{WHO} changed during the run: its root qdisc htb 1: on 3_3_1-eth4"


def test_a_deletion_and_a_new_qdisc_under_the_same_parent_are_one_replacement():
    # `tc qdisc replace dev X parent 1:1 handle 20: bfifo limit 5000`
    msgs = _parse(_pfifo(100, Q.RTM_DELQDISC)
                  + _tc(Q.RTM_NEWQDISC, b"bfifo", 0x200000, 0x10001, struct.pack("I", 5000)))
    got = Q.queue_fault(msgs, PORTS, 100)
    assert got == f"{WHO} replaced during the run: its qdisc pfifo 10: on 3_3_1-eth4 is now bfifo 20:"


def test_clsact_and_unwatched_interfaces_are_not_queues_of_the_run():
    msgs = _parse(_tc(Q.RTM_DELQDISC, b"clsact", 0xFFFF0000, Q.TC_H_INGRESS)
                  + _tc(Q.RTM_DELQDISC, b"htb", Q.ROOT_HANDLE, Q.TC_H_ROOT, ifindex=99))
    assert Q.queue_fault(msgs, PORTS, 100) is None
    # the first change of a watched port is the one named
    got = Q.queue_fault(msgs + _parse(_pfifo(5, ifindex=8)), PORTS, 100)
    assert got is not None and "3_3_1 port 3 (to 4_2_1)" in got and "3_3_1-eth3" in got


def _dump(root: bytes = HTB_ROOT, leaf: bytes | None = None) -> list[Q.TcMsg]:
    """A qdisc dump of both watched ports: port 7's root and leaf as given."""
    leaf = _pfifo(100) if leaf is None else leaf
    other = _tc(Q.RTM_NEWQDISC, b"htb", Q.ROOT_HANDLE, Q.TC_H_ROOT, ifindex=8) \
        + _pfifo(100, ifindex=8)
    return _parse(root + leaf + CLSACT + other)


def test_the_full_look_after_an_overflow_compares_with_bring_up():
    assert Q.full_look(_dump(), PORTS, "htb", 100) is None
    noqueue = _tc(Q.RTM_NEWQDISC, b"noqueue", 0, Q.TC_H_ROOT)
    assert Q.full_look(_dump(noqueue, b""), PORTS, "htb", 100) == (
        f"{WHO} deleted during the run: its root qdisc htb 1: on 3_3_1-eth4 is gone "
        "(root now noqueue 0:)")
    tbf = _tc(Q.RTM_NEWQDISC, b"tbf", Q.ROOT_HANDLE, Q.TC_H_ROOT)
    assert Q.full_look(_dump(tbf), PORTS, "htb", 100) == (
        f"{WHO} replaced during the run: its root qdisc htb 1: on 3_3_1-eth4 is now tbf 1:")
    assert Q.full_look(_dump(leaf=b""), PORTS, "htb", 100) == (
        f"{WHO} deleted during the run: its qdisc pfifo 10: on 3_3_1-eth4 is gone")
    assert Q.full_look(_dump(leaf=_pfifo(5)), PORTS, "htb", 100) == (
        f"{WHO} changed during the run: its qdisc pfifo 10: on 3_3_1-eth4, limit 100 -> 5")


def test_read_events_drains_what_is_pending_without_waiting():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with a, b:
        b.setblocking(False)
        a.send(_msg(Q.RTM_DELLINK, bytes(16)))
        a.send(_pfifo(5))
        got = Q.read_events(b)
        assert got.links and not got.lost and [m.kind for m in got.queues] == ["pfifo"]
        assert Q.read_events(b) == Q.Events(False, [])
    assert Q.read_events(None) == Q.Events(False, [])


class _Overflowed:
    """A socket whose queue overflowed: the kernel answers the next read with ENOBUFS."""

    def recv(self, _n: int) -> bytes:
        raise OSError(errno.ENOBUFS, "No buffer space available")


def test_an_overflow_is_reported_as_lost_events_and_a_link_look():
    assert Q.read_events(_Overflowed()) == Q.Events(True, [], True)  # type: ignore[arg-type]
