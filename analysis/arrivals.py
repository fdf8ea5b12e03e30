"""Arrivals at a tail-drop queue, per input port: who was dropped, in what runs, and how
regularly each port's packets came (pure; the records come from emulator/qarrive.py).

A *blackout* (TCP Outcast paper, "port blackout") is a run of consecutive drops of one
port's packets: drops with no accepted packet from that port between them.  Other ports'
packets may be accepted meanwhile; that is the point: the queue takes the other port's
packet each time a slot frees.

Inter-arrival times are measured between consecutive packets of one port (accepted or
dropped: the queue sees both), divided by the *service time*, one full frame (1514 bytes)
on the bottleneck at its rate: a port that sends at line rate from a busy upstream queue
delivers a packet every 1.0 service times; jitter shows as spread around it, bursts as
values near 0.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

FRAME_BYTES = 1514
QUANTILES = (0.01, 0.1, 0.5, 0.9, 0.99)


def service_time_s(rate_mbps: float, frame_bytes: int = FRAME_BYTES) -> float:
    """One full frame's time on the wire at the link rate."""
    if not rate_mbps > 0:
        raise ValueError(f"link rate must be positive, got {rate_mbps}")
    return frame_bytes * 8 / (rate_mbps * 1e6)


def drop_runs(dropped: Iterable[bool]) -> list[int]:
    """Lengths of the maximal runs of consecutive drops in one port's arrival sequence."""
    runs, cur = [], 0
    for d in dropped:
        if d:
            cur += 1
        elif cur:
            runs.append(cur)
            cur = 0
    if cur:
        runs.append(cur)
    return runs


def run_histogram(runs: Sequence[int]) -> dict[int, int]:
    """Run length -> how many runs had it."""
    out: dict[int, int] = {}
    for r in runs:
        out[r] = out.get(r, 0) + 1
    return dict(sorted(out.items()))


def _q(values: Sequence[float] | np.ndarray, q: float) -> float | None:
    return round(float(np.quantile(values, q)), 4) if len(values) else None


def gap_stats(times_s: Sequence[float], service_s: float) -> dict[str, Any]:
    """Quantiles of the gaps between consecutive times over the service time; the share
    within 10 % of it (regular, at line rate) and below half of it (bursts)."""
    t = np.sort(np.asarray(times_s, dtype=float))
    g = np.diff(t) / service_s if t.size > 1 else np.empty(0)
    out: dict[str, Any] = {"gaps": int(g.size)}
    for q in QUANTILES:
        out[f"gap_p{round(q * 100)}"] = _q(g, q)
    out["gap_mean"] = round(float(g.mean()), 4) if g.size else None
    out["gap_within10"] = round(float(np.mean(np.abs(g - 1) <= 0.1)), 4) if g.size else None
    out["gap_below_half"] = round(float(np.mean(g < 0.5)), 4) if g.size else None
    return out


IDLE_GAP = 2.0   # service times: a longer gap between a port's packets is idle time


def _padded(times_s: Sequence[float], t_lo: float, t_hi: float) -> np.ndarray:
    """Sorted times with the window's edges added (where finite), so that a port silent at
    the start or the end of the window, or all through it, shows it as gaps."""
    t = np.sort(np.asarray(times_s, dtype=float))
    edges = [x for x in (t_lo, t_hi) if np.isfinite(x)]
    return np.sort(np.concatenate([t, edges])) if edges else t


def idle_share(times_s: Sequence[float], service_s: float, t_lo: float, t_hi: float) -> float:
    """Share of the window [t_lo, t_hi] covered by the port's inter-arrival gaps longer than
    IDLE_GAP service times: while a port delivers from a busy upstream queue its gaps are
    one service time; longer ones are time it had nothing to send."""
    if not t_hi > t_lo:
        raise ValueError(f"empty window [{t_lo}, {t_hi}]")
    g = np.diff(_padded(times_s, t_lo, t_hi))
    return round(float(g[g > IDLE_GAP * service_s].sum() / (t_hi - t_lo)), 4)


def bracket(t: Sequence[float] | np.ndarray, other: np.ndarray,
            side: Literal["left", "right"] = "right") -> tuple[np.ndarray, np.ndarray]:
    """For each time in ``t``, the times of the sorted ``other`` just before and just after
    it (-inf / inf where there is none); ``side`` as numpy's searchsorted says which of the
    two a time equal to one of ``other`` counts as ("right": the one before)."""
    q = np.asarray(t, dtype=float)
    if other.size == 0:
        return np.full(q.size, -np.inf), np.full(q.size, np.inf)
    i = np.searchsorted(other, q, side=side)
    before = np.where(i > 0, other[np.clip(i - 1, 0, other.size - 1)], -np.inf)
    after = np.where(i < other.size, other[np.clip(i, 0, other.size - 1)], np.inf)
    return before, after


def in_idle(t: Sequence[float], other_s: Sequence[float], service_s: float, t_lo: float,
            t_hi: float) -> np.ndarray:
    """For each time in ``t``: does it fall inside an idle gap (> IDLE_GAP service times)
    of the other port's arrivals ``other_s`` (window edges count as arrivals)?"""
    before, after = bracket(t, _padded(other_s, t_lo, t_hi))
    return (after - before) > IDLE_GAP * service_s


