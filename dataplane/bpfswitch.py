"""The tc-BPF switch program's life: build, load and pin, fill and read its maps, attach, remove.

The struct layouts below mirror dataplane/bpf/switch.bpf.c byte for byte (little-endian,
explicit padding); tests/unit/test_bpfswitch.py checks the round trips and sizes, and the
loaded maps' key/value sizes are checked against them at load time.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import socket
import struct
import subprocess
from pathlib import Path
from typing import Any, Iterable

from .bpfplan import FibAction, FibKey
from .bpfsys import BpfMap
from .proc import RunError, check
from .registry import remove_bpffs

SOURCE = Path(__file__).resolve().parent / "bpf" / "switch.bpf.c"
MAX_CHOICES = 16
# struct formats (see switch.bpf.c)
PORT_INFO = struct.Struct("<IIIIQQQ")          # sw, port, seed, pad, rx_packets, rx_bytes, miss
PORT_KEY = struct.Struct("<II")                # sw, port
EGRESS_INFO = struct.Struct("<IIQQ")           # ifindex, pad, tx_packets, tx_bytes
FIB_KEY = struct.Struct("<IHHBB6s")            # sw, in_port, label, kind, pad, addr
FIB_ACTION = struct.Struct(f"<BBBBI{MAX_CHOICES}H{MAX_CHOICES}H")
FLOW_KEY = struct.Struct("<I4s4sHHBBH")        # sw, saddr, daddr, sport, dport, proto, pad, out
FLOW_STAT = struct.Struct("<QQHHI")            # packets, bytes, in_label, out_label, pad
IFINDEX = struct.Struct("<I")
SIZES = {"ports": (IFINDEX.size, PORT_INFO.size), "egress": (PORT_KEY.size, EGRESS_INFO.size),
         "fib": (FIB_KEY.size, FIB_ACTION.size), "flows": (FLOW_KEY.size, FLOW_STAT.size),
         "rr": (24, 4)}


def pack_fib_key(k: FibKey) -> bytes:
    """struct fib_key."""
    return FIB_KEY.pack(k.sw, k.in_port, k.label, k.kind, 0, k.addr)


def unpack_fib_key(b: bytes) -> FibKey:
    """Inverse of pack_fib_key."""
    sw, in_port, label, kind, _, addr = FIB_KEY.unpack(b)
    return FibKey(sw, in_port, label, kind, addr)


def pack_fib_action(a: FibAction) -> bytes:
    """struct fib_action (unused choice slots are zero)."""
    n = len(a.ports)
    if not 1 <= n <= MAX_CHOICES:
        raise ValueError(f"{n} choices (1..{MAX_CHOICES})")
    pad = [0] * (MAX_CHOICES - n)
    return FIB_ACTION.pack(a.op, a.mode, a.pop, n, a.group, *a.ports, *pad, *a.push, *pad)


def unpack_fib_action(b: bytes) -> FibAction:
    """Inverse of pack_fib_action."""
    op, mode, pop, n, group, *rest = FIB_ACTION.unpack(b)
    ports, push = rest[:MAX_CHOICES], rest[MAX_CHOICES:]
    return FibAction(op, mode, pop, group, tuple(ports[:n]), tuple(push[:n]))


def unpack_flow(key: bytes, value: bytes) -> dict[str, Any]:
    """One record of the flows map as a dict (addresses dotted, ports host order)."""
    sw, saddr, daddr, sport, dport, proto, _, out_port = FLOW_KEY.unpack(key)
    packets, nbytes, in_label, out_label, _ = FLOW_STAT.unpack(value)
    return {"sw": sw, "saddr": socket.inet_ntoa(saddr), "daddr": socket.inet_ntoa(daddr),
            "sport": sport, "dport": dport, "proto": proto, "out_port": out_port,
            "packets": packets, "bytes": nbytes, "in_label": in_label, "out_label": out_label}


def vmlinux_header(cache: Path) -> Path:
    """vmlinux.h of the running kernel (from its BTF), for programs that read kernel structs."""
    out = cache / f"vmlinux-{os.uname().release}" / "vmlinux.h"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        text = check(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format",
                      "c"], timeout=120)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(text)
        tmp.replace(out)
    return out


def build(cache: Path, source: Path = SOURCE, kernel_types: bool = False) -> Path:
    """Compile a program with clang into ``cache`` (keyed by the source's hash and, with
    ``kernel_types``, the kernel release whose vmlinux.h it includes)."""
    if shutil.which("clang") is None:
        raise RunError("clang is missing: the bpf programs are compiled with it "
                       "(./setup.sh installs it)")
    key = source.read_bytes() + (os.uname().release.encode() if kernel_types else b"")
    obj = cache / f"{source.stem}-{hashlib.sha256(key).hexdigest()[:16]}.o"
    if obj.exists():
        return obj
    cache.mkdir(parents=True, exist_ok=True)
    tmp = obj.with_suffix(f".tmp{os.getpid()}")
    arch = {"x86_64": ("x86_64-linux-gnu", "x86"),
            "aarch64": ("aarch64-linux-gnu", "arm64")}.get(os.uname().machine, ("", ""))
    incs = [f"-I/usr/include/{arch[0]}"] if arch[0] else []
    if kernel_types:
        incs = [f"-I{vmlinux_header(cache).parent}", f"-D__TARGET_ARCH_{arch[1]}"]
    check(["clang", "-O2", "-g", "-Wall", "-target", "bpf", *incs, "-c", str(source), "-o",
           str(tmp)], timeout=120)
    tmp.replace(obj)
    return obj


def load_pinned(obj: Path, pin_dir: Path, prog_type: str | None = None) -> Path:
    """Mount a private bpffs at ``pin_dir``, load ``obj`` there; return the program's pin
    (maps are pinned under pin_dir/maps by name)."""
    pin_dir.mkdir(parents=True, exist_ok=True)
    check(["mount", "-t", "bpf", "bpf", str(pin_dir)], timeout=10)
    prog = pin_dir / "prog"
    check(["bpftool", "prog", "load", str(obj), str(prog),
           *(["type", prog_type] if prog_type else []), "pinmaps", str(pin_dir / "maps")],
          timeout=60)
    return prog


class SwitchRuntime:
    """The loaded program of one network, pinned on a private bpffs mounted at ``pin_dir``."""

    MAPS = ("ports", "egress", "fib", "flows", "rr")

    def __init__(self, pin_dir: Path, obj: Path) -> None:
        self.pin_dir = pin_dir
        self.prog = pin_dir / "prog"
        self.maps: dict[str, BpfMap] = {}
        self.attached: list[str] = []
        load_pinned(obj, pin_dir, "classifier")
        for name in self.MAPS:
            m = BpfMap(str(pin_dir / "maps" / name))
            if (m.key_size, m.value_size) != SIZES[name]:
                raise RunError(f"BPF map {name}: key/value {m.key_size}/{m.value_size} bytes, "
                               f"dcrepro packs {SIZES[name]}: program and loader disagree")
            self.maps[name] = m

    def fill(self, ports: dict[int, tuple[int, int, int]], egress: dict[tuple[int, int], int],
             fib: dict[FibKey, FibAction]) -> None:
        """Write every entry of the plan (before any program is attached)."""
        if len(fib) > self.maps["fib"].max_entries:
            raise RunError(f"the plan has {len(fib)} table entries; the BPF switch holds "
                           f"{self.maps['fib'].max_entries}")
        for ifindex, (sw, port, seed) in ports.items():
            self.maps["ports"].update(IFINDEX.pack(ifindex), PORT_INFO.pack(sw, port, seed, 0, 0, 0, 0))
        for (sw, port), ifindex in egress.items():
            self.maps["egress"].update(PORT_KEY.pack(sw, port), EGRESS_INFO.pack(ifindex, 0, 0, 0))
        for k, a in fib.items():
            self.maps["fib"].update(pack_fib_key(k), pack_fib_action(a))

    def verify(self, ports: dict[int, tuple[int, int, int]], egress: dict[tuple[int, int], int],
               fib: dict[FibKey, FibAction]) -> str:
        """Read every map back; '' when it holds exactly the plan, else what differs."""
        got_ports = {IFINDEX.unpack(k)[0]: PORT_INFO.unpack(v)[:3]
                     for k, v in self.maps["ports"].items()}
        got_egress = {PORT_KEY.unpack(k): EGRESS_INFO.unpack(v)[0]
                      for k, v in self.maps["egress"].items()}
        got_fib = {unpack_fib_key(k): unpack_fib_action(v) for k, v in self.maps["fib"].items()}
        for name, want, got in (("ports", ports, got_ports), ("egress", egress, got_egress),
                                ("fib", fib, got_fib)):
            if got != want:
                extra = len(set(got) - set(want))
                missing = len(set(want) - set(got))
                wrong = sum(1 for k in set(got) & set(want) if got[k] != want[k])
                return (f"{name}: {missing} entries missing, {extra} unexpected, {wrong} "
                        f"different (of {len(want)})")
        return ""

    def attach(self, intfs: Iterable[str]) -> None:
        """clsact + the pinned program on every interface's ingress, in one tc batch."""
        intfs = list(intfs)
        lines = [f"qdisc add dev {i} clsact\nfilter add dev {i} ingress prio 1 handle 1 "
                 f"bpf da object-pinned {self.prog}" for i in intfs]
        check(["tc", "-batch", "-"], input_text="\n".join(lines) + "\n", timeout=60)
        self.attached = intfs

    def alive(self) -> bool:
        """The program and its maps are still pinned."""
        return self.prog.exists() and all((self.pin_dir / "maps" / m).exists() for m in self.MAPS)

    def read_flows(self) -> list[dict[str, Any]]:
        """Every record of the flows map."""
        return [unpack_flow(k, v) for k, v in self.maps["flows"].items()]

    def counters(self) -> dict[str, int]:
        """Totals over all ports: packets received, dropped for want of an entry, sent."""
        rx = miss = 0
        for _, v in self.maps["ports"].items():
            info = PORT_INFO.unpack(v)
            rx += info[4]
            miss += info[6]
        tx = sum(EGRESS_INFO.unpack(v)[2] for _, v in self.maps["egress"].items())
        return {"rx_packets": rx, "miss_packets": miss, "tx_packets": tx}

    def close(self) -> None:
        """Detach what still exists, close the maps, unmount the bpffs (idempotent)."""
        live = [i for i in self.attached if os.path.exists(f"/sys/class/net/{i}")]
        if live:
            subprocess.run(["tc", "-force", "-batch", "-"], input="".join(
                f"qdisc del dev {i} clsact\n" for i in live), text=True, capture_output=True,
                check=False, timeout=60)
        self.attached = []
        for m in self.maps.values():
            m.close()
        self.maps = {}
        if not remove_bpffs(str(self.pin_dir)):
            raise RunError(f"could not unmount the bpffs at {self.pin_dir}")
