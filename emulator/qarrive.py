"""Bottleneck arrivals: every packet offered to a watched port's tail-drop queue, accepted or
dropped, with its time, the queue length, its ingress and its 5-tuple.

emulator/bpf/qarrive.bpf.c sits on the ``qdisc:qdisc_enqueue`` tracepoint (accepted: the root
qdisc took it), on ``skb:kfree_skb`` with a qdisc drop reason (the pfifo leaf refused it) and
on ``qdisc:qdisc_dequeue`` (released: the root handed the packet to the device) and pushes
one record per event into a BPF ring buffer; this module loads it for the length
of a measurement, drains the ring from a thread (mmap of the ring, no process per read) and
returns the records.  Links are named as in emulator/qgap.py (``"s1-eth1"``, or
``(namespace, name)``), matched by ifindex and namespace inode.

Fidelity check (``check``): the tracer's counts against the qdisc's own counters read with
``tc -s`` before attaching and after detaching (no traffic at either moment): drops traced
vs the pfifo's drop counter, accepted traced vs what the root released plus what it still
holds.  BPF runs on tracepoints are occasionally skipped on this 6.18 guest (qgap.bpf.c),
and the ring may be full: both are counted, not assumed away.

The pins live on a private bpffs at ``workdir`` (below registry.BPFFS_DIR, named
``<run>+qarrive``, so ``dcrepro clean`` finds it); the attachments are fds of this process.
"""
from __future__ import annotations

import json
import mmap
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bpfsys import BpfMap, attach_pinned
from .proc import RunError, check
from .qgap import LinkRef, cleanup, netns_path, resolve

SOURCE = Path(__file__).resolve().parent / "bpf" / "qarrive.bpf.c"
BUILD_DIR = Path("/var/cache/dcrepro/bpf")
PROGRAMS = ("on_enqueue", "on_free", "on_dequeue")
# mirrors of qarrive.bpf.c
MAX_PORTS = 64
WATCH_KEY = struct.Struct("<II")            # ifindex, netns inode -> slot (u32)
COUNTS = struct.Struct("<6Q")   # accepted, dropped, ring_full, not_ipv4, released, unlisted
COUNT_NAMES = ("accepted", "dropped", "ring_full", "not_ipv4", "released", "unlisted")
RELEASED = 0xFFFFFFFF                 # the reason of a release record (qdisc_dequeue)
ARRIVAL = struct.Struct("<Q4s4sHHIIIIIIHHBBBBI")
FIELDS = ("ts_ns", "saddr", "daddr", "sport", "dport", "seq", "qlen", "q_drops", "q_sent",
          "iif", "len", "payload", "segs", "dropped", "proto", "tcp_flags", "slot", "reason")
_BUSY, _DISCARD = 1 << 31, 1 << 30
DRAIN_S = 0.05                              # how often the thread empties the ring


@dataclass
class Arrival:
    """One packet offered to a watched queue (times in ns of CLOCK_MONOTONIC)."""

    ts_ns: int
    saddr: str
    daddr: str
    sport: int
    dport: int
    seq: int
    qlen: int           # the root qdisc's packets at the event
    q_drops: int        # the root qdisc's drop counter at the event
    q_sent: int         # the root qdisc's released packets at the event
    iif: int            # skb_iif: the switch's ingress ifindex (bpf dataplane)
    len: int
    payload: int
    segs: int
    dropped: int
    proto: int
    tcp_flags: int
    slot: int
    reason: int


def unpack_record(raw: bytes | memoryview) -> Arrival:
    """One ring-buffer record."""
    v = list(ARRIVAL.unpack_from(raw))
    v[1], v[2] = socket.inet_ntoa(v[1]), socket.inet_ntoa(v[2])
    return Arrival(*v)


def walk_ring(data: bytes | memoryview, cons: int, prod: int,
              mask: int) -> Iterator[tuple[int, memoryview | bytes | None]]:
    """Records of a BPF ring buffer between consumer and producer positions: (position after
    the record, its payload or None for a discarded one); stops at a record still being
    written.  ``data`` is the data area mapped twice in a row (as the kernel maps it), so a
    record that wraps is contiguous."""
    view = memoryview(data)
    while cons < prod:
        hdr, = struct.unpack_from("<I", view, cons & mask)
        if hdr & _BUSY:
            return
        n = hdr & ~(_BUSY | _DISCARD)
        start = (cons & mask) + 8
        nxt = cons + ((n + 8 + 7) & ~7)
        yield nxt, None if hdr & _DISCARD else view[start:start + n]
        cons = nxt


