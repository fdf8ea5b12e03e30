"""The file transfer of apps/filexfer (orca, 001_…) in ns-3's simulated time (``--backend sim``).

The receivers are the real protocol's ``ReceiverSession`` (apps/filexfer/receiver.py): fed
every datagram ns-3 delivers, ticked at its own NACK times, its replies sent back to the
source of what it received, its report written as the real app writes it.

The sender is the real ``SenderCore`` (apps/filexfer/sender.py) driven by events instead of
a blocking loop: its datagrams (the real encoders and payload bytes, so the bytes on the
wire are the emulated run's), its reply handling (``_handle``: ACKs, NACK repairs with the
same hold-off, attribution by channel or receiver id), its END markers and its per-round
statistics (``RoundStats``, merged by the real ``merge``).  What the blocking loop of
``run_round`` does is redone here in events: the sequential first pass (the whole file to
one receiver after the other, two END copies after each), a look at the replies every
SERVICE_EVERY datagrams and after each receiver's ENDs, replies handled as they arrive once
the pass is over, END again every END_INTERVAL to the receivers that have not ACKed, and
the real token-bucket ``Pacer`` on the simulated clock: each datagram leaves when the
bucket allows.  With P sending processes each paces its share of the receivers at 1/P of
the rate, as ``plans_for`` splits them.

Simplified (docs/sim.md): no CPU, so handling a datagram takes no simulated time and P
processes only share the sender's link; repairs queue behind the process's pacer instead of
being sent inside the reply handling; BYE is sent once (no loss to resend it for); there is
no receiver silence timeout (the sender's round timeout fails a stalled transfer).
"""
from __future__ import annotations

import argparse
import json
import random
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from apps.filexfer import protocol
from apps.filexfer.receiver import ReceiverSession
from apps.filexfer.sender import (
    DEFAULT_END_INTERVAL,
    END_COPIES,
    SERVICE_EVERY,
    Pacer,
    Plan,
    SenderCore,
    channels_for,
    merge,
    plans_for,
)
from emulator.proc import RunError
from harness.common import run_rng
from harness.transfer import (
    ETH_HEADER,
    SIM_FRAME,
    Transfer,
    TransferResult,
    Transfers,
    transfer_limit,
)

#: the first port of the sender's sockets (one a channel; its own choice, as the kernel's)
SENDER_PORT = 40000

#: a queued datagram: (channel, bytes, file bytes in it, a first-pass DATA datagram?)
Item = tuple[int, bytes, int, bool]


class _Transport:
    """SenderCore's transport: channel -> the socket that sends to it."""

    def __init__(self, io: Any, endpoints: list[int], dests: list[tuple[str, int]]) -> None:
        self.io, self.endpoints, self.dests = io, endpoints, dests

    def send(self, channel: int, data: bytes) -> bool:
        return bool(self.io.send(self.endpoints[channel], data, self.dests[channel]))

    def poll(self, timeout: float) -> None:   # never called: replies come as events
        raise NotImplementedError


