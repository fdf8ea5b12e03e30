"""The receiving side: count each round's bytes, repair holes with NACKs, answer ``ack_i``.

``ReceiverSession`` is the whole protocol logic and touches no socket (tests drive it
in-process); ``run`` wraps it in one UDP socket loop.
"""
from __future__ import annotations

import argparse
import select
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import protocol as p

DEFAULT_TIMEOUT = 60.0
DEFAULT_NACK_INTERVAL = 0.05
DEFAULT_RCVBUF = 8 * 1024 * 1024


@dataclass
class RoundState:
    """What one receiver knows about one round."""

    rnd: int
    total: int
    size: int
    chunk: int
    first_t: float
    first_wall: float
    wait_s: float | None
    have: bytearray = field(default_factory=bytearray)
    count: int = 0
    bytes: int = 0
    end_seen: bool = False
    last_new_t: float | None = None
    last_nack_t: float | None = None
    last_ack_t: float | None = None
    # A NACK holds at most MAX_RANGES ranges; when one was cut short, this many of the seqs
    # it asked for are still missing, and the next NACK goes out as soon as they are all in.
    truncated_outstanding: int = 0
    nack_frontier: int = 0
    missing_at_first_nack: int | None = None
    repaired: int = 0
    duplicates: int = 0
    corrupt: int = 0
    fresh_seen: int = 0
    dropped_for_test: int = 0
    nacks_sent: int = 0
    acks_sent: int = 0
    complete_t: float | None = None
    ack_end_t: float | None = None
    ack_wall: float | None = None

    @property
    def complete(self) -> bool:
        return self.count == self.total

    def report(self) -> dict[str, Any]:
        """The round's entry in the JSON report (times in seconds)."""
        return {
            "round": self.rnd,
            "bytes_expected": self.size,
            "bytes_received": self.bytes,
            "datagrams_expected": self.total,
            "datagrams_received": self.count,
            "complete": self.complete,
            "lost_before_repair": self.missing_at_first_nack or 0,
            "repaired": self.repaired,
            "duplicates": self.duplicates,
            "corrupt": self.corrupt,
            "dropped_for_test": self.dropped_for_test,
            "nacks_sent": self.nacks_sent,
            "acks_sent": self.acks_sent,
            "wait_s": self.wait_s,
            "completion_s": (None if self.complete_t is None
                             else self.complete_t - self.first_t),
            "first_byte_time": self.first_wall,
            "ack_time": self.ack_wall,
        }


