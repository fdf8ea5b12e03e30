"""The sending side: one file a round to every receiver, repairs on NACK, next round after all ACKs.

``SenderCore`` is the protocol logic of one sending process over an abstract ``Transport``
(tests plug in an in-process network); ``SocketTransport`` is the real one: one UDP socket
per channel.  A channel is one receiver (unicast) or the group (multicast).  ``run`` drives
the rounds either inside this process or over ``--procs`` worker processes, each owning a
contiguous share of the receivers, and merges their per-round statistics.
"""
from __future__ import annotations

import argparse
import errno
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import random
import resource
import selectors
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import protocol as p

DEFAULT_TIMEOUT = 30.0
DEFAULT_END_INTERVAL = 0.1
DEFAULT_SNDBUF = 8 * 1024 * 1024
END_COPIES = 2  # END is tiny; a second copy saves a full --end-interval when one is lost
# In multicast mode several receivers NACK the same lost datagram at nearly the same time:
# a seq repaired on a channel this recently is not sent again for another NACK.
REPAIR_HOLDOFF = 0.02
SERVICE_EVERY = 256  # datagrams between non-blocking looks at incoming ACKs/NACKs
BYE_WAIT = 2.0

Addr = tuple[str, int]


class Transport(Protocol):
    """What SenderCore needs from the network."""

    def send(self, channel: int, data: bytes) -> bool:
        """Send one datagram on ``channel``; False when the kernel refused it (counted lost)."""
        ...

    def poll(self, timeout: float) -> tuple[int, bytes, Addr] | None:
        """Next datagram received on any channel (channel, data, source), or None on timeout."""
        ...


@dataclass
class Receiver:
    """One receiver the sender waits for."""

    index: int
    addr: Addr
    id: int  # the --id its replies carry in multicast mode (position in --receivers, from 1)
    channel: int

    def name(self, multicast: bool) -> str:
        return f"id {self.id} at {p.label(self.addr)}" if multicast else p.label(self.addr)


@dataclass
class Channel:
    """One destination the sender writes to, and the receivers that hear it."""

    dest: Addr
    members: list[int]
    label: str


