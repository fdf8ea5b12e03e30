"""The tc-BPF switch program's life: build, load and pin, fill and read its maps, attach, remove.

The struct layouts below mirror dataplanes/bpf/switch.bpf.c byte for byte (little-endian, no
implicit padding: the C structs have explicit pad fields, packed here as ``x`` bytes).
tests/unit/test_bpfswitch.py checks them against the compiled object's BTF, and the loaded
maps' key/value sizes are checked against them at load time.

Every pack function takes a tuple in the field order of its NamedTuple (so the translation's
own tuples, e.g. dataplane/bpfplan.FibKey/FibAction, pack as they are); every unpack function
returns the NamedTuple.  IPv4 addresses are dotted strings, MACs 6 bytes, ports host order.

Pinning: a private bpffs is mounted at the run's directory (/run/dcrepro/bpffs/<run id>),
never under /sys/fs/bpf: ``ip netns exec`` and ``tc -n`` remount /sys in their own mount
namespace, so pins there would not be found by the commands that need them.  ``teardown(dir)``
removes everything found at such a directory (attachments of its program, pins, the mount,
the directory) and is all a crashed run needs.
"""
from __future__ import annotations

import json
import socket
import struct
import subprocess
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from emulator.bpfobj import MAP_DIR, PROG_PIN, bpffs_mounts, build, load_pinned, unmount
from emulator.bpfsys import BpfMap
from emulator.proc import RunError, run

from .aqm import AQM_PORT, AqmPort, pack_aqm_port, unpack_aqm_port

SOURCE = Path(__file__).resolve().parent / "switch.bpf.c"
MAX_CHOICES = 16
LABEL_ANY = 0xFFFF
MAX_LABEL = 4094
KIND_ETH, KIND_ARP = 1, 2                      # fib_key.kind
ACT_FORWARD, ACT_REPLICATE = 1, 2              # fib_action.kind
MODE_HASH, MODE_RND, MODE_RR, MODE_CNT = 0, 1, 2, 3
MODES = {"hash": MODE_HASH, "rnd": MODE_RND, "rr": MODE_RR, "cnt": MODE_CNT}
MAPS = ("ports", "egress", "fib", "rr", "flows", "conf", "lat_start", "lat", "aqm")
PORT_HOST = 1                                  # port_info.flags: the port faces a host
PORT_IN_RULES = 2                              # ... its switch has fib entries for in_ports
CONF_KEEP_SOCKET = 1                           # conf.flags: packets keep the sender's socket
CONF_FLOWS_SAMPLED = 2                         # conf.flags: flow records sampled (switch.bpf.c)
CONF_CNT_PACKETS = 4                           # conf.flags: cnt balances packets, not bytes
FLOW_SAMPLE_EVERY = 64                         # ... one TCP segment in this many, and SYN/FIN/RST
TIMEOUT = 60.0

# struct formats (switch.bpf.c); x = an explicit pad field, always zero
IFINDEX = struct.Struct("<I")                  # ports key: __u32 ifindex
PORT_INFO = struct.Struct("<IIIIQQQ")          # sw, port, seed, flags, rx_packets, rx_bytes, miss
PORT_KEY = struct.Struct("<II")                # sw, port
EGRESS_INFO = struct.Struct("<IIQQ")           # ifindex, aqm, tx_packets, tx_bytes
FIB_KEY = struct.Struct("<IHHBx6s")            # sw, in_port, label, kind, pad, addr[6]
FIB_ACTION = struct.Struct(f"<BBBBI{MAX_CHOICES}H{MAX_CHOICES}H")  # kind mode pop n group port push
RR_KEY = struct.Struct("<II4s4sHHB3x")         # sw, group, saddr, daddr, sport, dport, proto, pad
RR_VALUE = struct.Struct("<I")                 # last_index
FLOW_KEY = struct.Struct("<I4s4sHHBxH")        # sw, saddr, daddr, sport, dport, proto, pad, out
FLOW_STAT = struct.Struct("<QQHH4x")           # packets, bytes, in_label, out_label, pad
CONF = struct.Struct("<IIQQQ")                 # sample_every, flags, stamped, measured, lost
LAT_KEY = struct.Struct("<4s4sHHI")            # saddr, daddr, sport, dport, seq
LAT_START = struct.Struct("<Q")                # ns at the first switch
LAT_VAL = struct.Struct("<QQ")                 # at_ns, latency_ns
SIZES = {"ports": (IFINDEX.size, PORT_INFO.size), "egress": (PORT_KEY.size, EGRESS_INFO.size),
         "fib": (FIB_KEY.size, FIB_ACTION.size), "rr": (RR_KEY.size, RR_VALUE.size),
         "flows": (FLOW_KEY.size, FLOW_STAT.size), "conf": (IFINDEX.size, CONF.size),
         "lat_start": (LAT_KEY.size, LAT_START.size), "lat": (LAT_KEY.size, LAT_VAL.size),
         "aqm": (IFINDEX.size, AQM_PORT.size)}


