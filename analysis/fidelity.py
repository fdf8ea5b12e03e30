"""How far to trust a run: emulated rates against the flow model on the same paths.

For each flow the model gives the max-min fair rate on the path(s) the switches really used
(traced), with payload-goodput capacities, so a perfect emulator reaches ratio 1.0.  MPTCP
subflows count as independent flows because upstream Linux MPTCP has no coupled congestion
control.  LP bounds say what any routing over the allowed paths (and over all paths) could
achieve.  A run is ``suspect`` when the CPU was saturated or the emulated aggregate is far
from the model: thresholds below, reasons spelled out.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from model import jain_index
from store import cell

SUSPECT_CPU_SHARE = 0.25   # more than a quarter of the samples above 90 % CPU
SUSPECT_RATIO = 0.85       # emulated aggregate below 85 % of the model's
SUSPECT_LOSS = 0.001       # more than 0.1 % of packets lost outside the tail-drop queues
# One limit for every dataplane, no known floor (issue #56 part 4, 2026-12-02, decided on
# data: docs/notebook/2026-12-02-ovs-loss-floor.md).  ovs's usual loss in a k=4 permutation
# (TCP 0.40-0.47 %, MPTCP 1.77-1.85 %, 3 seeds; 0 tail drops) came with 0.68x (TCP) and
# 0.38x (MPTCP) bpf's throughput on the same seeds and 8x its retransmissions; for MPTCP
# no other check saw it (the model's ratio is a result there; CPU 28-50 %, dequeue gaps
# >= 99.7 %).  Runs whose load ovs's switch carries (Outcast: 0-0.015 % in 32 phases) are
# not flagged by it.
SUSPECT_GAPS = 0.95        # fewer than 95 % of busy-link dequeue gaps (after full-size
                           # frames) within 10 % of the frame's time on the wire ...
MIN_GAP_SAMPLES = 100      # ... judged on at least this many gaps.  Why (written before the
# Orca rerun that it judges, 2026-11-27): a link whose true share is 0.98 shows under 95 %
# by chance with probability 1.5 % over 100 gaps (6 or more late ones), 7.8 % over 50 and
# 18 % over 10 (two late ones); a sender that seldom fills its link (Orca's CPU-capped one:
# 0 to 14 busy gaps a transfer) was flagged by a handful of gaps.  Fewer gaps say nothing
# either way: fidelity.json keeps the share and its count.
#: niced work or steal beside a run from this share of the machine's CPU is named beside a
#: failed gap check (it can delay the links' timers; the CPU figures count it as free)
BESIDE_NOTED = 0.01
CALIBRATION_FILE = "calibration.json"
# What limits a long-lived TCP flow (tcp_info sampled during the window, see limit_shares):
# a flow well below its own link's rate should be limited by its congestion window (the
# network's congestion), not by the receiver or its own sender.  Written before the data.
LIMIT_LINK_SHARE = 0.8     # a flow below 80 % of its access link is judged ...
LIMIT_CWND_SHARE = 0.5     # ... and held back if cwnd-limited in fewer than half the samples
LIMIT_MIN_SAMPLES = 4      # fewer samples say nothing
LIMIT_MIN_FRACTION = 0.25  # ... and only when the held-back flows are a quarter of all
                           # sampled TCP flows: "mostly", not two flows of 54 (added after
                           # the plts reference run flagged 2 of 54 sprayed flows)


def gap_share(gaps: dict[str, Any] | None) -> float | None:
    """Share of busy-link dequeue gaps after full-size frames within 10 % of the ideal."""
    return ((gaps or {}).get("full_size") or {}).get("within_10pct")


def gap_samples(gaps: dict[str, Any] | None) -> int | None:
    """How many busy-link gaps after full-size frames gap_share() is of (None: not recorded,
    as in runs from before the count)."""
    n = ((gaps or {}).get("full_size") or {}).get("samples")
    return None if n is None else int(n)


def limit_shares(samples: list[dict[str, Any]], t0: float, t1: float) -> dict[str, Any]:
    """What limited one TCP socket over [t0, t1] (unix s), from its tcp_info samples (rows
    of tcp_samples.csv: time, snd_cwnd, in_flight, busy_time, rwnd_limited, sndbuf_limited,
    wmem_alloc):

    - ``cwnd_limited``: share of samples with at least cwnd - 1 packets in flight (TCP sends
      as soon as an ACK frees room, so a cwnd-limited flow is caught one short at most);
    - ``rwnd_limited``, ``sndbuf_limited``: share of the time between the first and last
      sample that the kernel's own chrono counted as limited by the receive window or by
      the send buffer (tcp_info's microsecond counters, differenced);
    - medians of the congestion window, the packets in flight and ``wmem_alloc`` (bytes the
      socket has handed down and not yet seen freed: what TCP Small Queues limits);
    - ``acked_mbps``: bytes acked between the first and last sample over their time (when
      the rows carry ``bytes_acked``): the socket's goodput in [t0, t1] in absolute time,
      whenever its connection began (iperf3's intervals count from its own test start); a
      socket first seen more than two sampling intervals after t0 is counted from t0 with
      nothing acked then.
    """
    inside = sorted((r for r in samples if t0 <= float(r["time"]) <= t1),
                    key=lambda r: float(r["time"]))
    out: dict[str, Any] = {"samples": len(inside), "cwnd_limited": None, "rwnd_limited": None,
                           "sndbuf_limited": None, "cwnd_median": None,
                           "in_flight_median": None, "wmem_median": None, "acked_mbps": None}
    if not inside:
        return out
    cwnd = [int(r["snd_cwnd"]) for r in inside]
    flight = [int(r["in_flight"]) for r in inside]
    out["cwnd_limited"] = round(sum(f >= c - 1 for f, c in zip(flight, cwnd)) / len(inside), 3)
    out["cwnd_median"] = median(cwnd)
    out["in_flight_median"] = median(flight)
    wmem = [int(r["wmem_alloc"]) for r in inside if r.get("wmem_alloc") not in (None, "")]
    out["wmem_median"] = median(wmem) if wmem else None
    span_us = (float(inside[-1]["time"]) - float(inside[0]["time"])) * 1e6
    if len(inside) > 1 and span_us > 0:
        for key in ("rwnd_limited", "sndbuf_limited"):
            d = int(inside[-1][key]) - int(inside[0][key])
            out[key] = round(min(1.0, max(0.0, d / span_us)), 3)
        if inside[0].get("bytes_acked") not in (None, ""):
            out["acked_mbps"] = counter_mbps(samples, "bytes_acked", t0, t1)
    return out


def counter_mbps(samples: list[dict[str, Any]], key: str, t0: float,
                 t1: float) -> float | None:
    """How fast one socket's byte counter ``key`` grew over [t0, t1] (unix s), Mb/s: from
    its first to its last sample inside, over their time.  A socket first seen more than two
    sampling intervals after t0 did not exist yet when the window opened (its connection
    came late): it had counted nothing then, and the window counts from t0.  None with
    fewer than two samples inside."""
    inside = sorted((r for r in samples if t0 <= float(r["time"]) <= t1),
                    key=lambda r: float(r["time"]))
    if len(inside) < 2 or float(inside[-1]["time"]) <= float(inside[0]["time"]):
        return None
    grew = int(inside[-1][key]) - int(inside[0][key])
    begin = float(inside[0]["time"])
    times = sorted(float(r["time"]) for r in samples)
    gap = median([b - a for a, b in zip(times, times[1:])])
    if times[0] > t0 + 2 * gap:
        grew, begin = int(inside[-1][key]), t0
    return round(8 * grew / (float(inside[-1]["time"]) - begin) / 1e6, 4)


def data_level_stands(samples: list[dict[str, Any]], t0: float,
                      t1: float) -> tuple[float, float]:
    """Seconds inside [t0, t1] (unix s) in which one MPTCP connection's data-level ack did
    not move, from its sender's mptcp_info samples (``bytes_sent``, ``bytes_acked``): with
    data it had sent still unacked (``held``: a hole on one subflow holds the whole
    connection's ack), and with nothing sent unacked (``idle``: a stopped sender, or a
    receiver whose window its application no longer opens).  A step between two samples
    counts whole; time without samples counts as neither."""
    inside = sorted((r for r in samples if t0 <= float(r["time"]) <= t1),
                    key=lambda r: float(r["time"]))
    held = idle = 0.0
    for a, b in zip(inside, inside[1:]):
        if int(b["bytes_acked"]) != int(a["bytes_acked"]):
            continue
        step = float(b["time"]) - float(a["time"])
        if all(int(r["bytes_sent"]) > int(r["bytes_acked"]) for r in (a, b)):
            held += step
        else:
            idle += step
    return round(held, 3), round(idle, 3)


def limits_note(flows: list[dict[str, Any]]) -> str | None:
    """A suspect reason when long-lived TCP flows were mostly not limited by congestion.

    ``flows``: per TCP flow, limit_shares() plus ``link_share`` (its goodput over its access
    link's rate).  A flow at its own link's rate may be limited by its sender (as a real host
    is by its NIC); one well below it (LIMIT_LINK_SHARE) should be limited by its congestion
    window.  When more than half of those flows (with LIMIT_MIN_SAMPLES samples) were
    cwnd-limited in fewer than LIMIT_CWND_SHARE of their samples, and they are at least
    LIMIT_MIN_FRACTION of all sampled TCP flows, something that a real network's flows do
    not meet held them back (the receive window, the send buffer, or
    neither: the sender's own stack, e.g. TCP Small Queues counting packets in the fabric).
    """
    sampled = [f for f in flows if (f.get("samples") or 0) >= LIMIT_MIN_SAMPLES and
               f.get("cwnd_limited") is not None and f.get("link_share") is not None]
    judged = [f for f in sampled if f["link_share"] < LIMIT_LINK_SHARE]
    held = [f for f in judged if f["cwnd_limited"] < LIMIT_CWND_SHARE]
    if not judged or 2 * len(held) <= len(judged) or \
            len(held) < LIMIT_MIN_FRACTION * len(sampled):
        return None
    rwnd = sum((f.get("rwnd_limited") or 0) >= 0.5 for f in held)
    sndbuf = sum((f.get("sndbuf_limited") or 0) >= 0.5 for f in held)
    cause = ("the receive window" if 2 * rwnd > len(held) else
             "the send buffer" if 2 * sndbuf > len(held) else
             "neither window but the sender's own stack (TCP Small Queues or pacing)")
    flight = median(f["in_flight_median"] for f in held)
    cwnd = median(f["cwnd_median"] for f in held)
    return (f"{len(held)} of {len(judged)} TCP flows below {LIMIT_LINK_SHARE:.0%} of their "
            f"link were cwnd-limited in under {LIMIT_CWND_SHARE:.0%} of their samples "
            f"(median {flight:g} packets in flight, cwnd {cwnd:g}): held back by {cause}")


def cc_fault_note(cc_bpf: Mapping[str, Any] | None) -> str | None:
    """What the kernel's ssthresh fault did to a run's BPF congestion control (its
    ``repaired`` counter, read at unregistering: docs/transports.md, "The guard"), or None
    when it did not hit.  A note, not a reason to doubt the run: each garbled window is
    repaired on the next ACK."""
    n = ((cc_bpf or {}).get("stats") or {}).get("repaired")
    if not cc_bpf or not n:
        return None
    return (f"the kernel's ssthresh fault hit {cc_bpf.get('name')} {n} time(s) in this "
            "network; each garbled window was repaired on its next ACK (docs/transports.md)")


#: how the reasons that only this machine's timing gives begin (measurement_reasons): the
#: CPU saturated, the busy links' dequeue gaps late, bwm-ng falling behind.  A stalled or
#: restarted flow, a lost subflow, a fault or a gap to the model is the run's own and is
#: never put down to the host; nor is the software switch's own loss, which is Open
#: vSwitch's usual floor on every OVS run (docs/faults.md), not a late host.
HOST_TIMING = ("CPU above 90 %", "only ", "bwm-ng (the cross-check of iperf3) sampled ")


def host_timing(reasons: str) -> bool:
    """Whether every reason of one flag ('<where>: r1; r2') is the host's timing alone
    (HOST_TIMING; 'only' as the dequeue gaps' 'only X% of ... dequeue gaps')."""
    _, _, text = reasons.partition(": ")
    parts = [r.strip() for r in text.split("; ") if r.strip()]
    return bool(parts) and all(
        r.startswith(HOST_TIMING) and (not r.startswith("only ") or "dequeue gaps" in r)
        for r in parts)


def measurement_reasons(meas: dict[str, Any]) -> list[str]:
    """The reasons to doubt one measurement that every experiment judges alike, from what
    its runner recorded (harness/traffic.run_iperf's facts, or the same keys from another
    runner): CPU saturation, losses outside the tail-drop queues, links not sending at their
    rate, partial measurements, TCP flows not limited by congestion, stalled flows, MPTCP
    connections that lost subflows."""
    reasons = []
    sat = meas.get("cpu_saturated_share")
    if sat is not None and sat > SUSPECT_CPU_SHARE:
        reasons.append(f"CPU above 90 % in {sat:.0%} of samples")
    loss = meas.get("emulator_loss_share")
    if loss is not None and loss > SUSPECT_LOSS:
        backlog = meas.get("backlog_drops") or 0
        reasons.append(f"the software switch lost {loss:.2%} of packets outside the "
                       "tail-drop queues" + (f" ({backlog} of them in the kernel's input "
                                             "backlogs between hops)" if backlog else ""))
    gaps = gap_share(meas.get("dequeue_gaps"))
    n = gap_samples(meas.get("dequeue_gaps"))
    if gaps is not None and gaps < SUSPECT_GAPS and (n is None or n >= MIN_GAP_SAMPLES):
        own = " (this run's own idle loops among it)" if meas.get("idle_loops") else ""
        beside = [f"{what} {meas[key]:.1%}{note}" for key, what, note in
                  (("cpu_nice_share", "niced work", own), ("cpu_steal_share", "steal", ""))
                  if (meas.get(key) or 0) >= BESIDE_NOTED]
        of = "" if n is None else f"{n:,} "
        reasons.append(f"only {gaps:.1%} of {of}busy-link dequeue gaps within 10 % of the "
                       "packet time" + (f" (beside the run: {', '.join(beside)} of the "
                                        "machine's CPU)" if beside else ""))
    if meas.get("measurement_note"):
        reasons.append(meas["measurement_note"])
    reasons += [meas[k] for k in ("apart_note", "late_note", "subflow_note") if meas.get(k)]
    limits = meas.get("tcp_limits") or {}
    reasons += [limits[k] for k in ("note", "stall_note") if limits.get(k)]
    return reasons


#: the steal suspect_reasons names beside a failed gap check ('steal 5.9%')
_STEAL_NAMED = re.compile(r"\bsteal (\d+(?:\.\d+)?)%")


def steal_named(reason: str) -> float | None:
    """The hypervisor steal (percent of the machine's CPU) that a reason of
    suspect_reasons names beside the run, None when it names none."""
    m = _STEAL_NAMED.search(reason)
    return float(m.group(1)) if m else None


def model_is_exact(transport: str, sprayed: bool = False) -> bool:
    """Whether the max-min flow model is exact for this traffic, so that an emulated
    aggregate far below it doubts the emulator rather than measures the transport: single-
    path long TCP flows, each on one traced path (the calibration: 0.98-1.03 of the model,
    docs/fidelity.md).  Not MPTCP (its coupling, its DSS options and its ACKs on the reverse
    links are what the papers study: falling short of max-min is a result there) and not
    per-packet spraying (TCP backs off on reordered segments; the model has no reordering).
    Elsewhere the comparison is reported as a result, never as a reason to doubt the run."""
    return transport == "tcp" and not sprayed


def report(emulated: dict[str, float], model: dict[str, float], bw: float,
           meas: Mapping[str, Any], calibration: dict[str, Any] | None = None,
           model_bound: bool = True) -> dict[str, Any]:
    """Per-flow and aggregate agreement of emulated vs model rates (Mb/s, keyed by source),
    with the reasons to doubt the measurement ``meas`` (run_iperf's facts, or the same keys:
    measurement_reasons) and the facts a reader weighs them by: the CPU, the losses, the
    dequeue gaps, what limited the TCP flows, the niced work and steal beside the run.

    ``model_bound`` (from model_is_exact) False: the model's rates are not what this
    traffic's transport can reach, so an emulated aggregate below SUSPECT_RATIO of them is
    a result, not a doubt about the emulator; the ratio is still reported."""
    srcs = [s for s in model if s in emulated and emulated[s] == emulated[s]]
    emu = np.array([emulated[s] for s in srcs])
    mod = np.array([model[s] for s in srcs])
    ratio = emu / mod
    agg = float(emu.sum() / mod.sum()) if mod.sum() > 0 else float("nan")
    dequeue_gaps = meas.get("dequeue_gaps")
    gaps = gap_share(dequeue_gaps)
    reasons = measurement_reasons(dict(meas))
    if agg < SUSPECT_RATIO and model_bound:
        reasons.append(f"emulated aggregate is {agg:.2f} of the model's")
    return {
        "per_flow": [{"src": s, "emulated_mbps": round(float(e), 4),
                      "model_mbps": round(float(m), 4), "ratio": round(float(r), 4)}
                     for s, e, m, r in zip(srcs, emu, mod, ratio)],
        "aggregate_ratio": round(agg, 4),
        "model_bound": model_bound,
        "median_abs_error": round(float(median(abs(ratio - 1))), 4) if len(srcs) else None,
        "jain_emulated": round(float(jain_index(emu / bw)), 4),
        "jain_model": round(float(jain_index(mod / bw)), 4),
        "mean_norm_emulated": round(float(emu.mean() / bw), 4),
        "mean_norm_model": round(float(mod.mean() / bw), 4),
        "cpu_saturated_share": meas.get("cpu_saturated_share"),
        "cpu_nice_share": meas.get("cpu_nice_share"),
        "cpu_steal_share": meas.get("cpu_steal_share"),
        "emulator_loss_share": meas.get("emulator_loss_share"),
        "dequeue_gaps": dequeue_gaps,
        "gaps_within_10pct": gaps,
        "calibration": calibration,
        "tcp_limits": meas.get("tcp_limits"),
        "model_note": "max-min fair rates on the traced paths; MPTCP subflows independent "
                      "(upstream Linux MPTCP has no coupled congestion control)",
        "suspect": bool(reasons), "reasons": reasons,
    }


def calibration_key(topo_spec: str, bw: float, dataplane: str) -> str:
    """Key of one calibration entry: topology, link rate and dataplane."""
    return f"{topo_spec}|{bw:g}|{dataplane}"


def calibration_file(run_path: Path) -> Path | None:
    """The calibration a run folder sees: the nearest ``calibration.json`` in a folder above
    it.  A run's results root holds it (``dcrepro calibrate --out ROOT``), and a sweep's
    runs sit below the root they were started in (``ROOT/sweeps/NAME/work/TMP/...``)."""
    for folder in run_path.resolve().parents:
        if (folder / CALIBRATION_FILE).is_file():
            return folder / CALIBRATION_FILE
    return None


def load_calibration(run_path: Path, topo_spec: str, bw: float,
                     dataplane: str) -> dict[str, Any] | None:
    """The stored single-flow calibration for this topology, link rate and dataplane, as
    the run folder ``run_path`` sees it (calibration_file); None when there is none."""
    path = calibration_file(run_path)
    if path is None:
        return None
    found = json.loads(path.read_text()).get(calibration_key(topo_spec, bw, dataplane))
    return None if found is None else {**found, "file": str(path)}


def headline(fid: dict[str, Any]) -> str:
    """One line for the terminal."""
    flag = "SUSPECT: " + "; ".join(fid["reasons"]) if fid["suspect"] else "ok"
    cal = fid.get("calibration")
    cal_text = (f", single flow here reaches {cal['utilisation']:.2f} of the link"
                if cal else ", not calibrated (dcrepro calibrate)")
    gaps = fid.get("gaps_within_10pct")
    gap_text = f", busy-link dequeue gaps within 10 %: {gaps:.1%}" if gaps is not None else ""
    return (f"emulated/model aggregate {fid['aggregate_ratio']:.2f}{gap_text}, "
            f"median per-flow error "
            f"{fid['median_abs_error']:.2f}, Jain emulated {fid['jain_emulated']:.2f} vs model "
            f"{fid['jain_model']:.2f}{cal_text} -> {flag}")


def validity_caption(rows: list[dict[str, Any]]) -> str:
    """Caption line from per-flow rows: CPU saturation and losses outside the tail-drop
    queues, with SUSPECT past the limits above ("" when the rows hold neither)."""
    def mean(col: str) -> float | None:
        got = [x for r in rows if (x := cell(r.get(col, ""))) == x]
        return float(np.mean(got)) if got else None
    sat, loss = mean("cpu_saturated_share"), mean("emulator_loss_share")
    parts = []
    if sat is not None:
        parts.append(f"CPU above 90 % in {sat:.0%} of samples")
    if loss is not None:
        parts.append(f"the software switch lost {loss:.2%} of packets outside the "
                     "tail-drop queues")
    if not parts:
        return ""
    text = "\n" + "; ".join(parts)
    if (sat or 0) > SUSPECT_CPU_SHARE or (loss or 0) > SUSPECT_LOSS:
        text += " -> SUSPECT"
    return text
