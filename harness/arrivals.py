"""Every arrival at one bottleneck queue while traffic runs (emulator/qarrive.py), turned
into per-point files: arrivals.csv (one row per packet offered to the queue), releases.csv
(one row per packet the queue's root qdisc handed out, same columns) and
arrivals_summary.csv (per input port: drops, blackout runs, inter-arrival regularity;
analysis/arrivals.py), and the facts config.json records.

Each packet is attributed to its input port by its source address -> sender -> the port
that sender's traffic enters by: this works on both dataplanes (on ``ovs`` the userspace
datapath sends from a socket, so the kernel's skb_iif does not name the switch port; on
``bpf`` skb_iif is kept in the CSV as a cross-check).
"""
from __future__ import annotations

import csv
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from analysis.arrivals import flat, port_stats, service_time_s
from emulator.emulation import Emulation
from emulator.proc import RunError
from emulator.registry import BPFFS_DIR
from store import write_csv

LOG = logging.getLogger("dcrepro")

COLUMNS = ("t", "port", "sender", "sport", "dport", "seq", "payload", "len", "segs",
           "dropped", "qlen", "iif")
#: what config.json says was traced
WHAT = ("every packet offered to the bottleneck's tail-drop queue: accepted ones at the "
        "qdisc:qdisc_enqueue tracepoint (root qdisc took it), dropped ones at skb:kfree_skb "
        "with a qdisc drop reason; attributed to input ports by source address; and every "
        "packet the queue released, at qdisc:qdisc_dequeue (releases.csv)")


@contextmanager
def trace_arrivals(emu: Emulation, intf: str) -> Iterator[Any]:
    """The arrival tracer on switch interface ``intf`` while the body runs; yields it, or
    a string saying why it is not running (no BPF here, or the kernel refused it: a
    diagnostic must not void the measurement)."""
    from emulator.bpfobj import bpf_unavailable
    why = bpf_unavailable()
    if why:
        yield why
        return
    from emulator.qarrive import ArrivalTracer
    pin = BPFFS_DIR / f"{emu.run_id}+qarrive"
    assert emu.registry is not None
    emu.registry.add("bpffs", [str(pin)])
    tracer = ArrivalTracer([intf], pin)
    try:
        tracer.__enter__()
    except RunError as exc:
        LOG.warning("arrival tracer not loaded: %s", str(exc).splitlines()[0][:300])
        yield str(exc).splitlines()[0][:300]
        return
    try:      # entered above: a ``with`` here would load and attach it a second time
        yield tracer
    finally:
        tracer.close()


def arrival_rows(records: list[Any], mono_to_wall: float, t0: float,
                 sender_of: dict[str, str], port_of: dict[str, str]) -> list[dict[str, Any]]:
    """Tracer records as CSV rows: time since ``t0`` (wall clock, s), the input port and
    sender by source address (``other`` for an address no sender has)."""
    rows = []
    for r in records:
        sender = sender_of.get(r.saddr, "")
        rows.append({"t": round(r.ts_ns / 1e9 + mono_to_wall - t0, 6),
                     "port": port_of.get(sender, "other"), "sender": sender or r.saddr,
                     "sport": r.sport, "dport": r.dport, "seq": r.seq, "payload": r.payload,
                     "len": r.len, "segs": r.segs, "dropped": r.dropped, "qlen": r.qlen,
                     "iif": r.iif})
    rows.sort(key=lambda x: x["t"])
    return rows


def sender_counts(rows: list[dict[str, Any]], t_lo: float, t_hi: float
                  ) -> dict[str, dict[str, int]]:
    """Per sender, over the window: arrivals at the queue and drops."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        if t_lo <= r["t"] <= t_hi:
            c = out.setdefault(r["sender"], {"queue_arrivals": 0, "queue_drops": 0})
            c["queue_arrivals"] += 1
            c["queue_drops"] += int(r["dropped"])
    return out


def write_arrivals(out: Path, tracer: Any, intf: str, rate_mbps: float, t0: float,
                   window: tuple[float, float], sender_of: dict[str, str],
                   port_of: dict[str, str]) -> dict[str, Any]:
    """arrivals.csv and arrivals_summary.csv in ``out``; returns the facts for config.json
    (what was traced, the check against the qdisc's counters, the per-port summary) and,
    under ``senders``, per-sender counts for the flow table."""
    if isinstance(tracer, str):
        return {"skipped": tracer}
    rows = arrival_rows(tracer.records(), tracer.mono_to_wall, t0, sender_of, port_of)
    released = arrival_rows(tracer.releases(), tracer.mono_to_wall, t0, sender_of, port_of)
    for name, table in (("arrivals.csv", rows), ("releases.csv", released)):
        with open(out / name, "w", newline="", encoding="ascii") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS)   # the header even when nothing came
            w.writeheader()
            w.writerows(table)
    service = service_time_s(rate_mbps)
    stats = flat(port_stats(rows, service, *window))
    write_csv(out / "arrivals_summary.csv", stats)
    check = tracer.checks.get(intf, {})
    if check and not check["drops_agree"]:
        LOG.warning("arrival tracer on %s: %s drops traced, the pfifo counted %s",
                    intf, check["traced_drops"], check["qdisc_drops"])
    return {"traced": intf, "what": WHAT, "records": len(rows), "releases": len(released),
            "service_time_s": service,
            "window_s": list(window), "check": check, "counts": tracer.counts.get(intf, {}),
            "ports": stats, "senders": sender_counts(rows, *window)}