class PortInfo(NamedTuple):
    """ports value: the switch and port behind an ifindex, the switch's seed, flags
    (PORT_HOST, PORT_IN_RULES), counters."""

    sw: int
    port: int
    seed: int
    flags: int = 0
    rx_packets: int = 0
    rx_bytes: int = 0
    miss_packets: int = 0


class PortKey(NamedTuple):
    """egress key."""

    sw: int
    port: int


class EgressInfo(NamedTuple):
    """egress value: the port's ifindex, what the program redirected to it, and whether
    the port has an AQM (1: look it up in the ``aqm`` map; packed before the counters)."""

    ifindex: int
    tx_packets: int = 0
    tx_bytes: int = 0
    aqm: int = 0


class FibKey(NamedTuple):
    """fib key: in_port 0 = any; label 0 = untagged, LABEL_ANY = any tagged; addr = MAC
    (KIND_ETH) or IPv4 target address + two zero bytes (KIND_ARP)."""

    sw: int
    in_port: int
    label: int
    kind: int
    addr: bytes


class FibAction(NamedTuple):
    """fib value: ACT_FORWARD (one choice by ``mode``) or ACT_REPLICATE (all), pop first?,
    next-hop set id, per choice the output port and the label to push (0 = none)."""

    kind: int
    mode: int
    pop: int
    group: int
    ports: tuple[int, ...]
    push: tuple[int, ...]


class RrKey(NamedTuple):
    """rr key: one flow's round-robin state within one next-hop set of one switch."""

    sw: int
    group: int
    saddr: str
    daddr: str
    sport: int
    dport: int
    proto: int


class FlowKey(NamedTuple):
    """flows key: one flow at one switch, by the port it left by."""

    sw: int
    saddr: str
    daddr: str
    sport: int
    dport: int
    proto: int
    out_port: int


class FlowStat(NamedTuple):
    """flows value."""

    packets: int
    bytes: int
    in_label: int
    out_label: int


class Conf(NamedTuple):
    """conf value (its one entry): latency sampling rate (0 = off), flags
    (CONF_KEEP_SOCKET: packets keep their sender's socket through the fabric, the ablation
    of switch.bpf.c's socket release; CONF_FLOWS_SAMPLED: flow records sampled where the
    5-tuple fixes the path; CONF_CNT_PACKETS: the cnt spray balances packets, not bytes)
    and the sampling counters."""

    sample_every: int
    flags: int = 0
    stamped: int = 0
    measured: int = 0
    lost: int = 0


class LatKey(NamedTuple):
    """lat_start / lat key: one TCP segment."""

    saddr: str
    daddr: str
    sport: int
    dport: int
    seq: int


class LatVal(NamedTuple):
    """lat value: when the segment reached its last switch (CLOCK_MONOTONIC ns) and its
    latency since its first switch (ns)."""

    at_ns: int
    latency_ns: int


def _u32(v: int, what: str) -> int:
    if not 0 <= v <= 0xFFFFFFFF:
        raise ValueError(f"{what} {v} does not fit 32 bits")
    return v


# -- pack / unpack -------------------------------------------------------------------------

def pack_ifindex(ifindex: int) -> bytes:
    """ports key."""
    return IFINDEX.pack(ifindex)


def unpack_ifindex(b: bytes) -> int:
    """Inverse of pack_ifindex."""
    return IFINDEX.unpack(b)[0]


def pack_port_info(v: tuple[int, ...]) -> bytes:
    """ports value from PortInfo (or (sw, port, seed[, flags]): counters zero)."""
    return PORT_INFO.pack(*PortInfo(*v))


def unpack_port_info(b: bytes) -> PortInfo:
    """Inverse of pack_port_info."""
    return PortInfo(*PORT_INFO.unpack(b))


