"""Wire format, synthetic file content, NACK ranges, command-line value parsing and the
``--report`` file both sides write.

Every datagram starts with one 16-byte header (network byte order)::

    magic   4s   b"OFX1"          (Orca File Xfer, version 1)
    kind    u8   DATA=1 END=2 NACK=3 ACK=4 BYE=5 BYE_ACK=6
    flags   u8   0 (reserved)
    node    u16  receiver id in replies (--id), 0 from the sender
    session u32  random per sender run: stale datagrams of an earlier run are ignored
    round   u32  1-based round number (BYE: the number of rounds)

DATA and END carry the round's geometry right after the header (20 bytes)::

    seq u32 (END: = total), total u32 (datagrams), size u64 (file bytes), chunk u16, 0 u16

followed, for DATA only, by the payload: ``chunk`` bytes except in the last datagram, which
carries the rest of the file.  NACK carries ``count u16`` and ``count`` pairs ``start u32,
end u32`` (half-open ranges of missing seqs, at most ``MAX_RANGES``).  ACK carries the ASCII
text ``ack_<round>`` of the paper's client.  BYE and BYE_ACK carry nothing more.
"""
from __future__ import annotations

import ipaddress
import json
import socket
import struct
from dataclasses import dataclass, field
from typing import Any

MAGIC = b"OFX1"
DATA, END, NACK, ACK, BYE, BYE_ACK = 1, 2, 3, 4, 5, 6
KIND_NAMES = {DATA: "DATA", END: "END", NACK: "NACK", ACK: "ACK", BYE: "BYE", BYE_ACK: "BYE_ACK"}

HEADER = struct.Struct("!4sBBHII")
INFO = struct.Struct("!IIQHH")
COUNT = struct.Struct("!H")
RANGE = struct.Struct("!II")
DATA_HEADER_LEN = HEADER.size + INFO.size
# Largest UDP payload over IPv4 minus our headers: a bigger --payload could not be sent.
MAX_CHUNK = 65507 - DATA_HEADER_LEN
DEFAULT_CHUNK = 1400  # 1400 + 36 + 28 (IP+UDP) = 1464 bytes: fits a 1500-byte MTU unfragmented
# Bounded so a NACK stays one small datagram (8 B a range); more holes wait for the next NACK.
MAX_RANGES = 128
IP_UDP_OVERHEAD = 28


class ProtocolError(ValueError):
    """A datagram that is not ours or is malformed."""


class WaitExpired(Exception):
    """A bounded wait ran out; the message names what was awaited (one line)."""


@dataclass(frozen=True)
class Packet:
    """One decoded datagram; fields a kind does not carry keep their defaults."""

    kind: int
    node: int
    session: int
    round: int
    seq: int = 0
    total: int = 0
    size: int = 0
    chunk: int = 0
    payload: bytes | memoryview = b""
    ranges: tuple[tuple[int, int], ...] = field(default=())
    text: bytes = b""


