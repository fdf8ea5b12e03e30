"""A userspace MPTCP path manager: opens the subflows a run designs, beyond the in-kernel
path manager's limit of 8 additional subflows.

The kernel's userspace path manager (``net.mptcp.path_manager=userspace`` in a namespace)
opens no subflow by itself: a program learns of each connection from the ``mptcp_pm``
generic-netlink family's multicast group (MPTCP_EVENT_ESTABLISHED carries the token and the
addresses) and asks for each subflow with MPTCP_PM_CMD_SUBFLOW_CREATE (token, local address
and id, remote address and port).  Neither the command (net/mptcp/pm_userspace.c,
``mptcp_pm_nl_subflow_create_doit``) nor the accepting side (net/mptcp/pm.c,
``mptcp_pm_allow_new_subflow``: a userspace-managed connection takes every MP_JOIN while
``mptcp_userspace_pm_active``, i.e. while some socket of the namespace listens on the
events group) applies ``subflows_max``; the accepting side therefore also needs a listener.

Everything runs in this process: one thread serves every namespace through sockets made
inside them (netns.in_namespaces), so nothing outlives a run, also after SIGKILL (the
sockets close with the process).  Numbers and attribute layouts are the kernel's uapi
(include/uapi/linux/mptcp_pm.h, linux/genetlink.h, linux/netlink.h).
"""
from __future__ import annotations

import errno
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .netns import in_namespaces, nl_attrs

NETLINK_GENERIC = 16
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
NETLINK_EXT_ACK = 11
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLM_F_CAPPED, NLM_F_ACK_TLVS = 0x100, 0x200
NLMSGERR_ATTR_MSG = 1
NLA_F_NESTED = 0x8000
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME, CTRL_ATTR_MCAST_GROUPS = 1, 2, 7
CTRL_ATTR_MCAST_GRP_NAME, CTRL_ATTR_MCAST_GRP_ID = 1, 2

FAMILY = "mptcp_pm"
EVENTS_GROUP = "mptcp_pm_events"
#: MPTCP_PM_CMD_*
CMD_ANNOUNCE, CMD_SUBFLOW_CREATE = 8, 10
#: MPTCP_PM_ATTR_*
ATTR_ADDR, ATTR_TOKEN, ATTR_LOC_ID, ATTR_ADDR_REMOTE = 1, 4, 5, 6
#: MPTCP_PM_ADDR_ATTR_*
ADDR_FAMILY, ADDR_ID, ADDR_ADDR4, ADDR_PORT, ADDR_FLAGS = 1, 2, 3, 5, 6
#: MPTCP_EVENT_*
EV_CREATED, EV_ESTABLISHED, EV_CLOSED = 1, 2, 3
EV_SUB_ESTABLISHED, EV_SUB_CLOSED = 10, 11
EVENT_NAMES = {1: "created", 2: "established", 3: "closed", 6: "announced", 7: "removed",
               10: "sub_established", 11: "sub_closed", 13: "sub_priority",
               15: "listener_created", 16: "listener_closed"}
#: MPTCP_ATTR_* of events
EA_TOKEN, EA_LOC_ID, EA_REM_ID, EA_SADDR4, EA_DADDR4, EA_SPORT, EA_DPORT = 1, 3, 4, 5, 7, 9, 10
EA_ERROR, EA_FLAGS, EA_SERVER_SIDE = 12, 13, 18
MPTCP_PM_EV_FLAG_SERVER_SIDE = 1 << 1


class PmError(OSError):
    """The kernel refused a path-manager request: errno and its extended-ack message."""