class ReceiverSession:
    """Protocol state of one receiver: feed it datagrams and clock ticks, send what it returns.

    A NACK is sent only after the round's END marker arrived (before it, a hole may just be a
    datagram not sent yet), then again whenever the round is still incomplete and neither new
    data nor a NACK happened for ``nack_interval``: a repair in flight is not asked for twice.
    """

    def __init__(self, node: int = 0, nack_interval: float = DEFAULT_NACK_INTERVAL,
                 drop_every: int = 0, start: float = 0.0,
                 wall: Callable[[], float] = time.time) -> None:
        self.node = node
        self.nack_interval = nack_interval
        self.drop_every = drop_every
        self.wall = wall
        self.session: int | None = None
        self.sender: tuple[str, int] | None = None
        self.rounds: list[RoundState] = []
        self.ready_t = start
        self.last_heard = start
        self.bye_rounds: int | None = None
        self.done = False
        self.foreign = 0
        self.malformed = 0

    @property
    def cur(self) -> RoundState | None:
        return self.rounds[-1] if self.rounds else None

    # --- inputs ---------------------------------------------------------------------------

    def on_datagram(self, buf: bytes | memoryview, src: tuple[str, int],
                    now: float) -> list[bytes]:
        """Handle one datagram from ``src``; return the replies to send to ``self.sender``."""
        try:
            pkt = p.decode(buf)
        except p.ProtocolError:
            self.malformed += 1
            return []
        if pkt.kind not in (p.DATA, p.END, p.BYE):
            self.malformed += 1
            return []
        if self.session is None:
            if pkt.kind == p.BYE:
                self.foreign += 1  # the end of some earlier run, not a sender to follow
                return []
            self.session = pkt.session  # the first sender heard owns this receiver
        elif pkt.session != self.session:
            self.foreign += 1
            return []
        self.sender = src
        self.last_heard = now
        if pkt.kind == p.BYE:
            self.bye_rounds = pkt.round
            self.done = True
            return [p.encode_bye_ack(self.node, self.session, pkt.round)]
        cur = self.cur
        if cur is None or pkt.round > cur.rnd:
            cur = self._start_round(pkt, now)
        elif pkt.round < cur.rnd:
            for old in self.rounds:
                if old.rnd == pkt.round:
                    old.duplicates += pkt.kind == p.DATA
            return []
        elif (pkt.total, pkt.size, pkt.chunk) != (cur.total, cur.size, cur.chunk):
            self.malformed += 1
            return []
        return self._on_data(cur, pkt, now) if pkt.kind == p.DATA else self._on_end(cur, now)

    def on_tick(self, now: float) -> list[bytes]:
        """Timer: re-NACK a round that stalled after its END marker."""
        cur = self.cur
        if cur is None or cur.complete or not cur.end_seen:
            return []
        if now >= self._nack_due(cur):
            return [self._nack(cur, now)]
        return []

    def next_tick(self) -> float | None:
        """When ``on_tick`` may have something to do (None: only a datagram can change that)."""
        cur = self.cur
        if cur is None or cur.complete or not cur.end_seen:
            return None
        return self._nack_due(cur)

    def note_sent(self, now: float) -> None:
        """The replies just went out: the first ACK's send ends the round for wait times."""
        cur = self.cur
        if cur is not None and cur.complete and cur.ack_end_t is None:
            cur.ack_end_t = now
            cur.ack_wall = self.wall()

    # --- internals ------------------------------------------------------------------------

    def _start_round(self, pkt: p.Packet, now: float) -> RoundState:
        prev = self.cur
        wait = None
        if prev is not None and prev.ack_end_t is not None:
            wait = now - prev.ack_end_t
        st = RoundState(pkt.round, pkt.total, pkt.size, pkt.chunk, now, self.wall(), wait,
                        have=bytearray(pkt.total))
        self.rounds.append(st)
        return st

    def _on_data(self, st: RoundState, pkt: p.Packet, now: float) -> list[bytes]:
        if st.complete or st.have[pkt.seq]:
            st.duplicates += 1
            return []
        if self.drop_every and not st.end_seen:
            # Test hook: lose first-pass datagrams only, so repairs always get through.
            st.fresh_seen += 1
            if st.fresh_seen % self.drop_every == 0:
                st.dropped_for_test += 1
                return []
        n = len(pkt.payload)
        if pkt.payload != p.content(pkt.round, pkt.seq, n):
            st.corrupt += 1
            return []
        st.have[pkt.seq] = 1
        st.count += 1
        st.bytes += n
        st.last_new_t = now
        if st.missing_at_first_nack is not None:
            st.repaired += 1
        if st.complete:
            return [self._ack(st, now)]
        if st.truncated_outstanding and pkt.seq < st.nack_frontier:
            st.truncated_outstanding -= 1
            if not st.truncated_outstanding:
                return [self._nack(st, now)]  # the rest of the holes, without idling first
        return []

    def _on_end(self, st: RoundState, now: float) -> list[bytes]:
        st.end_seen = True
        if st.complete:
            # The sender repeats END while our ACK is missing (lost): send it again, but not
            # for the END copies that follow the data back to back.
            if st.last_ack_t is None or now - st.last_ack_t >= self.nack_interval:
                return [self._ack(st, now)]
            return []
        if st.last_nack_t is None or now - st.last_nack_t >= self.nack_interval:
            return [self._nack(st, now)]
        return []

    def _nack_due(self, st: RoundState) -> float:
        last_nack = st.last_nack_t if st.last_nack_t is not None else st.first_t
        last_new = st.last_new_t if st.last_new_t is not None else st.first_t
        return max(last_nack, last_new) + self.nack_interval

    def _nack(self, st: RoundState, now: float) -> bytes:
        if st.missing_at_first_nack is None:
            st.missing_at_first_nack = st.total - st.count
        st.nacks_sent += 1
        st.last_nack_t = now
        ranges = p.missing_ranges(st.have)
        if len(ranges) == p.MAX_RANGES and ranges[-1][1] < st.total:
            st.nack_frontier = ranges[-1][1]
            st.truncated_outstanding = sum(b - a for a, b in ranges)
        else:
            st.truncated_outstanding = 0
        assert self.session is not None
        return p.encode_nack(self.node, self.session, st.rnd, ranges)

    def _ack(self, st: RoundState, now: float) -> bytes:
        if st.complete_t is None:
            st.complete_t = now
        st.acks_sent += 1
        st.last_ack_t = now
        assert self.session is not None
        return p.encode_ack(self.node, self.session, st.rnd)

    # --- reporting ------------------------------------------------------------------------

    def waiting_for(self, timeout: float) -> str:
        """One line naming the round this receiver gave up on."""
        cur = self.cur
        if cur is None:
            return f"round 1: nothing from the sender within {timeout:g} s"
        if cur.complete:
            return (f"round {cur.rnd + 1}: nothing from the sender within {timeout:g} s "
                    f"after acking round {cur.rnd}")
        return (f"round {cur.rnd}: stalled at {cur.count}/{cur.total} datagrams, nothing from "
                f"the sender for {timeout:g} s")

    def report(self) -> dict[str, Any]:
        """Per-round records plus the session-wide counters."""
        first = self.rounds[0].first_t - self.ready_t if self.rounds else None
        return {
            "id": self.node,
            "session": self.session,
            "sender": None if self.sender is None else p.label(self.sender),
            "rounds_announced": self.bye_rounds,
            "ready_to_first_s": first,
            "foreign_datagrams": self.foreign,
            "malformed_datagrams": self.malformed,
            "rounds": [r.report() for r in self.rounds],
        }


