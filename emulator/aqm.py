"""Active queue management at the switch ports (``--aqm``): what the user asks, checked.

``droptail`` (the default) is the tail-drop pfifo alone.  ``ecn`` marks ECN-capable packets
CE when the egress queue holds at least ``k`` packets (DCTCP's switch rule) and leaves
others to the tail drop.  ``red`` is classic RED on an EWMA of the queue length: between
``min`` and ``max`` it marks ECN-capable packets and drops the others early with a
probability rising to ``p``, and at or above ``max`` it marks or drops every packet.  The
spec follows ``--dataplane``'s form: a name, then ``key=value`` options, e.g.
``ecn,k=20`` or ``red,min=20,max=60,p=0.1,w=9``.  Only a dataplane with the ``aqm``
capability (the bpf one) carries anything but droptail; dataplanes/bpf/aqm.h is the
arithmetic, docs/fidelity.md what the counters mean.

This kernel has no RED qdisc, so the decision is taken by the BPF switch before it hands
the packet to the egress port's HTB + pfifo, on that queue's exact length (qlen.bpf.c).
"""
from __future__ import annotations

from dataclasses import dataclass

MODES = ("droptail", "ecn", "red")
#: ecn's threshold when none is given: DCTCP's K = 20 packets at 1 Gb/s (its paper, §3.4),
#: and a fifth of dcrepro's default queue of 100
DEFAULT_K = 20
#: RED's defaults, relative to the queue: min = queue/5, max = 3 min (Floyd's advice:
#: max at least twice min), max_p = 0.1, w_q = 2^-9 (about Floyd's 0.002)
DEFAULT_MAXP = 0.1
DEFAULT_WLOG = 9
_KEYS = {"ecn": ("k",), "red": ("min", "max", "p", "w"), "droptail": ()}


@dataclass(frozen=True)
class AqmSpec:
    """One AQM, its parameters resolved (queue lengths in packets)."""

    mode: str = "droptail"
    k: int = 0              # ecn: mark at queue >= k
    min_th: int = 0         # red
    max_th: int = 0
    max_p: float = 0.0
    wlog: int = 0           # red: EWMA weight 2^-wlog

    @property
    def active(self) -> bool:
        """Anything but the plain tail drop."""
        return self.mode != "droptail"

    def describe(self) -> str:
        """The spec in --aqm's own form, every parameter written out (for config.json)."""
        if self.mode == "ecn":
            return f"ecn,k={self.k}"
        if self.mode == "red":
            return f"red,min={self.min_th},max={self.max_th},p={self.max_p:g},w={self.wlog}"
        return "droptail"


def _int(spec: str, key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"--aqm {spec!r}: {key} must be a whole number of packets, got "
                         f"{value!r}") from None


def parse(spec: str, queue: int = 100) -> AqmSpec:
    """'red,min=5,max=15' -> AqmSpec, defaults filled in for a tail-drop queue of ``queue``
    packets.  ValueError (one line) on an unknown mode, option or an impossible value."""
    name, *rest = [x.strip() for x in str(spec).split(",")]
    if name not in MODES:
        raise ValueError(f"--aqm must be one of {', '.join(MODES)} (optionally with options, "
                         f"e.g. ecn,k=20 or red,min=20,max=60,p=0.1,w=9), got {spec!r}")
    opts: dict[str, str] = {}
    for item in rest:
        key, eq, value = item.partition("=")
        if not eq or key not in _KEYS[name] or key in opts:
            known = ", ".join(f"{k}=" for k in _KEYS[name]) or "none"
            raise ValueError(f"--aqm {spec!r}: {name} takes no option {item!r} (its options: "
                             f"{known})")
        opts[key] = value
    if name == "ecn":
        k = _int(spec, "k", opts.get("k", str(DEFAULT_K)))
        if not 1 <= k <= queue:
            raise ValueError(f"--aqm {spec!r}: k must be 1..{queue} (the queue), got {k}")
        return AqmSpec("ecn", k=k)
    if name == "red":
        lo = _int(spec, "min", opts.get("min", str(max(1, queue // 5))))
        hi = _int(spec, "max", opts.get("max", str(min(queue, 3 * lo))))
        try:
            p = float(opts.get("p", DEFAULT_MAXP))
        except ValueError:
            raise ValueError(f"--aqm {spec!r}: p must be a number in (0, 1]") from None
        w = _int(spec, "w", opts.get("w", str(DEFAULT_WLOG)))
        if not 1 <= lo < hi <= queue:
            raise ValueError(f"--aqm {spec!r}: need 1 <= min < max <= {queue} (the queue), "
                             f"got min={lo} max={hi}")
        if not 0 < p <= 1:
            raise ValueError(f"--aqm {spec!r}: p must be in (0, 1], got {p:g}")
        if not 0 <= w <= 16:
            raise ValueError(f"--aqm {spec!r}: w (EWMA weight 2^-w) must be 0..16, got {w}")
        return AqmSpec("red", min_th=lo, max_th=hi, max_p=p, wlog=w)
    return AqmSpec()


def unavailable() -> dict[str, str]:
    """Per mode, why this machine cannot run it ('' if it can): droptail always; ecn and
    red need the bpf dataplane and the qdisc tracepoints with BTF (qlen.bpf.c)."""
    from .bpfobj import bpf_unavailable
    why = bpf_unavailable()
    if not why and not _has_btf_type("btf_trace_qdisc_enqueue"):
        why = "the kernel has no qdisc:qdisc_enqueue tracepoint in its BTF"
    return {"droptail": "", "ecn": why, "red": why}


def _has_btf_type(name: str) -> bool:
    """Whether the running kernel's BTF names ``name`` (a raw byte search of the file)."""
    try:
        with open("/sys/kernel/btf/vmlinux", "rb") as fh:
            return b"\0" + name.encode() + b"\0" in fh.read()
    except OSError:
        return False
