"""TCP congestion controls this machine can run: the kernel's built-in ones, and dcrepro's
BPF ones (``lia``: RFC 6356 coupled MPTCP; ``balia``: BALIA and ``olia``: OLIA coupled MPTCP;
``dctcp``), registered for one run.

The BPF controls are ``tcp_congestion_ops`` struct_ops programs (emulator/bpf/cc/), built by
clang like the switch program and loaded in this process through libbpf (ctypes: Debian 12
packages no Python binding).  The struct_ops map is created with ``BPF_F_LINK`` and
registered through a BPF link whose file descriptor only this process holds: the kernel
unregisters the control when that descriptor closes, at teardown or when the process dies,
SIGKILL included.  The registration is still recorded in the run's ledger
(emulator/registry.py, kind ``struct_ops``) so that ``dcrepro clean`` detaches a link that
something else kept open.

A BPF control is registered under its own name only where the kernel has no built-in of
that name; where it has one (a kernel with tcp_dctcp, say), the built-in is used and the
BPF one is not loaded.  libbpf 1.1 (Debian 12) predates ``.struct_ops.link``, hence the
map flag set by hand and the link made with bpf(BPF_LINK_CREATE).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import logging
import os
import platform
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

from .bpfobj import bpf_unavailable, build, local_sources
from .bpfsys import BPF_MAP_LOOKUP_ELEM, BpfError, _bpf, _ElemAttr, map_info
from .proc import RunError
from .sysinfo import read_sysctl

LOG = logging.getLogger("dcrepro")
SRC_DIR = Path(__file__).resolve().parent / "bpf" / "cc"
MATH_HEADER = SRC_DIR / "cc_math.h"
#: dcrepro's BPF congestion controls: name -> (source, what it is)
BPF_CCS = {
    "lia": ("lia.bpf.c", "RFC 6356 coupled increase for MPTCP subflows (Reno for plain TCP)"),
    "balia": ("balia.bpf.c", "BALIA coupled increase and loss cut for MPTCP subflows (Reno for "
                             "plain TCP)"),
    "olia": ("olia.bpf.c", "OLIA coupled increase for MPTCP subflows (Reno for plain TCP)"),
    "dctcp": ("dctcp.bpf.c", "DCTCP, ECN negotiated by the control itself"),
}
BUILD_DIR = Path("/var/cache/dcrepro/bpf")
BTF = Path("/sys/kernel/btf/vmlinux")
#: every struct_ops map dcrepro creates carries one of these names (clean looks for them)
STRUCT_OPS_NAMES = tuple(BPF_CCS)

BPF_F_LINK = 1 << 13
BPF_LINK_CREATE, BPF_LINK_GET_FD_BY_ID, BPF_LINK_GET_NEXT_ID, BPF_LINK_DETACH = 28, 30, 31, 34
BPF_LINK_TYPE_STRUCT_OPS = 9
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_STRUCT_OPS = 44                      # enum bpf_attach_type


# -- what this machine can run ---------------------------------------------------------

def _bpftool_json(argv: list[str]) -> Any:
    try:
        p = subprocess.run(["bpftool", "-j", *argv], capture_output=True, text=True,
                           timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout or "null")
    except ValueError:
        return None


def struct_ops_maps() -> list[dict[str, Any]]:
    """Every tcp_congestion_ops struct_ops map on the machine (bpftool), as {"id", "name"}:
    registered or not (a map outlives its registration while a socket still runs it)."""
    out = _bpftool_json(["struct_ops", "show"]) or []
    return [{"id": m.get("id"), "name": m.get("name")} for m in out
            if isinstance(m, dict) and "tcp_congestion_ops" in str(m.get("kernel_struct_ops"))]


def registered_struct_ops() -> list[dict[str, Any]]:
    """The tcp_congestion_ops struct_ops maps that are registered: held by a struct_ops link,
    or (registered without a link) named in the kernel's list while no linked map is."""
    maps = struct_ops_maps()
    linked = set(struct_ops_links().values())
    listed = set(read_sysctl("net.ipv4.tcp_available_congestion_control").split())
    linked_names = {m["name"] for m in maps if m["id"] in linked}
    return [m for m in maps if m["id"] in linked or
            (m["name"] in listed and m["name"] not in linked_names)]