# --- command line ---------------------------------------------------------------------------

def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The ``recv`` flags."""
    ap.add_argument("--listen", required=True, metavar="ADDR:PORT",
                    help="address to bind (0.0.0.0:PORT for any; PORT 0 picks one, printed "
                         "as 'listening ADDR:PORT' on stdout once ready)")
    ap.add_argument("--group", metavar="GROUP",
                    help="IPv4 multicast group to join (IP_ADD_MEMBERSHIP); bind --listen "
                         "0.0.0.0:PORT with PORT the sender's group port")
    ap.add_argument("--iface", metavar="ADDR",
                    help="local address of the interface that joins --group (default: the "
                         "--listen address when it is a unicast one, else the kernel's choice)")
    ap.add_argument("--id", type=int, default=0,
                    help="receiver id carried in replies; in multicast mode the sender "
                         "expects its N-th --receivers entry to use --id N (default 0: the "
                         "sender matches by source address instead)")
    ap.add_argument("--report", metavar="FILE.json", help="write the per-round report here")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help="give up (exit 1) after this many seconds without a datagram from "
                         "the sender; keep it above the sender's --timeout "
                         f"(default {DEFAULT_TIMEOUT:g})")
    ap.add_argument("--nack-interval", type=float, default=DEFAULT_NACK_INTERVAL,
                    help="seconds of silence before an incomplete round is NACKed again "
                         f"(default {DEFAULT_NACK_INTERVAL:g})")
    ap.add_argument("--rcvbuf", type=p.parse_size, default=DEFAULT_RCVBUF,
                    help="SO_RCVBUF to ask for; the kernel caps it at net.core.rmem_max "
                         "(default 8M)")
    ap.add_argument("--drop-every", type=int, default=0, metavar="K",
                    help="testing: discard every K-th first-pass datagram as if lost "
                         "(default 0: never)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one stderr line a round")


def _check(args: argparse.Namespace, ap: argparse.ArgumentParser) -> None:
    try:
        args.listen_addr = p.parse_addr(args.listen)
        if args.group is not None:
            args.group = p.resolve_host(args.group)
            if not p.is_multicast(args.group):
                raise ValueError(f"--group {args.group} is not a multicast address")
        if args.iface is not None:
            args.iface = p.resolve_host(args.iface)
    except ValueError as e:
        ap.error(str(e))
    if args.timeout <= 0 or args.nack_interval <= 0:
        ap.error("--timeout and --nack-interval must be positive")
    if not 0 <= args.id <= 0xFFFF:
        ap.error("--id must be in 0..65535")
    if args.drop_every < 0 or args.drop_every == 1:
        ap.error("--drop-every must be 0 (off) or at least 2")


def _open(args: argparse.Namespace) -> tuple[socket.socket, socket.socket]:
    """The data socket (bound, group joined) and the socket replies leave from."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if args.group:
        # Several receivers of one group may share a host (and the group port).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    sock.bind(args.listen_addr)
    if args.group:
        iface = args.iface
        if iface is None:
            host = args.listen_addr[0]
            iface = host if host != "0.0.0.0" and not p.is_multicast(host) else "0.0.0.0"
        mreq = socket.inet_aton(args.group) + socket.inet_aton(iface)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    sock.setblocking(False)
    if p.is_multicast(args.listen_addr[0]):
        # A socket bound to a group address cannot be the source of a unicast reply.
        reply = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        return sock, reply
    return sock, sock