def nla(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    head = struct.pack("=HH", 4 + len(payload), kind)
    return head + payload + b"\0" * (-len(payload) % 4)


def addr_attr(kind: int, ip: str, ident: int | None = None, port: int = 0) -> bytes:
    """A nested MPTCP_PM_ADDR_ATTR_* address (IPv4): family, address, and id / port when
    given (the port in host order: the kernel applies htons)."""
    inner = nla(ADDR_FAMILY, struct.pack("=H", socket.AF_INET))
    inner += nla(ADDR_ADDR4, socket.inet_aton(ip))
    if ident is not None:
        inner += nla(ADDR_ID, struct.pack("=B", ident))
    if port:
        inner += nla(ADDR_PORT, struct.pack("=H", port))
    return nla(kind | NLA_F_NESTED, inner)


def genl_message(family: int, cmd: int, attrs: bytes, seq: int, flags: int) -> bytes:
    """nlmsghdr + genlmsghdr (version 1) + attributes."""
    body = struct.pack("=BBH", cmd, 1, 0) + attrs
    return struct.pack("=IHHII", 16 + len(body), family, flags, seq, 0) + body


def split_messages(data: bytes) -> list[tuple[int, int, int, bytes]]:
    """Netlink messages of one datagram: (type, flags, seq, payload after nlmsghdr)."""
    out, i = [], 0
    while i + 16 <= len(data):
        length, kind, flags, seq, _pid = struct.unpack_from("=IHHII", data, i)
        if length < 16:
            break
        out.append((kind, flags, seq, data[i + 16:i + length]))
        i += (length + 3) & ~3
    return out


def parse_error(flags: int, payload: bytes) -> tuple[int, str]:
    """An NLMSG_ERROR payload: (positive errno or 0, the extended-ack message or '')."""
    err = -struct.unpack_from("=i", payload)[0]
    text = ""
    if flags & NLM_F_ACK_TLVS:
        # the request echoed: its header only when capped, else all of it
        echoed = struct.unpack_from("=I", payload, 4)[0]
        off = 4 + (16 if flags & NLM_F_CAPPED else (echoed + 3) & ~3)
        msg = nl_attrs(payload[off:]).get(NLMSGERR_ATTR_MSG, b"")
        text = msg.rstrip(b"\0").decode(errors="replace")
    return err, text


def parse_family(payload: bytes) -> tuple[int, dict[str, int]]:
    """A CTRL_CMD_NEWFAMILY reply (after the genlmsghdr): family id and multicast groups."""
    attrs = nl_attrs(payload)
    fid = struct.unpack("=H", attrs[CTRL_ATTR_FAMILY_ID][:2])[0]
    groups = {}
    for grp in nl_attrs(attrs.get(CTRL_ATTR_MCAST_GROUPS, b"")).values():
        g = nl_attrs(grp)
        name = g[CTRL_ATTR_MCAST_GRP_NAME].rstrip(b"\0").decode()
        groups[name] = struct.unpack("=I", g[CTRL_ATTR_MCAST_GRP_ID][:4])[0]
    return fid, groups


@dataclass(frozen=True)
class Event:
    """One MPTCP event; addresses and ports as the kernel put them (ports in host order
    here)."""

    kind: int
    token: int
    saddr: str = ""
    daddr: str = ""
    sport: int = 0
    dport: int = 0
    loc_id: int = -1
    rem_id: int = -1
    server_side: bool = False
    error: int = 0

    @property
    def name(self) -> str:
        return EVENT_NAMES.get(self.kind, str(self.kind))


def parse_event(payload: bytes) -> Event:
    """A multicast event message's payload (genlmsghdr + attributes)."""
    cmd = payload[0]
    a = nl_attrs(payload[4:])

    def ip(k: int) -> str:
        return socket.inet_ntoa(a[k][:4]) if k in a else ""

    def u(k: int, fmt: str, default: int) -> int:
        return struct.unpack(fmt, a[k][:struct.calcsize(fmt)])[0] if k in a else default

    server = EA_SERVER_SIDE in a and a[EA_SERVER_SIDE][:1] != b"\0" or \
        bool(u(EA_FLAGS, "=I", 0) & MPTCP_PM_EV_FLAG_SERVER_SIDE)
    return Event(cmd, u(EA_TOKEN, "=I", 0), ip(EA_SADDR4), ip(EA_DADDR4),
                 u(EA_SPORT, "!H", 0), u(EA_DPORT, "!H", 0), u(EA_LOC_ID, "=B", -1),
                 u(EA_REM_ID, "=B", -1), server, u(EA_ERROR, "=I", 0))


#: how long one generic-netlink request may wait for its reply (seconds)
REQUEST_TIMEOUT_S = 5.0


class Genl:
    """A generic-netlink socket on the ``mptcp_pm`` family, in the namespace of the thread
    that makes it; ``events``: also a member of the events group."""

    def __init__(self, events: bool = False) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        try:
            self.sock.bind((0, 0))
            self.sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
            self.seq = 0
            ctrl = self._request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                                 nla(CTRL_ATTR_FAMILY_NAME, FAMILY.encode() + b"\0"))
            self.family, groups = parse_family(ctrl[4:])
            if events:
                if EVENTS_GROUP not in groups:
                    raise PmError(errno.ENOENT, f"{FAMILY} has no group {EVENTS_GROUP}")
                self.sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
                                     groups[EVENTS_GROUP])
        except BaseException:
            self.sock.close()
            raise

    def _request(self, family: int, cmd: int, attrs: bytes) -> bytes:
        """Send one request with an ack; the reply's payload (b'' for a bare ack)."""
        self.seq += 1
        self.sock.send(genl_message(family, cmd, attrs, self.seq, NLM_F_REQUEST | NLM_F_ACK))
        reply = b""
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while True:
            # the kernel answers at once; a reply that never comes must not hang the run's
            # path-manager thread (and with it the teardown that joins it)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise PmError(errno.ETIMEDOUT, f"no reply to generic-netlink command {cmd} "
                                               f"in {REQUEST_TIMEOUT_S:g} s")
            for kind, flags, seq, payload in split_messages(self.sock.recv(65536)):
                if seq != self.seq:
                    continue
                if kind == NLMSG_ERROR:
                    err, text = parse_error(flags, payload)
                    if err:
                        raise PmError(err, f"{os.strerror(err)}"
                                           f"{f': {text}' if text else ''}")
                    return reply
                if kind == NLMSG_DONE:
                    return reply
                reply = payload

    def subflow_create(self, token: int, local: str, local_id: int, remote: str,
                       port: int) -> None:
        """MPTCP_PM_CMD_SUBFLOW_CREATE; PmError with the kernel's reason if refused."""
        attrs = (nla(ATTR_TOKEN, struct.pack("=I", token))
                 + addr_attr(ATTR_ADDR, local, local_id)
                 + addr_attr(ATTR_ADDR_REMOTE, remote, port=port))
        self._request(self.family, CMD_SUBFLOW_CREATE, attrs)

    def events(self) -> list[Event]:
        """Every event waiting on the socket (non-blocking)."""
        out: list[Event] = []
        while True:
            try:
                data = self.sock.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return out
            out += [parse_event(p) for k, _f, _s, p in split_messages(data)
                    if k == self.family]

    def close(self) -> None:
        self.sock.close()