class SimProcess(SenderCore):
    """One sending process, event-driven.  ``_send`` queues (the inherited handling of a
    NACK and ``_end`` go through it); ``_pump`` sends what is queued as the pacer allows."""

    def __init__(self, xfer: SimTransfer, io: Any, plan: Plan, endpoints: list[int],
                 timeout: float) -> None:
        channels, receivers = channels_for(plan)
        # the core's own pacer is off: this process paces in _pump, on the simulated clock
        super().__init__(_Transport(io, endpoints, [c.dest for c in channels]), channels,
                         receivers, multicast=plan.multicast, session=plan.session,
                         chunk=plan.chunk, end_interval=plan.end_interval, clock=io.now)
        self.xfer, self.io, self.timeout = xfer, io, timeout
        self.bucket = Pacer(plan.rate_mbps, clock=io.now, sleep=self._owe)
        self.debt = 0.0
        self.queue: deque[Item] = deque()
        self.work: Iterator[Item | Callable[[], None]] | None = None
        self.inbox: list[tuple[int, bytes, tuple[str, int]]] = []
        self.busy = False       # a datagram waits for the pacer
        self.pumping = False    # inside _pump (a reply handled there must not pump again)
        self.epoch = 0          # a new round makes what an old one scheduled stale
        self.done = True
        self.deadline = 0.0

    def _owe(self, seconds: float) -> None:
        """The pacer's sleep: how long the next datagram waits."""
        self.debt += seconds

    # -- rounds ------------------------------------------------------------------------------

    def start(self, rnd: int, size: int) -> None:
        """Round ``rnd``: run_round's state, then the first pass."""
        self.rnd, self.size = rnd, size
        self.total = protocol.datagrams_for(size, self.chunk)
        self.pending = set(self.receivers)
        self.stats = type(self.stats)()
        self.last_repair.clear()
        self.queue.clear()
        self.inbox.clear()
        self.epoch += 1
        self.done = False
        self.work = self._first_pass_items()
        self._pump()

    def _first_pass_items(self) -> Iterator[Item | Callable[[], None]]:
        """run_round's sequential first pass: per channel every datagram, a look at the
        replies every SERVICE_EVERY, two END markers, a look at the replies."""
        for ch in range(len(self.channels)):
            for seq in range(self.total):
                data = self._data(seq)
                yield (ch, data, len(data) - protocol.DATA_HEADER_LEN, True)
                if seq % SERVICE_EVERY == SERVICE_EVERY - 1:
                    yield self._service_inbox
            yield lambda ch=ch: self._end(ch, END_COPIES)   # type: ignore[misc]
            yield self._service_inbox

    def _send(self, ch: int, data: bytes, file_bytes: int = 0) -> None:
        """Queued (repairs, END markers): sent by _pump ahead of the first pass's next one."""
        self.queue.append((ch, data, file_bytes, False))

    def _pump(self) -> None:
        """Send what is due: each datagram when the token bucket allows (now, or after the
        pacer's wait, scheduled); then the end of the first pass."""
        self.pumping = True
        try:
            self._pump_loop()
        finally:
            self.pumping = False

    def _pump_loop(self) -> None:
        epoch = self.epoch
        while not self.done and self.epoch == epoch:
            if self.queue:
                item: Item | Callable[[], None] = self.queue.popleft()
            elif self.work is not None:
                nxt = next(self.work, None)
                if nxt is None:
                    self.work = None
                    self._pass_end()
                    continue
                item = nxt
            else:
                self.busy = False
                return
            if callable(item):
                item()
                continue
            self.debt = 0.0
            self.bucket.consume(len(item[1]))
            if self.debt > 0:
                self.busy = True
                self.io.at(self.debt, lambda it=item, e=epoch: self._emit(it, e))
                return
            self._emit_now(item)
        self.busy = False

    def _emit(self, item: Item, epoch: int) -> None:
        if epoch != self.epoch or self.done:
            return   # the round ended while this waited for the pacer
        self._emit_now(item)
        self._pump()

    def _emit_now(self, item: Item) -> None:
        ch, data, file_bytes, first = item
        SenderCore._send(self, ch, data, file_bytes)   # the real send and its counters
        if first:
            self.stats.last_data = self.clock()

    def _kick(self) -> None:
        if not self.busy and not self.pumping and not self.done:
            self._pump()

    def _pass_end(self) -> None:
        """The first pass is over: replies are handled as they come; END again every
        end_interval to whoever has not ACKed, until the round's timeout."""
        now = self.clock()
        self.stats.pass_end = now
        self.deadline = now + self.timeout
        self._service_inbox()
        epoch = self.epoch
        self.io.at(self.end_interval, lambda: self._end_timer(epoch))

    def _end_timer(self, epoch: int) -> None:
        if epoch != self.epoch or self.done:
            return
        now = self.clock()
        if now >= self.deadline:
            missing = sorted(self.pending)
            names = ", ".join(self.receivers[i].name(self.multicast) for i in missing[:4])
            raise protocol.WaitExpired(
                f"round {self.rnd}: no ack from {names} within {self.timeout:g} s (simulated)")
        for ch in sorted({self.receivers[i].channel for i in self.pending}):
            self._end(ch)
        self._kick()
        self.io.at(self.end_interval, lambda: self._end_timer(epoch))

    # -- replies -------------------------------------------------------------------------------

    def on_reply(self, ch: int, data: bytes, src: tuple[str, int]) -> None:
        """A datagram on channel ``ch``'s socket: looked at now once the first pass is over,
        else at its next look (as the blocking loop's _service)."""
        if self.work is not None and not self.done:
            self.inbox.append((ch, data, src))
            return
        self._handle(ch, data, src)
        self._after_replies()

    def _service_inbox(self) -> None:
        inbox, self.inbox = self.inbox, []
        for msg in inbox:
            self._handle(*msg)
        self._after_replies()

    def _after_replies(self) -> None:
        if self.done or self.rnd < 0:
            return
        if not self.pending:
            self.done = True
            self.work = None
            self.queue.clear()
            self.xfer.process_done()
            return
        self._kick()

    def bye(self, rounds: int) -> None:
        """finish(): BYE once on every channel (``rnd`` -1: late replies are ignored)."""
        self.rnd = -1
        self.done = True
        self.bye_pending = set(self.receivers)
        msg = protocol.encode_bye(self.session, rounds)
        for ch in range(len(self.channels)):
            if not self.t.send(ch, msg):
                self.stats.send_errors += 1