class RingReader:
    """Consumer side of a BPF_MAP_TYPE_RINGBUF map: the consumer page read-write, the
    producer page and the data area (mapped twice by the kernel) read-only."""

    def __init__(self, fd: int, size: int) -> None:
        page = mmap.PAGESIZE
        self.size = size
        self.cons_map = mmap.mmap(fd, page, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                                  offset=0)
        self.prod_map = mmap.mmap(fd, page + 2 * size, mmap.MAP_SHARED, mmap.PROT_READ,
                                  offset=page)

    def drain(self) -> list[bytes]:
        """Copy out every complete record and hand the space back to the kernel."""
        cons, = struct.unpack_from("<Q", self.cons_map, 0)
        prod, = struct.unpack_from("<Q", self.prod_map, 0)
        data = memoryview(self.prod_map)[mmap.PAGESIZE:]
        out: list[bytes] = []
        pos = cons
        try:
            for nxt, rec in walk_ring(data, cons, prod, self.size - 1):
                if rec is not None:
                    out.append(bytes(rec))
                pos = nxt
        finally:
            data.release()
        if pos != cons:
            struct.pack_into("<Q", self.cons_map, 0, pos)
        return out

    def close(self) -> None:
        self.cons_map.close()
        self.prod_map.close()


def build_object() -> Path:
    """The compiled program (cached by source hash and kernel release; clang needed)."""
    from .bpfobj import build
    return build(BUILD_DIR, SOURCE, kernel_types=True)


def qdisc_counters(ref: LinkRef) -> dict[str, int]:
    """The root qdisc's released packets and queue length, and the pfifo leaf's drops, of
    one interface (``tc -s -j``; switch ports are in this namespace, others via ip netns)."""
    ns, name = (None, ref) if isinstance(ref, str) else ref
    argv = ["tc", "-s", "-j", "qdisc", "show", "dev", name]
    if ns is not None:
        argv = ["nsenter", f"--net={netns_path(ns)}", *argv]
    qs = json.loads(check(argv, timeout=5) or "[]")
    root: dict[str, Any] = next((q for q in qs if q.get("root")), {})
    leaf: dict[str, Any] = next((q for q in qs if q.get("kind") == "pfifo"), {})
    return {"root_sent": int(root.get("packets", 0)), "root_qlen": int(root.get("qlen", 0)),
            "root_drops": int(root.get("drops", 0)), "pfifo_drops": int(leaf.get("drops", 0)),
            "pfifo_qlen": int(leaf.get("qlen", 0))}


def check_counts(traced: dict[str, int], before: dict[str, int],
                 after: dict[str, int]) -> dict[str, Any]:
    """Traced events against the qdisc's own counters over the same window (pure).

    drops: the pfifo's drop counter; accepted: what the root released plus the change of
    what it holds (HTB counts released segments; a GSO skb of n segments is one arrival,
    so ``traced_segments`` is compared when given); released: the root's packet counter
    against the release records.  ``missed``: events the counters saw and the tracer did not
    (BPF runs skipped, or the ring full)."""
    q_drops = after["pfifo_drops"] - before["pfifo_drops"]
    q_sent = after["root_sent"] - before["root_sent"]
    q_acc = q_sent + after["root_qlen"] - before["root_qlen"]
    seen_acc = traced.get("traced_segments", traced["accepted"])
    released = traced.get("released")
    return {"qdisc_drops": q_drops, "traced_drops": traced["dropped"],
            "drops_missed": q_drops - traced["dropped"],
            "qdisc_accepted": q_acc, "traced_accepted": seen_acc,
            "accepted_missed": q_acc - seen_acc,
            # releases are packets (skbs); HTB's counter counts segments (GSO skbs: fewer)
            "qdisc_released": q_sent, "traced_released": released,
            "released_missed": None if released is None else q_sent - released,
            "released_unlisted": traced.get("unlisted", 0),
            "ring_full": traced["ring_full"], "not_ipv4": traced["not_ipv4"],
            "drops_agree": q_drops == traced["dropped"]}


