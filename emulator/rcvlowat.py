"""Receiver wake-ups once per ``lowat`` bytes (``--rcvlowat``): emulator/bpf/rcvlowat.bpf.c.

A TCP receiver that waits in select() and reads whatever is there is woken once per
arriving segment.  iperf3's servers do that, and at k=6 and 10 Mb/s their ~19,000 wake-ups
a second cost the machine more than the switch program does (docs/measured.md).  The sockops
program sets SO_RCVLOWAT on the run's passive TCP connections in a port range once each has
received ``after`` bytes (so a protocol's first small messages, and a control connection
that never carries that much, are left alone); the kernel keeps acknowledging every second
segment while fewer bytes are queued, so the senders see the same ACK clock.

What changes is when the receiving process reads: its byte counts lag the wire by at most
``lowat`` bytes (16 KiB is 13 ms at 10 Mb/s, well inside one 0.5-s iperf3 interval at the
rates the permutation runs), and a flow slower than ``lowat`` bytes per interval shows
empty intervals it did not have, so the option is opt-in.  MPTCP is refused: a subflow's
mark does not change when its connection's socket is readable.

The program is attached to the root of the cgroup v2 hierarchy by a bpf_link, whose fd
this process holds: the attachment ends with the process, also after SIGKILL.  It acts only
in the network namespaces it is given (by cookie).  The pins live on a private bpffs at
``workdir`` (below registry.BPFFS_DIR, named ``<run>+rcvlowat``, so ``dcrepro clean`` finds
it).
"""
from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .bpfobj import PinnedAttachment, load_pinned
from .bpfsys import BPF_CGROUP_SOCK_OPS, BpfMap, link_create, obj_get
from .netns import in_namespaces
from .proc import RunError
from .registry import remove_bpffs

SOURCE = Path(__file__).resolve().parent / "bpf" / "rcvlowat.bpf.c"
BUILD_DIR = Path("/var/cache/dcrepro/bpf")
#: bytes a connection receives before its mark is set: iperf3's control connection carries
#: a few kB in a whole test (parameters, states, the results' JSON), a data connection at
#: 10 Mb/s passes this in 0.2 s
AFTER = 256 * 1024
#: the largest mark accepted: above half of the default tcp_rmem max the kernel caps it
MAX_LOWAT = 1 << 20
CONFIG = struct.Struct("<IIIIQ")            # lowat, port_lo, port_hi, pad, after
COUNTERS = ("set", "failed", "watched", "looks")
SO_NETNS_COOKIE = 71


def check(lowat: int) -> None:
    """ValueError unless ``lowat`` is 0 (off) or 1..MAX_LOWAT bytes."""
    if not 0 <= lowat <= MAX_LOWAT:
        raise ValueError(f"--rcvlowat must be 0 (off) or 1..{MAX_LOWAT} bytes, got {lowat}")


def cgroup2_root(mounts: str) -> str | None:
    """Where the cgroup v2 hierarchy is mounted, from /proc/self/mounts' text (None: not)."""
    for line in mounts.splitlines():
        f = line.split()
        if len(f) > 2 and f[2] == "cgroup2":
            return f[1].encode().decode("unicode_escape")
    return None


def netns_cookie(_: Any = None) -> int:
    """The cookie of the calling thread's network namespace (SO_NETNS_COOKIE)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        return int.from_bytes(s.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8), "little")


def build_object() -> Path:
    """The compiled program (cached by source hash; clang needed)."""
    from .bpfobj import build
    return build(BUILD_DIR, SOURCE)


class ReceiverLowat(PinnedAttachment):
    """Context manager: while open, passive TCP connections on local ports [lo, hi) in the
    network namespaces of ``pids`` get SO_RCVLOWAT ``lowat`` once they have received
    ``after`` bytes.  Any failure to set it up is a RunError, with nothing left."""

    what = "--rcvlowat"

    def __init__(self, pids: Iterable[int], ports: tuple[int, int], lowat: int,
                 workdir: Path | str, after: int = AFTER) -> None:
        check(lowat)
        if lowat == 0:
            raise ValueError("ReceiverLowat needs a mark above 0 bytes")
        super().__init__(workdir)
        self.pids, self.ports, self.lowat, self.after = list(pids), ports, lowat, after

    def __enter__(self) -> ReceiverLowat:
        try:
            with open("/proc/self/mounts") as f:
                root = cgroup2_root(f.read())
            if root is None:
                raise RunError("--rcvlowat attaches a sockops program to the cgroup v2 "
                               "hierarchy, and none is mounted")
            obj = build_object()
            if not remove_bpffs(os.fspath(self.workdir)):
                raise RunError(f"{self.workdir} is in the way (not an empty directory)")
            prog = load_pinned(obj, self.workdir, prog_type="sockops")
            for name in ("config", "netns", "counters"):
                self.maps[name] = BpfMap(str(self.workdir / "maps" / name))
            if self.maps["config"].value_size != CONFIG.size:
                raise RunError(f"{SOURCE.name} and {__name__} disagree on the config layout")
            self.maps["config"].update(struct.pack("<I", 0), CONFIG.pack(
                self.lowat, self.ports[0], self.ports[1], 0, self.after))
            for cookie in set(in_namespaces(self.pids, netns_cookie)):
                self.maps["netns"].update(struct.pack("<Q", cookie), b"\1")
            prog_fd, cg_fd = obj_get(str(prog)), os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            try:
                self.link_fd = link_create(prog_fd, cg_fd, BPF_CGROUP_SOCK_OPS)
            finally:
                os.close(prog_fd)
                os.close(cg_fd)
        except BaseException as exc:
            self.failed(exc)
        return self

    def counters(self) -> dict[str, int]:
        """Connections watched, marks set, marks the kernel refused, and the program's looks
        at a watched connection's bytes (one per ACK it sent before the mark)."""
        m = self.maps["counters"]
        return {name: int.from_bytes(m.lookup(struct.pack("<I", i)) or bytes(8), "little")
                for i, name in enumerate(COUNTERS)}