def pack_port_key(k: tuple[int, int]) -> bytes:
    """egress key from (sw, port)."""
    return PORT_KEY.pack(*k)


def unpack_port_key(b: bytes) -> PortKey:
    """Inverse of pack_port_key."""
    return PortKey(*PORT_KEY.unpack(b))


def pack_egress_info(v: tuple[int, ...] | int) -> bytes:
    """egress value from EgressInfo (or a bare ifindex: counters zero, no AQM)."""
    e = EgressInfo(v) if isinstance(v, int) else EgressInfo(*v)
    return EGRESS_INFO.pack(e.ifindex, e.aqm, e.tx_packets, e.tx_bytes)


def unpack_egress_info(b: bytes) -> EgressInfo:
    """Inverse of pack_egress_info."""
    ifindex, aqm, tx_packets, tx_bytes = EGRESS_INFO.unpack(b)
    return EgressInfo(ifindex, tx_packets, tx_bytes, aqm)


def pack_fib_key(k: tuple[int, int, int, int, bytes]) -> bytes:
    """fib key from (sw, in_port, label, kind, addr)."""
    sw, in_port, label, kind, addr = k
    if len(addr) != 6:
        raise ValueError(f"fib key address must be 6 bytes, got {len(addr)}")
    if not (0 <= label <= MAX_LABEL or label == LABEL_ANY):
        raise ValueError(f"label {label} (0..{MAX_LABEL} or {LABEL_ANY:#x})")
    if kind not in (KIND_ETH, KIND_ARP):
        raise ValueError(f"fib key kind {kind} ({KIND_ETH} = MAC, {KIND_ARP} = ARP target)")
    return FIB_KEY.pack(sw, in_port, label, kind, bytes(addr))


def unpack_fib_key(b: bytes) -> FibKey:
    """Inverse of pack_fib_key."""
    return FibKey(*FIB_KEY.unpack(b))


def pack_fib_action(a: tuple[int, int, int, int, tuple[int, ...], tuple[int, ...]]) -> bytes:
    """fib value from (kind, mode, pop, group, ports, push); unused choice slots are zero."""
    kind, mode, pop, group, ports, push = a
    n = len(ports)
    if not 1 <= n <= MAX_CHOICES:
        raise ValueError(f"{n} choices (1..{MAX_CHOICES})")
    if len(push) != n:
        raise ValueError(f"{n} ports but {len(push)} push labels")
    if kind not in (ACT_FORWARD, ACT_REPLICATE) or mode not in MODES.values() or pop not in (0, 1):
        raise ValueError(f"bad action kind/mode/pop {kind}/{mode}/{pop}")
    if not all(1 <= p <= 0xFFFF for p in ports) or not all(0 <= l <= MAX_LABEL for l in push):
        raise ValueError(f"ports must be 1..65535 and labels 0..{MAX_LABEL}: {ports} {push}")
    pad = (0,) * (MAX_CHOICES - n)
    return FIB_ACTION.pack(kind, mode, int(pop), n, _u32(group, "group"), *ports, *pad,
                           *push, *pad)


def unpack_fib_action(b: bytes) -> FibAction:
    """Inverse of pack_fib_action (an n out of range keeps all 16 slots, as the program
    would drop the packet anyway)."""
    kind, mode, pop, n, group, *rest = FIB_ACTION.unpack(b)
    n = n if 1 <= n <= MAX_CHOICES else MAX_CHOICES
    return FibAction(kind, mode, pop, group, tuple(rest[:n]),
                     tuple(rest[MAX_CHOICES:MAX_CHOICES + n]))


def pack_rr_key(k: tuple[int, int, str, str, int, int, int]) -> bytes:
    """rr key from (sw, group, saddr, daddr, sport, dport, proto)."""
    sw, group, saddr, daddr, sport, dport, proto = k
    return RR_KEY.pack(sw, group, socket.inet_aton(saddr), socket.inet_aton(daddr), sport,
                       dport, proto)


def unpack_rr_key(b: bytes) -> RrKey:
    """Inverse of pack_rr_key."""
    sw, group, saddr, daddr, sport, dport, proto = RR_KEY.unpack(b)
    return RrKey(sw, group, socket.inet_ntoa(saddr), socket.inet_ntoa(daddr), sport, dport,
                 proto)


def pack_rr_value(last_index: int) -> bytes:
    """rr value."""
    return RR_VALUE.pack(last_index)


