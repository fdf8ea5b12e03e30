"""Busy-link dequeue gaps: the link-level fidelity check of Mininet-HiFi (CoNEXT'12).

While a link's queue is non-empty, consecutive dequeues should be one packet's transmission
time apart at the link rate (Mininet-HiFi's own data: 99.8 % of busy-period gaps within 10 %
at 100 Mb/s).  emulator/bpf/qgap.bpf.c, on the ``qdisc:qdisc_dequeue`` tracepoint, compares
each busy-period gap of every watched device's root qdisc with the transmission time of the
packet released before it (HTB; TBF: the one released at its end) and counts gap/ideal in
1 % buckets; see it for what counts as
busy, the length HTB charges, bulk dequeues, parked packets, GSO skbs and releases the
program did not see (checked against the qdisc's own packet counter: ``diag["untraced"]``).
This module builds and loads it for the duration of a measurement, reads the histograms
back and summarizes them (``summarize``: pure, testable without root).

Links are named by interface, in this process's network namespace (``"s1-eth1"``) or in
another one (``("h1", "h1-eth0")`` for ``ip netns`` name h1, ``(pid, "h1-eth0")`` for a
process's namespace, ``("/proc/42/ns/net", ...)`` for a path): the program matches the device
by ifindex *and* its namespace's inode, since ifindexes repeat across namespaces.

The pins live on a private bpffs mounted at ``workdir`` (put it below registry.BPFFS_DIR,
named ``<run>+qgap``, so ``dcrepro clean`` finds it); ``cleanup(workdir)`` removes what a
crashed run left.  The attachment itself dies with the process (it is an open fd).
"""
from __future__ import annotations

import ctypes
import os
import socket
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bpfobj import PinnedAttachment, load_pinned
from .bpfsys import BpfMap, attach_pinned
from .proc import RunError
from .registry import remove_bpffs

SOURCE = Path(__file__).resolve().parent / "bpf" / "qgap.bpf.c"
BUILD_DIR = Path("/var/cache/dcrepro/bpf")
# mirrors of qgap.bpf.c
NBUCKETS = 301                   # gap/ideal in whole percent, 0..299; 300 = 299.5 % or more
MAX_LINKS = 1024
MAX_INDEX = 4096                 # ifindexes the by_index fast path covers
W_CHARGE_NEXT = 1                # TBF: a gap is the time of the frame released at its end
FULL_LEN = 1000                  # "full-size" frames (bytes, as HTB charges them)
DIAG = ("dequeues", "releases", "bulk", "stashed", "from_stash", "requeued",
        "len_mismatch", "qlen_backlog_disagree", "busy_starts", "truncated", "gso_skbs",
        "segments", "untraced", "unsampled")
WATCH_KEY = struct.Struct("<II")              # ifindex, netns inode
WATCH_VAL = struct.Struct("<QIIII")           # rate (bit/s), overhead (bytes), slot, netns, flags
_HIST = f"4Q{NBUCKETS}Q"                      # samples, within10, sum_gap_ns, sum_ideal_ns, buckets
STATS = struct.Struct(f"<QIIIIQ{len(DIAG)}Q{_HIST}{_HIST}")   # last_*, diag, all, full

LinkRef = str | tuple[str | int, str]


@dataclass
class GapHist:
    """Busy-period gaps of one link (or several, merged): gap/ideal in 1 % buckets."""

    buckets: list[int] = field(default_factory=lambda: [0] * NBUCKETS)
    samples: int = 0
    within10: int = 0            # exactly 0.9 <= gap/ideal <= 1.1
    sum_gap_ns: int = 0
    sum_ideal_ns: int = 0

    def __add__(self, other: GapHist) -> GapHist:
        return GapHist([a + b for a, b in zip(self.buckets, other.buckets)],
                       self.samples + other.samples, self.within10 + other.within10,
                       self.sum_gap_ns + other.sum_gap_ns, self.sum_ideal_ns + other.sum_ideal_ns)


