"""Link shaping owned by dcrepro: HTB at the link rate with an explicit tail-drop pfifo leaf.

This kernel has no netem, RED, fq_codel...: Mininet's TCLink would put a netem qdisc under
HTB and fail, and a default leaf would be a queue the experiment never asked for.  Every
link end gets exactly HTB + ``pfifo limit N``, and the run reads it back before and after
traffic and refuses anything else.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from topos.base import Topology

from . import netns
from .proc import RunError, check, in_ns


@dataclass(frozen=True)
class LinkSpec:
    """How every link is shaped: HTB at ``bw`` Mb/s with a tail-drop pfifo of ``queue`` packets."""

    bw: float = 10.0
    queue: int = 100

    def __post_init__(self) -> None:
        if not 0 < self.bw <= 10_000:
            raise ValueError(f"--bw must be in (0, 10000] Mb/s, got {self.bw}")
        if not 1 <= self.queue <= 100_000:
            raise ValueError(f"--queue must be 1..100000 packets, got {self.queue}")


def tc_lines(intf: str, rate: float, limit: int) -> list[str]:
    """tc batch lines that shape one interface (idempotent: replace)."""
    return [f"qdisc replace dev {intf} root handle 1: htb default 1",
            f"class replace dev {intf} parent 1: classid 1:1 htb rate {rate}mbit ceil {rate}mbit",
            f"qdisc replace dev {intf} parent 1:1 handle 10: pfifo limit {limit}"]


def link_ends(topo: Topology) -> list[tuple[str, int, str]]:
    """(node, port, peer) for both ends of every link."""
    return [end for l in topo.links() for end in ((l.a, l.port_a, l.b), (l.b, l.port_b, l.a))]


def shape(topo: Topology, link: LinkSpec, host_pids: dict[str, int]) -> None:
    """Shape every link end: switch ends in the root namespace, host ends in their own."""
    root: list[str] = []
    per_host: dict[str, list[str]] = {}
    for node, port, peer in link_ends(topo):
        lines = tc_lines(f"{node}-eth{port}", topo.link_bw(node, peer, link.bw), link.queue)
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


def verify(topo: Topology, link: LinkSpec, host_pids: dict[str, int]) -> dict[str, Any]:
    """Refuse the run unless every link end is HTB root + pfifo leaf of the asked limit,
    its one HTB class at that link's own rate (topo.link_bw: a GRIN ToR uplink is a
    multiple of the run's), all read back from the kernel."""
    state = qdisc_state(host_pids)
    bad = []
    ends = link_ends(topo)
    where: dict[int | None, list[str]] = {}
    for n, p, _ in ends:
        where.setdefault(None if topo.is_switch(n) else host_pids[n], []).append(f"{n}-eth{p}")
    try:
        rates = netns.htb_rates(where)
    except OSError as exc:
        raise RunError(f"could not read the HTB classes back: {exc}") from None
    for n, p, peer in ends:
        intf = f"{n}-eth{p}"
        qs = state.get(intf, [])
        kinds = {q["kind"]: q for q in qs}
        limit = kinds.get("pfifo", {}).get("options", {}).get("limit")
        want = topo.link_bw(n, peer, link.bw) * 1e6
        got = rates.get(intf, [])
        if "htb" not in kinds or limit != link.queue:
            bad.append(f"{intf}: {[q['kind'] for q in qs]} limit={limit}")
        elif len(got) != 1 or abs(got[0] - want) > 1e-6 * want + 8:
            bad.append(f"{intf}: HTB class rates {[r / 1e6 for r in got]} Mb/s, not "
                       f"{want / 1e6:g}")
    if bad:
        raise RunError("queue discipline is not the requested HTB at the link's rate + "
                       f"tail-drop pfifo limit {link.queue}: " + "; ".join(bad[:5]))
    return {"root": "htb", "leaf": "pfifo", "limit": link.queue, "rate_mbit": link.bw,
            "interfaces": len(ends)}