def unpack_rr_value(b: bytes) -> int:
    """Inverse of pack_rr_value."""
    return RR_VALUE.unpack(b)[0]


def pack_flow_key(k: tuple[int, str, str, int, int, int, int]) -> bytes:
    """flows key from (sw, saddr, daddr, sport, dport, proto, out_port)."""
    sw, saddr, daddr, sport, dport, proto, out_port = k
    return FLOW_KEY.pack(sw, socket.inet_aton(saddr), socket.inet_aton(daddr), sport, dport,
                         proto, out_port)


def unpack_flow_key(b: bytes) -> FlowKey:
    """Inverse of pack_flow_key."""
    sw, saddr, daddr, sport, dport, proto, out_port = FLOW_KEY.unpack(b)
    return FlowKey(sw, socket.inet_ntoa(saddr), socket.inet_ntoa(daddr), sport, dport, proto,
                   out_port)


def pack_flow_stat(v: tuple[int, int, int, int]) -> bytes:
    """flows value from (packets, bytes, in_label, out_label)."""
    return FLOW_STAT.pack(*v)


def unpack_flow_stat(b: bytes) -> FlowStat:
    """Inverse of pack_flow_stat."""
    return FlowStat(*FLOW_STAT.unpack(b))


def pack_conf(v: tuple[int, ...] | int) -> bytes:
    """conf value from Conf (or a bare sampling rate: counters zero)."""
    return CONF.pack(*(Conf(v) if isinstance(v, int) else Conf(*v)))


def unpack_conf(b: bytes) -> Conf:
    """Inverse of pack_conf."""
    return Conf(*CONF.unpack(b))


def pack_lat_key(k: tuple[str, str, int, int, int]) -> bytes:
    """lat key from (saddr, daddr, sport, dport, seq)."""
    saddr, daddr, sport, dport, seq = k
    return LAT_KEY.pack(socket.inet_aton(saddr), socket.inet_aton(daddr), sport, dport, seq)


def unpack_lat_key(b: bytes) -> LatKey:
    """Inverse of pack_lat_key."""
    saddr, daddr, sport, dport, seq = LAT_KEY.unpack(b)
    return LatKey(socket.inet_ntoa(saddr), socket.inet_ntoa(daddr), sport, dport, seq)


def pack_lat_start(ns: int) -> bytes:
    """lat_start value."""
    return LAT_START.pack(ns)


def unpack_lat_start(b: bytes) -> int:
    """Inverse of pack_lat_start."""
    return LAT_START.unpack(b)[0]


def pack_lat_val(v: tuple[int, int]) -> bytes:
    """lat value from (at_ns, latency_ns)."""
    return LAT_VAL.pack(*v)


def unpack_lat_val(b: bytes) -> LatVal:
    """Inverse of pack_lat_val."""
    return LatVal(*LAT_VAL.unpack(b))


def unpack_flow(key: bytes, value: bytes) -> dict[str, Any]:
    """One record of the flows map as a flat dict (FlowKey and FlowStat fields)."""
    return {**unpack_flow_key(key)._asdict(), **unpack_flow_stat(value)._asdict()}


#: per map: (pack key, unpack key, pack value, unpack value)
CODECS: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any],
                        Callable[[Any], bytes], Callable[[bytes], Any]]] = {
    "ports": (pack_ifindex, unpack_ifindex, pack_port_info, unpack_port_info),
    "egress": (pack_port_key, unpack_port_key, pack_egress_info, unpack_egress_info),
    "fib": (pack_fib_key, unpack_fib_key, pack_fib_action, unpack_fib_action),
    "rr": (pack_rr_key, unpack_rr_key, pack_rr_value, unpack_rr_value),
    "flows": (pack_flow_key, unpack_flow_key, pack_flow_stat, unpack_flow_stat),
    "conf": (pack_ifindex, unpack_ifindex, pack_conf, unpack_conf),
    "lat_start": (pack_lat_key, unpack_lat_key, pack_lat_start, unpack_lat_start),
    "lat": (pack_lat_key, unpack_lat_key, pack_lat_val, unpack_lat_val),
    "aqm": (pack_ifindex, unpack_ifindex, pack_aqm_port, unpack_aqm_port),
}


def decode_map(name: str, m: BpfMap) -> dict[Any, Any]:
    """Every entry of the switch map ``name`` (opened as ``m``), decoded."""
    _, unkey, _, unval = CODECS[name]
    return {unkey(k): unval(v) for k, v in m.items()}


