"""Building and loading the emulator's BPF programs (the switch of the bpf dataplane, the
dequeue-gap probe): compiled by clang into a cache named by a hash of what went in, loaded
by bpftool into a private bpffs, and why BPF cannot run on this machine at all.

A private bpffs is mounted at the run's own directory (/run/dcrepro/bpffs/<run id>), never
under /sys/fs/bpf: ``ip netns exec`` and ``tc -n`` remount /sys in their own mount
namespace, so pins there would not be found by the commands that need them.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

from .proc import RunError, run
from .registry import remove_bpffs

CFLAGS = ("-O2", "-g", "-Wall", "-target", "bpf")
PROG_PIN = "prog"                              # the program's pin inside the bpffs
MAP_DIR = "maps"                               # pinmaps directory inside the bpffs
TIMEOUT = 60.0


def _run(argv: list[str], timeout: float = TIMEOUT, input_text: str | None = None,
         ok: bool = False) -> subprocess.CompletedProcess[str]:
    return run(argv, timeout, input_text, ok)


def bpf_unavailable() -> str:
    """Why BPF programs cannot run here ('' if they can): tools and kernel features."""
    from .sysinfo import kernel_config
    missing = [t for t in ("clang", "bpftool", "tc") if shutil.which(t) is None]
    if missing:
        return f"missing {', '.join(missing)} (./setup.sh installs them)"
    cfg = kernel_config()
    if cfg and (cfg.get("CONFIG_NET_CLS_BPF") not in ("y", "m") or
                cfg.get("CONFIG_BPF_SYSCALL") != "y"):
        return "the kernel lacks cls_bpf or the bpf() system call"
    return ""


def vmlinux_header(cache: Path) -> Path:
    """vmlinux.h of the running kernel (from its BTF), for programs that read kernel structs."""
    out = cache / f"vmlinux-{os.uname().release}" / "vmlinux.h"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        text = _run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format",
                     "c"], timeout=120).stdout
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(text)
        tmp.replace(out)
    return out


def local_sources(source: Path) -> list[Path]:
    """What a BPF source is built from beside itself: the headers in its folder, and the
    sources of that folder it includes by name (balia.bpf.c includes lia.bpf.c)."""
    source = Path(source)
    deps = set(source.parent.glob("*.h"))
    deps.update(source.parent / m for m in
                re.findall(r'^#include "([^"/]+\.c)"', source.read_text(), re.M))
    return sorted(d for d in deps if d.exists())


def build(cache: Path | str, source: Path, kernel_types: bool = False) -> Path:
    """Compile a BPF program with clang into ``cache``; the object's name carries a hash of
    the source (and of what it is built from beside it: local_sources; of the flags; and,
    with ``kernel_types``, of the kernel release whose vmlinux.h it includes), so it is
    rebuilt only when one changed."""
    if shutil.which("clang") is None:
        raise RunError("clang is missing: dcrepro's BPF programs are compiled with it "
                       "(./setup.sh installs clang llvm libbpf-dev bpftool)")
    cache, source = Path(cache), Path(source)
    h = hashlib.sha256(source.read_bytes())
    for dep in local_sources(source):
        h.update(dep.name.encode() + dep.read_bytes())
    h.update(" ".join(CFLAGS).encode())
    if kernel_types:
        h.update(os.uname().release.encode())
    obj = cache / f"{source.name.split('.')[0]}-{h.hexdigest()[:16]}.o"
    if obj.exists():
        return obj
    cache.mkdir(parents=True, exist_ok=True)
    tmp = obj.with_suffix(f".tmp{os.getpid()}")
    arch = {"x86_64": ("x86_64-linux-gnu", "x86"),
            "aarch64": ("aarch64-linux-gnu", "arm64")}.get(os.uname().machine, ("", ""))
    incs = [f"-I/usr/include/{arch[0]}"] if arch[0] else []   # asm/types.h
    if kernel_types:
        incs = [f"-I{vmlinux_header(cache).parent}", f"-D__TARGET_ARCH_{arch[1]}"]
    try:
        _run(["clang", *CFLAGS, *incs, "-c", str(source), "-o", str(tmp)], timeout=120)
        tmp.replace(obj)
    finally:
        tmp.unlink(missing_ok=True)
    return obj


def bpffs_mounts(path: Path) -> int:
    """How many bpffs are mounted exactly at ``path`` (stacked mounts count each)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return 0
    target = os.path.abspath(path)
    n = 0
    for line in lines:
        f = line.split()
        if len(f) > 2 and f[2] == "bpf" and \
                f[1].encode().decode("unicode_escape") == target:
            n += 1
    return n


def load_pinned(obj: Path, pin_dir: Path, prog_type: str | None = None,
                all_programs: bool = False) -> Path:
    """Mount a private bpffs at ``pin_dir`` and load ``obj`` there with bpftool; return the
    program's pin (maps are pinned under pin_dir/maps by name).  ``all_programs``: an object
    with several programs, pinned by name in the returned directory.  On failure nothing
    is left mounted."""
    pin_dir = Path(pin_dir)
    if bpffs_mounts(pin_dir):
        raise RunError(f"a bpffs is already mounted at {pin_dir} (a crashed run? "
                       f"`dcrepro clean` removes it)")
    pin_dir.mkdir(parents=True, exist_ok=True)
    _run(["mount", "-t", "bpf", "bpf", str(pin_dir)], timeout=10)
    prog = pin_dir / ("progs" if all_programs else PROG_PIN)
    try:
        _run(["bpftool", "prog", "loadall" if all_programs else "load", str(obj), str(prog),
              *(["type", prog_type] if prog_type else []), "pinmaps", str(pin_dir / MAP_DIR)],
             timeout=120)
    except BaseException:
        unmount(pin_dir)
        raise
    return prog


def unmount(pin_dir: Path) -> None:
    if not remove_bpffs(str(pin_dir)):
        raise RunError(f"could not unmount the bpffs at {pin_dir} or remove the directory")


class PinnedAttachment:
    """A program loaded on a private bpffs at ``workdir`` and attached by a file descriptor
    (a bpf_link or a raw tracepoint) that dies with the process: the subclass's
    ``__enter__`` loads, fills ``maps`` and sets ``link_fd``, calling ``failed`` on any
    error; ``close`` detaches, releases the maps and unmounts (idempotent)."""

    #: what errors name
    what = "BPF program"

    def __init__(self, workdir: Path | str) -> None:
        from .bpfsys import BpfMap
        self.workdir = Path(workdir)
        self.link_fd = -1
        self.maps: dict[str, BpfMap] = {}

    def failed(self, exc: BaseException) -> NoReturn:
        """Undo a half-done ``__enter__`` and raise ``exc`` again (an OSError, such as a
        refused bpf(2) call, as a RunError naming ``what``)."""
        self.close()
        if isinstance(exc, OSError):
            raise RunError(f"{self.what}: {exc}") from exc
        raise exc

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.link_fd >= 0:
            os.close(self.link_fd)
            self.link_fd = -1
        for m in self.maps.values():
            m.close()
        self.maps = {}
        unmount(self.workdir)
