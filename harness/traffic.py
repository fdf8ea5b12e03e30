"""Traffic and measurement inside an Emulation: iperf3 (TCP or MPTCP), bwm-ng, CPU, subflows.

Every wait polls a condition with a deadline; nothing sleeps to "let things settle".
"""
from __future__ import annotations

import csv
import json
import logging
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from analysis.fidelity import counter_mbps, data_level_stands, limit_shares, limits_note
from emulator.dataplane import Aqm
from emulator.emulation import Emulation
from emulator.proc import RunError, check, how_ended, stop_all, stop_process
from emulator.sockdiag import SockInfo

from .bwmng import (
    coverage_note,
    coverage_problems,
    host_port,
    series_by_interface,
    series_mean,
)
from .sampling import (
    Sampler,
    cpu_sampler,
    cpu_shares,
    cpu_times,
    mptcp_rows,
    stop_mptcp_sampler,
    stop_tcp_sampler,
    tcp_sampler,
)
from .tcpevents import stack_delta, stack_totals

BASE_PORT = 5201
LOG = logging.getLogger("dcrepro")


@dataclass
class Flow:
    """One iperf3 transfer from ``src`` to ``dst`` (host names) and what was measured of it."""

    src: str
    dst: str
    port: int = BASE_PORT
    start: float = 0.0  # wall-clock time the client was started
    iperf_mbps: float = float("nan")
    bwm_mbps: float = float("nan")
    retransmits: int | None = None  # segments the sender retransmitted inside the window
    subflows: list[dict[str, Any]] = field(default_factory=list)
    #: (seconds since this flow's start, Mb/s) from the iperf3 server's interval reports
    series: list[tuple[float, float]] = field(default_factory=list)
    connected: bool = True  # False: its connection never got through (run_iperf may_not_connect)
    restarts: int = 0       # times its transfer was started again before its window opened
    silent_s: float = 0.0   # seconds inside its window in which its receiver got nothing
    #: its sockets' goodput from tcp_info's bytes_acked over its window in absolute time
    #: (start + trim .. start + duration - trim); iperf_mbps counts from iperf3's own test
    #: start, which comes later than ``start`` when the connection was slow to get through
    acked_mbps: float = float("nan")
    #: seconds from ``start`` to the first tcp_info sample with data acked (to one sampling
    #: interval): how late its transfer really began
    first_ack_s: float = float("nan")
    #: MPTCP: the connection-level byte counters (mptcp_info, data sequence space) over the
    #: same window: data the sender's connection saw acked, and data the receiver's
    #: connection took in order (what iperf3 can read), whatever subflow carried it
    msk_acked_mbps: float = float("nan")
    msk_received_mbps: float = float("nan")

    @property
    def name(self) -> str:
        """How errors and the watch name this transfer."""
        return f"{self.src} -> {self.dst}:{self.port}"

    def client_report(self, out: Path) -> Path:
        """The iperf3 client's JSON report in ``out``."""
        return out / f"iperf-client-{self.src}-{self.port}.json"

    def server_report(self, out: Path) -> Path:
        """The iperf3 server's JSON report in ``out``."""
        return out / f"iperf-server-{self.dst}-{self.port}.json"


def _wait_listening(emu: Emulation, flows: list[Flow], timeout: float) -> None:
    pending = {(f.dst, f.port) for f in flows}
    deadline = time.monotonic() + timeout
    while pending:
        for host, port in sorted(pending):
            out = emu.host_cmd(emu.host(host), ["ss", "-Hltn", f"sport = :{port}"])
            if out.strip():
                pending.discard((host, port))
        if pending:
            if time.monotonic() > deadline:
                raise RunError(f"iperf3 servers not listening after {timeout}s: "
                               f"{sorted(pending)[:4]}")
            time.sleep(0.05)  # bounded poll of a socket that is about to appear


#: how often a running measurement checks that every component is still alive (seconds)
WATCH_INTERVAL = 0.2


def watch_once(servers: list[tuple[str, subprocess.Popen[bytes]]],
               watch: list[tuple[str, subprocess.Popen[bytes]]],
               alive: Callable[[], None] | None) -> None:
    """One look at everything a running measurement depends on; RunError on a death: a
    server whose client still sends, a watched measurement process, the dataplane."""
    for name, server in servers:
        if server.poll() is not None and server.returncode != 0:
            raise RunError(f"iperf3 server of {name} (pid {server.pid}) ended with "
                           f"{how_ended(server)} while its client was still sending")
    for what, p in watch:
        if p.poll() is not None:
            raise RunError(f"{what} (pid {p.pid}) ended with {how_ended(p)} during the "
                           "measurement")
    if alive is not None:
        alive()


#: iperf3's words for a client whose control connection never got through (its SYNs lost)
NO_CONNECT = "unable to connect to server"