def datagrams_for(size: int, chunk: int) -> int:
    """Number of DATA datagrams a file of ``size`` bytes needs."""
    return -(-size // chunk)


def payload_len(seq: int, size: int, chunk: int) -> int:
    """Payload length of datagram ``seq``: ``chunk`` except for the file's last piece."""
    return min(chunk, size - seq * chunk)


def _header(kind: int, node: int, session: int, rnd: int) -> bytes:
    return HEADER.pack(MAGIC, kind, 0, node, session, rnd)


def encode_data(session: int, rnd: int, seq: int, size: int, chunk: int,
                payload: bytes) -> bytes:
    """DATA datagram ``seq`` of round ``rnd``."""
    total = datagrams_for(size, chunk)
    return _header(DATA, 0, session, rnd) + INFO.pack(seq, total, size, chunk, 0) + payload


def encode_end(session: int, rnd: int, size: int, chunk: int) -> bytes:
    """End-of-round marker: the round's geometry, so a receiver that lost everything can NACK."""
    total = datagrams_for(size, chunk)
    return _header(END, 0, session, rnd) + INFO.pack(total, total, size, chunk, 0)


def encode_nack(node: int, session: int, rnd: int, ranges: list[tuple[int, int]]) -> bytes:
    """NACK listing at most ``MAX_RANGES`` half-open ranges of missing seqs."""
    ranges = ranges[:MAX_RANGES]
    return (_header(NACK, node, session, rnd) + COUNT.pack(len(ranges))
            + b"".join(RANGE.pack(a, b) for a, b in ranges))


def encode_ack(node: int, session: int, rnd: int) -> bytes:
    """ACK of round ``rnd``: the paper's ``ack_i`` string behind the header."""
    return _header(ACK, node, session, rnd) + b"ack_%d" % rnd


def encode_bye(session: int, rounds: int) -> bytes:
    """End of the transfer: ``rounds`` rounds were sent and acknowledged."""
    return _header(BYE, 0, session, rounds)


def encode_bye_ack(node: int, session: int, rounds: int) -> bytes:
    """A receiver's confirmation that it saw BYE."""
    return _header(BYE_ACK, node, session, rounds)


def decode(buf: bytes | bytearray | memoryview) -> Packet:
    """Parse one datagram; raise ProtocolError when it is not a well-formed one of ours."""
    view = memoryview(buf)
    if len(view) < HEADER.size:
        raise ProtocolError(f"short datagram ({len(view)} bytes)")
    magic, kind, _flags, node, session, rnd = HEADER.unpack_from(view)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic {bytes(magic)!r}")
    body = view[HEADER.size:]
    if kind in (DATA, END):
        if len(body) < INFO.size:
            raise ProtocolError(f"{KIND_NAMES[kind]} without its round geometry")
        seq, total, size, chunk, _ = INFO.unpack_from(body)
        if chunk == 0 or total != datagrams_for(size, chunk):
            raise ProtocolError(f"inconsistent geometry total={total} size={size} chunk={chunk}")
        payload = body[INFO.size:]
        if kind == DATA:
            if seq >= total:
                raise ProtocolError(f"seq {seq} beyond total {total}")
            if len(payload) != payload_len(seq, size, chunk):
                raise ProtocolError(f"seq {seq} carries {len(payload)} bytes, expected "
                                    f"{payload_len(seq, size, chunk)}")
        elif len(payload):
            raise ProtocolError("END with a payload")
        return Packet(kind, node, session, rnd, seq, total, size, chunk,
                      payload if kind == DATA else b"")
    if kind == NACK:
        if len(body) < COUNT.size:
            raise ProtocolError("NACK without a range count")
        (count,) = COUNT.unpack_from(body)
        if count > MAX_RANGES or len(body) != COUNT.size + count * RANGE.size:
            raise ProtocolError(f"NACK of {len(body)} bytes does not hold {count} ranges")
        ranges = tuple(RANGE.unpack_from(body, COUNT.size + i * RANGE.size) for i in range(count))
        if any(a >= b for a, b in ranges):
            raise ProtocolError("NACK with an empty range")
        return Packet(NACK, node, session, rnd, ranges=ranges)
    if kind == ACK:
        text = bytes(body)
        if text != b"ack_%d" % rnd:
            raise ProtocolError(f"ACK text {text!r} does not name round {rnd}")
        return Packet(ACK, node, session, rnd, text=text)
    if kind in (BYE, BYE_ACK):
        return Packet(kind, node, session, rnd)
    raise ProtocolError(f"unknown kind {kind}")


# --- synthetic content ----------------------------------------------------------------------

_PATTERN = bytearray()


def content(rnd: int, seq: int, length: int) -> bytes:
    """Deterministic payload of datagram ``seq`` in round ``rnd`` (receivers check it).

    A rotation of one byte ramp: cheap to slice, and a datagram delivered under the wrong
    (round, seq) almost always differs from what is expected there.
    """
    need = length + 256
    if len(_PATTERN) < need:
        ramp = bytes((i * 167 + 13) & 0xFF for i in range(256))
        _PATTERN[:] = ramp * (need // 256 + 1)
    off = (rnd * 131 + seq * 7) % 251
    return bytes(_PATTERN[off:off + length])


# --- NACK ranges ----------------------------------------------------------------------------

def expand_ranges(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...],
                  total: int) -> list[int]:
    """The seqs in ``ranges``, clipped to ``0..total-1``, each once, in order."""
    seen: set[int] = set()
    out: list[int] = []
    for a, b in ranges:
        for s in range(max(a, 0), min(b, total)):
            if s not in seen:
                seen.add(s)
                out.append(s)
    return out


def missing_ranges(have: bytearray, limit: int = MAX_RANGES) -> list[tuple[int, int]]:
    """Up to ``limit`` leading ranges of zero bytes in ``have`` (one flag byte per seq).

    bytes.find keeps this fast for files of 100k datagrams, where a Python loop would not be.
    """
    out: list[tuple[int, int]] = []
    pos, n = 0, len(have)
    while len(out) < limit:
        start = have.find(0, pos)
        if start < 0:
            break
        end = have.find(1, start)
        end = n if end < 0 else end
        out.append((start, end))
        pos = end
    return out


# --- command-line values --------------------------------------------------------------------

_SUFFIX = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def parse_size(text: str) -> int:
    """Bytes, optionally with a binary suffix: ``1500``, ``64K``, ``2M``, ``1G``."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in ("K", "M", "G") else ""
    number = t[:-1] if unit else t
    try:
        value = int(number) * _SUFFIX[unit]
    except ValueError:
        raise ValueError(f"bad size {text!r} (bytes, e.g. 1500, 64K, 2M)") from None
    if value < 0:
        raise ValueError(f"bad size {text!r}: negative")
    return value


def parse_sizes(text: str) -> list[int]:
    """Comma-separated file sizes, one a round."""
    sizes = [parse_size(p) for p in text.split(",") if p.strip()]
    if not sizes:
        raise ValueError("no file sizes given")
    return sizes


def resolve_host(host: str) -> str:
    """An IPv4 address for ``host`` (a name or a dotted quad)."""
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        pass
    try:
        return str(socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_DGRAM)[0][4][0])
    except (socket.gaierror, IndexError):
        raise ValueError(f"cannot resolve host {host!r}") from None


def parse_addr(text: str, *, need_port: bool = True) -> tuple[str, int]:
    """``HOST:PORT`` (or ``HOST`` with port 0 when ``need_port`` is false) as (ip, port)."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        if need_port:
            raise ValueError(f"bad address {text!r} (HOST:PORT)")
        host, port = text.strip(), "0"
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"bad port in {text!r}") from None
    if not 0 <= p <= 65535:
        raise ValueError(f"port {p} out of range in {text!r}")
    return resolve_host(host), p


def parse_addrs(text: str) -> list[tuple[str, int]]:
    """Comma-separated ``HOST:PORT`` list."""
    addrs = [parse_addr(p) for p in text.split(",") if p.strip()]
    if not addrs:
        raise ValueError("no addresses given")
    return addrs


def is_multicast(ip: str) -> bool:
    """True for 224.0.0.0/4."""
    return ipaddress.IPv4Address(ip).is_multicast


def label(addr: tuple[str, int]) -> str:
    """``ip:port`` for reports and messages."""
    return f"{addr[0]}:{addr[1]}"


# --- reports --------------------------------------------------------------------------------

def write_report(path: str, doc: dict[str, Any]) -> None:
    """Write a side's ``--report`` file: one JSON document, indented, newline-terminated."""
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
