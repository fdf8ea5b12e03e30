"""How each sender's TCP recovered from losses: RTOs against fast retransmits.

tcp_info has no per-socket count of either (``retransmits`` is the current run of RTOs,
``total_retrans`` every retransmitted segment), but every emulated host has its own network
namespace, and the kernel's TCP MIB counters (/proc/<pid>/net/netstat, /proc/<pid>/net/snmp)
are per namespace.  A sender that runs one data connection (plus iperf3's control
connection, which sends a few hundred bytes) therefore has its own counts: read before and
after the traffic, the difference is that flow's.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

#: (MIB line prefix, counter): what each means, from the kernel's tcp_input/tcp_timer code
COUNTERS = (
    ("Tcp", "RetransSegs"),            # every retransmitted segment
    ("TcpExt", "TCPTimeouts"),         # retransmission timer expiries (RTOs), SYNs included
    ("TcpExt", "TCPSynRetrans"),       # SYN retransmissions (connection set-up RTOs)
    ("TcpExt", "TCPFastRetrans"),      # retransmissions by fast retransmit / recovery
    ("TcpExt", "TCPSlowStartRetrans"), # retransmissions in loss state after an RTO
    ("TcpExt", "TCPLossProbes"),       # tail loss probes sent
    ("TcpExt", "TCPSpuriousRTOs"),     # RTOs found spurious (F-RTO)
    ("TcpExt", "TCPRenoRecovery"),     # fast recoveries entered without SACK
    ("TcpExt", "TCPSackRecovery"),     # fast recoveries entered with SACK
)


#: what every traffic phase records (harness/traffic.run_iperf), summed over the hosts:
#: segments out and in, TCP's retransmissions and how, and MPTCP's own resending: the
#: connection-level retransmissions of data a subflow had sent (reinjections) and the data
#: receivers got twice at the connection level; together they say what the wire carried
#: besides goodput
STACK = (
    ("Tcp", "OutSegs"),                # segments sent, retransmissions excluded
    ("Tcp", "InSegs"),                 # segments received
    ("Tcp", "RetransSegs"),
    ("TcpExt", "TCPTimeouts"),
    ("TcpExt", "TCPFastRetrans"),
    ("TcpExt", "TCPLossProbes"),
    ("TcpExt", "TCPPureAcks"),         # segments received that only acknowledged
    ("TcpExt", "TCPDelivered"),        # data segments the senders saw acknowledged
    # segments a receiver's stack dropped after the wire had carried them
    ("TcpExt", "TCPRcvQDrop"),         # receive queue over its buffer
    ("TcpExt", "TCPOFODrop"),          # out-of-order queue over its buffer
    ("TcpExt", "TCPZeroWindowDrop"),   # arrived while the window was zero
    ("TcpExt", "TCPBacklogDrop"),      # socket backlog full
    ("TcpExt", "OfoPruned"),           # out-of-order data pruned under memory pressure
    ("MPTcpExt", "MPTCPRetrans"),      # data MPTCP sent again on a subflow (reinjected)
    ("MPTcpExt", "DuplicateData"),     # received data MPTCP already had (dropped)
    ("MPTcpExt", "OFOQueue"),          # data queued out of order at the connection level
    ("MPTcpExt", "MPJoinSynTx"),       # subflows a path manager tried to open
    ("MPTcpExt", "MPJoinAckRx"),       # subflows that joined (server side)
)


RCV_DROPS = ("TCPRcvQDrop", "TCPOFODrop", "TCPZeroWindowDrop", "TCPBacklogDrop", "OfoPruned")


def parse_mib(text: str) -> dict[str, int]:
    """/proc/net/netstat or /proc/net/snmp text -> {"Prefix.Name": value}: each MIB is a
    header line of names and a line of values with the same prefix."""
    out: dict[str, int] = {}
    lines = text.splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        pre, _, ns = names.partition(":")
        pre2, _, vs = values.partition(":")
        if pre != pre2:
            raise ValueError(f"MIB lines out of step: {pre!r} then {pre2!r}")
        for n, v in zip(ns.split(), vs.split()):
            try:
                out[f"{pre}.{n}"] = int(v)
            except ValueError:
                continue
    return out


def read_counters(pid: int, counters: tuple[tuple[str, str], ...] = COUNTERS
                  ) -> dict[str, int]:
    """``counters`` (default: the TCP recovery ones) of the network namespace of process
    ``pid``, by name (0 for one this kernel does not have)."""
    mib: dict[str, int] = {}
    for name in ("snmp", "netstat"):
        mib.update(parse_mib(Path(f"/proc/{pid}/net/{name}").read_text()))
    return {name: mib.get(f"{pre}.{name}", 0) for pre, name in counters}


def stack_totals(pids: list[int]) -> dict[str, int]:
    """The STACK counters summed over the namespaces of ``pids`` (one per host)."""
    out = dict.fromkeys((name for _, name in STACK), 0)
    for pid in pids:
        for k, v in read_counters(pid, STACK).items():
            out[k] += v
    return out


def stack_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, Any]:
    """What the hosts' stacks did between two stack_totals, with the shares a reader
    wants: TCP retransmissions per segment sent, MPTCP reinjections per segment sent,
    duplicate connection-level data, data MPTCP queued out of order and segments the
    receiving stacks dropped, per segment received (None without segments)."""
    d: dict[str, Any] = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    out_segs, in_segs = d.get("OutSegs", 0), d.get("InSegs", 0)
    d["retrans_share"] = round(d["RetransSegs"] / out_segs, 5) if out_segs else None
    d["mptcp_retrans_share"] = round(d["MPTCPRetrans"] / out_segs, 5) if out_segs else None
    d["mptcp_dup_share"] = round(d["DuplicateData"] / in_segs, 5) if in_segs else None
    d["mptcp_ofo_share"] = round(d["OFOQueue"] / in_segs, 5) if in_segs else None
    dropped = sum(d[k] for k in RCV_DROPS)
    d["rcv_drop_share"] = round(dropped / in_segs, 5) if in_segs else None
    return d


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What happened between two reads, with ``rto_data``: RTOs outside connection set-up."""
    out = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    out["rto_data"] = out.get("TCPTimeouts", 0) - out.get("TCPSynRetrans", 0)
    return out
