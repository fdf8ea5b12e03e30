"""The environment report of this machine: what sysinfo.py detects plus what the emulator's
own modules say they can run here (the BPF dataplane, AQMs, congestion controls).  It sits
above them so sysinfo.py, which they read, imports none of them."""
from __future__ import annotations

import os
from typing import Any

from .aqm import unavailable
from .bpfobj import bpf_unavailable
from .cc import runnable
from .sysinfo import (
    kernel_feature,
    ns3_version,
    ovs_datapath,
    read_sysctl,
    versions,
    vswitchd_answers,
)


def bpf_status() -> str:
    """'available' or why the tc-BPF dataplane cannot run here."""
    return bpf_unavailable() or "available"


def aqm_status() -> dict[str, str]:
    """Per --aqm mode: 'available' or why this machine cannot run it (emulator/aqm.py)."""
    return {mode: why or "available" for mode, why in unavailable().items()}


def congestion_controls() -> dict[str, str]:
    """Every congestion control a run can use here (--cc): name -> 'built-in', or 'bpf'
    for dcrepro's own, registered for a run (emulator/cc.py)."""
    return runnable()


def environment() -> dict[str, Any]:
    """The environment report: datapath, netem, AQMs, MPTCP, congestion control, versions."""
    ovs_up = vswitchd_answers()
    return {
        "ovs_datapath": ovs_datapath(),
        "ovs_running": ovs_up,
        "bpf_dataplane": bpf_status(),
        "netem": kernel_feature("CONFIG_NET_SCH_NETEM", "sch_netem"),
        "htb": kernel_feature("CONFIG_NET_SCH_HTB", "sch_htb"),
        # --aqm at the switch ports (the BPF switch; this kernel has no RED qdisc)
        "aqm": aqm_status(),
        "mptcp_enabled": read_sysctl("net.mptcp.enabled") == "1",
        "tcp_congestion_control": read_sysctl("net.ipv4.tcp_congestion_control"),
        "tcp_available_cc": read_sysctl("net.ipv4.tcp_available_congestion_control").split(),
        "congestion_controls": congestion_controls(),
        "cpus": os.cpu_count(),
        "versions": versions(),
        "ns3": ns3_version(),
    }