class SimReceiver:
    """One receiver: the real ReceiverSession, its replies sent at once, its NACK timer."""

    def __init__(self, io: Any, endpoint: int, node: int) -> None:
        self.io, self.endpoint = io, endpoint
        self.rx = ReceiverSession(node, start=io.now(), wall=io.now)
        self.armed: float | None = None

    def on_datagram(self, data: bytes, src: tuple[str, int]) -> None:
        now = self.io.now()
        self._reply(self.rx.on_datagram(data, src, now), now)
        self._arm(now)

    def _reply(self, replies: list[bytes], now: float) -> None:
        for msg in replies:
            if self.rx.sender is not None:
                self.io.send(self.endpoint, msg, self.rx.sender)
        if replies:
            self.rx.note_sent(now)

    def _arm(self, now: float) -> None:
        due = self.rx.next_tick()
        if due is None or (self.armed is not None and self.armed <= due):
            return
        self.armed = due
        # a nanosecond late: ns-3 rounds to whole nanoseconds, and a tick a hair before
        # its due time would find nothing to do and re-arm for the same instant
        self.io.at(due - now + 1e-9, self._tick)

    def _tick(self) -> None:
        self.armed = None
        now = self.io.now()
        self._reply(self.rx.on_tick(now), now)
        self._arm(now)