class Pacer:
    """Token bucket on wire bytes (payload + 28 bytes IP/UDP): ``rate_mbps`` 0 disables it."""

    def __init__(self, rate_mbps: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.rate = rate_mbps * 1e6 / 8
        # A small burst allowance: enough to not sleep per datagram, small enough that a
        # switch queue or socket buffer downstream never sees more than ~16 datagrams at once.
        self.cap = max(16 * 1500.0, self.rate * 0.001)
        self.tokens = self.cap
        self.clock, self.sleep = clock, sleep
        self.last = clock()

    def consume(self, nbytes: int) -> None:
        if self.rate <= 0:
            return
        now = self.clock()
        self.tokens = min(self.cap, self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= nbytes + p.IP_UDP_OVERHEAD
        if self.tokens < 0:
            self.sleep(-self.tokens / self.rate)  # the next call credits the slept time


@dataclass
class RoundStats:
    """One process's counters for one round (monotonic times; JSON-able via ``as_dict``)."""

    first_send: float | None = None
    last_data: float | None = None  # last first-pass DATA datagram (END markers excluded)
    pass_end: float | None = None
    last_ack: float | None = None
    bytes: dict[str, int] = field(default_factory=dict)
    datagrams: dict[str, int] = field(default_factory=dict)
    file_bytes: dict[str, int] = field(default_factory=dict)
    repairs: dict[str, int] = field(default_factory=dict)
    nacks: int = 0
    ends: int = 0
    dropped_for_test: int = 0
    send_errors: int = 0
    suppressed: int = 0
    unattributed: int = 0
    acks: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class SenderCore:
    """Rounds of one sending process over ``transport``.

    Unicast: one channel per receiver, so a reply is attributed by the channel it came on.
    Multicast: one channel (the group) for everyone; a reply is attributed by the id it
    carries (receiver N of --receivers uses --id N), else by its exact source address.
    Repairs go back on the channel the NACK arrived on: to that receiver in unicast, to the
    whole group in multicast (one retransmission serves every receiver that lost the same
    datagram; the others count a duplicate).
    """

    def __init__(self, transport: Transport, channels: list[Channel], receivers: list[Receiver],
                 *, multicast: bool, session: int, chunk: int = p.DEFAULT_CHUNK,
                 order: str = "sequential", end_interval: float = DEFAULT_END_INTERVAL,
                 drop_every: int = 0, pacer: Pacer | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.t = transport
        self.channels = channels
        self.receivers = {r.index: r for r in receivers}
        self.multicast = multicast
        self.session = session
        self.chunk = chunk
        self.order = order
        self.end_interval = end_interval
        self.drop_every = drop_every
        self.pacer = pacer or Pacer(0)
        self.clock = clock
        self.rnd = 0
        self.size = 0
        self.total = 0
        self.pending: set[int] = set()
        self.stats = RoundStats()
        self.last_repair: dict[tuple[int, int], float] = {}
        self.bye_pending: set[int] = set()

    # --- sending --------------------------------------------------------------------------

    def _send(self, ch: int, data: bytes, file_bytes: int = 0) -> None:
        self.pacer.consume(len(data))
        now = self.clock()
        st, lab = self.stats, self.channels[ch].label
        if st.first_send is None:
            st.first_send = now
        if not self.t.send(ch, data):
            st.send_errors += 1
            return
        st.bytes[lab] = st.bytes.get(lab, 0) + len(data)
        st.datagrams[lab] = st.datagrams.get(lab, 0) + 1
        st.file_bytes[lab] = st.file_bytes.get(lab, 0) + file_bytes

    def _data(self, seq: int) -> bytes:
        n = p.payload_len(seq, self.size, self.chunk)
        return p.encode_data(self.session, self.rnd, seq, self.size, self.chunk,
                             p.content(self.rnd, seq, n))

    def _first_pass(self, ch: int, seq: int, data: bytes) -> None:
        if self.drop_every and (seq + 1) % self.drop_every == 0:
            # Test hook: the datagram is "lost in the network"; only the first pass loses.
            self.stats.dropped_for_test += 1
        else:
            self._send(ch, data, len(data) - p.DATA_HEADER_LEN)
        self.stats.last_data = self.clock()

    def _end(self, ch: int, copies: int = 1) -> None:
        msg = p.encode_end(self.session, self.rnd, self.size, self.chunk)
        for _ in range(copies):
            self._send(ch, msg)
            self.stats.ends += 1

    def run_round(self, rnd: int, size: int, timeout: float) -> dict[str, Any]:
        """Send round ``rnd`` (a file of ``size`` bytes) and return once every receiver ACKed.

        Raises WaitExpired when some ACK is still missing ``timeout`` seconds after the
        round's first pass ended.
        """
        self.rnd, self.size = rnd, size
        self.total = p.datagrams_for(size, self.chunk)
        self.pending = set(self.receivers)
        self.stats = RoundStats()
        self.last_repair.clear()
        chans = range(len(self.channels))
        if self.order == "sequential":
            # The paper's loop: the whole file down one socket, then the next socket.
            for ch in chans:
                for seq in range(self.total):
                    self._first_pass(ch, seq, self._data(seq))
                    if seq % SERVICE_EVERY == SERVICE_EVERY - 1:
                        self._service(0.0)
                self._end(ch, END_COPIES)
                self._service(0.0)
        else:
            for seq in range(self.total):
                data = self._data(seq)
                for ch in chans:
                    self._first_pass(ch, seq, data)
                if seq % SERVICE_EVERY == SERVICE_EVERY - 1:
                    self._service(0.0)
            for ch in chans:
                self._end(ch, END_COPIES)
        self.stats.pass_end = self.clock()
        deadline = self.stats.pass_end + timeout
        next_end = self.stats.pass_end + self.end_interval
        while self.pending:
            now = self.clock()
            if now >= deadline:
                missing = sorted(self.pending)
                names = ", ".join(self.receivers[i].name(self.multicast) for i in missing[:4])
                more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
                raise p.WaitExpired(
                    f"round {rnd}: no ack from {names}{more} within {timeout:g} s "
                    f"({len(self.receivers) - len(missing)}/{len(self.receivers)} acked)")
            if now >= next_end:
                # END again where an ACK is missing: it heals a lost END, a lost NACK and a
                # lost ACK alike (a complete receiver answers END with its ACK again).
                for ch in sorted({self.receivers[i].channel for i in self.pending}):
                    self._end(ch)
                next_end = now + self.end_interval
                continue
            self._service(min(next_end, deadline) - now)
        return self.stats.as_dict()

    # --- receiving ------------------------------------------------------------------------

    def _service(self, timeout: float) -> None:
        """Handle what has arrived; wait up to ``timeout`` for the first datagram."""
        msg = self.t.poll(timeout)
        while msg is not None:
            self._handle(*msg)
            msg = self.t.poll(0.0)

    def _attribute(self, ch: int, pkt: p.Packet, src: Addr) -> int | None:
        members = self.channels[ch].members
        if len(members) == 1:
            return members[0]
        by_id = [m for m in members if self.receivers[m].id == pkt.node]
        if len(by_id) == 1:
            return by_id[0]
        by_addr = [m for m in members if self.receivers[m].addr == src]
        return by_addr[0] if len(by_addr) == 1 else None

    def _handle(self, ch: int, data: bytes, src: Addr) -> None:
        try:
            pkt = p.decode(data)
        except p.ProtocolError:
            self.stats.unattributed += 1
            return
        if pkt.session != self.session or pkt.kind not in (p.ACK, p.NACK, p.BYE_ACK):
            self.stats.unattributed += 1
            return
        who = self._attribute(ch, pkt, src)
        if who is None:
            self.stats.unattributed += 1
            return
        if pkt.kind == p.BYE_ACK:
            self.bye_pending.discard(who)
            return
        if pkt.round != self.rnd or who not in self.pending:
            return  # a late duplicate of an earlier round or of an ACK already counted
        now = self.clock()
        if pkt.kind == p.ACK:
            self.pending.discard(who)
            self.stats.last_ack = now
            self.stats.acks.append({"receiver": p.label(self.receivers[who].addr),
                                    "index": who, "id": pkt.node, "t": now})
            return
        self.stats.nacks += 1
        lab = self.channels[ch].label
        for seq in p.expand_ranges(pkt.ranges, self.total):
            last = self.last_repair.get((ch, seq))
            if last is not None and now - last < REPAIR_HOLDOFF:
                self.stats.suppressed += 1
                continue
            data_msg = self._data(seq)
            self._send(ch, data_msg, len(data_msg) - p.DATA_HEADER_LEN)
            self.stats.repairs[lab] = self.stats.repairs.get(lab, 0) + 1
            now = self.clock()
            self.last_repair[(ch, seq)] = now

    # --- end of the transfer --------------------------------------------------------------

    def finish(self, rounds: int, wait: float) -> list[int]:
        """Tell every receiver the transfer is over; return the receivers that confirmed.

        Never fails: every round was already acknowledged, so a lost confirmation only
        means a receiver may wait out its own timeout.
        """
        self.rnd = -1  # no round is current: late ACK/NACKs are ignored
        self.bye_pending = set(self.receivers)
        msg = p.encode_bye(self.session, rounds)
        deadline = self.clock() + wait
        while self.bye_pending and self.clock() < deadline:
            for ch in sorted({self.receivers[i].channel for i in self.bye_pending}):
                if not self.t.send(ch, msg):
                    self.stats.send_errors += 1
            until = min(deadline, self.clock() + self.end_interval)
            while self.bye_pending and self.clock() < until:
                self._service(until - self.clock())
        return sorted(set(self.receivers) - self.bye_pending)


class SocketTransport:
    """One UDP socket per channel; replies come back on the socket that sent to them."""

    def __init__(self, dests: list[Addr], *, mcast_if: str | None = None, ttl: int = 1,
                 sndbuf: int = DEFAULT_SNDBUF) -> None:
        self.dests = dests
        self.socks: list[socket.socket] = []
        self.sel = selectors.DefaultSelector()
        self.ready: deque[tuple[int, bytes, Addr]] = deque()
        for ch, dest in enumerate(dests):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
            if p.is_multicast(dest[0]):
                s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
                s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
                if mcast_if:
                    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF,
                                 socket.inet_aton(mcast_if))
            s.bind(("0.0.0.0", 0))
            self.socks.append(s)
            self.sel.register(s, selectors.EVENT_READ, ch)

    def send(self, channel: int, data: bytes) -> bool:
        try:
            self.socks[channel].sendto(data, self.dests[channel])
            return True
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as e:
            if e.errno == errno.ENOBUFS:  # a full device queue dropped it, as a network would
                return False
            raise OSError(e.errno, f"cannot send to {p.label(self.dests[channel])}: "
                                   f"{e.strerror}") from None

    def poll(self, timeout: float) -> tuple[int, bytes, Addr] | None:
        if not self.ready:
            for key, _ in self.sel.select(max(0.0, timeout)):
                data, src = key.fileobj.recvfrom(65535)  # type: ignore[union-attr]
                self.ready.append((key.data, data, src))
        return self.ready.popleft() if self.ready else None

    def close(self) -> None:
        self.sel.close()
        for s in self.socks:
            s.close()


# --- running the rounds -----------------------------------------------------------------------

@dataclass
class Plan:
    """Everything one sending process needs to build its transport and core."""

    multicast: bool
    receivers: list[Receiver]
    group: Addr | None
    session: int
    chunk: int
    order: str
    end_interval: float
    drop_every: int
    rate_mbps: float
    mcast_if: str | None
    ttl: int


def channels_for(plan: Plan) -> tuple[list[Channel], list[Receiver]]:
    """A process's channels (multicast: the group's one; unicast: one a receiver) and its
    receivers, each attributed to the channel it listens on."""
    if plan.multicast:
        assert plan.group is not None
        channels = [Channel(plan.group, [r.index for r in plan.receivers], p.label(plan.group))]
        receivers = [Receiver(r.index, r.addr, r.id, 0) for r in plan.receivers]
    else:
        channels = [Channel(r.addr, [r.index], p.label(r.addr)) for r in plan.receivers]
        receivers = [Receiver(r.index, r.addr, r.id, ch) for ch, r in enumerate(plan.receivers)]
    return channels, receivers


def _build(plan: Plan) -> tuple[SocketTransport, SenderCore]:
    channels, receivers = channels_for(plan)
    transport = SocketTransport([c.dest for c in channels], mcast_if=plan.mcast_if, ttl=plan.ttl)
    core = SenderCore(transport, channels, receivers, multicast=plan.multicast,
                      session=plan.session, chunk=plan.chunk, order=plan.order,
                      end_interval=plan.end_interval, drop_every=plan.drop_every,
                      pacer=Pacer(plan.rate_mbps))
    return transport, core


def _worker(conn: mpc.Connection, plan: Plan) -> None:
    """A sending process: runs the rounds its parent orders, answers with statistics."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    try:
        transport, core = _build(plan)
    except OSError as e:
        conn.send(("oserror", str(e)))
        return
    try:
        while True:
            cmd = conn.recv()
            try:
                if cmd[0] == "round":
                    conn.send(("ok", core.run_round(cmd[1], cmd[2], cmd[3])))
                elif cmd[0] == "finish":
                    conn.send(("ok", core.finish(cmd[1], cmd[2])))
                else:
                    return
            except p.WaitExpired as e:
                conn.send(("expired", str(e)))
            except OSError as e:
                conn.send(("oserror", str(e)))
    except (EOFError, BrokenPipeError):
        return  # the parent is gone
    finally:
        transport.close()


class WorkerFailed(Exception):
    """A sending process failed; ``code`` is the exit code it calls for."""

    def __init__(self, msg: str, code: int) -> None:
        super().__init__(msg)
        self.code = code


class Runner:
    """Runs commands on every sending process: in this process (1) or in workers (N > 1)."""

    def __init__(self, plans: list[Plan]) -> None:
        self.inline: tuple[SocketTransport, SenderCore] | None = None
        self.procs: list[tuple[mp.process.BaseProcess, mpc.Connection]] = []
        if len(plans) == 1:
            try:
                self.inline = _build(plans[0])
            except OSError as e:
                raise WorkerFailed(str(e), 3) from None
            return
        ctx = mp.get_context("fork")  # Linux tool; fork starts in milliseconds
        for plan in plans:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, plan), daemon=True)
            proc.start()
            child.close()
            self.procs.append((proc, parent))

    def call(self, *cmd: object) -> list[Any]:
        """Run ``cmd`` on every sending process at once; the list of their results."""
        if self.inline is not None:
            core = self.inline[1]
            try:
                if cmd[0] == "round":
                    return [core.run_round(*cmd[1:])]  # type: ignore[arg-type]
                return [core.finish(*cmd[1:])]  # type: ignore[arg-type]
            except p.WaitExpired as e:
                raise WorkerFailed(str(e), 1) from None
            except OSError as e:
                raise WorkerFailed(str(e), 3) from None
        for _, conn in self.procs:
            try:
                conn.send(cmd)
            except OSError:
                pass  # that worker already ended; its last word (or its death) is read below
        results: list[Any] = [None] * len(self.procs)
        waiting = {conn: i for i, (_, conn) in enumerate(self.procs)}
        sentinels = {proc.sentinel: i for i, (proc, _) in enumerate(self.procs)}
        first_error: WorkerFailed | None = None
        while waiting:
            # Each worker's own waits are bounded; a sentinel catches one that died instead.
            for obj in mpc.wait(list(waiting) + list(sentinels)):
                if obj in sentinels and sentinels[obj] in waiting.values():
                    conn = self.procs[sentinels[obj]][1]
                    if conn.poll():
                        continue  # its last answer is still in the pipe
                    first_error = first_error or WorkerFailed(
                        f"sending process {sentinels[obj] + 1} died", 3)
                    waiting.pop(conn, None)
                elif obj in waiting:
                    i = waiting.pop(obj)
                    try:
                        status, value = obj.recv()
                    except EOFError:
                        status, value = "oserror", f"sending process {i + 1} died"
                    if status == "ok":
                        results[i] = value
                    else:
                        first_error = first_error or WorkerFailed(
                            value, 1 if status == "expired" else 3)
        if first_error is not None:
            raise first_error
        return results

    def close(self) -> None:
        if self.inline is not None:
            self.inline[0].close()
        for _proc, conn in self.procs:
            try:
                conn.send(("stop",))
            except (BrokenPipeError, OSError):
                pass
        for proc, conn in self.procs:
            proc.join(1.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(1.0)
            conn.close()


def merge(rnd: int, size: int, chunk: int, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One round's report entry from the statistics of every sending process."""
    starts = [s["first_send"] for s in parts if s["first_send"] is not None]
    t0 = min(starts) if starts else 0.0
    ends = [s["last_data"] for s in parts if s["last_data"] is not None]
    last_data = max(ends) if ends else t0  # an empty file: nothing but END markers
    acks = [a for s in parts for a in s["acks"]]
    last_ack = max((a["t"] for a in acks), default=t0)

    def total(key: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in parts:
            for k, v in s[key].items():
                out[k] = out.get(k, 0) + v
        return out

    repairs = total("repairs")
    return {
        "round": rnd,
        "size_bytes": size,
        "datagrams": p.datagrams_for(size, chunk),
        "send_s": last_data - t0,
        "round_s": last_ack - t0,
        "bytes_sent": total("bytes"),
        "datagrams_sent": total("datagrams"),
        "file_bytes_sent": total("file_bytes"),
        "repairs_sent": sum(repairs.values()),
        "repairs_by_socket": repairs,
        "nacks_received": sum(s["nacks"] for s in parts),
        "end_markers_sent": sum(s["ends"] for s in parts),
        "repairs_suppressed": sum(s["suppressed"] for s in parts),
        "dropped_for_test": sum(s["dropped_for_test"] for s in parts),
        "send_errors": sum(s["send_errors"] for s in parts),
        "unattributed_replies": sum(s["unattributed"] for s in parts),
        "acks": sorted(({"receiver": a["receiver"], "index": a["index"], "id": a["id"],
                         "ack": f"ack_{rnd}", "t_s": a["t"] - t0} for a in acks),
                       key=lambda a: a["index"]),
    }


# --- command line ---------------------------------------------------------------------------

def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The ``send`` flags."""
    ap.add_argument("--receivers", required=True, metavar="ADDR:PORT,...",
                    help="every receiver; in multicast mode the N-th one is expected to run "
                         "with --id N (or to reply from exactly this address)")
    ap.add_argument("--mode", choices=("unicast", "multicast"), default="unicast",
                    help="unicast: one socket a receiver; multicast: each datagram once to "
                         "--group, the network replicates (default unicast)")
    ap.add_argument("--group", metavar="GROUP:PORT",
                    help="multicast mode's destination (normally 224.0.0.0/4; any address is "
                         "accepted, so one receiver can stand in for a group in tests)")
    ap.add_argument("--procs", type=int, default=1,
                    help="unicast: sending processes, each with a contiguous share of the "
                         "receivers, sending in parallel (default 1; capped at the number "
                         "of receivers)")
    ap.add_argument("--sizes", required=True, metavar="BYTES,...",
                    help="one file size a round, e.g. 1M,2M,512K (suffixes K/M/G are x1024)")
    ap.add_argument("--rate-mbps", type=float, default=0.0,
                    help="pace the whole sender (split evenly over --procs) to this many Mb/s "
                         "of IP traffic with a token bucket; default 0 = unpaced, as fast as "
                         "the socket accepts, like the paper's sender: loss to full buffers is "
                         "then left to NACK repair")
    ap.add_argument("--payload", type=int, default=p.DEFAULT_CHUNK,
                    help=f"file bytes a datagram (default {p.DEFAULT_CHUNK}: 1464-byte IP "
                         "packets fit a 1500 MTU)")
    ap.add_argument("--order", choices=("sequential", "interleaved"), default="sequential",
                    help="within one sending process: whole file to one receiver after the "
                         "other (the paper's loop), or datagram by datagram across them "
                         "(default sequential)")
    ap.add_argument("--report", metavar="FILE.json", help="write the per-round report here")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help="longest wait for a round's ACKs after its last first-pass datagram; "
                         f"exit 1 when it expires (default {DEFAULT_TIMEOUT:g})")
    ap.add_argument("--end-interval", type=float, default=DEFAULT_END_INTERVAL,
                    help="re-send the end-of-round marker to receivers that have not ACKed "
                         f"this often, seconds (default {DEFAULT_END_INTERVAL:g})")
    ap.add_argument("--mcast-if", metavar="ADDR",
                    help="multicast: local address of the outgoing interface (IP_MULTICAST_IF); "
                         "needed on hosts without a route to the group (default: routing)")
    ap.add_argument("--ttl", type=int, default=1, help="multicast TTL (default 1)")
    ap.add_argument("--drop-every", type=int, default=0, metavar="K",
                    help="testing: skip every K-th datagram of each first pass as if the "
                         "network lost it (default 0: never)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one stderr line a round")


def _check(args: argparse.Namespace, ap: argparse.ArgumentParser) -> None:
    try:
        args.receiver_addrs = p.parse_addrs(args.receivers)
        args.size_list = p.parse_sizes(args.sizes)
        args.group_addr = p.parse_addr(args.group) if args.group else None
        if args.mcast_if:
            args.mcast_if = p.resolve_host(args.mcast_if)
    except ValueError as e:
        ap.error(str(e))
    n = len(args.receiver_addrs)
    if args.mode == "multicast":
        if args.group_addr is None:
            ap.error("--mode multicast needs --group GROUP:PORT")
        if args.procs != 1:
            ap.error("--procs applies to unicast only: multicast sends each datagram once")
        if n > 0xFFFF:
            ap.error("too many receivers")
    elif len(set(args.receiver_addrs)) != n:
        ap.error("--receivers lists an address twice (unicast needs one socket each)")
    if args.procs < 1:
        ap.error("--procs must be at least 1")
    if not 1 <= args.payload <= p.MAX_CHUNK:
        ap.error(f"--payload must be in 1..{p.MAX_CHUNK}")
    if args.timeout <= 0 or args.end_interval <= 0:
        ap.error("--timeout and --end-interval must be positive")
    if args.rate_mbps < 0:
        ap.error("--rate-mbps must not be negative")
    if args.drop_every < 0 or args.drop_every == 1:
        ap.error("--drop-every must be 0 (off) or at least 2")
    if not 1 <= args.ttl <= 255:
        ap.error("--ttl must be in 1..255")


def plans_for(args: argparse.Namespace, session: int) -> list[Plan]:
    """Split the receivers over the sending processes (contiguous, sizes differ by <= 1)."""
    receivers = [Receiver(i, a, i + 1, 0) for i, a in enumerate(args.receiver_addrs)]
    nproc = 1 if args.mode == "multicast" else min(args.procs, len(receivers))
    shares: list[list[Receiver]] = []
    start = 0
    for k in range(nproc):
        n = len(receivers) // nproc + (k < len(receivers) % nproc)
        shares.append(receivers[start:start + n])
        start += n
    return [Plan(args.mode == "multicast", share, args.group_addr, session, args.payload,
                 args.order, args.end_interval, args.drop_every, args.rate_mbps / nproc,
                 args.mcast_if, args.ttl) for share in shares]


def _cpu_s() -> float:
    """User + system CPU seconds of this process and its reaped children (the kernel's
    softirq work that ran in their context included: no IRQ time accounting here)."""
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def run(args: argparse.Namespace, ap: argparse.ArgumentParser) -> int:
    """``send``: all rounds, then BYE; exit code as documented in __main__."""
    _check(args, ap)
    session = random.SystemRandom().randrange(1, 2 ** 32)
    plans = plans_for(args, session)
    labels = [p.label(a) for a in args.receiver_addrs]
    doc: dict[str, Any] = {
        "tool": "apps.filexfer send", "mode": args.mode, "receivers": labels,
        "group": p.label(args.group_addr) if args.group_addr else None,
        "procs": len(plans), "order": args.order, "payload": args.payload,
        "rate_mbps": args.rate_mbps, "timeout_s": args.timeout, "session": session,
        "sizes": args.size_list, "pid": os.getpid(), "started_at": time.time(),
        "ok": False, "error": None, "total_s": None, "rounds": [], "bye_confirmed": [],
    }
    code = 0
    cpu0 = _cpu_s()
    t0 = time.monotonic()
    runner: Runner | None = None
    try:
        runner = Runner(plans)
        for rnd, size in enumerate(args.size_list, start=1):
            parts = runner.call("round", rnd, size, args.timeout)
            entry = merge(rnd, size, args.payload, parts)
            doc["rounds"].append(entry)
            if args.verbose:
                print(f"round {rnd}: {size} bytes, send {entry['send_s']:.4f} s, round "
                      f"{entry['round_s']:.4f} s, {entry['repairs_sent']} repairs",
                      file=sys.stderr)
        doc["total_s"] = time.monotonic() - t0
        confirmed = runner.call("finish", len(args.size_list), min(args.timeout, BYE_WAIT))
        doc["bye_confirmed"] = [labels[i] for part in confirmed for i in part]
        doc["ok"] = True
    except WorkerFailed as e:
        code = e.code
        doc["error"] = f"{'timeout: ' if code == 1 else ''}{e}"
    except KeyboardInterrupt:
        code, doc["error"] = 130, "interrupted"
    finally:
        if runner is not None:
            runner.close()
    # CPU seconds of every sending process from the first round on (workers are reaped by
    # close, so counted): what a CPU cap (experiments/orca --sender-cpu) let the sender use
    doc["cpu_s"] = round(_cpu_s() - cpu0, 4)
    if doc["error"]:
        print(f"filexfer send: {doc['error']}", file=sys.stderr)
    else:
        repairs = sum(r["repairs_sent"] for r in doc["rounds"])
        print(f"sent {len(doc['rounds'])} rounds ({sum(args.size_list)} bytes a receiver) to "
              f"{len(labels)} receivers in {doc['total_s']:.3f} s, {repairs} repairs", flush=True)
    if args.report:
        p.write_report(args.report, doc)
    return code