# -- the hash, as the program computes it --------------------------------------------------

def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def flow_hash(seed: int, saddr: str, daddr: str, proto: int, sport: int = 0,
              dport: int = 0) -> int:
    """switch.bpf.c's flow_hash(): mode ``hash`` takes choice ``flow_hash(...) % n``
    (ports 0 for non-TCP/UDP and fragments).  Addresses enter as the little-endian load of
    their network-order bytes, exactly as the program reads them."""
    h = _fmix((seed ^ 0x9E3779B9) & 0xFFFFFFFF)
    h = _fmix(h ^ int.from_bytes(socket.inet_aton(saddr), "little"))
    h = _fmix(h ^ int.from_bytes(socket.inet_aton(daddr), "little"))
    h = _fmix(h ^ ((sport << 16) | dport))
    return _fmix(h ^ proto)


def build_program(cache: Path | str) -> Path:
    """The switch program compiled into ``cache`` (cached by content, emulator.bpfobj)."""
    return build(cache, SOURCE)


# -- commands ------------------------------------------------------------------------------

def _in_ns(argv: list[str], netns: str | None) -> list[str]:
    return argv if netns is None else ["ip", "netns", "exec", netns, *argv]


def _run(argv: list[str], timeout: float = TIMEOUT, input_text: str | None = None,
         ok: bool = False) -> subprocess.CompletedProcess[str]:
    """proc.run with this module's default timeout."""
    return run(argv, timeout, input_text, ok)


def ifindexes(names: Iterable[str], netns: str | None = None) -> dict[str, int]:
    """ifindex of every named interface (in ``netns``, or this namespace); one command."""
    want = list(names)
    links = json.loads(_run(["ip", *(["-n", netns] if netns else []), "-j", "link", "show"])
                       .stdout or "[]")
    have = {l["ifname"]: l["ifindex"] for l in links}
    missing = [n for n in want if n not in have]
    if missing:
        raise RunError(f"no interface {', '.join(missing[:5])}"
                       f"{f' in network namespace {netns}' if netns else ''}")
    return {n: have[n] for n in want}


def prog_id(pin: Path | str) -> int | None:
    """Kernel id of a pinned program (None if nothing is pinned there)."""
    p = _run(["bpftool", "-j", "prog", "show", "pinned", str(pin)], timeout=20, ok=True)
    if p.returncode != 0:
        return None
    return int(json.loads(p.stdout)["id"])


def prog_stats(prog: int) -> tuple[int, int]:
    """(run_time_ns, run_cnt) of a program by kernel id; zeros unless bpf_stats() is on."""
    out = json.loads(_run(["bpftool", "-j", "prog", "show", "id", str(prog)],
                          timeout=20).stdout)
    return out.get("run_time_ns", 0), out.get("run_cnt", 0)


@contextmanager
def bpf_stats() -> Iterator[None]:
    """kernel.bpf_stats_enabled on for the block (every program's run time is counted,
    at some cost per run), restored after; for benches, not for runs."""
    knob = Path("/proc/sys/kernel/bpf_stats_enabled")
    saved = knob.read_text().strip()
    knob.write_text("1")
    try:
        yield
    finally:
        knob.write_text(saved)


def attachments(pid: int, netns: str | None = None) -> list[str]:
    """Interfaces (of ``netns``, or this namespace) whose tc hooks run program ``pid``."""
    out = _run(_in_ns(["bpftool", "-j", "net", "show"], netns), timeout=60).stdout
    return sorted({a["devname"] for ns in json.loads(out or "[]") for a in ns.get("tc", [])
                   if a.get("id") == pid})


def _detach(intfs: list[str], netns: str | None, pid: int | None) -> None:
    """Delete the clsact qdisc (and so the filter) of every interface in one tc batch;
    interfaces that are gone or never got one are fine.  With the program's id, check that
    it runs nowhere any more."""
    if intfs:
        p = _run(["tc", *(["-n", netns] if netns else []), "-force", "-batch", "-"],
                 input_text="".join(f"qdisc del dev {i} clsact\n" for i in intfs), ok=True)
    else:
        p = None
    if pid is None:
        return
    left = attachments(pid, netns)
    if left:
        why = p.stderr.strip()[:500] if p is not None else ""
        raise RunError(f"the BPF switch is still attached to {', '.join(left[:10])} "
                       f"(tc: {why or 'not asked to detach them'})")