class SimTransfer:
    """One transfer (33 rounds) as a sim.ns3run datagram application: receivers first, then
    the sending processes; a round ends when every process has every ACK of its receivers,
    and the next starts at that instant (the real sender's processes start together)."""

    def __init__(self, src: str, members: list[str], mode: str, procs: int, sizes: list[int],
                 chunk: int, rate_mbps: float, port: int, group: str | None,
                 timeout: float, dests: dict[str, str], sources: dict[str, str],
                 rng: random.Random) -> None:
        """``dests``: member -> the address the sender sends its unicast to and where it
        listens (multicast: its own); ``sources``: member -> the address the unicast socket
        to it is bound to (multicast: the sender's own, for all)."""
        if mode not in ("multicast", "unicast") or (mode == "multicast" and group is None):
            raise ValueError(f"sim transfer: mode {mode!r} (multicast needs a group)")
        self.src, self.members, self.mode, self.sizes = src, members, mode, sizes
        self.chunk, self.rate, self.port, self.group = chunk, rate_mbps, port, group
        self.timeout, self.dests, self.sources = timeout, dests, sources
        self.procs_asked = procs
        self.session = rng.randrange(1, 2 ** 32)
        self.receivers: dict[int, tuple[str, SimReceiver]] = {}
        self.channels: dict[int, tuple[SimProcess, int]] = {}
        self.procs: list[SimProcess] = []
        self.rounds: list[dict[str, Any]] = []
        self.rnd = 0
        self.total_s: float | None = None
        self.io: Any = None

    def start(self, io: Any) -> None:
        self.io = io
        multicast = self.mode == "multicast"
        for i, m in enumerate(self.members, start=1):
            # the real receivers: 0.0.0.0:port joined to the group, or their own address
            ep = io.open(m, "0.0.0.0" if multicast else self.dests[m], self.port)
            self.receivers[ep] = (m, SimReceiver(io, ep, i))
        args = argparse.Namespace(
            receiver_addrs=[(self.dests[m], self.port) for m in self.members], mode=self.mode,
            procs=self.procs_asked,
            group_addr=(self.group, self.port) if multicast else None, payload=self.chunk,
            order="sequential", end_interval=DEFAULT_END_INTERVAL, drop_every=0,
            rate_mbps=self.rate, mcast_if=None, ttl=8)
        addr_of = {(self.dests[m], self.port): m for m in self.members}
        for plan in plans_for(args, self.session):
            chans = [None] if multicast else [addr_of[r.addr] for r in plan.receivers]
            eps = [io.open(self.src, self.sources[m] if m else io.host_addr(self.src),
                           SENDER_PORT + len(self.channels) + k) for k, m in enumerate(chans)]
            proc = SimProcess(self, io, plan, eps, self.timeout)
            for ch, ep in enumerate(eps):
                self.channels[ep] = (proc, ch)
            self.procs.append(proc)
        io.at(0.0, self._next_round)

    def on_datagram(self, endpoint: int, data: bytes, src: tuple[str, int]) -> None:
        if endpoint in self.receivers:
            self.receivers[endpoint][1].on_datagram(data, src)
        else:
            proc, ch = self.channels[endpoint]
            proc.on_reply(ch, data, src)

    def process_done(self) -> None:
        if all(p.done for p in self.procs):
            self.rounds.append(merge(self.rnd, self.sizes[self.rnd - 1], self.chunk,
                                     [p.stats.as_dict() for p in self.procs]))
            self.io.at(0.0, self._next_round)

    def _next_round(self) -> None:
        if self.rnd == len(self.sizes):
            self.total_s = self.io.now()
            for p in self.procs:
                p.bye(len(self.sizes))
            return
        self.rnd += 1
        for p in self.procs:
            p.start(self.rnd, self.sizes[self.rnd - 1])

    # -- the reports, as the real app writes them ------------------------------------------

    def sender_report(self) -> dict[str, Any]:
        """The sender's --report document (times in simulated seconds; no CPU time)."""
        labels = [protocol.label((self.dests[m], self.port)) for m in self.members]
        confirmed = [labels[i] for p in self.procs for i in sorted(set(p.receivers) -
                                                                    p.bye_pending)]
        ok = self.total_s is not None and len(self.rounds) == len(self.sizes)
        return {"tool": "sim: apps.filexfer send, event-driven", "mode": self.mode,
                "receivers": labels,
                "group": protocol.label((self.group, self.port)) if self.group else None,
                "procs": len(self.procs), "order": "sequential", "payload": self.chunk,
                "rate_mbps": self.rate, "timeout_s": self.timeout, "session": self.session,
                "sizes": self.sizes, "ok": ok,
                "error": None if ok else "the transfer did not finish",
                "total_s": self.total_s, "rounds": self.rounds, "bye_confirmed": confirmed}

    def receiver_reports(self) -> dict[str, dict[str, Any]]:
        """Every member's --report document."""
        return {m: {"tool": "sim: apps.filexfer recv", "group": self.group, "ok": True,
                    "error": None, **r.rx.report()} for m, r in self.receivers.values()}


