"""What a workload may ask of the fabric beyond goodput, said once for every backend (pure):
the senders' TCP loss recovery (``Workload.recovery``), the one-way latency of sampled data
segments (``Workload.latency``) and every switch port's queue length per tier
(``Workload.queues``).  The emulated backend sets and reads them with the emulator, the sim
backend with ns-3; both turn their samples into the rows below.  First used by plts
(004_…); nothing here is plts's own."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np

from topos.base import Topology

if TYPE_CHECKING:
    from harness.traffic import Flow

#: recovery -> sysctls set in every host namespace (all three are per namespace)
RECOVERY: dict[str, dict[str, str]] = {
    "modern": {},
    # RACK off: loss is inferred from duplicate ACKs again; the reordering degree starts at 3
    # and may not grow (max 3): the three-duplicate-ACK rule of the paper's TCP
    "classic": {"net.ipv4.tcp_recovery": "0", "net.ipv4.tcp_reordering": "3",
                "net.ipv4.tcp_max_reordering": "3"},
    # classic, and no cut of the window is ever undone: no DSACKs (their undo), no
    # timestamps (Eifel's undo; segments carry 12 B more payload), no F-RTO (the RTO's undo)
    "noundo": {"net.ipv4.tcp_recovery": "0", "net.ipv4.tcp_reordering": "3",
               "net.ipv4.tcp_max_reordering": "3", "net.ipv4.tcp_dsack": "0",
               "net.ipv4.tcp_timestamps": "0", "net.ipv4.tcp_frto": "0"},
}
#: what the emulated backend reads back under every recovery (the facts' recovery_sysctls)
RECOVERY_READBACK = ("net.ipv4.tcp_recovery", "net.ipv4.tcp_reordering",
                     "net.ipv4.tcp_max_reordering")
#: recovery -> the simulator's (sim.spec.RECOVERY_TYPES): ns-3's TCP has no RACK; its
#: default proportional rate reduction stands for Linux's, NewReno-style for the paper's
SIM_RECOVERY = {"modern": "prr", "classic": "classic"}

#: the queue-length sampler's period (s): the tcp_info sampler's, so both see the same
#: moments; one rtnetlink dump of every qdisc (about 300 on a k=6 fat tree) per look
QUEUE_INTERVAL = 0.5


def hop_counts(topo: Topology, pairs: Mapping[str, str]) -> dict[str, int]:
    """Source -> switch-to-switch links on its (shortest, equal-cost) paths to its
    destination: 0 under one edge switch, 2 inside a pod, 4 across pods of a fat tree."""
    g = topo.switch_graph()
    return {s: nx.shortest_path_length(g, topo.access_switch(s), topo.access_switch(d))
            for s, d in pairs.items()}


def retrans_steps(tcp_rows: list[dict[str, str]]
                  ) -> dict[tuple[str, str, int, int], list[tuple[float, int]]]:
    """(saddr, daddr, sport, dport) -> [(time, total_retrans)] in time order (tcp_samples)."""
    out: dict[tuple[str, str, int, int], list[tuple[float, int]]] = {}
    for r in tcp_rows:
        if r.get("total_retrans") in ("", None):
            continue
        key = (r["saddr"], r["daddr"], int(r["sport"]), int(r["dport"]))
        out.setdefault(key, []).append((float(r["time"]), int(r["total_retrans"])))
    return {k: sorted(v) for k, v in out.items()}


def retrans_around(steps: list[tuple[float, int]], at: float) -> int | str:
    """Retransmissions of a connection between the two tcp_info looks around wall time
    ``at`` ('' outside the sampled span)."""
    for (t0, n0), (t1, n1) in zip(steps, steps[1:]):
        if t0 <= at <= t1:
            return n1 - n0
    return ""


def latency_rows(samples: list[dict[str, Any]], flows: list[Flow], trim: float,
                 duration: float, mono_to_wall: float,
                 base: dict[str, Any], hops: dict[str, int] | None = None,
                 steps: dict[tuple[str, str, int, int], list[tuple[float, int]]] | None = None
                 ) -> list[dict[str, Any]]:
    """The emulated switches' samples of each flow's data connection inside its measurement
    window, as rows, with the flow's path length (``hops``, by source) and its
    retransmissions around the sample (``flow_retrans``, from ``steps``) when given."""
    by_tuple = {}
    for f in flows:
        sub = f.subflows[0]
        by_tuple[(sub["src_ip"], sub["dst_ip"], int(sub["src_port"]), int(sub["dst_port"]))] = f
    rows = []
    for s in samples:
        key = (s["saddr"], s["daddr"], s["sport"], s["dport"])
        flow = by_tuple.get(key)
        if flow is None:
            continue  # iperf3's control connection
        at = s["at_ns"] / 1e9 + mono_to_wall
        if flow.start + trim <= at <= flow.start + duration - trim:
            row = {**base, "src": flow.src, "dst": flow.dst,
                   "latency_us": round(s["latency_ns"] / 1000, 2)}
            if hops is not None:
                row["hops"] = hops[flow.src]
            if steps is not None:
                row["flow_retrans"] = retrans_around(steps.get(key, []), at)
            rows.append(row)
    return rows


def port_tiers(topo: Topology) -> dict[str, str]:
    """Every switch port's interface -> its tier as 'layer->peer layer' (edge->agg,
    agg->core, core->agg, agg->edge, edge->host): the queue a packet meets leaving there."""
    def layer(n: str) -> str:
        return str(topo.node(n).attrs.get("layer", "switch")) if topo.is_switch(n) else "host"
    return {f"{sw}-eth{port}": f"{layer(sw)}->{layer(peer)}"
            for sw in topo.switches() for port, (peer, _) in topo.ports(sw).items()}


def queue_rows(samples: list[tuple[float, dict[str, int]]], tiers: dict[str, str],
               ports: list[dict[str, str]], window: tuple[float, float], bw: float,
               base: dict[str, Any]) -> list[dict[str, Any]]:
    """Per tier: the sampled queue lengths inside ``window`` (packets; ms at the link rate
    for full-size frames) and the tier's tail drops, AQM drops and marks (ports.csv)."""
    frame_ms = 1514 * 8 / (bw * 1e3)
    lengths: dict[str, list[int]] = {}
    for t, snap in samples:
        if window[0] <= t <= window[1]:
            for intf, q in snap.items():
                lengths.setdefault(tiers[intf], []).append(q)
    counts: dict[str, dict[str, int]] = {}
    for p in ports:
        tier = tiers.get(f"{p['switch']}-eth{p['port']}")
        if tier is None:
            continue
        c = counts.setdefault(tier, {})
        for col in ("qdisc_sent_packets", "qdisc_drops", "aqm_drops", "aqm_marks"):
            c[col] = c.get(col, 0) + int(p.get(col) or 0)
    rows = []
    for tier in sorted(set(lengths) | set(counts)):
        qs = np.asarray(lengths.get(tier, []), dtype=float)
        c = counts.get(tier, {})
        stats: dict[str, Any] = {"samples": int(qs.size)}
        if qs.size:
            stats.update(mean_pkts=round(float(qs.mean()), 3),
                         p90_pkts=round(float(np.percentile(qs, 90)), 1),
                         p99_pkts=round(float(np.percentile(qs, 99)), 1),
                         max_pkts=int(qs.max()), busy_share=round(float((qs > 0).mean()), 4),
                         mean_ms=round(float(qs.mean()) * frame_ms, 3),
                         p99_ms=round(float(np.percentile(qs, 99)) * frame_ms, 3))
        rows.append({**base, "tier": tier, **stats,
                     "sent_packets": c.get("qdisc_sent_packets", 0),
                     "tail_drops": c.get("qdisc_drops", 0), "aqm_drops": c.get("aqm_drops", 0),
                     "aqm_marks": c.get("aqm_marks", 0)})
    return rows


def switch_path(topo: Topology, src: str, per_switch: Mapping[str, Mapping[str, int]]
                ) -> list[str]:
    """The switches a per-flow (hashed) flow crossed, from the simulator's record of its
    packets per switch and next hop: from the sender's switch, the one next hop each switch
    sent it to.  ValueError when a switch sent it more than one way."""
    path, here = [], topo.access_switch(src)
    while topo.is_switch(here):
        if here in path or len(per_switch.get(here, {})) != 1:
            raise ValueError(f"sim: flow from {src} left {here} by "
                             f"{dict(per_switch.get(here, {}))}, not one next hop")
        path.append(here)
        here = next(iter(per_switch[here]))
    return path
