"""The in-process reading of a port's ingress BPF filters (emulator.netns.parse_bpf_filters),
on netlink messages built by hand as the kernel lays them out (linux/rtnetlink.h, pkt_cls.h)."""
from __future__ import annotations

import struct

from emulator import netns as N


def _attr(kind: int, payload: bytes) -> bytes:
    data = struct.pack("HH", 4 + len(payload), kind) + payload
    return data + b"\0" * (-len(data) % 4)


def _filter(kind: bytes, prog_id: int | None, ifindex: int = 7) -> bytes:
    """One RTM_NEWTFILTER message of a dump: tcmsg, TCA_KIND, TCA_OPTIONS{TCA_BPF_ID}."""
    tcm = struct.pack("BxxxiIII", 0, ifindex, 1, N.TC_H_CLSACT_INGRESS, 0)
    opts = _attr(N.TCA_BPF_ID, struct.pack("I", prog_id)) if prog_id is not None else b""
    body = tcm + _attr(N.TCA_KIND, kind + b"\0") + _attr(N.TCA_OPTIONS, opts)
    return struct.pack("IHHII", 16 + len(body), 44, 2, 1, 0) + body


def _done() -> bytes:
    return struct.pack("IHHII", 20, N.NLMSG_DONE, 2, 1, 0) + struct.pack("i", 0)


def test_bpf_filters_give_their_program_ids_and_the_dump_ends_at_done():
    # the chain's own entry (no options) and a non-bpf filter give no id
    ids, done, err = N.parse_bpf_filters(_filter(b"bpf", None) + _filter(b"bpf", 24380)
                                         + _filter(b"u32", 5) + _done())
    assert (ids, done, err) == ([24380], True, 0)


def test_a_dump_split_over_two_reads_is_not_done_after_the_first():
    assert N.parse_bpf_filters(_filter(b"bpf", 9)) == ([9], False, 0)


def test_an_error_message_is_returned_as_its_errno():
    err = struct.pack("IHHII", 36, N.NLMSG_ERROR, 0, 1, 0) + struct.pack("i", -2) + bytes(16)
    assert N.parse_bpf_filters(err) == ([], True, -2)