@dataclass
class LinkGaps:
    """What the probe holds for one link: every busy gap, those after full-size frames
    (>= FULL_LEN bytes: an ACK's 5 us at 100 Mb/s is within timer jitter) and counters."""

    all: GapHist = field(default_factory=GapHist)
    full: GapHist = field(default_factory=GapHist)
    diag: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DIAG, 0))

    def __add__(self, other: LinkGaps) -> LinkGaps:
        return LinkGaps(self.all + other.all, self.full + other.full,
                        {k: self.diag.get(k, 0) + other.diag.get(k, 0) for k in DIAG})


def unpack_stats(raw: bytes) -> LinkGaps:
    """One value of the stats map."""
    v = STATS.unpack(raw)
    diag = dict(zip(DIAG, v[6:6 + len(DIAG)]))
    rest = v[6 + len(DIAG):]
    n = 4 + NBUCKETS

    def hist(h: tuple[int, ...]) -> GapHist:
        return GapHist(list(h[4:]), h[0], h[1], h[2], h[3])
    return LinkGaps(hist(rest[:n]), hist(rest[n:2 * n]), diag)


def merge(hists: Iterable[LinkGaps]) -> LinkGaps:
    """Sum of several links' histograms."""
    out = LinkGaps()
    for h in hists:
        out = out + h
    return out


def summarize_hist(h: GapHist) -> dict[str, Any]:
    """samples; share within +-10 % of the packet time; median, p1, p99 of gap/ideal (to
    the 1 % bucket; 3.0 means 3.0 or more); mean gap/ideal weighted by packet time (1.0:
    busy periods drained at exactly the link rate)."""
    n = sum(h.buckets)
    if n == 0:
        return {"samples": 0, "within_10pct": None, "median_ratio": None, "p1_ratio": None,
                "p99_ratio": None, "busy_rate_ratio": None}

    def quantile(q: float) -> float:
        need, seen = q * n, 0
        for b, c in enumerate(h.buckets):
            seen += c
            if c and seen >= need:
                return b / 100
        return (NBUCKETS - 1) / 100
    return {"samples": n, "within_10pct": round(h.within10 / n, 4),
            "median_ratio": quantile(0.5), "p1_ratio": quantile(0.01),
            "p99_ratio": quantile(0.99),
            "busy_rate_ratio": round(h.sum_ideal_ns / h.sum_gap_ns, 4) if h.sum_gap_ns else None}


def summarize(hist: LinkGaps | GapHist) -> dict[str, Any]:
    """Summary of every busy gap (summarize_hist), with ``full_size``: the same for gaps
    after full-size frames, and the probe's counters (``diag``)."""
    if isinstance(hist, GapHist):
        return summarize_hist(hist)
    return {**summarize_hist(hist.all), "full_size": summarize_hist(hist.full),
            "diag": dict(hist.diag)}


# -- resolving links -------------------------------------------------------------------

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def netns_path(ns: str | int | None) -> str:
    """The nsfs file of a namespace: None (ours), a pid, an ``ip netns`` name or a path."""
    if ns is None:
        return "/proc/self/ns/net"
    if isinstance(ns, int):
        return f"/proc/{ns}/ns/net"
    return ns if ns.startswith("/") else f"/run/netns/{ns}"


