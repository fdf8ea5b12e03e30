"""The switch ports' queues watched during a run, as their links are: through the kernel's
rtnetlink events.

Bring-up shapes every switch port with a root HTB (or TBF) ``1:`` and a pfifo ``10:`` under
class ``1:1`` (shaping.tc_lines), reads it back, and only then opens the event socket
(Emulation._up), so every qdisc or class message that arrives on it is a change somebody
else made: nothing of the run writes to a switch port's queue after bring-up (the reads,
``tc -s`` and the in-process dumps, are answered to their asker alone, never broadcast).
Netlink delivers a broadcast to the sockets subscribed at the time of the change, so none
of bring-up's own messages can be queued on a socket opened after it.  Should the socket
overflow (ENOBUFS: messages lost), ``qdisc_dump`` reads every port's qdiscs back and
``full_look`` compares them with what bring-up installed.

The clsact qdisc on a port's ingress is the bpf dataplane's hook, not a queue: its
program's attachment is the dataplane's own check (Dataplane.check_alive).
"""
from __future__ import annotations

import os
import socket
import struct
from typing import NamedTuple

from .netns import NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, RATESPEC, nl_attrs

RTMGRP_LINK, RTMGRP_TC = 0x1, 0x8
RTM_NEWLINK, RTM_DELLINK = 16, 17
RTM_NEWQDISC, RTM_DELQDISC, RTM_GETQDISC, RTM_NEWTCLASS, RTM_DELTCLASS = 36, 37, 38, 40, 41
TCA_KIND, TCA_OPTIONS = 1, 2
TC_H_ROOT = 0xFFFFFFFF
#: the parent of clsact and ingress qdiscs (TC_H_INGRESS = TC_H_CLSACT)
TC_H_INGRESS = 0xFFFFFFF1
#: the handles shaping.tc_lines gives a port's root ("1:") and its pfifo leaf ("10:")
ROOT_HANDLE, LEAF_HANDLE = 0x10000, 0x100000
#: the rate of an HTB class's or a TBF qdisc's options: the 64-bit attribute when the rate
#: needs it (TCA_HTB_RATE64, TCA_TBF_RATE64), else struct tc_ratespec at the head of
#: TCA_*_PARMS (attribute 1 for both)
RATE64 = {"htb": 6, "tbf": 4}
#: struct tcmsg: family, pad, pad, ifindex, handle, parent, info
TCMSG = struct.Struct("BxxxiIII")
#: at most this many reads per look: a flood of events cannot hold the watch
MAX_READS = 256


class TcMsg(NamedTuple):
    """One qdisc or class message: its RTM_* type and its struct tcmsg and TCA_* fields."""

    type: int
    ifindex: int
    handle: int
    parent: int
    kind: str
    options: bytes


class Events(NamedTuple):
    """What one read of the event socket brought."""

    links: bool              # a link changed (RTM_NEWLINK / RTM_DELLINK)
    queues: list[TcMsg]      # qdisc and class messages, in order
    lost: bool = False       # the socket overflowed (ENOBUFS): some were lost


class Port(NamedTuple):
    """A shaped switch port as bring-up left it."""

    intf: str                # 3_3_1-eth4
    what: str                # 3_3_1 port 4 (to 4_2_2)
    rate_mbit: float         # its shaper's rate


def parse_tc(data: bytes) -> tuple[list[TcMsg], bool, bool, int]:
    """The qdisc and class messages in one read of rtnetlink; whether a link message was
    among them; whether a dump ended in it; the negative errno of an error message (0:
    none).  Other messages (filters, addresses) are skipped."""
    msgs: list[TcMsg] = []
    links = False
    i = 0
    while i + 16 <= len(data):
        length, kind, _, _, _ = struct.unpack_from("IHHII", data, i)
        if length < 16 or kind == NLMSG_DONE:
            return msgs, links, True, 0
        if kind == NLMSG_ERROR:
            return msgs, links, True, struct.unpack_from("i", data, i + 16)[0]
        links = links or kind in (RTM_NEWLINK, RTM_DELLINK)
        if kind in (RTM_NEWQDISC, RTM_DELQDISC, RTM_NEWTCLASS, RTM_DELTCLASS) \
                and length >= 16 + TCMSG.size:
            _, ifindex, handle, parent, _ = TCMSG.unpack_from(data, i + 16)
            attrs = nl_attrs(data[i + 16 + TCMSG.size:i + length])
            msgs.append(TcMsg(kind, ifindex, handle, parent,
                              attrs.get(TCA_KIND, b"").rstrip(b"\0").decode(errors="replace"),
                              attrs.get(TCA_OPTIONS, b"")))
        i += (length + 3) & ~3
    return msgs, links, False, 0


def read_events(s: socket.socket | None) -> Events:
    """Everything pending on the non-blocking event socket ``s`` (never waits)."""
    queues: list[TcMsg] = []
    links = False
    if s is None:
        return Events(False, queues)
    for _ in range(MAX_READS):
        try:
            data = s.recv(1 << 16)
        except BlockingIOError:
            break
        except OSError:           # ENOBUFS: messages were lost, so look at everything
            return Events(True, queues, True)
        if not data:
            break
        got, link, _, _ = parse_tc(data)
        queues += got
        links = links or link
    return Events(links, queues)


