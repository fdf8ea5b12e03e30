"""The switch's AQM (--aqm ecn|red) on the bpf dataplane: map entries, the queue-length
programs, the counters.

``aqm_entries`` turns an AqmSpec and the switch ports into the ``aqm`` map's entries (one
per switch port, keyed by its ifindex; pure, so the unit tests check the translation).
``QueueLengths`` loads qlen.bpf.c sharing the switch's pinned ``aqm`` map and attaches its
two programs to the qdisc:qdisc_enqueue and qdisc:qdisc_dequeue tracepoints; it exists
only when an AQM other than droptail is asked for.  The programs are pinned below the
switch's own bpffs (removed with it, by teardown and by ``dcrepro clean``); the
tracepoint attachments are file descriptors of this process, so they end with it, even on
SIGKILL.  Layout of struct aqm_port: dataplanes/bpf/aqm.h, mirrored in AQM_PORT.
"""
from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path
from typing import NamedTuple

from emulator.aqm import AqmSpec
from emulator.bpfobj import build
from emulator.bpfsys import attach_pinned
from emulator.proc import RunError, run

SOURCE = Path(__file__).resolve().parent / "qlen.bpf.c"
PROG_DIR = "qlen"                       # the programs' pins, inside the switch's bpffs
PROGS = ("on_enqueue", "on_dequeue")
MODE = {"droptail": 0, "ecn": 1, "red": 2}
PBITS = 24                              # aqm.h: probabilities in 1/2^24
FP = 16                                 # aqm.h: avg << 16
#: mode netns k min_th max_th max_p wlog qlen | frame_ns idle_since avg count marks drops
#: unmarkable events
AQM_PORT = struct.Struct("<8I8Q")


class AqmPort(NamedTuple):
    """One value of the ``aqm`` map (aqm.h's struct aqm_port)."""

    mode: int
    netns: int
    k: int = 0
    min_th: int = 0
    max_th: int = 0
    max_p: int = 0
    wlog: int = 0
    qlen: int = 0
    frame_ns: int = 0
    idle_since: int = 0
    avg: int = 0
    red_count: int = 0  # aqm.h: count
    marks: int = 0
    drops: int = 0
    unmarkable: int = 0
    events: int = 0


def pack_aqm_port(v: tuple[int, ...]) -> bytes:
    """aqm value from AqmPort (or its first fields: the rest zero)."""
    return AQM_PORT.pack(*AqmPort(*v))


def unpack_aqm_port(b: bytes) -> AqmPort:
    """Inverse of pack_aqm_port."""
    return AqmPort(*AQM_PORT.unpack(b))


def netns_inode() -> int:
    """Inode of this process's network namespace (the switch ports' one)."""
    return os.stat("/proc/self/ns/net").st_ino


def frame_ns(rate_mbps: float, frame_bytes: int = 1514) -> int:
    """A full frame's time on the wire at ``rate_mbps``: RED's idle-decay unit."""
    return round(frame_bytes * 8 * 1000 / rate_mbps)


def aqm_entries(spec: AqmSpec, ports: dict[int, float], netns: int) -> dict[int, AqmPort]:
    """The ``aqm`` map for ``spec`` on the switch ports ``ports`` (ifindex -> link rate,
    Mb/s); empty for droptail (nothing is loaded then)."""
    if not spec.active:
        return {}
    max_p = min(1 << PBITS, round(spec.max_p * (1 << PBITS)))
    return {ifindex: AqmPort(MODE[spec.mode], netns, spec.k, spec.min_th, spec.max_th, max_p,
                             spec.wlog, frame_ns=frame_ns(rate) if spec.mode == "red" else 0)
            for ifindex, rate in ports.items()}


def build_object(cache: Path) -> Path:
    """qlen.bpf.c compiled (cached; it reads kernel structs, so per kernel release)."""
    return build(cache, SOURCE, kernel_types=True)


class QueueLengths:
    """qlen.bpf.c loaded with the switch's ``aqm`` map (pinned at ``aqm_pin``) and attached
    to both qdisc tracepoints while open.  ``close()`` is idempotent."""

    def __init__(self, obj: Path, pin_dir: Path, aqm_pin: Path) -> None:
        self.fds: list[int] = []
        self.prog_dir = Path(pin_dir) / PROG_DIR
        try:
            run(["bpftool", "prog", "loadall", str(obj), str(self.prog_dir), "map", "name",
                 "aqm", "pinned", str(aqm_pin)], 120)
            for name in PROGS:
                self.fds.append(attach_pinned(str(self.prog_dir / name)))
        except (OSError, subprocess.SubprocessError) as exc:
            self.close()
            raise RunError(f"the AQM's queue-length programs could not be attached: "
                           f"{exc}") from exc
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Detach (close the attachments) and unpin the programs."""
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        for name in PROGS:
            try:
                (self.prog_dir / name).unlink()
            except OSError:
                pass
        try:
            self.prog_dir.rmdir()
        except OSError:
            pass