def resend_delays(rows: Sequence[dict[str, Any]]) -> list[float]:
    """For each dropped packet (rows in time order), the time until the same segment
    (sender, source port, sequence number, payload) next arrived and was accepted; s.
    A TCP retransmission takes at least a round trip through the full queue; much less is
    the switch sending the refused packet again (OVS's userspace datapath retries a send
    the qdisc refused)."""
    pending: dict[tuple[Any, Any, Any, Any], float] = {}
    out = []
    for r in rows:
        key = (r.get("sender"), r.get("sport"), r.get("seq"), r.get("payload"))
        if key[2] is None or not int(r.get("payload") or 0):
            continue
        if int(r["dropped"]):
            pending.setdefault(key, float(r["t"]))
        elif key in pending:
            out.append(float(r["t"]) - pending.pop(key))
    return out


def port_stats(rows: Sequence[dict[str, Any]], service_s: float, t_lo: float = -np.inf,
               t_hi: float = np.inf) -> list[dict[str, Any]]:
    """Per input port (``port``), over arrivals with t_lo <= ``t`` <= t_hi: arrivals,
    drops, drop rate (of the port's arrivals), drop share (of all drops), blackout run
    lengths (count, median, p90, max, drops in runs of 2 or more) and inter-arrival gaps
    over the service time.  Rows need ``t`` (s), ``port`` and ``dropped`` (0/1)."""
    sel = sorted((r for r in rows if t_lo <= float(r["t"]) <= t_hi), key=lambda r: float(r["t"]))
    total_drops = sum(int(r["dropped"]) for r in sel)
    ports = sorted({str(r["port"]) for r in sel})
    times = {p: [float(r["t"]) for r in sel if str(r["port"]) == p] for p in ports}
    lo = t_lo if np.isfinite(t_lo) else (float(sel[0]["t"]) if sel else 0.0)
    hi = t_hi if np.isfinite(t_hi) else (float(sel[-1]["t"]) if sel else 0.0)
    out = []
    for port in ports:
        mine = [r for r in sel if str(r["port"]) == port]
        dropped = [bool(int(r["dropped"])) for r in mine]
        runs = drop_runs(dropped)
        drops = sum(dropped)
        out.append({
            "port": port, "arrivals": len(mine), "drops": drops,
            "drop_rate": round(drops / len(mine), 5) if mine else None,
            "drop_share": round(drops / total_drops, 4) if total_drops else None,
            "blackouts": len(runs),
            # the longest blackout is kept as a maximum on purpose: a spread over one
            # repetition's blackouts, not over repetitions, and the paper's mechanism is the
            # long ones, so the tail itself is the finding (beside the median and p90; the
            # whole histogram is run_lengths); no interval of a mean belongs here
            "blackout_median": _q(runs, 0.5), "blackout_p90": _q(runs, 0.9),
            "blackout_max": max(runs, default=0),
            "drops_in_runs_ge2": sum(r for r in runs if r >= 2),
            "run_lengths": run_histogram(runs),
            **_resends(mine, service_s),
            **gap_stats(times[port], service_s),
            **_idle(port, mine, times, service_s, lo, hi)})
    return out


def _idle(port: str, mine: Sequence[dict[str, Any]], times: dict[str, list[float]],
          service_s: float, lo: float, hi: float) -> dict[str, Any]:
    """The port's idle share of the window, and the share of its accepted packets that
    arrived while every other port was idle (None without another port or acceptances)."""
    if not hi > lo:
        return {"idle_share": None, "accepted_in_others_idle": None}
    accepted = [float(r["t"]) for r in mine if not int(r["dropped"])]
    others = [p for p in times if p != port]
    share = None
    if others and accepted:
        inside = np.ones(len(accepted), dtype=bool)
        for p in others:
            inside &= in_idle(accepted, times[p], service_s, lo, hi)
        share = round(float(inside.mean()), 4)
    return {"idle_share": idle_share(times[port], service_s, lo, hi),
            "accepted_in_others_idle": share}


def _resends(rows: Sequence[dict[str, Any]], service_s: float) -> dict[str, Any]:
    d = resend_delays(rows)
    return {"resent": len(d), "resent_p50_ms": _q([x * 1e3 for x in d], 0.5),
            "resent_within_2_service": sum(x <= 2 * service_s for x in d)}


def flat(stats: Sequence[dict[str, Any]], **base: Any) -> list[dict[str, Any]]:
    """port_stats rows for a CSV: the run-length histogram as ``len:count`` pairs."""
    return [{**base, **{k: v for k, v in s.items() if k != "run_lengths"},
             "run_lengths": " ".join(f"{k}:{v}" for k, v in s["run_lengths"].items())}
            for s in stats]


def parse_run_lengths(text: str) -> dict[int, int]:
    """``"1:40 2:3"`` (flat's column) -> {1: 40, 2: 3}."""
    out = {}
    for item in str(text or "").split():
        k, v = item.split(":")
        out[int(k)] = int(v)
    return out