def builtin_ccs() -> list[str]:
    """The kernel's own congestion controls: what the kernel lists, less what BPF
    registered."""
    available = read_sysctl("net.ipv4.tcp_available_congestion_control").split()
    bpf = {m["name"] for m in struct_ops_maps()}
    return [c for c in available if c not in bpf]


def bpf_cc_unavailable() -> str:
    """Why BPF congestion controls cannot be registered here ('' if they can)."""
    why = bpf_unavailable()
    if why:
        return why
    if not BTF.exists():
        return f"the kernel has no BTF ({BTF}): struct_ops needs it"
    if _libbpf_path() is None:
        return "libbpf.so.1 is missing (./setup.sh installs libbpf-dev)"
    return ""


def runnable() -> dict[str, str]:
    """Every congestion control a run can use here: name -> 'built-in' or 'bpf'."""
    out = {c: "built-in" for c in builtin_ccs()}
    if not bpf_cc_unavailable():
        for name in BPF_CCS:
            out.setdefault(name, "bpf")
    return out


def describe(ccs: dict[str, str]) -> str:
    """'cubic, reno, bbr (built in); lia, dctcp (BPF, registered for the run)'."""
    builtin = [c for c, k in ccs.items() if k == "built-in"]
    bpf = [c for c, k in ccs.items() if k == "bpf"]
    parts = []
    if builtin:
        parts.append(f"{', '.join(builtin)} (built in)")
    if bpf:
        parts.append(f"{', '.join(bpf)} (BPF, registered for the run)")
    return "; ".join(parts) or "none"


def needs_registration(cc: str) -> bool:
    """True if ``cc`` is one of dcrepro's BPF controls and the kernel has no built-in of
    that name (then the built-in runs, and this says so once)."""
    if cc not in BPF_CCS:
        return False
    if cc in builtin_ccs():
        LOG.warning("--cc %s: the kernel has a built-in %s; using it, not dcrepro's BPF one",
                    cc, cc)
        return False
    return True


# -- build -------------------------------------------------------------------------------

def source_sha256(name: str) -> str:
    """The hash of what a BPF control is built from (its source, the shared headers and a
    source it includes: bpfobj.local_sources)."""
    src = SRC_DIR / BPF_CCS[name][0]
    h = hashlib.sha256(src.read_bytes())
    for dep in local_sources(src):
        h.update(dep.read_bytes())
    return h.hexdigest()


def build_object(name: str, cache: Path = BUILD_DIR) -> Path:
    """The compiled struct_ops object of one BPF control (cached by source hash)."""
    if name not in BPF_CCS:
        raise RunError(f"no BPF congestion control named {name!r} (known: "
                       f"{', '.join(BPF_CCS)})")
    return build(cache, SRC_DIR / BPF_CCS[name][0], kernel_types=True)


def build_math_library(cache: Path = BUILD_DIR) -> Path:
    """cc_math.h compiled into a userspace shared object (exported functions), for the unit
    tests to call the arithmetic the BPF programs run."""
    if shutil.which("clang") is None:
        raise RunError("clang is missing (./setup.sh installs it)")
    digest = hashlib.sha256(MATH_HEADER.read_bytes()).hexdigest()[:16]
    out = Path(cache) / f"libccmath-{digest}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    try:
        p = subprocess.run(["clang", "-O2", "-Wall", "-shared", "-fPIC", "-DCC_MATH_EXPORT",
                            "-x", "c", str(MATH_HEADER), "-o", str(tmp)],
                           capture_output=True, text=True, timeout=120, check=False)
        if p.returncode != 0:
            raise RunError(f"clang could not build {MATH_HEADER.name}: "
                           f"{p.stderr.strip()[:500]}")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


# -- libbpf through ctypes ---------------------------------------------------------------

def _libbpf_path() -> str | None:
    for cand in ("libbpf.so.1", ctypes.util.find_library("bpf")):
        if not cand:
            continue
        try:
            ctypes.CDLL(cand)
            return cand
        except OSError:
            continue
    return None


_LIBBPF: Any = None
_LOG_LINES: list[str] = []
_PRINT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_print_cb: Any = None


