"""Link shaping owned by dcrepro: HTB at the link rate with an explicit tail-drop pfifo leaf.

This kernel has no netem, RED, fq_codel...: Mininet's TCLink would put a netem qdisc under
HTB and fail, and a default leaf would be a queue the experiment never asked for.  Every
link end gets exactly HTB + ``pfifo limit N``, and the run reads it back before and after
traffic and refuses anything else.

``--shaper tbf`` puts TBF at the root instead of HTB, with the same pfifo as its child (TBF
hands every packet to its child qdisc and releases it when its bucket holds the packet's
bytes, as HTB's one class does; one class and its classifier fewer per packet).  Both
charge qdisc_pkt_len at the configured rate, keep the root's packet count and backlog, and
count releases in the root's bstats, so the dequeue-gap probe (qgap.bpf.c), the AQM's queue
length copy (qlen.bpf.c) and the loss accounting (the pfifo's counters) read either alike.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from topos.base import DEFAULT_BW, Topology

from . import netns
from .aqm import AqmSpec
from .aqm import parse as parse_aqm
from .proc import RunError, check, in_ns

#: bytes of one full frame on these links (1500-byte MTU + Ethernet header): ``--burst Np``
FRAME_BYTES = 1514
#: the largest burst accepted (HTB keeps its bucket in ns of the rate, a 32-bit tick count)
MAX_BURST = 64 * 1024 * 1024
#: the root qdiscs dcrepro shapes a link end with (``--shaper``)
SHAPERS = ("htb", "tbf")
#: TBF's bucket when ``--burst default``: what tc gives HTB by default (rate / psched's 1 GHz
#: clock + a 1600-byte MTU: 1600 bytes below 12.8 Gb/s), so both shapers release alike;
#: tc gives TBF no default
TBF_DEFAULT_BURST = 1600


def burst_bytes(spec: str) -> int | None:
    """``--burst``: None for 'default' (tc's own choice; read back as 1600 bytes at 10
    Mb/s here, about one full frame), else bytes: a plain number of bytes, ``15k`` (x 1024,
    as tc reads it; 15k is Mininet TCLink's burst) or ``10p`` (10 full frames of
    FRAME_BYTES).  ValueError (one line) on anything else."""
    text = str(spec).strip().lower()
    if text == "default":
        return None
    m = re.fullmatch(r"(\d+)(k|p)?", text)
    if not m:
        raise ValueError(f"--burst must be 'default', bytes (15000), kilobytes (15k) or full "
                         f"frames (10p), got {spec!r}")
    n = int(m.group(1)) * {"k": 1024, "p": FRAME_BYTES, None: 1}[m.group(2)]
    if not FRAME_BYTES <= n <= MAX_BURST:
        raise ValueError(f"--burst {spec!r} is {n} bytes; it must hold at least one full frame "
                         f"({FRAME_BYTES} bytes) and at most {MAX_BURST}")
    return n


@dataclass(frozen=True)
class LinkSpec:
    """How every link is shaped: HTB (or, ``shaper`` tbf, TBF) at ``bw`` Mb/s with a bucket
    of ``burst`` (see burst_bytes) and a tail-drop pfifo of ``queue`` packets; ``aqm``
    (emulator/aqm.py) is what the switch does at every switch port before that queue."""

    bw: float = DEFAULT_BW
    queue: int = 100
    burst: str = "default"
    aqm: str = "droptail"
    shaper: str = "htb"

    def __post_init__(self) -> None:
        if not 0 < self.bw <= 10_000:
            raise ValueError(f"--bw must be in (0, 10000] Mb/s, got {self.bw}")
        if not 1 <= self.queue <= 100_000:
            raise ValueError(f"--queue must be 1..100000 packets, got {self.queue}")
        burst_bytes(self.burst)
        parse_aqm(self.aqm, self.queue)
        if self.shaper not in SHAPERS:
            raise ValueError(f"--shaper must be one of {', '.join(SHAPERS)}, got "
                             f"{self.shaper!r}")

    @property
    def burst_b(self) -> int | None:
        """The burst in bytes (None: tc's default)."""
        return burst_bytes(self.burst)

    @property
    def aqm_spec(self) -> AqmSpec:
        """The AQM, its defaults resolved for this queue."""
        return parse_aqm(self.aqm, self.queue)


def tc_lines(intf: str, rate: float, limit: int, burst: int | None = None,
             shaper: str = "htb") -> list[str]:
    """tc batch lines that shape one interface (idempotent: replace); ``burst`` bytes for
    both of the HTB class's buckets (rate and ceil) or TBF's one, None for tc's default
    (TBF: TBF_DEFAULT_BURST)."""
    leaf = f"qdisc replace dev {intf} parent 1:1 handle 10: pfifo limit {limit}"
    if shaper == "tbf":
        # TBF wants a byte limit for the bfifo it makes itself; the pfifo replaces that
        # (and must come after: replacing the root resizes whatever child it has)
        return [f"qdisc replace dev {intf} root handle 1: tbf rate {rate}mbit burst "
                f"{burst or TBF_DEFAULT_BURST} limit {limit * FRAME_BYTES}", leaf]
    b = f" burst {burst} cburst {burst}" if burst is not None else ""
    return [f"qdisc replace dev {intf} root handle 1: htb default 1",
            f"class replace dev {intf} parent 1: classid 1:1 htb rate {rate}mbit ceil "
            f"{rate}mbit{b}", leaf]


def link_ends(topo: Topology) -> list[tuple[str, int, str]]:
    """(node, port, peer) for both ends of every link."""
    return [end for l in topo.links() for end in ((l.a, l.port_a, l.b), (l.b, l.port_b, l.a))]


def shape(topo: Topology, link: LinkSpec, host_pids: dict[str, int]) -> None:
    """Shape every link end: switch ends in the root namespace, host ends in their own."""
    root: list[str] = []
    per_host: dict[str, list[str]] = {}
    rates = topo.link_rates(link.bw)
    for node, port, peer in link_ends(topo):
        lines = tc_lines(f"{node}-eth{port}", rates[(node, peer)], link.queue,
                         link.burst_b, link.shaper)
        if topo.is_switch(node):
            root += lines
        else:
            per_host.setdefault(node, []).extend(lines)
    if root:
        check(["tc", "-batch", "-"], input_text="\n".join(root) + "\n")
    for host, lines in per_host.items():
        check(in_ns(host_pids[host], ["tc", "-batch", "-"]), input_text="\n".join(lines) + "\n")


def qdisc_state(host_pids: dict[str, int]) -> dict[str, list[dict[str, Any]]]:
    """tc -s -j qdisc show of the root namespace and every host: device -> qdiscs."""
    state: dict[str, list[dict[str, Any]]] = {}
    for q in json.loads(check(["tc", "-s", "-j", "qdisc", "show"]) or "[]"):
        state.setdefault(q["dev"], []).append(q)
    for pid in host_pids.values():
        for q in json.loads(check(in_ns(pid, ["tc", "-s", "-j", "qdisc", "show"])) or "[]"):
            state.setdefault(q["dev"], []).append(q)
    return state


def _tbf_classes(state: dict[str, list[dict[str, Any]]]) -> dict[str, list[netns.HtbClass]]:
    """Per interface with a TBF root: its rate (bit/s) and bucket (bytes, twice: TBF has one
    bucket where HTB has burst and cburst), from ``tc -j``'s options (rate in bytes/s)."""
    out = {}
    for dev, qs in state.items():
        for q in qs:
            if q.get("kind") == "tbf" and q.get("root"):
                o = q.get("options", {})
                out[dev] = [netns.HtbClass(8.0 * o.get("rate", 0), float(o.get("burst", 0)),
                                           float(o.get("burst", 0)))]
    return out


def verify(topo: Topology, link: LinkSpec, host_pids: dict[str, int]) -> dict[str, Any]:
    """Refuse the run unless every link end is the asked root (HTB with one class, or TBF)
    + pfifo leaf of the asked limit, at that link's own rate (topo.link_rates: a GRIN ToR
    uplink is a multiple of the run's) with the asked burst in its buckets (when one was
    asked; TBF: its default too), all read back from the kernel.  Returns what was found,
    the bursts' range included."""
    state = qdisc_state(host_pids)
    bad = []
    ends = link_ends(topo)
    where: dict[int | None, list[str]] = {}
    for n, p, _ in ends:
        where.setdefault(None if topo.is_switch(n) else host_pids[n], []).append(f"{n}-eth{p}")
    try:
        classes = (_tbf_classes(state) if link.shaper == "tbf" else netns.htb_classes(where))
    except OSError as exc:
        raise RunError(f"could not read the {link.shaper.upper()} rates back: {exc}") from None
    want_burst = link.burst_b or (TBF_DEFAULT_BURST if link.shaper == "tbf" else None)
    bursts: list[int] = []
    rates = topo.link_rates(link.bw)
    for n, p, peer in ends:
        intf = f"{n}-eth{p}"
        qs = state.get(intf, [])
        kinds = {q["kind"]: q for q in qs}
        limit = kinds.get("pfifo", {}).get("options", {}).get("limit")
        want = rates[(n, peer)] * 1e6
        got = classes.get(intf, [])
        if link.shaper not in kinds or limit != link.queue:
            bad.append(f"{intf}: {[q['kind'] for q in qs]} limit={limit}")
        elif len(got) != 1 or abs(got[0].rate - want) > 1e-6 * want + 8:
            what = "HTB class" if link.shaper == "htb" else link.shaper.upper()
            bad.append(f"{intf}: {what} rates {[c.rate / 1e6 for c in got]} "
                       f"Mb/s, not {want / 1e6:g}")
        else:
            bursts += [round(got[0].burst), round(got[0].cburst)]
            slack = netns.burst_resolution(got[0].rate)
            if want_burst is not None and not all(
                    abs(b - want_burst) <= slack for b in (got[0].burst, got[0].cburst)):
                bad.append(f"{intf}: {link.shaper.upper()} burst/cburst {got[0].burst:.0f}/"
                           f"{got[0].cburst:.0f} bytes, not {want_burst}")
    if bad:
        raise RunError(f"queue discipline is not the requested {link.shaper.upper()} at the "
                       f"link's rate + tail-drop pfifo limit {link.queue}: " + "; ".join(bad[:5]))
    return {"root": link.shaper, "leaf": "pfifo", "limit": link.queue, "rate_mbit": link.bw,
            "interfaces": len(ends), "burst": link.burst,
            "burst_bytes_read_back": [min(bursts), max(bursts)] if bursts else None}


def queue_lengths(intfs: list[str]) -> dict[str, int]:
    """Packets waiting in each root-namespace interface's root qdisc now (``tc -s``'s
    qlen of the HTB root: its whole tree), one tc call."""
    found = {q["dev"]: int(q.get("qlen", 0))
             for q in json.loads(check(["tc", "-s", "-j", "qdisc", "show"]) or "[]")
             if q.get("root") and q["dev"] in intfs}
    return {i: found.get(i, 0) for i in intfs}
