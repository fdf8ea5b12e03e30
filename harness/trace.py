"""Traced paths: ask the datapath which way each recorded (sub)flow went (never recompute it).

The dataplane answers (dataplanes/ovs/dataplane.py: ofproto/trace through the real OpenFlow tables;
dataplanes/bpf/switch.py: the switch program's own record of every flow it forwarded).
"""
from __future__ import annotations

from typing import Any

from emulator.emulation import Emulation


def trace_flow(emu: Emulation, src: str, dst: str, five_tuple: dict[str, Any],
               proto: str = "tcp") -> list[str]:
    """Switch names a packet of ``five_tuple`` from host ``src`` to ``dst`` crosses."""
    return emu.trace(src, dst, five_tuple, proto)


def trace_flows(emu: Emulation, flows: list[Any]) -> list[dict[str, Any]]:
    """Trace every recorded (sub)flow 5-tuple of ``flows`` (traffic.Flow objects)."""
    out = []
    for f in flows:
        for sub in f.subflows:
            out.append({"src": f.src, "dst": f.dst,
                        "five_tuple": {k: sub[k] for k in
                                       ("src_ip", "src_port", "dst_ip", "dst_port")},
                        "path": emu.trace(f.src, f.dst, sub)})
    return out
