"""The few bpf(2) calls dcrepro needs, through ctypes: open pinned objects, read and write maps.

libbpf's Python bindings are not packaged for Debian 12 and one process per map entry
(``bpftool map update``) is slow for thousands of entries, so maps are filled and read back
straight through the system call, as the platform notes recommend.  Keys and values are
plain ``bytes`` here; the layouts live next to the program that defines them.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from collections.abc import Iterator

# bpf(2) commands (include/uapi/linux/bpf.h)
BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM, BPF_MAP_DELETE_ELEM = 1, 2, 3
BPF_MAP_GET_NEXT_KEY, BPF_OBJ_GET = 4, 7
BPF_PROG_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD, BPF_RAW_TRACEPOINT_OPEN = 13, 15, 17
BPF_LINK_CREATE = 28
#: attach types (enum bpf_attach_type)
BPF_CGROUP_SOCK_OPS = 3
BPF_ANY = 0

_SYSCALL_NR = {"x86_64": 321, "aarch64": 280}
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class BpfError(OSError):
    """A bpf(2) call failed; the message names the call and the object."""


class _ElemAttr(ctypes.Structure):
    _fields_ = [("map_fd", ctypes.c_uint32), ("pad", ctypes.c_uint32),
                ("key", ctypes.c_uint64), ("value", ctypes.c_uint64),
                ("flags", ctypes.c_uint64)]


class _ObjAttr(ctypes.Structure):
    _fields_ = [("pathname", ctypes.c_uint64), ("bpf_fd", ctypes.c_uint32),
                ("file_flags", ctypes.c_uint32), ("path_fd", ctypes.c_int32)]


class _InfoAttr(ctypes.Structure):
    _fields_ = [("bpf_fd", ctypes.c_uint32), ("info_len", ctypes.c_uint32),
                ("info", ctypes.c_uint64)]


class _RawTpAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_uint64), ("prog_fd", ctypes.c_uint32),
                ("pad", ctypes.c_uint32), ("cookie", ctypes.c_uint64)]


class _LinkCreateAttr(ctypes.Structure):
    _fields_ = [("prog_fd", ctypes.c_uint32), ("target_fd", ctypes.c_uint32),
                ("attach_type", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("pad", ctypes.c_uint64 * 4)]


class MapInfo(ctypes.Structure):
    """struct bpf_map_info (the leading fields dcrepro reads)."""

    _fields_ = [("type", ctypes.c_uint32), ("id", ctypes.c_uint32),
                ("key_size", ctypes.c_uint32), ("value_size", ctypes.c_uint32),
                ("max_entries", ctypes.c_uint32), ("map_flags", ctypes.c_uint32),
                ("name", ctypes.c_char * 16)]


def _bpf(cmd: int, attr: ctypes.Structure) -> int:
    nr = _SYSCALL_NR.get(platform.machine())
    if nr is None:
        raise BpfError(f"bpf(2): unsupported architecture {platform.machine()}")
    ret = _libc.syscall(ctypes.c_long(nr), ctypes.c_int(cmd), ctypes.byref(attr),
                        ctypes.c_uint(ctypes.sizeof(attr)))
    if ret < 0:
        err = ctypes.get_errno()
        raise BpfError(err, f"bpf(cmd={cmd}): {os.strerror(err)}")
    return ret


def obj_get(path: str) -> int:
    """File descriptor of a pinned map or program (caller closes it)."""
    raw = os.fsencode(path) + b"\0"
    buf = ctypes.create_string_buffer(raw, len(raw))
    try:
        return _bpf(BPF_OBJ_GET, _ObjAttr(pathname=ctypes.addressof(buf)))
    except BpfError as exc:
        raise BpfError(exc.errno, f"cannot open pinned BPF object {path}: "
                                  f"{os.strerror(exc.errno or 0)}") from None


def map_info(fd: int) -> MapInfo:
    """Type, key/value sizes and capacity of an open map."""
    info = MapInfo()
    _bpf(BPF_OBJ_GET_INFO_BY_FD, _InfoAttr(bpf_fd=fd, info_len=ctypes.sizeof(info),
                                           info=ctypes.addressof(info)))
    return info


class BpfMap:
    """A pinned map opened by path; keys and values are bytes of the map's exact sizes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = obj_get(path)
        info = map_info(self.fd)
        self.key_size, self.value_size = info.key_size, info.value_size
        self.max_entries = info.max_entries

    def close(self) -> None:
        """Release the file descriptor (the pinned map stays)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> BpfMap:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _check(self, key: bytes, value: bytes | None = None) -> None:
        if len(key) != self.key_size or (value is not None and len(value) != self.value_size):
            raise BpfError(0, f"{self.path}: key/value of {len(key)}/"
                              f"{None if value is None else len(value)} bytes, map wants "
                              f"{self.key_size}/{self.value_size}")

    def update(self, key: bytes, value: bytes) -> None:
        """Insert or replace one entry."""
        self._check(key, value)
        k = ctypes.create_string_buffer(key, len(key))
        v = ctypes.create_string_buffer(value, len(value))
        try:
            _bpf(BPF_MAP_UPDATE_ELEM, _ElemAttr(map_fd=self.fd, key=ctypes.addressof(k),
                                                value=ctypes.addressof(v), flags=BPF_ANY))
        except BpfError as exc:
            raise BpfError(exc.errno, f"{self.path}: update failed: "
                                      f"{os.strerror(exc.errno or 0)}") from None

    def lookup(self, key: bytes) -> bytes | None:
        """The value stored under ``key``, or None."""
        self._check(key)
        k = ctypes.create_string_buffer(key, len(key))
        v = ctypes.create_string_buffer(self.value_size)
        try:
            _bpf(BPF_MAP_LOOKUP_ELEM, _ElemAttr(map_fd=self.fd, key=ctypes.addressof(k),
                                                value=ctypes.addressof(v)))
        except BpfError as exc:
            if exc.errno == 2:  # ENOENT
                return None
            raise
        return v.raw

    def delete(self, key: bytes) -> bool:
        """Remove one entry; False if it was not there."""
        self._check(key)
        k = ctypes.create_string_buffer(key, len(key))
        try:
            _bpf(BPF_MAP_DELETE_ELEM, _ElemAttr(map_fd=self.fd, key=ctypes.addressof(k)))
        except BpfError as exc:
            if exc.errno == 2:
                return False
            raise
        return True

    def keys(self) -> Iterator[bytes]:
        """Every key (hash maps; entries added meanwhile may or may not appear)."""
        cur = ctypes.create_string_buffer(self.key_size)
        nxt = ctypes.create_string_buffer(self.key_size)
        first = True
        while True:
            try:
                _bpf(BPF_MAP_GET_NEXT_KEY, _ElemAttr(
                    map_fd=self.fd, key=0 if first else ctypes.addressof(cur),
                    value=ctypes.addressof(nxt)))
            except BpfError as exc:
                if exc.errno == 2:
                    return
                raise
            first = False
            yield nxt.raw
            ctypes.memmove(cur, nxt, self.key_size)

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) pairs; keys deleted during the walk are skipped."""
        for key in list(self.keys()):
            value = self.lookup(key)
            if value is not None:
                yield key, value