def teardown(pin_dir: Path | str, netns: str | None = None) -> list[str]:
    """Remove everything found at a private bpffs directory: detach its program from every
    interface of ``netns`` (default: this namespace) that runs it, drop the pins, unmount,
    remove the directory.  Idempotent; for a crashed run too.  Returns what it did."""
    pin_dir = Path(pin_dir)
    done: list[str] = []
    if bpffs_mounts(pin_dir):
        pid = prog_id(pin_dir / PROG_PIN)
        if netns is not None and not Path("/run/netns", netns).exists():
            pid = None                  # the namespace, and so every attachment, is gone
        if pid is not None:
            left = attachments(pid, netns)
            if left:
                _detach(left, netns, pid)
                done.append(f"detached the BPF switch from {len(left)} interfaces")
        unmount(pin_dir)
        done.append(f"unmounted the bpffs at {pin_dir}")
    elif pin_dir.exists():
        unmount(pin_dir)
        done.append(f"removed {pin_dir}")
    return done


# -- runtime -------------------------------------------------------------------------------

class SwitchRuntime:
    """The switch program of one network, loaded once, pinned on a private bpffs mounted at
    ``pin_dir``, shared by every switch port; its maps open.  ``netns``: the network
    namespace of the switch ports (None: this one; dcrepro runs them in the root namespace).
    A context manager; ``close()`` is idempotent."""

    def __init__(self, pin_dir: Path | str, obj: Path | str, netns: str | None = None) -> None:
        self.pin_dir = Path(pin_dir)
        self.netns = netns
        self.prog = self.pin_dir / PROG_PIN
        self.maps: dict[str, BpfMap] = {}
        self.attached: list[str] = []
        self.prog_id: int | None = None
        # (a failed load leaves nothing mounted, and a bpffs already mounted there, which
        # may be another live runtime's, makes it fail before touching anything)
        load_pinned(Path(obj), self.pin_dir, "classifier")
        try:
            self.prog_id = prog_id(self.prog)
            for name in MAPS:
                m = BpfMap(str(self.pin_dir / MAP_DIR / name))
                self.maps[name] = m
                if (m.key_size, m.value_size) != SIZES[name]:
                    raise RunError(f"BPF map {name}: key/value {m.key_size}/{m.value_size} "
                                   f"bytes, dcrepro packs {SIZES[name]}: program and loader "
                                   f"disagree")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> SwitchRuntime:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # maps
    def fill(self, ports: dict[int, tuple[int, ...]], egress: dict[tuple[int, int], int],
             fib: dict[FibKey, FibAction]) -> None:
        """Write the network's entries: ports {ifindex: (sw, port, seed, flags)}, egress
        {(sw, port): ifindex}, fib {FibKey: FibAction} (before any program is attached)."""
        if len(fib) > self.maps["fib"].max_entries:
            raise RunError(f"the plan has {len(fib)} table entries; the BPF switch holds "
                           f"{self.maps['fib'].max_entries}")
        for ifindex, info in ports.items():
            self.maps["ports"].update(pack_ifindex(ifindex), pack_port_info(tuple(info)[:4]))
        for key, ifindex in egress.items():
            self.maps["egress"].update(pack_port_key(key), pack_egress_info(ifindex))
        for k, a in fib.items():
            self.maps["fib"].update(pack_fib_key(k), pack_fib_action(a))

    def set_port_flag(self, flag: int, on: bool, sw: int | None = None) -> None:
        """Set (or clear) ``flag`` in the ports entries of switch ``sw`` (None: every port),
        e.g. PORT_IN_RULES beside an in_port fib entry written by hand.  The entry is
        rewritten whole, so its rx and miss counters restart from zero."""
        for ifindex, info in self.read_ports().items():
            if sw is None or info.sw == sw:
                flags = info.flags | flag if on else info.flags & ~flag
                self.maps["ports"].update(pack_ifindex(ifindex),
                                          pack_port_info((info.sw, info.port, info.seed, flags)))

    def set_fib(self, key: tuple[int, int, int, int, bytes],
                action: tuple[int, int, int, int, tuple[int, ...], tuple[int, ...]] | None
                ) -> None:
        """Write one fib entry (None: delete it)."""
        if action is None:
            self.maps["fib"].delete(pack_fib_key(key))
        else:
            self.maps["fib"].update(pack_fib_key(key), pack_fib_action(action))

    def verify(self, ports: dict[int, tuple[int, ...]], egress: dict[tuple[int, int], int],
               fib: dict[FibKey, FibAction]) -> str:
        """Read every map back; '' when it holds exactly these entries, else what differs."""
        got_ports = {k: tuple(v[:4]) for k, v in self.read_ports().items()}
        got_egress = {tuple(k): v.ifindex for k, v in self.read_egress().items()}
        want_ports = {k: tuple(PortInfo(*tuple(v)[:4]))[:4] for k, v in ports.items()}
        tables: list[tuple[str, dict[Any, Any], dict[Any, Any]]] = [
            ("ports", want_ports, got_ports), ("egress", egress, got_egress),
            ("fib", fib, self.read_fib())]
        for name, want, got in tables:
            if got != want:
                extra = len(set(got) - set(want))
                missing = len(set(want) - set(got))
                wrong = sum(1 for k in set(got) & set(want) if got[k] != want[k])
                return (f"{name}: {missing} entries missing, {extra} unexpected, {wrong} "
                        f"different (of {len(want)})")
        return ""

    def set_aqm(self, entries: dict[int, AqmPort]) -> str:
        """Give every port in ``entries`` (ifindex -> AqmPort) its AQM and set the aqm flag of
        its egress entries (before the program is attached); '' when both read back as
        written, else what differs."""
        for ifindex, v in entries.items():
            self.maps["aqm"].update(pack_ifindex(ifindex), pack_aqm_port(v))
        for key, e in self.read_egress().items():
            if e.ifindex in entries:
                self.maps["egress"].update(pack_port_key(key), pack_egress_info(e._replace(aqm=1)))
        got = self.read_map("aqm")
        if got != entries:
            return f"aqm: {len(got)} entries read back, {len(entries)} written, or different"
        flagged = {e.ifindex for e in self.read_egress().values() if e.aqm}
        if flagged != set(entries):
            return f"egress: {len(flagged)} ports flagged for an AQM, {len(entries)} asked"
        return ""

    def read_aqm(self) -> dict[int, AqmPort]:
        """ifindex -> the port's AQM: queue length, RED state, marks and drops."""
        return self.read_map("aqm")

    def read_map(self, name: str) -> dict[Any, Any]:
        """Every entry of one map, decoded (see CODECS)."""
        return decode_map(name, self.maps[name])

    def read_ports(self) -> dict[int, PortInfo]:
        """ifindex -> PortInfo (with rx/miss counters)."""
        return self.read_map("ports")

    def read_egress(self) -> dict[PortKey, EgressInfo]:
        """(sw, port) -> EgressInfo (with tx counters)."""
        return self.read_map("egress")

    def read_fib(self) -> dict[FibKey, FibAction]:
        """The table."""
        return self.read_map("fib")

    def read_rr(self) -> dict[RrKey, int]:
        """Round-robin state: flow -> index of the choice its last packet took."""
        return self.read_map("rr")

    def read_flows(self) -> list[dict[str, Any]]:
        """Every record of the flows map: sw, saddr, daddr, sport, dport, proto, out_port,
        packets, bytes, in_label, out_label."""
        return [unpack_flow(k, v) for k, v in self.maps["flows"].items()]

    def sample_latency(self, every: int) -> None:
        """Sample one TCP data segment in about ``every`` (0 = off) for fabric latency;
        forget earlier samples and counters."""
        if every < 0:
            raise ValueError(f"sampling rate {every} must be >= 0")
        for name in ("lat_start", "lat"):
            for k in list(self.maps[name].keys()):
                self.maps[name].delete(k)
        flags = self.read_conf().flags
        self.maps["conf"].update(pack_ifindex(0), pack_conf(Conf(every, flags)))

    def set_flag(self, flag: int, on: bool) -> None:
        """Set or clear one of conf's flags (CONF_*), the others left as they are."""
        c = self.read_conf()
        flags = (c.flags | flag) if on else (c.flags & ~flag)
        self.maps["conf"].update(pack_ifindex(0), pack_conf(c._replace(flags=flags)))

    def keep_socket(self, keep: bool) -> None:
        """Whether packets keep their sender's socket through the fabric (True: the kernel's
        own behaviour, which caps every TCP flow by TCP Small Queues; for ablations only)
        or are released at their first switch (False, the default; see switch.bpf.c)."""
        self.set_flag(CONF_KEEP_SOCKET, keep)

    def sample_flows(self, sampled: bool) -> None:
        """Whether the flow records are sampled where a packet's 5-tuple fixes its port
        (True; see switch.bpf.c) or count every packet (False, the default)."""
        self.set_flag(CONF_FLOWS_SAMPLED, sampled)

    def count_packets(self, packets: bool) -> None:
        """Whether the cnt spray picks the port that sent the fewest packets (True, an
        ablation) or the fewest bytes (False, the default; see switch.bpf.c)."""
        self.set_flag(CONF_CNT_PACKETS, packets)

    def read_conf(self) -> Conf:
        """The sampling rate, the flags and the sampling counters."""
        raw = self.maps["conf"].lookup(pack_ifindex(0))
        if raw is None:
            raise RunError("the switch program's conf map has no entry 0")
        return unpack_conf(raw)

    def read_latency(self) -> dict[LatKey, LatVal]:
        """Every measured segment: (5-tuple, seq) -> (arrival ns, latency ns)."""
        return self.read_map("lat")

    def counters(self) -> dict[str, int]:
        """Totals over all ports: packets received, dropped as misses, sent."""
        ports = self.read_ports().values()
        return {"rx_packets": sum(p.rx_packets for p in ports),
                "miss_packets": sum(p.miss_packets for p in ports),
                "tx_packets": sum(e.tx_packets for e in self.read_egress().values())}

    def reset_counters(self) -> None:
        """Zero the port counters and forget flow records and round-robin state (entries
        written while traffic flows may lose a concurrent increment)."""
        for ifindex, p in self.read_ports().items():
            self.maps["ports"].update(pack_ifindex(ifindex), pack_port_info(p[:4]))
        for key, e in self.read_egress().items():
            self.maps["egress"].update(pack_port_key(key),
                                       pack_egress_info(e._replace(tx_packets=0, tx_bytes=0)))
        for name in ("flows", "rr"):
            for k in list(self.maps[name].keys()):
                self.maps[name].delete(k)

    # attachment
    def attach(self, intfs: Iterable[str]) -> None:
        """clsact + the pinned program on every interface's ingress, in one tc batch."""
        intfs = [i for i in intfs if i not in self.attached]
        if not intfs:
            return
        self.attached += intfs   # before the batch: a half-done batch is detached at close
        lines = [f"qdisc add dev {i} clsact\nfilter add dev {i} ingress prio 1 handle 1 "
                 f"bpf da object-pinned {self.prog}\n" for i in intfs]
        _run(["tc", *(["-n", self.netns] if self.netns else []), "-batch", "-"],
             input_text="".join(lines))

    def detach(self, intfs: Iterable[str] | None = None) -> None:
        """Remove the clsact qdisc (with the program) from these interfaces (default: all
        attached), in one tc batch; vanished interfaces are fine."""
        which = list(self.attached if intfs is None else intfs)
        _detach(which, self.netns, None)
        self.attached = [i for i in self.attached if i not in which]
        if self.prog_id is not None:
            left = set(attachments(self.prog_id, self.netns)) & set(which)
            if left:
                raise RunError(f"the BPF switch is still attached to {sorted(left)[:10]}")

    def attached_to(self) -> list[str]:
        """Interfaces this runtime attached to that still run its program (asks the kernel).
        In this namespace (dcrepro's case) one rtnetlink dump per attached interface,
        in-process: a ``bpftool net show`` every second walked every device and took
        17-46 % of a core at k = 6 (helper's measurement, issue #28's PLTS runs)."""
        from emulator.netns import in_namespaces, ingress_bpf_ids
        if self.prog_id is None:
            return []
        names = list(self.attached)
        got = (ingress_bpf_ids(names) if self.netns is None else
               in_namespaces([f"/run/netns/{self.netns}"], lambda _: ingress_bpf_ids(names))[0])
        return sorted(i for i, ids in got.items() if self.prog_id in ids)

    def alive(self) -> bool:
        """The program and its maps are still pinned."""
        return self.prog.exists() and all((self.pin_dir / MAP_DIR / m).exists() for m in MAPS)

    def close(self) -> None:
        """Detach, close the maps, unmount the bpffs, remove its directory (idempotent; any
        attachment the kernel still reports is removed too)."""
        try:
            if self.attached:
                _detach(self.attached, self.netns, None)
                self.attached = []
        finally:
            for m in self.maps.values():
                m.close()
            self.maps = {}
            teardown(self.pin_dir, self.netns)