#: local address -> its MPTCP address id (0: the connection's initial address)
LocalIds = dict[str, int]


@dataclass
class HostPlan:
    """What one namespace's path manager does: for a connection it opened (client side) to
    a destination's primary address, the (local, remote) address pairs to add."""

    ids: LocalIds
    mesh: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


@dataclass
class _Served:
    """One namespace's sockets and record."""

    host: str
    plan: HostPlan
    events: Genl
    ctl: Genl
    created: int = 0
    refused: list[str] = field(default_factory=list)
    seen: list[Event] = field(default_factory=list)


class UserspacePM:
    """The path manager of a set of namespaces, served by one thread: on every connection a
    namespace opens (MPTCP_EVENT_ESTABLISHED, client side) it creates the planned subflows.
    Namespaces that only accept need an entry too (an empty plan): the kernel takes joins
    only while someone listens.  ``with UserspacePM(...) as pm:`` starts and stops it."""

    def __init__(self, where: dict[str, tuple[Any, HostPlan]]) -> None:
        """``where``: host -> (its namespace: a pid, a /run/netns path or None; its plan)."""
        names = list(where)
        socks = in_namespaces([where[h][0] for h in names],
                              lambda _pid: (Genl(events=True), Genl()))
        self.served = [_Served(h, where[h][1], ev, ctl)
                       for h, (ev, ctl) in zip(names, socks)]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="mptcp-pm", daemon=True)
        self.error: BaseException | None = None

    def __enter__(self) -> UserspacePM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the thread and close every socket (idempotent)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        for s in self.served:
            s.events.close()
            s.ctl.close()

    def _serve(self) -> None:
        by_fd = {s.events.sock.fileno(): s for s in self.served}
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select(list(by_fd), [], [], 0.2)
                for fd in ready:
                    self._handle(by_fd[fd])
        except BaseException as exc:   # recorded; the run reads it in summary()
            self.error = exc

    def _handle(self, s: _Served) -> None:
        for ev in s.events.events():
            s.seen.append(ev)
            if ev.kind != EV_ESTABLISHED or ev.server_side:
                continue
            for local, remote in s.plan.mesh.get(ev.daddr, []):
                if (local, remote) == (ev.saddr, ev.daddr):
                    continue
                try:
                    s.ctl.subflow_create(ev.token, local, s.plan.ids[local], remote, ev.dport)
                    s.created += 1
                except PmError as exc:
                    s.refused.append(f"{local}->{remote}:{ev.dport}: {exc.strerror}")

    def summary(self) -> dict[str, Any]:
        """What the path manager did: subflows asked for and established, refusals with the
        kernel's reasons (the first few), per host and in total."""
        per_host = {}
        for s in self.served:
            est = sum(e.kind == EV_SUB_ESTABLISHED and not e.error for e in s.seen)
            per_host[s.host] = {"connections": sum(e.kind == EV_ESTABLISHED for e in s.seen),
                                "subflows_created": s.created, "sub_established": est,
                                "refused": len(s.refused)}
        refusals = [f"{s.host}: {r}" for s in self.served for r in s.refused]
        return {"path_manager": "userspace (dcrepro emulator/mptcp_pm.py)",
                "pm_subflows_created": sum(s.created for s in self.served),
                "pm_refused": len(refusals), "pm_refusals": refusals[:5],
                "pm_error": repr(self.error) if self.error else "", "pm_hosts": per_host}


def wait_for(pred: Callable[[], Any], timeout: float, poll: float = 0.05) -> bool:
    """Poll ``pred()`` until true or ``timeout`` s; whether it became true."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(poll)
    return bool(pred())