def _libbpf() -> Any:
    global _LIBBPF, _print_cb
    if _LIBBPF is not None:
        return _LIBBPF
    path = _libbpf_path()
    if path is None:
        raise RunError("libbpf.so.1 is missing (./setup.sh installs libbpf-dev)")
    lib = ctypes.CDLL(path, use_errno=True)
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    for fn, res, args in (("bpf_object__open_file", vp, [cp, vp]),
                          ("bpf_object__load", ctypes.c_int, [vp]),
                          ("bpf_object__close", None, [vp]),
                          ("bpf_object__find_map_by_name", vp, [vp, cp]),
                          ("bpf_map__set_map_flags", ctypes.c_int, [vp, ctypes.c_uint32]),
                          ("bpf_map__fd", ctypes.c_int, [vp]),
                          ("bpf_map__attach_struct_ops", vp, [vp]),
                          ("bpf_link__disconnect", None, [vp]),
                          ("bpf_link__destroy", ctypes.c_int, [vp]),
                          ("libbpf_set_print", vp, [vp])):
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    if platform.machine() == "x86_64":
        # libbpf's messages (the verifier's log among them) into _LOG_LINES: on x86-64 a
        # va_list argument is a pointer, which vsnprintf takes as it is
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.vsnprintf.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                   ctypes.c_void_p]

        buf = ctypes.create_string_buffer(1 << 24)   # a verifier log is one %s

        def _print(level: int, fmt: bytes, va: int) -> int:
            libc.vsnprintf(buf, len(buf), fmt, va)
            _LOG_LINES.append(buf.value.decode(errors="replace"))
            del _LOG_LINES[:-400]
            return 0
        _print_cb = _PRINT_FN(_print)
        lib.libbpf_set_print(ctypes.cast(_print_cb, ctypes.c_void_p))
    _LIBBPF = lib
    return lib