def wait_iperf(pairs: list[tuple[str, subprocess.Popen[bytes], subprocess.Popen[bytes]]],
               timeout: float, out: Path,
               watch: list[tuple[str, subprocess.Popen[bytes]]] | None = None,
               alive: Callable[[], None] | None = None,
               reports: dict[str, Path] | None = None,
               may_not_connect: bool = False) -> set[str]:
    """Wait for every (name, client, server) transfer under one deadline, watching everything.

    Fails within WATCH_INTERVAL when a client exits non-zero, a server dies by a signal or
    an error before its client finished, a ``watch``ed measurement process (bwm-ng) exits
    while traffic runs, or ``alive()`` (the dataplane: controller, switch daemon, BPF
    programs) raises.  Then waits a bounded time for the servers to write their reports.

    ``reports`` (name -> client JSON path): a client that exits 0 with an ``error`` in its
    JSON (iperf3 3.12 does that) fails the run at once, except, with ``may_not_connect``, one
    whose connection never got through: then its server is stopped and its name returned
    (the caller records the flow as starved).
    """
    deadline = time.monotonic() + timeout
    pending = list(pairs)
    unconnected: set[str] = set()
    while pending:
        for name, client, server in list(pending):
            if client.poll() is not None:
                if client.returncode != 0:
                    raise client_failed(name, client, out, (reports or {}).get(name))
                pending.remove((name, client, server))
                if reports and name in reports:
                    try:
                        read_report(reports[name], f"client {name}")
                    except RunError as exc:
                        if not (may_not_connect and NO_CONNECT in str(exc)):
                            raise
                        unconnected.add(name)
                        stop_process(server)
        if pending:
            watch_once([(n, s) for n, _, s in pending], watch or [], alive)
            if time.monotonic() > deadline:
                raise RunError(f"iperf3 client {pending[0][0]} did not finish in time "
                               f"({timeout:g} s)")
            time.sleep(WATCH_INTERVAL)
    # A server exits once its client's last segments arrive; behind a starved tail-drop
    # port (Outcast) they can sit in RTO backoff too, so the servers share the deadline.
    for name, _, server in pairs:
        try:
            server.wait(timeout=max(15.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RunError(f"iperf3 server of {name} did not exit") from None
    return unconnected


def client_failed(name: str, client: subprocess.Popen[bytes], out: Path,
                  report: Path | None) -> RunError:
    """The error of an iperf3 client that exited non-zero: its pid and how it ended, plus
    iperf3's own words when its JSON report has them (a killed client has none)."""
    why = ""
    if report is not None:
        try:
            why = ": " + str(json.loads(report.read_text())["error"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return RunError(f"iperf3 client {name} (pid {client.pid}) ended with {how_ended(client)}"
                    f"{why}; see the iperf-client files in {out}")


def read_report(path: Path, who: str) -> dict[str, Any]:
    """An iperf3 JSON report, with its ``error`` (iperf3 3.12 exits 0 and writes the error
    into the JSON) or its unreadability named with the host, port and file."""
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RunError(f"iperf3 {who}: no readable JSON report in {path} "
                       f"({type(exc).__name__})") from None
    if "error" in report:
        raise RunError(f"iperf3 {who}: {report['error']} (report {path})")
    return report


#: Subflows are read from socket snapshots (sock_diag) during traffic; under loss a
#: subflow's SYN can be dropped and retried (1 s, 3 s, 7 s ...), so it joins after the
#: snapshot.  Up to this share of missing subflows is recorded (flows.csv has every
#: connection's count), more is fatal.
MAX_MISSING_SUBFLOWS = 0.25


def check_subflows(flows: list[Flow], wanted: int) -> dict[str, Any]:
    """Fail if MPTCP is not really multipath: more than MAX_MISSING_SUBFLOWS of the asked
    subflows missing, or no connection with more than one; else return what is missing."""
    short = {f"{f.src}->{f.dst}": len(f.subflows) for f in flows if len(f.subflows) < wanted}
    missing = sum(wanted - n for n in short.values())
    single = wanted > 1 and all(len(f.subflows) < 2 for f in flows)
    if single or missing > MAX_MISSING_SUBFLOWS * wanted * len(flows):
        some = ", ".join(f"{k}: {v}" for k, v in list(short.items())[:4])
        raise RunError(f"MPTCP established fewer than {wanted} subflows on {len(short)} "
                       f"connections ({some})")
    return {"subflows_missing": missing, "short_connections": short}


#: bytes a connection must have carried to be iperf3's data connection: its control
#: connection carries a cookie and a few hundred bytes of parameters before the test (172
#: bytes in a capture of a real run), the data connection about 1 MB a second
DATA_CONNECTION_BYTES = 64 * 1024


def diag_subflows(socks: Sequence[SockInfo], dport: int) -> dict[str, list[dict[str, Any]]]:
    """The MPTCP subflows to ``dport`` in a sock_diag dump, grouped by their connection (the
    local token, which every subflow of a connection shares): token -> subflow 5-tuples."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for s in socks:
        if s.dport != dport or not s.mptcp or "token_loc" not in s.mptcp:
            continue
        groups.setdefault(f"{s.mptcp['token_loc']:08x}", []).append({
            "src_ip": s.saddr, "src_port": s.sport, "dst_ip": s.daddr, "dst_port": s.dport,
            "bytes_acked": s.info.get("bytes_acked", 0)})
    return groups


def data_connection(groups: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Subflows of iperf3's data connection: the busier of its MPTCP connections (token ->
    subflows).  The control connection gets as many subflows from the path manager, so a
    connection found alone counts only once it has carried data: taking a lone control
    connection for the data connection hid a test whose data connection never came (the
    control connection closed during set-up) from the start-up restart."""
    sized = [(g, sum(s["bytes_acked"] for s in g)) for g in groups.values()]
    if not sized:
        return []
    busiest, carried = max(sized, key=lambda gc: gc[1])
    return [] if len(sized) == 1 and carried < DATA_CONNECTION_BYTES else busiest


def diag_tcp_tuple(socks: Sequence[SockInfo], dport: int) -> list[dict[str, Any]]:
    """The busiest plain TCP socket to ``dport`` in a sock_diag dump as a one-element 5-tuple
    list, with its loss-recovery counters from tcp_info: segments retransmitted (total),
    the reordering degree TCP now assumes (3, the kernel's start, until it sees more),
    reorderings seen, and duplicate segments the receiver reported by DSACK (spurious
    retransmissions)."""
    best: dict[str, Any] | None = None
    for s in socks:
        if s.dport != dport or s.mptcp:
            continue
        cand = {"src_ip": s.saddr, "src_port": s.sport, "dst_ip": s.daddr, "dst_port": dport,
                "bytes_acked": s.info.get("bytes_acked", 0),
                "retrans": s.info.get("total_retrans", 0),
                "reordering": s.info.get("reordering", 3),
                "reord_seen": s.info.get("reord_seen", 0),
                "dsack_dups": s.info.get("dsack_dups", 0)}
        if best is None or cand["bytes_acked"] > best["bytes_acked"]:
            best = cand
    return [best] if best else []


def window_retransmits(client_report: dict[str, Any], t0: float, t1: float) -> int:
    """Segments the sender retransmitted in the intervals inside [t0, t1] s (iperf3's client
    report, from tcp_info's total_retrans)."""
    return sum(int(iv["sum"].get("retransmits", 0)) for iv in client_report.get("intervals", [])
               if iv["sum"]["start"] >= t0 - 1e-6 and iv["sum"]["end"] <= t1 + 1e-6)


def silent_seconds(report: dict[str, Any], t0: float, t1: float) -> float:
    """Seconds of the intervals inside [t0, t1] s of an iperf3 server report in which not a
    byte arrived (a stalled or starved flow)."""
    return round(sum(iv["sum"]["seconds"] for iv in report.get("intervals", [])
                     if iv["sum"]["start"] >= t0 - 1e-6 and iv["sum"]["end"] <= t1 + 1e-6
                     and iv["sum"]["bytes"] == 0), 3)


def iperf_window_mbps(report: dict[str, Any], t0: float, t1: float) -> float:
    """Mean received rate (Mb/s) over intervals inside [t0, t1] s of an iperf3 server report."""
    total_bytes = total_time = 0.0
    for iv in report.get("intervals", []):
        s = iv["sum"]
        if s["start"] >= t0 - 1e-6 and s["end"] <= t1 + 0.5:
            total_bytes += s["bytes"]
            total_time += s["end"] - s["start"]
    return 8 * total_bytes / total_time / 1e6 if total_time > 0 else float("nan")


def _server(emu: Emulation, f: Flow, wrap: list[str], interval: float,
            out: Path) -> tuple[Flow, Any, subprocess.Popen[bytes]]:
    """Start the iperf3 server of one flow (one test, then it exits); its report file."""
    fh = open(f.server_report(out), "w")  # noqa: SIM115 - closed by the caller
    return (f, fh, emu.popen(emu.host(f.dst), [*wrap, "iperf3", "-s", "-1", "-J", "-i",
                                               str(interval), "-p", str(f.port)],
                             stdout=fh, stderr=subprocess.STDOUT))


def run_iperf(emu: Emulation, flows: list[Flow], transport: str, duration: float,
              trim: float, out: Path, port: int = BASE_PORT, *, interval: float = 0.5,
              watch_intfs: Sequence[str] = (), grace: float = 30.0,
              may_not_connect: bool = False,
              subflows: int | dict[tuple[str, str], int] | None = None) -> dict[str, Any]:
    """The one iperf3 runner: every flow at once for ``duration`` s, in list order; fills in
    every flow's rates over the trimmed window, its interval series and retransmits.

    Flow i gets its own port, ``port + i``, so a host may receive or send several flows
    (many-to-one, all-to-all); bwm-ng's cross-check is per receiving interface, so it is
    left empty (NaN) for a flow whose receiver takes more than one.  bwm-ng and the iperf3
    servers report every ``interval`` s; bwm-ng also records ``watch_intfs`` (Outcast: the
    switch ports facing the senders).  ``grace``: how long after ``duration`` a client may
    still run before it counts as hung.  ``may_not_connect``: a client whose connection
    never got through (Outcast's starved senders) is recorded as ``connected=False`` at
    0 Mb/s instead of failing the run.

    ``subflows`` (MPTCP: per (src, dst), or one number for all): the subflows every data
    connection should have before its window opens.  Upstream's path manager does not retry
    an MP_JOIN the server refused (hostnet.mptcp_endpoints's guard removes the usual cause)
    and iperf3's MPTCP control connection can close during set-up: a flow still short of
    its subflows when its window would open (``trim`` s after its start), or whose client
    failed meanwhile, is started again once (``Flow.restarts``; its window moves with it).
    What is still short after that is for check_subflows.

    Returns the measurement facts (switch losses, CPU, dequeue gaps, window).  Raises
    RunError if a client fails, hangs, or (MPTCP) does not establish every subflow.
    """
    out.mkdir(parents=True, exist_ok=True)
    wrap = ["mptcpize", "run"] if transport == "mptcp" else []
    for i, f in enumerate(flows):
        f.port = port + i
    servers = [_server(emu, f, wrap, interval, out) for f in flows]
    _wait_listening(emu, flows, timeout=20)
    want = None if transport != "mptcp" or subflows is None else \
        {f.name: subflows if isinstance(subflows, int) else subflows[(f.src, f.dst)]
         for f in flows}
    intfs = sorted({host_port(emu.topo, f.dst) for f in flows} | set(watch_intfs))
    bwm_path = out / "bwm.csv"
    bwm = emu.popen(None, ["bwm-ng", "-o", "csv", "-t", str(round(interval * 1000)), "-T",
                           "rate", "-u", "bytes", "-C", ",", "-F", str(bwm_path),
                           "-I", ",".join(intfs)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu = cpu_sampler(out / "cpu.csv")
    cpu.start()
    tcp = tcp_sampler({h: emu.host_pids[h] for h in sorted({f.src for f in flows})}, interval)
    tcp.start()
    # MPTCP: the connections' own counters at both ends (senders and receivers)
    msk = tcp_sampler({h: emu.host_pids[h] for h in sorted({f.src for f in flows} |
                                                           {f.dst for f in flows})},
                      interval, mptcp=True) if transport == "mptcp" else None
    if msk is not None:
        msk.start()
    before, backlog0 = port_counters(emu), input_backlog_drops()
    times0 = cpu_times()
    pids = list(emu.host_pids.values())
    stack0 = stack_totals(pids)
    subflow_timing: dict[str, Any] = {}   # MPTCP: the subflow looks and restarts
    # MPTCP: a connection that loses subflows is named while the traffic runs (issue #56)
    live = SubflowWatch(msk, flows, duration, trim) if msk is not None else None
    try:
        with emu.dequeue_gaps() as gaps:
            unconnected = _clients_and_wait(emu, flows, transport, duration, trim, out, wrap,
                                            servers, bwm, grace, may_not_connect, want,
                                            interval, subflow_timing,
                                            live.look if live is not None else None)
        times1 = cpu_times()
        # what the hosts' stacks sent again: TCP retransmissions, MPTCP reinjections
        stack = stack_delta(stack0, stack_totals(pids))
        busy = times1["busy"] - times0["busy"]
        beside = cpu_shares(times0, times1)
    finally:
        try:
            samples = cpu.stop()
        finally:
            try:
                tcp_samples = stop_tcp_sampler(tcp, out / "tcp_samples.csv")
            finally:
                msk_samples = stop_mptcp_sampler(msk, out / "mptcp_samples.csv") \
                    if msk is not None else []
                stop_process(bwm)
    ports = counter_delta(before, port_counters(emu))
    backlog = input_backlog_drops() - backlog0
    write_rows(out / "ports.csv", ports)
    emu.check_alive()
    t0 = min(f.start for f in flows) + trim
    t1 = max(f.start for f in flows) + duration - trim
    # iperf3 is the measurement here and bwm-ng its cross-check: a bwm-ng that stayed alive
    # but fell behind (54 hosts under MPTCP load) makes the run suspect, not failed.
    bwm_tx = series_by_interface(bwm_path)  # one read for the coverage and every flow
    incomplete = coverage_problems(bwm_tx, {host_port(emu.topo, f.dst): (
        f.start + trim, f.start + duration - trim) for f in flows}, t0, t1, interval)
    shared = {f.dst for f in flows if sum(g.dst == f.dst for g in flows) > 1}
    for f in flows:
        if f.name in unconnected:
            f.connected, f.iperf_mbps, f.retransmits = False, 0.0, 0
            continue
        client = read_report(f.client_report(out), f"client {f.name}")
        if transport == "tcp":
            f.subflows = [_data_connection(client, f.subflows, f.port)]
        f.retransmits = window_retransmits(client, trim, duration - trim)
        report = read_report(f.server_report(out), f"server on {f.dst}:{f.port} (from {f.src})")
        f.iperf_mbps = iperf_window_mbps(report, trim, duration - trim)
        f.silent_s = silent_seconds(report, trim, duration - trim)
        # iperf3's last interval is a fraction of one: too short to be a rate sample
        f.series = [(round(iv["sum"]["end"], 3), 8 * iv["sum"]["bytes"] /
                     iv["sum"]["seconds"] / 1e6) for iv in report.get("intervals", [])
                    if iv["sum"]["seconds"] >= interval / 2]
        facing = host_port(emu.topo, f.dst)
        f.bwm_mbps = float("nan") if facing in incomplete or f.dst in shared else \
            series_mean(bwm_tx.get(facing, []), f.start + trim, f.start + duration - trim)
    limits = flow_limits(emu, flows, transport, tcp_samples, duration, trim)
    conns = connections(msk_samples)
    connection_rates(flows, conns, duration, trim)
    drops = subflow_drops(flows, conns, duration, trim)
    per_socket = limits.pop("per_socket")
    write_rows(out / "tcp_limits.csv", per_socket)
    # per flow: its best-limited socket (an MPTCP flow is congestion-limited if a subflow is)
    cwnd: dict[str, float | None] = {}
    for row in per_socket:
        share = row["cwnd_limited"]
        if share is not None:
            cwnd[row["flow"]] = max(share, cwnd.get(row["flow"]) or 0.0)
    judged = [{"flow": f.name, "silent_s": f.silent_s, "cwnd_limited": cwnd.get(f.name),
               **sender_stands(f, conns, duration, trim)}
              for f in flows if f.connected]
    limits["stall_note"] = stall_note(judged)
    limits["held_note"] = held_note(judged)
    window = [u for t, u in samples if t0 <= t <= t1]
    rx = sum(p["rx_packets"] for p in ports)
    return {**emulator_losses(ports, backlog), "tcp_limits": limits, "cpu_busy_s": round(busy, 2),
            # what ran beside the emulation, which the CPU figures count as free: niced
            # work and the hypervisor's steal (both can delay the emulated links' timers)
            **beside,
            # of that niced work, this run's own idle loops (--idle-cpus spin), if any
            "idle_loops": emu.facts.idle_loops,
            "stack_counters": stack,
            "restarts": {f.name: f.restarts for f in flows if f.restarts},
            "subflow_wait": subflow_timing,
            # the whole machine's CPU per packet-hop (a packet entering a switch port):
            # switch, probe, shaping, both TCP stacks, iperf3 and dcrepro's own sampling
            "cpu_us_per_packet_hop": round(1e6 * busy / rx, 3) if rx else None,
            "cpu_mean": round(sum(window) / len(window), 1) if window else None,
            "cpu_max": round(max(window), 1) if window else None,
            "cpu_saturated_share": round(sum(u > 90 for u in window) / len(window), 3)
            if window else None,
            "window_s": [trim, duration - trim], "dequeue_gaps": gaps,
            "bwm_incomplete": incomplete, "measurement_note": coverage_note(incomplete),
            "apart_note": apart_note(flows, duration, trim),
            "late_note": late_note(flows, duration, trim),
            # a connection that lost subflows inside its window (a flushed endpoint, a
            # path manager that closed them): a reason to doubt the run, with when
            "subflow_drops": drops, "subflow_note": subflow_note(drops),
            # when the live watch named each of them (SubflowWatch), s after the fall
            "subflow_seen": live.seen if live is not None else {}}


#: a flow started again (MPTCP short of subflows) must share at least this much of its
#: trimmed window with the window every other flow shares: the flow model, and every
#: comparison of flows with each other, assume the flows ran at the same time.  A restart
#: at its designed moment (``trim`` - 0.5 s after the start) keeps 72 % in quick mode
#: (15 s, trim 3) and 91 % at 60 s; under a saturated CPU the restart has come 13-15 s late
#: (fairness, fat tree, 2026-11-26), when the other flows were ending, and the restarted
#: flows then ran on a nearly empty network.
MIN_SHARED_WINDOW = 0.5


def apart_note(flows: Sequence[Flow], duration: float, trim: float) -> str | None:
    """One suspect reason when flows that were started again were measured apart from the
    others (see MIN_SHARED_WINDOW); None when they overlap enough or none was restarted.
    Flows whose connection came late by itself (TCP SYNs lost: Outcast's starved senders)
    are the experiment's own behaviour and are not judged here."""
    span = duration - 2 * trim
    restarted = [f for f in flows if f.restarts and f.connected]
    others = [f for f in flows if not f.restarts and f.connected]
    if span <= 0 or not restarted or not others:
        return None
    lo = max(f.start for f in others) + trim
    hi = min(f.start for f in others) + duration - trim

    def shared(f: Flow) -> float:
        return max(0.0, min(hi, f.start + duration - trim) - max(lo, f.start + trim)) / span

    worst = min(restarted, key=shared)
    if shared(worst) >= MIN_SHARED_WINDOW:
        return None
    late = max(f.start for f in restarted) - min(f.start for f in others)
    return (f"{len(restarted)} flow(s) started again share as little as {shared(worst):.0%} "
            f"of their window with the other flows (the last started {late:.1f} s after "
            "the first): measured on an emptier network than the others")


def late_note(flows: Sequence[Flow], duration: float, trim: float) -> str | None:
    """One suspect reason when a flow's transfer began so late (``first_ack_s``: its first
    data acked, to one tcp_info sampling interval) that its iperf3 window, which counts from
    its own test start, shares less than MIN_SHARED_WINDOW with the window it was started
    for (``start`` + trim .. ``start`` + duration - trim): its iperf3 rate was then measured
    later, on an emptier network.  A connection slow to get through is the experiment's
    behaviour (Outcast: a blacked-out port's set-up in RTO backoff); crediting it with a
    rate measured after the others ended is not.  Flows started at different times are
    apart_note's (restarts), not this check's."""
    span = duration - 2 * trim
    if span <= 0:
        return None

    def shared(f: Flow) -> float:
        return max(0.0, span - max(0.0, f.first_ack_s)) / span

    late = [f for f in flows if f.connected and f.first_ack_s == f.first_ack_s and
            shared(f) < MIN_SHARED_WINDOW]
    if not late:
        return None
    worst = max(late, key=lambda f: f.first_ack_s)
    return (f"{len(late)} flow(s) began their transfer late and were measured apart from "
            f"the others, e.g. {worst.name}: first data acked {worst.first_ack_s:g} s after "
            f"its start, {shared(worst):.0%} of its window where it was meant to be")


#: a flow silent this long inside its window, while not held by congestion, stalled
STALL_S = 2.0


def _silent(f: dict[str, Any]) -> bool:
    return bool(f["silent_s"] >= STALL_S and
                (f["cwnd_limited"] is None or f["cwnd_limited"] < 0.5))


def _held_by_data_level(f: dict[str, Any]) -> bool:
    """An MPTCP flow's silence explained by its own data level (docs/transports.md): its
    sender's connection stood still with sent data unacked for half the silence or more,
    and with nothing sent unacked for under STALL_S s.  Half, not all: the silence is
    counted in the receiver's half-second intervals, the stand between the sender's
    half-second samples, so a 2.0-s silence showed as 1.54 s of stand (run f1d34d).  The
    stands are summed over the flow's whole window, not matched second by second to the
    silence (iperf3's intervals count from its own test start, the samples in unix time)."""
    held, idle = f.get("held_s"), f.get("idle_s")
    return held is not None and idle is not None and \
        held >= f["silent_s"] / 2 and idle < STALL_S


def stall_note(flows: list[dict[str, Any]]) -> str | None:
    """A suspect reason when a flow's receiver got nothing for STALL_S s or more of its
    window while the flow was not congestion-limited (cwnd-limited in under half of its
    tcp_info samples, or never sampled): its sender or receiver stopped, not the network.
    A flow starved by congestion (RTO backoff behind a full tail-drop queue, the Outcast)
    stays cwnd-limited and is the experiment's result, not a fault; so is an MPTCP flow
    held by its data level (``held_s``/``idle_s`` from sender_stands: a subflow's hole
    holds the connection's ack, its subflows are then not cwnd-limited; held_note)."""
    stalled = [f for f in flows if _silent(f) and not _held_by_data_level(f)]
    if not stalled:
        return None
    worst = max(stalled, key=lambda f: f["silent_s"])
    return (f"{len(stalled)} flow(s) stalled without being held by congestion, e.g. "
            f"{worst['flow']}: nothing received for {worst['silent_s']:g} s of its window")


def held_note(flows: list[dict[str, Any]]) -> str | None:
    """The MPTCP flows silent STALL_S s or more because their data level held them (see
    stall_note): recorded in fidelity.json, not a reason to doubt the run."""
    held = [f for f in flows if _silent(f) and _held_by_data_level(f)]
    if not held:
        return None
    worst = max(held, key=lambda f: f["silent_s"])
    return (f"{len(held)} MPTCP flow(s) silent behind their own data level, e.g. "
            f"{worst['flow']}: nothing received for {worst['silent_s']:g} s, its sender's "
            f"connection held {worst['held_s']:g} s with sent data unacked")


#: mptcp_samples rows by connection: (host, saddr, sport, daddr, dport) -> rows
Connections = dict[tuple[str, str, int, str, int], list[dict[str, Any]]]


def sender_stands(f: Flow, by_conn: Connections, duration: float,
                  trim: float) -> dict[str, float]:
    """``held_s`` and ``idle_s`` (analysis.fidelity.data_level_stands) of an MPTCP flow's
    sender connection (of ``connections``) over its window: the one to its port that moved
    the most data; {} when it has no samples (TCP flows: never)."""
    conns = [rows for k, rows in by_conn.items() if k[0] == f.src and k[4] == f.port]
    if not conns:
        return {}
    rows = max(conns, key=lambda rows: max(int(r["bytes_acked"]) for r in rows))
    held, idle = data_level_stands(rows, f.start + trim, f.start + duration - trim)
    return {"held_s": held, "idle_s": idle}


def subflow_drops(flows: list[Flow], by_conn: Connections, duration: float,
                  trim: float) -> list[dict[str, Any]]:
    """The MPTCP flows whose sender connection lost subflows inside its window, from
    mptcp_info's count of extra subflows (mptcp_samples, one per sampling interval): the
    subflows it had before (1 + the most extra ones seen in its window so far), the fewest
    it had after, and when it fell (s into the window).  A fall counts when two samples in
    a row are below the most seen before them: one low sample is a subflow closing while
    its replacement is not yet counted, not a loss."""
    out = []
    for f in flows:
        conns = [rows for k, rows in by_conn.items() if k[0] == f.src and k[4] == f.port]
        if not conns:
            continue
        rows = max(conns, key=lambda rows: max(int(r["bytes_acked"]) for r in rows))
        t0, t1 = f.start + trim, f.start + duration - trim
        seq = sorted((float(r["time"]), int(r["subflows"])) for r in rows
                     if t0 <= float(r["time"]) <= t1)
        most = -1
        for i, (t, n) in enumerate(seq[:-1]):
            if 0 <= most and n < most and seq[i + 1][1] < most:
                out.append({"flow": f.name, "subflows_before": most + 1,
                            "subflows_after": min(x for _, x in seq[i:]) + 1,
                            "at_s": round(t - t0, 1)})
                break
            most = max(most, n)
    return out


def subflow_note(drops: list[dict[str, Any]]) -> str | None:
    """A suspect reason naming the connections that lost subflows (subflow_drops): the flow
    was measured on fewer paths than the run asked for, from a moment on."""
    if not drops:
        return None
    d = drops[0]
    single = "; single-path from then on" if d["subflows_after"] == 1 else ""
    return (f"{len(drops)} MPTCP connection(s) lost subflows inside their window, e.g. "
            f"{d['flow']}: {d['subflows_before']} -> {d['subflows_after']} subflows "
            f"{d['at_s']:g} s into its window{single}")


class SubflowWatch:
    """subflow_drops while the traffic runs: at every look (the wait's watch, every
    WATCH_INTERVAL), the MPTCP sampler's new samples are added to each connection's rows and
    every flow not yet named is judged on its window so far.  A fall is named in one warning
    line at once, within about two sampling intervals of it (it takes two samples below
    the most seen); the run's suspect reason (subflow_note) is still judged at the end, on
    every sample.  ``seen``: flow -> how long after the fall's first low sample it was
    named, s."""

    def __init__(self, sampler: Sampler[Any], flows: list[Flow], duration: float,
                 trim: float) -> None:
        self.sampler, self.flows, self.duration, self.trim = sampler, flows, duration, trim
        self.taken = 0                  # samples already added to ``conns``
        self.conns: Connections = {}
        self.seen: dict[str, float] = {}

    def look(self) -> None:
        """Add the new samples; name each flow that has just lost subflows."""
        new = self.sampler.samples[self.taken:]   # appended by its thread: read a copy
        if not new:
            return
        self.taken += len(new)
        for when, dumps in new:
            for r in mptcp_rows(when, dumps):
                self.conns.setdefault((r["host"], r["saddr"], int(r["sport"]), r["daddr"],
                                       int(r["dport"])), []).append(r)
        waiting = [f for f in self.flows if f.name not in self.seen and f.start > 0]
        for d in subflow_drops(waiting, self.conns, self.duration, self.trim):
            f = next(f for f in waiting if f.name == d["flow"])
            self.seen[f.name] = round(time.time() - (f.start + self.trim + d["at_s"]), 2)
            LOG.warning("%s lost subflows: %d -> %d, %g s into its window (seen %.1f s "
                        "later)", f.name, d["subflows_before"], d["subflows_after"],
                        d["at_s"], self.seen[f.name])


def connections(samples: list[dict[str, Any]]) -> Connections:
    """mptcp_samples rows grouped by connection, once for every reader of them."""
    by_conn: Connections = {}
    for r in samples:
        by_conn.setdefault((r["host"], r["saddr"], int(r["sport"]), r["daddr"],
                            int(r["dport"])), []).append(r)
    return by_conn


def flow_limits(emu: Emulation, flows: list[Flow], transport: str,
                samples: list[dict[str, Any]], duration: float,
                trim: float) -> dict[str, Any]:
    """What limited every flow's data connection (MPTCP: every subflow) in its window, from
    the tcp_info samples: per socket (``per_socket``, analysis.fidelity.limit_shares plus the
    flow's goodput over its access link) and medians; ``note`` is a suspect reason when the
    TCP flows were mostly not congestion-limited (analysis.fidelity.limits_note)."""
    by_sock: dict[tuple[str, str, int, int], list[dict[str, Any]]] = {}
    for r in samples:
        by_sock.setdefault((r["host"], r["saddr"], int(r["sport"]), int(r["dport"])),
                           []).append(r)
    per: list[dict[str, Any]] = []
    for f in flows:
        if not f.connected:
            continue
        mine = {k: v for k, v in by_sock.items() if k[0] == f.src and k[3] == f.port}
        wanted = {(s["src_ip"], int(s["src_port"])) for s in f.subflows}
        if wanted:
            mine = {k: v for k, v in mine.items() if (k[1], k[2]) in wanted}
        elif mine:   # no snapshot named it: the busiest socket to the flow's port
            k = max(mine, key=lambda k: max(int(r["bytes_acked"]) for r in mine[k]))
            mine = {k: mine[k]}
        try:
            link = emu.rates[(f.src, emu.topo.access_switch(f.src))]
        except Exception:
            link = None
        share = round(f.iperf_mbps / link, 4) if link and transport == "tcp" else None
        acked: list[float] = []
        for k, rows in sorted(mine.items()):
            per.append({"flow": f.name, "transport": transport, "sport": k[2],
                        "mbps": round(f.iperf_mbps, 4), "link_share": share,
                        **limit_shares(rows, f.start + trim, f.start + duration - trim)})
            if per[-1]["acked_mbps"] is not None:
                acked.append(per[-1]["acked_mbps"])
        if acked:
            f.acked_mbps = round(sum(acked), 4)
        elif mine and min(float(r["time"]) for rows in mine.values() for r in rows) > \
                f.start + duration - trim:
            # its data connection came up only after its window had closed (its SYN in RTO
            # backoff: an Outcast sender behind a full port): nothing acked in the window
            f.acked_mbps = 0.0
        first = [float(r["time"]) for rows in mine.values() for r in rows
                 if int(r.get("bytes_acked") or 0) > 1]
        if first:
            f.first_ack_s = round(min(first) - f.start, 2)

    def med(key: str) -> float | None:
        vals = [p[key] for p in per if p[key] is not None]
        return round(float(median(vals)), 3) if vals else None
    return {"sockets": len(per), "cwnd_limited_median": med("cwnd_limited"),
            "rwnd_limited_median": med("rwnd_limited"),
            "sndbuf_limited_median": med("sndbuf_limited"),
            "in_flight_median": med("in_flight_median"), "cwnd_median": med("cwnd_median"),
            "note": limits_note(per) if transport == "tcp" else None, "per_socket": per}


def connection_rates(flows: list[Flow], by_conn: Connections, duration: float,
                     trim: float) -> None:
    """Each MPTCP flow's connection-level rates over its window (Flow.msk_acked_mbps,
    msk_received_mbps) from mptcp_samples rows: at its sender, the connection to its port
    (``dport``), and at its receiver, the one on its port (``sport``); of several (iperf3's
    control connection, a connection started again) the one that moved the most."""
    def busiest(host: str, side: int, port: int, key: str, t0: float, t1: float) -> float:
        rates = [counter_mbps(rows, key, t0, t1) for k, rows in by_conn.items()
                 if k[0] == host and k[side] == port]
        return max((r for r in rates if r is not None), default=float("nan"))

    for f in flows:
        t0, t1 = f.start + trim, f.start + duration - trim
        f.msk_acked_mbps = busiest(f.src, 4, f.port, "bytes_acked", t0, t1)
        f.msk_received_mbps = busiest(f.dst, 2, f.port, "bytes_received", t0, t1)


def _data_connection(client: dict[str, Any], seen: list[dict[str, Any]],
                     port: int) -> dict[str, Any]:
    """A TCP flow's data connection as iperf3's client report names it, with the tcp_info
    counters of the socket snapshot when it saw that connection (else without them)."""
    conn = client["start"]["connected"][0]
    tup = {"src_ip": conn["local_host"].removeprefix("::ffff:"),
           "src_port": int(conn["local_port"]),
           "dst_ip": conn["remote_host"].removeprefix("::ffff:"), "dst_port": port}
    match = [s for s in seen if (s["src_ip"], s["src_port"]) == (tup["src_ip"],
                                                                  tup["src_port"])]
    return {**match[0], **tup} if match else tup


def _snapshot_sockets(emu: Emulation, flows: list[Flow], transport: str, duration: float,
                      trim: float, out: Path, first: float,
                      clients: list[tuple[Flow, Any, subprocess.Popen[bytes]]],
                      servers: list[tuple[Flow, Any, subprocess.Popen[bytes]]],
                      bwm: subprocess.Popen[bytes], may_not_connect: bool = False,
                      alive: Callable[[], None] | None = None) -> None:
    """Record every flow's connection (MPTCP: its subflows) while traffic runs, for the
    subflow check and for tracing; watch everything meanwhile (``alive``: the wait's own
    check, the dataplane's and the live subflow watch's; default the dataplane's).  Each
    look reads the senders' sockets over sock_diag in this process (Emulation.sockets) and
    keeps them in ``sockets[-late].json``; it was an `ss` process in every host, which on
    a loaded CPU took 4.5 s (k=4, MPTCP at 75 % CPU) to 15 s (k=6 saturated) and spent,
    inside the measured
    window, the CPU the emulated network needed.

    Early enough to finish before the flows end (starting 54 clients takes up to 5 s).
    TCP: once, in the middle (iperf3's
    report names the connection anyway, see _data_connection).  MPTCP: first soon after
    the window opens, then as late as the window allows, because an MP_JOIN whose SYN was
    lost retries after 1 s, 2 s, 4 s ... and the subflow appears only then; a flow keeps
    whichever look saw more of its subflows.  Times count from the FIRST client's start,
    so that the earliest ones still run.  An MPTCP flow no look has seen yet (started
    again, or its SYN lost) is looked for again every half second until the last window
    closes: CI saw a flow restarted 1 s in connect after the one look at 3 s.
    """
    if transport == "tcp":
        times = [first + duration / 2]
    else:
        early = min(duration / 2, max(trim, 2.0) + 1)
        times = [first + early]
        if duration - trim - 1.5 > early + 0.5:
            times.append(first + duration - trim - 1.5)
    record: list[dict[str, Any]] = []

    def wait_until(when: float) -> None:
        while time.monotonic() < when:
            if any(p.poll() is not None for _, _, p in clients):
                break
            # the same watch as wait_iperf's, from the first second of traffic
            watch_once([(f.name, p) for f, _, p in servers],
                       [("bwm-ng", bwm)], alive or emu.check_alive)
            time.sleep(min(WATCH_INTERVAL, max(0.0, when - time.monotonic())))

    def look(when: float, of: list[Flow], name: str) -> None:
        began = time.monotonic()
        socks = emu.sockets(sorted({f.src for f in of}))
        record.append({"planned_s": round(when - first, 2), "began_s": round(began - first, 2),
                       "took_s": round(time.monotonic() - began, 2), "flows": len(of)})
        (out / name).write_text(json.dumps(
            {h: [s._asdict() for s in ss] for h, ss in socks.items()}))
        for f in of:
            got = data_connection(diag_subflows(socks[f.src], f.port)) \
                if transport == "mptcp" else diag_tcp_tuple(socks[f.src], f.port)
            if len(got) >= max(1, len(f.subflows)):
                f.subflows = got

    for n, when in enumerate(times):
        wait_until(when)
        look(when, flows, f"sockets{'-late' if n else ''}.json")
    # MPTCP: a flow started again (or whose SYN was lost) may connect after the planned
    # looks; look again for those only, every half second, until the last window closes
    close = max(f.start for f in flows) - time.time() + time.monotonic() + duration - trim
    while transport == "mptcp" and time.monotonic() < close and \
            not any(p.poll() is not None for _, _, p in clients):
        missing_now = [f for f in flows if not f.subflows]
        if not missing_now:
            break
        when = time.monotonic() + 0.5
        wait_until(when)
        look(when, missing_now, "sockets-missing.json")
    (out / "snapshot.json").write_text(json.dumps(record))
    # a client that already ended says why (iperf3 writes its error into the JSON) rather
    # than leaving the run to fail on the connection the snapshot could not see
    for f, _, p in clients:
        if p.poll() is not None and not f.subflows:
            if p.returncode != 0:
                raise client_failed(f.name, p, out, f.client_report(out))
            try:
                read_report(f.client_report(out), f"client {f.name}")
            except RunError as exc:
                if not (may_not_connect and NO_CONNECT in str(exc)):
                    raise   # (a starved connection is wait_iperf's to record)
    missing = [f"{f.src}->{f.dst}" for f in flows if not f.subflows]
    if missing and transport == "mptcp":  # (TCP: iperf3's report names the connection)
        raise RunError(snapshot_miss(record, missing, duration))


def snapshot_miss(record: list[dict[str, Any]], missing: list[str], duration: float) -> str:
    """Why a run stops when no socket look found some MPTCP flows' connections (``record``:
    the looks, as _snapshot_sockets keeps them); when every look began after the flows had
    ended, it says that the machine, not the flows, came late, and what to try."""
    began_at = f"{record[0]['began_s']} s" if len(record) == 1 else \
        f"{len(record)} looks, {record[0]['began_s']}-{record[-1]['began_s']} s"
    text = (f"no socket snapshot ({began_at} after the first client started) found the "
            f"connection of {len(missing)} flows (e.g. {', '.join(missing[:3])})")
    if record[0]["began_s"] > duration:     # the looks are in time order
        text += (f"; every look began after the {duration:g}-s flows had ended: the machine "
                 "is too loaded for this network to be watched (try a lower --bw or fewer "
                 "hosts; docs/measured.md, 'dcrepro starved by the network it runs')")
    return text


def _client(emu: Emulation, f: Flow, wrap: list[str], duration: float,
            out: Path) -> tuple[Flow, Any, subprocess.Popen[bytes]]:
    """Start the iperf3 client of one flow (its start time is set now); its report file."""
    fh = open(f.client_report(out), "w")  # noqa: SIM115 - closed by the caller
    f.start = time.time()
    return (f, fh, emu.popen(
        emu.host(f.src), [*wrap, "iperf3", "-c", emu.topo.ip(f.dst), "-p", str(f.port),
                          "-t", str(duration), "-J", "--connect-timeout", "5000"],
        stdout=fh, stderr=subprocess.STDOUT))


def _short_of_subflows(emu: Emulation, flows: list[Flow], want: dict[str, int],
                       clients: dict[str, subprocess.Popen[bytes]]) -> dict[str, str]:
    """Flows whose data connection has fewer subflows than wanted, or whose client already
    ended, each with why (one sock_diag look at their senders)."""
    short: dict[str, str] = {}
    for f in flows:
        if clients[f.name].poll() is not None:
            short[f.name] = f"its client ended ({how_ended(clients[f.name])})"
    look = sorted({f.src for f in flows if f.name not in short})
    socks = emu.sockets(look) if look else {}
    for f in flows:
        if f.name in short:
            continue
        got = data_connection(diag_subflows(socks[f.src], f.port))
        if len(got) >= len(f.subflows):
            f.subflows = got
        if len(f.subflows) < want[f.name]:
            short[f.name] = f"{len(f.subflows)} of {want[f.name]} subflows"
    return short


# A lost SYN or MP_JOIN is sent again 1 s later (the initial RTO): a flow is not started
# again before that retry had half a second to land.  (At 1.0 s, the earlier floor, a short
# test window restarted flows just as their retried SYNs arrived: on OVS's userspace switch,
# which loses 0.3-1.5 % of packets, 3 of 4 idle 1-s-trim runs restarted 3-9 flows at
# 1.13-1.16 s, and one such restarted flow never connected in a CI run on 2026-12-03.)
FIRST_RETRY_DONE_S = 1.5


def _await_subflows(emu: Emulation, flows: list[Flow], want: dict[str, int], trim: float,
                    clients: dict[str, tuple[Flow, Any, subprocess.Popen[bytes]]],
                    restart: Callable[[list[Flow]], None], watch: Callable[[], None],
                    timing: dict[str, Any]) -> None:
    """Wait until every flow's data connection has its subflows, at most until its window
    would open; start the flows that are still short (or whose client ended) once more,
    together, then wait for them the same way.  Bounded: two windows' trim per flow at
    most.  ``timing`` gets when each look and restart happened (seconds after the first
    client started): a restart that comes late leaves the flow measured apart
    (apart_note)."""
    first = min(f.start for f in flows)
    looks: list[float] = []
    for attempt in (0, 1):
        pending = [f for f in flows if attempt == 0 or f.restarts == 1]
        while pending:
            procs = {f.name: clients[f.name][2] for f in pending}
            t = time.monotonic()
            short = _short_of_subflows(emu, pending, want, procs)
            looks.append(time.monotonic() - t)
            pending = [f for f in pending if f.name in short]
            due = [f for f in pending
                   if time.time() >= f.start + max(FIRST_RETRY_DONE_S, trim - 0.5)]
            if attempt == 0 and due:
                for f in due:
                    LOG.warning("%s: %s before its window; started again", f.name,
                                short[f.name])
                late = [round(time.time() - f.start, 2) for f in due]
                t = time.monotonic()
                restart(due)
                timing.setdefault("restarts", []).append(
                    {"at_s": round(time.time() - first, 2), "flows": len(due),
                     "due_for_s": max(late), "took_s": round(time.monotonic() - t, 2)})
            pending = [f for f in pending if f not in due]
            if pending:
                watch()
                time.sleep(0.5)   # MP_JOINs retry after 1 s: a look every half second
    timing.update(looks=len(looks), look_max_s=round(max(looks, default=0.0), 2),
                  look_median_s=round(median(looks), 2) if looks else None)


def _clients_and_wait(emu: Emulation, flows: list[Flow], transport: str, duration: float,
                      trim: float, out: Path, wrap: list[str],
                      servers: list[tuple[Flow, Any, subprocess.Popen[bytes]]],
                      bwm: subprocess.Popen[bytes], grace: float,
                      may_not_connect: bool, want: dict[str, int] | None = None,
                      interval: float = 0.5,
                      subflow_timing: dict[str, Any] | None = None,
                      look: Callable[[], None] | None = None) -> set[str]:
    """Start every client (MPTCP with ``want``: wait for the subflows, restarting a short
    flow once), snapshot the sockets late in the window, wait under watch (``look``: one
    more check at every watch, SubflowWatch's); returns the names of the flows that never
    connected (only with ``may_not_connect``)."""
    # the senders' sock_diag sockets for the looks below, made before the traffic loads the
    # machine (a k=6 MPTCP-8 run's first look, which made them, took 7.8 s on 2026-11-29)
    emu.open_sockets(sorted({f.src for f in flows}))
    first = time.monotonic()
    by_client = {f.name: _client(emu, f, wrap, duration, out) for f in flows}
    by_server = {f.name: sv for f, sv in zip(flows, servers)}
    closed: list[Any] = []

    def restart(fs: list[Flow]) -> None:
        # all together: one shared stop and one wait for the servers, not one each
        stop_all([table[f.name][2] for f in fs for table in (by_client, by_server)])
        closed.extend(table[f.name][1] for f in fs for table in (by_client, by_server))
        for f in fs:
            by_server[f.name] = _server(emu, f, wrap, interval, out)
        _wait_listening(emu, fs, timeout=20)
        for f in fs:
            f.restarts += 1
            f.subflows = []
            by_client[f.name] = _client(emu, f, wrap, duration, out)

    try:
        if want is not None:
            _await_subflows(emu, flows, want, trim, by_client, restart,
                            lambda: watch_once([], [("bwm-ng", bwm)], emu.check_alive),
                            subflow_timing if subflow_timing is not None else {})
        clients = [by_client[f.name] for f in flows]
        servers[:] = [by_server[f.name] for f in flows]

        def alive() -> None:
            emu.check_alive()
            if look is not None:
                look()

        _snapshot_sockets(emu, flows, transport, duration, trim, out, first, clients,
                          servers, bwm, may_not_connect, alive)
        return wait_iperf([(f.name, by_client[f.name][2], by_server[f.name][2])
                           for f in flows],
                          duration + grace, out, watch=[("bwm-ng", bwm)], alive=alive,
                          reports={f.name: f.client_report(out) for f in flows},
                          may_not_connect=may_not_connect)
    finally:
        for _, fh, _ in (*by_client.values(), *by_server.values()):
            fh.close()
        for fh in closed:
            fh.close()


@dataclass(frozen=True)
class PortCounters:
    """Counters of one switch-side interface: bytes/packets both ways, qdisc drops (the
    tail drops of its pfifo), packets waiting in that pfifo at the snapshot, and what the
    switch's AQM (--aqm) did to packets headed there: marked CE, dropped early (before the
    queue; 0 for droptail)."""

    rx_bytes: int
    tx_bytes: int
    rx_packets: int
    tx_packets: int
    qdisc_drops: int
    qdisc_sent_packets: int
    aqm_marks: int = 0
    aqm_drops: int = 0
    qdisc_queued_packets: int = 0


def port_counters(emu: Emulation) -> dict[tuple[str, int], PortCounters]:
    """Snapshot of every switch port: (switch, port) -> counters (sysfs + `tc -s`).

    Switch ports live in the root namespace, so this is a few file reads and one tc call;
    rx on a switch port is traffic *entering* the switch from the peer, tx is leaving it.
    The ports' own counters are read before the queues' (one tc call): a packet that
    arrives while the snapshot is being taken is then counted in a queue's figures without
    its arrival, never the other way round, so that packets still moving when the traffic
    has ended (an MPTCP connection draining its send buffer after iperf3 closed it) cannot
    be taken for losses (emulator_losses).
    """
    ends = [(sw, port, f"{sw}-eth{port}") for sw in emu.topo.switches()
            for port in emu.topo.ports(sw)]
    stats = {intf: [int((Path("/sys/class/net") / intf / "statistics" / n).read_text())
                    for n in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")]
             for _, _, intf in ends}
    qd: dict[str, tuple[int, int]] = {}
    queued: dict[str, int] = {}
    for q in json.loads(check(["tc", "-s", "-j", "qdisc", "show"]) or "[]"):
        if q.get("kind") == "pfifo":
            qd[q["dev"]] = (q.get("drops", 0), q.get("packets", 0))
        if q.get("root"):
            # the root's qlen: the pfifo's packets plus one the stack may hold parked
            queued[q["dev"]] = q.get("qlen", 0)
    aqm = emu.dataplane.aqm_counters() if isinstance(emu.dataplane, Aqm) else {}
    out = {}
    for sw, port, intf in ends:
        rx_b, tx_b, rx_p, tx_p = stats[intf]
        drops, sent = qd.get(intf, (0, 0))
        marks, early = aqm.get(intf, (0, 0))
        out[(sw, port)] = PortCounters(rx_b, tx_b, rx_p, tx_p, qdisc_drops=drops,
                                       qdisc_sent_packets=sent, aqm_marks=marks,
                                       aqm_drops=early, qdisc_queued_packets=queued.get(intf, 0))
    return out


def counter_delta(before: dict[tuple[str, int], PortCounters],
                  after: dict[tuple[str, int], PortCounters]) -> list[dict[str, Any]]:
    """Per-port differences between two snapshots, as rows for a CSV."""
    rows = []
    for key, a in sorted(after.items()):
        b = before[key]
        rows.append({"switch": key[0], "port": key[1],
                     **{f: getattr(a, f) - getattr(b, f)
                        for f in PortCounters.__dataclass_fields__}})
    return rows


def input_backlog_drops() -> int:
    """Packets the kernel dropped since boot because a CPU's input backlog was full (the
    second column of /proc/net/softnet_stat, summed over CPUs).  Every veth hop of the
    emulated network is delivered through that backlog, before the next switch counts the
    packet, so the switches' counters cannot see these losses; the count is the machine's,
    all namespaces together."""
    try:
        with open("/proc/net/softnet_stat", encoding="ascii") as fh:
            return sum(int(line.split()[1], 16) for line in fh)
    except (OSError, IndexError, ValueError):
        return 0


def emulator_losses(ports: list[dict[str, Any]], backlog_drops: int = 0) -> dict[str, Any]:
    """Packets lost inside the switches, split as far as the counters allow, and on the
    wires between them (``backlog_drops``: input_backlog_drops over the same window).

    Every packet a switch port receives leaves through some port's pfifo, waits in one
    (``queued``: the rows' ``qdisc_queued_packets``, the change of the root qdiscs' queue
    lengths between the two snapshots; packets still in a queue when the traffic's counters
    are read are not lost) or is lost, so ``total = rx - sent - queued`` is exact. Losses
    the experiment asked for are the tail drops of the pfifos (``queue_drops``) and the
    AQM's early drops (``aqm_drops``, the switch program's own count; ``aqm_marks``: packets
    it marked CE instead, not losses); what is left is the emulator's. tc's drop counter is
    only an upper bound on tail-drop losses: when a pfifo refuses a packet in the middle of
    a batch, Open vSwitch's AF_PACKET send loop (netdev_linux_sock_batch_send) sends it once
    more, so a refusal is counted as a drop even when the retry gets through. Hence
    ``emulator_drops = total - tc drops`` is a lower bound on packets the software switch
    lost outside the queues (e.g. socket buffers overflowing while its CPU is saturated):
    losses the experiment never asked for.  A packet the input backlog dropped between two
    switches left one and never reached the other's counters, so those are added to it.
    """
    rx = sum(p["rx_packets"] for p in ports)
    sent = sum(p["qdisc_sent_packets"] for p in ports)
    tail = sum(p["qdisc_drops"] for p in ports)
    early = sum(p.get("aqm_drops", 0) for p in ports)
    queued = sum(p.get("qdisc_queued_packets", 0) for p in ports)
    total = max(0, rx - sent - queued)
    lost = max(0, total - tail - early) + backlog_drops
    return {"switch_rx_packets": rx, "queued_at_end": queued,
            "switch_lost_packets": total, "queue_drops": tail,
            "aqm_drops": early, "aqm_marks": sum(p.get("aqm_marks", 0) for p in ports),
            "backlog_drops": backlog_drops,
            "emulator_drops": lost, "emulator_loss_share": round(lost / rx, 5) if rx else 0.0}


#: the loss accounting's fields (emulator_losses) that every fidelity.json carries
LOSS_FIELDS = ("switch_rx_packets", "queued_at_end", "switch_lost_packets", "queue_drops",
               "aqm_drops", "aqm_marks", "backlog_drops", "emulator_drops",
               "emulator_loss_share")


def loss_fields(meas: dict[str, Any]) -> dict[str, Any]:
    """The loss accounting of a measurement (run_iperf's): tail drops, AQM drops and marks,
    and the emulator's own losses, apart."""
    return {k: meas[k] for k in LOSS_FIELDS if k in meas}


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Plain CSV of dict rows with the first row's keys."""
    if not rows:
        path.write_text("")
        return
    with open(path, "w", newline="", encoding="ascii") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