def _write_report(args: argparse.Namespace, rx: ReceiverSession, bound: str,
                  error: str | None) -> None:
    if not args.report:
        return
    doc = {"tool": "apps.filexfer recv", "listen": bound, "group": args.group,
           "timeout_s": args.timeout, "ok": error is None, "error": error, **rx.report()}
    p.write_report(args.report, doc)


def run(args: argparse.Namespace, ap: argparse.ArgumentParser) -> int:
    """``recv``: serve one sender session until its BYE; exit code as documented in __main__."""
    _check(args, ap)
    try:
        sock, reply = _open(args)
    except OSError as e:
        print(f"filexfer recv: cannot listen on {args.listen}"
              f"{' in group ' + args.group if args.group else ''}: {e}", file=sys.stderr)
        return 3
    bound = p.label(sock.getsockname())
    rx = ReceiverSession(args.id, args.nack_interval, args.drop_every, start=time.monotonic())
    print(f"listening {bound}", flush=True)
    reported = 0
    error: str | None = None
    code = 0
    try:
        while not rx.done:
            now = time.monotonic()
            deadline = rx.last_heard + args.timeout
            if now >= deadline:
                raise p.WaitExpired(rx.waiting_for(args.timeout))
            tick = rx.next_tick()
            wake = deadline if tick is None else min(deadline, tick)
            ready, _, _ = select.select([sock], [], [], max(0.0, wake - now))
            replies: list[bytes] = []
            if ready:
                # Drain everything queued: one select per datagram would cost more than the
                # datagram's own handling.
                while not rx.done:
                    try:
                        data, src = sock.recvfrom(65535)
                    except BlockingIOError:
                        break
                    replies += rx.on_datagram(data, src, time.monotonic())
                    if replies:
                        break  # answer (ACK/NACK) promptly, then keep draining
            else:
                replies = rx.on_tick(time.monotonic())
            for msg in replies:
                if rx.sender is not None:
                    reply.sendto(msg, rx.sender)
            if replies:
                rx.note_sent(time.monotonic())
            if args.verbose:
                while reported < len(rx.rounds) and rx.rounds[reported].ack_end_t is not None:
                    r = rx.rounds[reported].report()
                    print(f"round {r['round']}: {r['bytes_received']} bytes, lost "
                          f"{r['lost_before_repair']}, repaired {r['repaired']}, "
                          f"{r['completion_s']:.4f} s", file=sys.stderr)
                    reported += 1
    except p.WaitExpired as e:
        error, code = f"timeout: {e}", 1
    except OSError as e:
        error, code = f"socket error: {e}", 3
    except KeyboardInterrupt:
        error, code = "interrupted", 130
    finally:
        sock.close()
        if reply is not sock:
            reply.close()
    if error is not None:
        print(f"filexfer recv: {error}", file=sys.stderr)
    _write_report(args, rx, bound, error)
    return code