def qdisc_dump(timeout: float = 5.0) -> list[TcMsg]:
    """Every qdisc of this network namespace, read from the kernel (one RTM_GETQDISC dump on
    a socket of its own); socket.timeout past ``timeout``."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
        nl.settimeout(timeout)
        body = TCMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
        nl.send(struct.pack("IHHII", 16 + len(body), RTM_GETQDISC,
                            NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + body)
        out: list[TcMsg] = []
        while True:
            got, _, done, err = parse_tc(nl.recv(1 << 16))
            out += got
            if err:
                raise OSError(-err, f"qdisc dump: {os.strerror(-err)}")
            if done:
                return out


def handle_text(h: int) -> str:
    """A tc handle as tc writes it: 1:, 1:1, 10:."""
    return f"{h >> 16:x}:" + (f"{h & 0xFFFF:x}" if h & 0xFFFF else "")


def fifo_limit(m: TcMsg) -> int | None:
    """The limit of a pfifo (packets) or bfifo (bytes): struct tc_fifo_qopt."""
    if m.kind in ("pfifo", "bfifo") and len(m.options) >= 4:
        return int(struct.unpack_from("I", m.options)[0])
    return None


def shaper_rate(m: TcMsg) -> float | None:
    """The rate (Mb/s) of an HTB class or a TBF qdisc from its options; None for others."""
    is_class = m.type in (RTM_NEWTCLASS, RTM_DELTCLASS)
    at = RATE64.get(m.kind)
    # HTB's rate is its class's (the root qdisc's options hold none), TBF's its qdisc's
    if at is None or is_class != (m.kind == "htb"):
        return None
    opts = nl_attrs(m.options)
    if len(opts.get(at, b"")) >= 8:
        return struct.unpack_from("Q", opts[at])[0] * 8 / 1e6
    if len(opts.get(1, b"")) >= RATESPEC.size:
        return int(RATESPEC.unpack_from(opts[1])[5]) * 8 / 1e6
    return None


def _name(m: TcMsg) -> str:
    """"root qdisc htb 1:", "qdisc pfifo 10:", "class htb 1:1"."""
    if m.type in (RTM_NEWTCLASS, RTM_DELTCLASS):
        return f"class {m.kind} {handle_text(m.handle)}"
    root = m.parent == TC_H_ROOT or m.handle == ROOT_HANDLE
    return f"{'root ' if root else ''}qdisc {m.kind} {handle_text(m.handle)}"


def _was(name: str, old: float, new: float | None, unit: str) -> str:
    if new is None:
        return ""
    if abs(new - old) > 1e-6 * max(old, 1):
        return f", {name} {old:g} -> {new:g}{unit}"
    return f" ({name} still {old:g}{unit})"


def queue_fault(msgs: list[TcMsg], ports: dict[int, Port], limit: int) -> str | None:
    """The one-line cause for the first message that changed a watched port's queue (pure):
    ``ports`` by ifindex, ``limit`` the pfifo's packets as bring-up set them.  A deletion
    followed in the same read by a new qdisc under the same parent is one replacement."""
    for i, m in enumerate(msgs):
        port = ports.get(m.ifindex)
        if port is None or m.parent == TC_H_INGRESS or m.handle >> 16 == 0xFFFF:
            continue             # not a watched port, or its clsact (not a queue)
        head = f"the queue of link {port.what} was"
        where = f"its {_name(m)} on {port.intf}"
        if m.type in (RTM_DELQDISC, RTM_DELTCLASS):
            new = next((n for n in msgs[i + 1:] if m.type == RTM_DELQDISC
                        and n.type == RTM_NEWQDISC and n.ifindex == m.ifindex
                        and n.parent == m.parent), None)
            if new is not None:
                return (f"{head} replaced during the run: {where} is now {new.kind} "
                        f"{handle_text(new.handle)}")
            return f"{head} deleted during the run: {where}"
        detail = ""
        if fifo_limit(m) is not None and m.handle == LEAF_HANDLE:
            detail = _was("limit", limit, fifo_limit(m), "")
        elif shaper_rate(m) is not None:
            detail = _was("rate", port.rate_mbit, shaper_rate(m), " Mb/s")
        return f"{head} changed during the run: {where}{detail}"
    return None


def full_look(qdiscs: list[TcMsg], ports: dict[int, Port], shaper: str,
              limit: int) -> str | None:
    """The one-line cause for the first watched port whose qdiscs (a whole dump) are not what
    bring-up installed: root ``shaper`` 1:, pfifo 10: of ``limit`` packets (pure).  The HTB
    class's rate is not in a qdisc dump: the read-back after the traffic checks it."""
    for ifindex, port in ports.items():
        mine = [m for m in qdiscs if m.ifindex == ifindex]
        root = next((m for m in mine if m.parent == TC_H_ROOT), None)
        leaf = next((m for m in mine if m.handle == LEAF_HANDLE), None)
        head = f"the queue of link {port.what} was"
        if root is None or root.handle != ROOT_HANDLE or root.kind != shaper:
            now = f"{root.kind} {handle_text(root.handle)}" if root else "none"
            if root is None or root.kind == "noqueue":
                return (f"{head} deleted during the run: its root qdisc {shaper} 1: on "
                        f"{port.intf} is gone (root now {now})")
            return (f"{head} replaced during the run: its root qdisc {shaper} 1: on "
                    f"{port.intf} is now {now}")
        if leaf is None or leaf.kind != "pfifo":
            return (f"{head} deleted during the run: its qdisc pfifo 10: on {port.intf} "
                    "is gone")
        if fifo_limit(leaf) != limit:
            return (f"{head} changed during the run: its qdisc pfifo 10: on {port.intf}"
                    f"{_was('limit', limit, fifo_limit(leaf), '')}")
    return None


def event_socket() -> socket.socket | None:
    """A non-blocking rtnetlink socket that receives every link change and every qdisc and
    class change of this network namespace (the switches' ports live here), or None if it
    cannot be opened."""
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_NONBLOCK,
                          socket.NETLINK_ROUTE)
    except OSError:
        return None
    try:
        s.bind((0, RTMGRP_LINK | RTMGRP_TC))
    except OSError:
        s.close()
        return None
    return s