def simulate_transfer(net: Transfers, t: Transfer, out: Path) -> TransferResult:
    """One transfer in ns-3, as harness/filexfer.py's in the emulator: the same reports
    (sender.json, recv-*.json, written into ``out``) and the bytes on the sender's link
    counted as Ethernet frames (IP + 14 a packet, what the emulated switch port counts),
    plus sim.json.  Every round must deliver every byte (RunError otherwise)."""
    from sim.ns3run import simulate_datagrams  # ns-3's import: 15-30 s, once
    from sim.spec import SimConfig, build, group_of_plan, reply_routes

    out.mkdir(parents=True, exist_ok=True)
    mode, procs, sizes, members = t.mode, t.procs, list(t.sizes), list(net.members)
    limit = transfer_limit(t.expected_s, len(sizes))
    cfg = SimConfig(duration=limit, trim=0.0, interval=limit, bw=net.bw,
                    queue=net.queue, seed=net.seed, run=net.rep + 1)
    rng = run_rng(net.seed, net.rep)
    sim_net = build(net.topo, net.plan, [(net.src, m) for m in members], cfg, rng)
    flows = {f.dst: f for f in sim_net.flows}
    multicast = mode == "multicast"
    group = group_of_plan(net.topo, net.plan, net.group, net.src, members) if multicast \
        else None
    dests = {m: sim_net.host_addr(m) if multicast else flows[m].dst_addr for m in members}
    sources = {m: flows[m].src_addr for m in members}
    # the pacer counts IP bytes; a simulated link's frame adds SIM_FRAME, not ETH_HEADER
    rate = net.rate_mbps(SIM_FRAME)
    app = SimTransfer(net.src, members, mode, procs, sizes, net.payload, rate, t.port,
                      net.group if multicast else None, 20.0, dests, sources, rng)
    try:
        res = simulate_datagrams(sim_net, cfg, app, group,
                                 reply_routes(sim_net, group) if group else None, limit)
    except protocol.WaitExpired as e:
        raise RunError(f"{mode} x{procs} (sim): {e}") from None
    snd, receivers = app.sender_report(), app.receiver_reports()
    protocol.write_report(str(out / "sender.json"), snd)
    for m, rep in receivers.items():
        protocol.write_report(str(out / f"recv-{m}.json"), rep)
    if not snd["ok"]:
        raise RunError(f"{mode} x{procs} (sim): the transfer did not finish in {limit:.0f} "
                       f"simulated s ({len(snd['rounds'])} of {len(sizes)} rounds)")
    for r, rep in receivers.items():
        got = [x["bytes_received"] for x in rep["rounds"]]
        if got != sizes or not all(x["complete"] for x in rep["rounds"]):
            raise RunError(f"{mode} x{procs} (sim): receiver {r} did not get every byte")
    port_out = next(p for p in res.ports if p.node == net.src)
    (out / "sim.json").write_text(json.dumps({
        "config": {"bw": net.bw, "queue": net.queue, "seed": net.seed,
                   "run": net.rep + 1, "rate_mbps": rate}, "ns3": res.ns3_version,
        "wall_s": round(res.wall_s, 3), "import_s": round(res.import_s, 3),
        "end_s": res.end_s, "group": None if group is None else
        [{"switch": h.switch, "from": h.parent, "to": list(h.children)} for h in group.hops],
        "flows": [{"dst": f.dst, "path": f.path, "rev_path": f.rev_path,
                   "src_addr": f.src_addr, "dst_addr": f.dst_addr} for f in sim_net.flows],
        "ports": [{"node": p.node, "peer": p.peer, "sent": p.sent, "sent_bytes": p.sent_bytes,
                   "drops": p.drops} for p in res.ports]}, indent=1))
    return TransferResult(t, snd, receivers, port_out.sent_bytes + ETH_HEADER * port_out.sent,
                          facts={"link_drops": sum(p.drops for p in res.ports),
                                 "sim_wall_s": round(res.wall_s, 2)})