class ArrivalTracer:
    """Context manager: record every arrival at ``links``' queues while it is open.
    ``records`` (Arrival, in ring order), ``counts`` per link and ``checks`` per link (the
    fidelity check, after close)."""

    def __init__(self, links: list[LinkRef], workdir: Path | str) -> None:
        self.links, self.workdir = list(links), Path(workdir)
        self.fds: list[int] = []
        self.maps: dict[str, BpfMap] = {}
        self.ring: RingReader | None = None
        self.raw: list[bytes] = []
        self._cache: list[Arrival] = []
        self.before: dict[LinkRef, dict[str, int]] = {}
        self.checks: dict[LinkRef, dict[str, Any]] = {}
        self.counts: dict[LinkRef, dict[str, int]] = {}
        self.mono_to_wall = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __enter__(self) -> ArrivalTracer:
        """Build, load, fill the watch map, attach, start draining.  Any failure is a
        RunError, with nothing left behind."""
        try:
            self._open()
        except OSError as exc:                # BpfError and friends
            self._teardown()
            raise RunError(f"arrival tracer: {exc}") from exc
        except BaseException:
            self._teardown()
            raise
        return self

    def _open(self) -> None:
        from .bpfobj import load_pinned
        if not 0 < len(self.links) <= MAX_PORTS:
            raise RunError(f"{len(self.links)} links; the tracer watches 1..{MAX_PORTS}")
        where = [resolve(ref) for ref in self.links]
        obj = build_object()
        if not cleanup(self.workdir):
            raise RunError(f"{self.workdir} is in the way (not an empty directory)")
        progs = load_pinned(obj, self.workdir, all_programs=True)
        for name in ("watch", "counts", "events"):
            self.maps[name] = BpfMap(str(self.workdir / "maps" / name))
        if self.maps["counts"].value_size != COUNTS.size:
            raise RunError(f"{SOURCE.name} and {__name__} disagree on map layouts")
        for slot, key in enumerate(where):
            self.maps["watch"].update(WATCH_KEY.pack(*key), struct.pack("<I", slot))
        self.ring = RingReader(self.maps["events"].fd, self.maps["events"].max_entries)
        # the counters before any record: nothing is sent to the queue while it attaches
        self.before = {ref: qdisc_counters(ref) for ref in self.links}
        self.mono_to_wall = time.time() - time.monotonic()
        for name in PROGRAMS:
            self.fds.append(attach_pinned(str(progs / name)))
        self._thread = threading.Thread(target=self._drain, name="qarrive", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while not self._stop.wait(DRAIN_S):
                assert self.ring is not None
                self.raw += self.ring.drain()
        except BaseException as exc:  # surfaced by close()
            self._error = exc

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Detach, drain what is left, read the counters and run the check (idempotent)."""
        if not self.fds and self.ring is None:
            return
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        self._stop.set()
        try:
            if self._thread is not None:
                self._thread.join(timeout=5)
                if self._thread.is_alive():
                    raise RunError("arrival tracer: the ring drain did not stop within 5 s")
            if self._error is not None:
                raise RunError(f"arrival tracer: draining the ring failed: {self._error}")
            if self.ring is not None:
                self.raw += self.ring.drain()
            slots = {ref: i for i, ref in enumerate(self.links)}
            counts = self.maps["counts"]
            records = self.records()
            misses = self._recursion_misses()
            for ref, i in slots.items():
                raw = counts.lookup(struct.pack("<I", i)) or bytes(COUNTS.size)
                c = dict(zip(COUNT_NAMES, COUNTS.unpack(raw)))
                c["traced_segments"] = sum(max(1, r.segs) for r in records
                                           if r.slot == i and not r.dropped)
                self.counts[ref] = c
                if ref in self.before:
                    self.checks[ref] = {**check_counts(c, self.before[ref], qdisc_counters(ref)),
                                        "recursion_misses": misses}
        finally:
            self._teardown()

    def _recursion_misses(self) -> int:
        """Runs the kernel skipped because the program was already running on that CPU
        (bpftool's recursion_misses, both programs, every device): one known reason for
        a missed event; the qdisc counters catch the others."""
        n = 0
        for name in PROGRAMS:
            info = json.loads(check(["bpftool", "-j", "prog", "show", "pinned",
                                     str(self.workdir / "progs" / name)], timeout=10) or "{}")
            n += int(info.get("recursion_misses", 0))
        return n

    def _teardown(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        if self.ring is not None:
            self.ring.close()
            self.ring = None
        for m in self.maps.values():
            m.close()
        self.maps = {}
        if not cleanup(self.workdir):
            raise RunError(f"could not unmount the bpffs at {self.workdir}")

    def _unpacked(self) -> list[Arrival]:
        """Every record drained so far, unpacked once (again only when more were drained)."""
        if len(self._cache) != len(self.raw):
            self._cache = [unpack_record(r) for r in self.raw]
        return self._cache

    def records(self) -> list[Arrival]:
        """Every arrival record (accepted or dropped) drained so far, in ring order."""
        return [a for a in self._unpacked() if a.reason != RELEASED]

    def releases(self) -> list[Arrival]:
        """Every release record (a packet the root qdisc handed out) drained so far."""
        return [a for a in self._unpacked() if a.reason == RELEASED]