class _IdAttr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("next_id", ctypes.c_uint32),
                ("open_flags", ctypes.c_uint32)]


#: struct bpf_prog_info (include/uapi/linux/bpf.h): byte offsets of the line-info fields
_PI_LINE = {"nr_line_info": 148, "line_info": 152, "jited_line_info": 160,
            "nr_jited_line_info": 168, "line_info_rec_size": 172,
            "jited_line_info_rec_size": 176}
_PI_SIZE = 232


def prog_lines(prog_id: int) -> list[tuple[int, int]]:
    """(kernel address where its native code starts, source line) of every line-info
    record of a loaded program, by address: which source line a sampled instruction
    address of the JIT image belongs to (what ``bpftool prog dump jited linum`` shows; that
    needs a bpftool built with libbfd, Debian's is not).  Root; empty without BTF lines."""
    fd = _bpf(BPF_PROG_GET_FD_BY_ID, _IdAttr(id=prog_id))
    try:
        info = ctypes.create_string_buffer(_PI_SIZE)
        _bpf(BPF_OBJ_GET_INFO_BY_FD, _InfoAttr(bpf_fd=fd, info_len=_PI_SIZE,
                                               info=ctypes.addressof(info)))

        def u32(name: str) -> int:
            return int.from_bytes(info.raw[_PI_LINE[name]:_PI_LINE[name] + 4], "little")
        n, rec = u32("nr_line_info"), u32("line_info_rec_size")
        nj, jrec = u32("nr_jited_line_info"), u32("jited_line_info_rec_size")
        if not n or n != nj:
            return []
        lines = ctypes.create_string_buffer(n * rec)
        addrs = ctypes.create_string_buffer(nj * jrec)
        ask = ctypes.create_string_buffer(_PI_SIZE)   # zeroed, but for what we ask
        for name, value, size in (("nr_line_info", n, 4), ("line_info_rec_size", rec, 4),
                                  ("nr_jited_line_info", nj, 4),
                                  ("jited_line_info_rec_size", jrec, 4),
                                  ("line_info", ctypes.addressof(lines), 8),
                                  ("jited_line_info", ctypes.addressof(addrs), 8)):
            ctypes.memmove(ctypes.addressof(ask) + _PI_LINE[name],
                           value.to_bytes(size, "little"), size)
        _bpf(BPF_OBJ_GET_INFO_BY_FD, _InfoAttr(bpf_fd=fd, info_len=_PI_SIZE,
                                               info=ctypes.addressof(ask)))
    finally:
        os.close(fd)
    # struct bpf_line_info: insn_off, file_name_off, line_off, line_col (line << 10 | col)
    out = [(int.from_bytes(addrs.raw[i * jrec:i * jrec + 8], "little"),
            int.from_bytes(lines.raw[i * rec + 12:i * rec + 16], "little") >> 10)
           for i in range(n)]
    return sorted(out)


def raw_tracepoint_open(name: str | None, prog_fd: int) -> int:
    """Attach a raw tracepoint program (``name``) or a BTF one (``tp_btf``: name None, the
    program knows its tracepoint); the attachment lives while the returned fd is open."""
    if name is None:
        return _bpf(BPF_RAW_TRACEPOINT_OPEN, _RawTpAttr(name=0, prog_fd=prog_fd))
    raw = name.encode() + b"\0"
    buf = ctypes.create_string_buffer(raw, len(raw))
    return _bpf(BPF_RAW_TRACEPOINT_OPEN, _RawTpAttr(name=ctypes.addressof(buf), prog_fd=prog_fd))


def link_create(prog_fd: int, target_fd: int, attach_type: int) -> int:
    """Attach a program to ``target_fd`` (a cgroup's directory, for cgroup programs) by a
    bpf_link; the attachment lives while the returned fd is open."""
    return _bpf(BPF_LINK_CREATE, _LinkCreateAttr(prog_fd=prog_fd, target_fd=target_fd,
                                                 attach_type=attach_type))


def attach_pinned(path: str) -> int:
    """Attach a pinned BTF tracing program (it knows its tracepoint); the attachment lives
    while the returned fd is open."""
    fd = obj_get(path)
    try:
        return raw_tracepoint_open(None, fd)
    finally:
        os.close(fd)