def possible_cpus() -> int:
    """How many CPUs the kernel may bring up (a per-CPU map holds one value for each)."""
    text = Path("/sys/devices/system/cpu/possible").read_text().strip()
    n = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def percpu_lookup(fd: int, key: int, value_size: int) -> bytes:
    """Every CPU's value of one u32 key of a per-CPU array (each padded to 8 bytes)."""
    k = ctypes.create_string_buffer(struct.pack("<I", key), 4)
    v = ctypes.create_string_buffer(((value_size + 7) // 8 * 8) * possible_cpus())
    _bpf(BPF_MAP_LOOKUP_ELEM, _ElemAttr(map_fd=fd, key=ctypes.addressof(k),
                                        value=ctypes.addressof(v)))
    return v.raw


class _LinkCreate(ctypes.Structure):
    _fields_ = [("map_fd", ctypes.c_uint32), ("target_fd", ctypes.c_uint32),
                ("attach_type", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("pad", ctypes.c_uint8 * 48)]


class _LinkDetach(ctypes.Structure):
    _fields_ = [("link_fd", ctypes.c_uint32), ("pad", ctypes.c_uint8 * 60)]


class _InfoByFd(ctypes.Structure):
    _fields_ = [("bpf_fd", ctypes.c_uint32), ("info_len", ctypes.c_uint32),
                ("info", ctypes.c_uint64)]


class _LinkInfo(ctypes.Structure):
    """struct bpf_link_info: type, id, prog_id, then the struct_ops member's map_id."""

    _fields_ = [("type", ctypes.c_uint32), ("id", ctypes.c_uint32),
                ("prog_id", ctypes.c_uint32), ("pad", ctypes.c_uint32),
                ("map_id", ctypes.c_uint32), ("rest", ctypes.c_uint8 * 60)]


def link_info(fd: int) -> _LinkInfo:
    """The kernel's description of an open BPF link."""
    info = _LinkInfo()
    _bpf(BPF_OBJ_GET_INFO_BY_FD, _InfoByFd(bpf_fd=fd, info_len=ctypes.sizeof(info),
                                           info=ctypes.addressof(info)))
    return info


def _libbpf_log(since: int) -> str:
    """What libbpf said since index ``since`` (the verifier's refusal is in there)."""
    return "".join(_LOG_LINES[since:]).strip()


class Registration:
    """One BPF congestion control registered while this object is open (a context manager).

    ``record`` (optional) is called with the registration's ledger entry as soon as the
    link exists: the run's Registry stores it for ``dcrepro clean``."""

    def __init__(self, name: str, cache: Path = BUILD_DIR,
                 record: Any = None) -> None:
        if name not in BPF_CCS:
            raise RunError(f"no BPF congestion control named {name!r}")
        self.name, self.cache, self.record = name, Path(cache), record
        self.obj: int | None = None
        self.link_fd = -1
        self.map_id = 0
        self.link_id = 0
        self.object_path: Path | None = None

    def __enter__(self) -> Registration:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def open(self) -> None:
        """Build, load, register through a link; RunError with libbpf's words on refusal."""
        why = bpf_cc_unavailable()
        if why:
            raise RunError(f"--cc {self.name} needs BPF struct_ops: {why}")
        self.object_path = build_object(self.name, self.cache)
        lib = _libbpf()
        mark = len(_LOG_LINES)
        obj = lib.bpf_object__open_file(os.fsencode(self.object_path), None)
        if not obj:
            err = ctypes.get_errno()
            raise RunError(f"libbpf could not open {self.object_path.name}: "
                           f"{os.strerror(err)}; {_libbpf_log(mark)[-800:]}")
        self.obj = obj
        ops = lib.bpf_object__find_map_by_name(obj, self.name.encode())
        if not ops:
            raise RunError(f"{self.object_path.name} has no struct_ops map {self.name!r}")
        if lib.bpf_map__set_map_flags(ops, BPF_F_LINK) != 0:
            raise RunError("libbpf refused BPF_F_LINK on the struct_ops map")
        rc = lib.bpf_object__load(obj)
        if rc != 0:
            raise RunError(f"the kernel refused {self.name} ({os.strerror(-rc)}): "
                           f"{_libbpf_log(mark)[-1500:]}")
        # libbpf fills the map's value with the programs (update_elem); with BPF_F_LINK
        # that makes it ready without registering it.  Its own link object would unregister
        # by deleting the element: let it go without detaching.
        link = lib.bpf_map__attach_struct_ops(ops)
        if not link:
            err = ctypes.get_errno()
            raise RunError(f"libbpf could not fill the struct_ops map of {self.name}: "
                           f"{os.strerror(err)}; {_libbpf_log(mark)[-800:]}")
        lib.bpf_link__disconnect(link)
        lib.bpf_link__destroy(link)
        map_fd = lib.bpf_map__fd(ops)
        self.map_id = map_info(map_fd).id
        try:
            self.link_fd = _bpf(BPF_LINK_CREATE, _LinkCreate(map_fd=map_fd,
                                                             attach_type=BPF_STRUCT_OPS))
        except BpfError as exc:
            hint = (" (a congestion control of that name is already registered: "
                    "`dcrepro clean` removes one a dead run left)" if exc.errno == 17 else "")
            raise RunError(f"registering {self.name} failed: {exc}{hint}") from None
        self.link_id = link_info(self.link_fd).id
        if self.record is not None:
            self.record(self.ledger_entry())
        if self.name not in read_sysctl("net.ipv4.tcp_available_congestion_control").split():
            raise RunError(f"{self.name} was registered but the kernel does not list it")

    def ledger_entry(self) -> dict[str, Any]:
        """What the run's ledger keeps to find this registration again."""
        return {"name": self.name, "map_id": self.map_id, "link_id": self.link_id}

    def facts(self) -> dict[str, Any]:
        """What a run records about the control it ran (config.json)."""
        return {"name": self.name, "kind": "bpf struct_ops",
                "source": str((SRC_DIR / BPF_CCS[self.name][0]).relative_to(
                    SRC_DIR.parents[2])),
                "source_sha256": source_sha256(self.name),
                "object": self.object_path.name if self.object_path else None,
                "map_id": self.map_id, "link_id": self.link_id}

    def stats(self) -> dict[str, int]:
        """The control's counters (its ``stats`` map, summed over CPUs)."""
        if not self.obj:
            return {}
        lib = _libbpf()
        m = lib.bpf_object__find_map_by_name(self.obj, b"stats")
        if not m:
            return {}
        names = STAT_FIELDS[self.name]
        raw = percpu_lookup(lib.bpf_map__fd(m), 0, 8 * len(names))
        out = dict.fromkeys(names, 0)
        for off in range(0, len(raw), 8 * len(names)):
            for n, v in zip(names, struct.unpack_from(f"<{len(names)}Q", raw, off)):
                out[n] += v
        return out

    def close(self) -> None:
        """Unregister (close the link) and free the programs; idempotent."""
        if self.link_fd >= 0:
            os.close(self.link_fd)
            self.link_fd = -1
        if self.obj:
            _libbpf().bpf_object__close(self.obj)
            self.obj = None


#: the counters of each control's ``stats`` map, in the program's order
_COUPLED_STATS = ("coupled_acks", "plain_acks", "no_slot", "no_conn", "slow_start",
                  "not_limited", "init_plain", "init_mptcp", "no_ulp", "repaired")
STAT_FIELDS = {
    "lia": _COUPLED_STATS,
    "balia": _COUPLED_STATS,         # the same program (lia.bpf.c), built with CC_BALIA
    "olia": _COUPLED_STATS,          # ... and with CC_OLIA
    "dctcp": ("windows", "marked_windows", "ce_flips", "no_ecn", "repaired"),
}


# -- cleanup -------------------------------------------------------------------------------

class _IdAttr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("next_id", ctypes.c_uint32),
                ("open_flags", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


def struct_ops_links() -> dict[int, int]:
    """Every struct_ops link on the machine: link id -> map id (bpf(2) directly: bpftool
    7.1 does not print a struct_ops link's map)."""
    out: dict[int, int] = {}
    cur = 0
    while True:
        attr = _IdAttr(id=cur)
        try:
            _bpf(BPF_LINK_GET_NEXT_ID, attr)
        except BpfError:
            return out            # ENOENT: no more
        cur = attr.next_id
        try:
            fd = _bpf(BPF_LINK_GET_FD_BY_ID, _IdAttr(id=cur))
        except BpfError:
            continue              # gone meanwhile
        try:
            info = link_info(fd)
            if info.type == BPF_LINK_TYPE_STRUCT_OPS:
                out[cur] = info.map_id
        finally:
            os.close(fd)


def detach_link(link_id: int, map_id: int) -> bool:
    """Detach a struct_ops link by id if it is still the one recorded (holding the recorded
    map); True if something was detached."""
    if struct_ops_links().get(link_id) != map_id or not map_id:
        return False
    try:
        fd = _bpf(BPF_LINK_GET_FD_BY_ID, _IdAttr(id=link_id))
    except BpfError:
        return False
    try:
        _bpf(BPF_LINK_DETACH, _LinkDetach(link_fd=fd))
        return True
    except BpfError:
        return False
    finally:
        os.close(fd)


def clean_struct_ops(entries: list[dict[str, Any]]) -> list[str]:
    """Detach the registrations a dead run recorded (``entries``) that are still there;
    one line per removal."""
    done = []
    for e in entries:
        if detach_link(int(e.get("link_id", 0)), int(e.get("map_id", 0))):
            done.append(f"detached congestion control {e.get('name')} (link {e['link_id']})")
    return done


def orphan_struct_ops(live: list[dict[str, Any]]) -> list[str]:
    """Remove every struct_ops of dcrepro's names that no live run recorded (``live``: the
    live runs' entries): detach the links that hold it, or unregister a map registered
    without a link; one line per removal."""
    keep = {int(e.get("map_id", 0)) for e in live}
    orphans = [m for m in registered_struct_ops()
               if m["name"] in STRUCT_OPS_NAMES and m["id"] not in keep]
    if not orphans:
        return []
    links = struct_ops_links()
    done = []
    for m in orphans:
        held = [lid for lid, mid in links.items() if mid == m["id"]]
        if held:
            ok = all([detach_link(lid, m["id"]) for lid in held])
        else:
            ok = subprocess.run(["bpftool", "struct_ops", "unregister", "id", str(m["id"])],
                                capture_output=True, text=True, timeout=20,
                                check=False).returncode == 0
        done.append(f"removed orphan congestion control {m['name']} (map {m['id']})" if ok
                    else f"could not remove orphan congestion control {m['name']} (map "
                         f"{m['id']})")
    return done