def resolve(ref: LinkRef) -> tuple[int, int]:
    """(ifindex, namespace inode) of an interface (see the module doc for ``ref``)."""
    ns, name = (None, ref) if isinstance(ref, str) else ref
    path = netns_path(ns)
    try:
        inode = os.stat(path).st_ino
    except OSError as exc:
        raise RunError(f"no network namespace {ns!r} ({path}): {exc.strerror}") from None
    if ns is None:
        try:
            return socket.if_nametoindex(name), inode
        except OSError:
            raise RunError(f"no interface {name} in this network namespace") from None
    out: dict[str, Any] = {}

    def inside() -> None:        # setns() moves only this thread, which then ends
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                if _libc.setns(fd, _CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
            finally:
                os.close(fd)
            out["ifindex"] = socket.if_nametoindex(name)
        except OSError as exc:
            out["error"] = exc
    t = threading.Thread(target=inside, name="qgap-setns")
    t.start()
    t.join()
    if "error" in out:
        raise RunError(f"no interface {name} in network namespace {ns!r}: {out['error']}")
    return out["ifindex"], inode


# -- build, load, attach ---------------------------------------------------------------

def build_object() -> Path:
    """The compiled program (cached by source hash and kernel release; clang needed)."""
    from .bpfobj import build
    return build(BUILD_DIR, SOURCE, kernel_types=True)


def cleanup(workdir: Path | str) -> bool:
    """Unmount a probe's bpffs and remove the directory (registry.remove_bpffs)."""
    return remove_bpffs(os.fspath(workdir))


def fast_path(where: dict[LinkRef, tuple[int, int]],
              values: dict[LinkRef, bytes]) -> dict[int, bytes]:
    """The by_index entries: ifindex -> the watch value of the one watched device with that
    index (below MAX_INDEX); an index two watched devices share (in two namespaces) stays
    out, and the hash finds both."""
    by: dict[int, list[LinkRef]] = {}
    for ref, (ifindex, _) in where.items():
        if ifindex < MAX_INDEX:
            by.setdefault(ifindex, []).append(ref)
    return {i: values[refs[0]] for i, refs in by.items() if len(refs) == 1}


class QueueGapProbe(PinnedAttachment):
    """Context manager: count busy-period dequeue gaps on ``links`` (interface -> rate in
    Mb/s; see the module doc for naming interfaces in other namespaces) while it is open.
    ``overhead``: bytes HTB adds per packet (tc's ``overhead``; 0 in dcrepro).  ``shaper``:
    the links' root qdisc, htb or tbf (which frame a gap is measured against)."""

    what = "dequeue-gap probe"

    def __init__(self, links: dict[LinkRef, float], workdir: Path | str,
                 overhead: int = 0, shaper: str = "htb") -> None:
        if shaper not in ("htb", "tbf"):
            raise ValueError(f"shaper must be htb or tbf, got {shaper!r}")
        super().__init__(workdir)
        self.links, self.overhead = dict(links), overhead
        self.flags = W_CHARGE_NEXT if shaper == "tbf" else 0
        self.slots: dict[LinkRef, int] = {}

    def __enter__(self) -> QueueGapProbe:
        """Load, fill the watch map, attach.  Any failure (clang missing, a link that does
        not exist, the kernel refusing the program) is a RunError, with nothing left."""
        try:
            if len(self.links) > MAX_LINKS:
                raise RunError(f"{len(self.links)} links; the probe watches at most {MAX_LINKS}")
            bad = [ref for ref, mbps in self.links.items() if not mbps > 0]
            if bad:
                raise RunError(f"links without a positive rate: {bad[:5]}")
            where = {ref: resolve(ref) for ref in self.links}
            obj = build_object()
            if not cleanup(self.workdir):
                raise RunError(f"{self.workdir} is in the way (not an empty directory)")
            prog = load_pinned(obj, self.workdir)
            for name in ("watch", "by_index", "stats"):
                self.maps[name] = BpfMap(str(self.workdir / "maps" / name))
            if (self.maps["stats"].value_size != STATS.size or
                    self.maps["watch"].value_size != WATCH_VAL.size or
                    self.maps["by_index"].value_size != WATCH_VAL.size):
                raise RunError(f"{SOURCE.name} and {__name__} disagree on map layouts")
            values: dict[LinkRef, bytes] = {}
            for slot, (ref, mbps) in enumerate(self.links.items()):
                self.slots[ref] = slot
                values[ref] = WATCH_VAL.pack(round(mbps * 1e6), self.overhead, slot,
                                             where[ref][1], self.flags)
                self.maps["watch"].update(WATCH_KEY.pack(*where[ref]), values[ref])
            for ifindex, val in fast_path(where, values).items():
                self.maps["by_index"].update(struct.pack("<I", ifindex), val)
            self.link_fd = attach_pinned(str(prog))
        except BaseException as exc:
            self.failed(exc)
        return self

    def read(self) -> dict[LinkRef, LinkGaps]:
        """Per link: its histograms and counters so far."""
        stats = self.maps["stats"]
        return {ref: unpack_stats(stats.lookup(struct.pack("<I", slot)) or bytes(STATS.size))
                for ref, slot in self.slots.items()}

