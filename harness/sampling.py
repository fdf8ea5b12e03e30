"""One sampler for everything an experiment reads while its traffic runs: the machine's CPU,
switch port counters, a bottleneck queue, sockets.  (bwm-ng, the one external sampler, is a
process watched with the traffic: harness/traffic.watch_once.)

A ``Sampler`` calls ``read()`` in a thread, either every ``interval`` seconds or at the
times ``schedule()`` names once they are known (a measurement window opens when the last
client has started), and keeps ``(unix time, value)`` pairs.  Every wait is bounded.  A
failing ``read`` ends the sampling and is kept as ``error``; ``stop()`` raises it as a
RunError naming the sampler, so a run never ends ``ok`` on silently partial samples.
"""
from __future__ import annotations

import csv
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from emulator.proc import RunError

T = TypeVar("T")


class Sampler(threading.Thread, Generic[T]):
    """``read()`` every ``interval`` s (``first``: also at once), or at ``schedule()``'s times.

    ``schedule`` returns None while the times are not known yet (polled every 50 ms for up to
    ``schedule_timeout`` s).  ``columns`` turns a value into CSV columns for ``path``.
    """

    def __init__(self, name: str, read: Callable[[], T], interval: float | None = None,
                 path: Path | None = None, columns: Callable[[T], dict[str, Any]] | None = None,
                 first: bool = True, schedule: Callable[[], list[float] | None] | None = None,
                 schedule_timeout: float = 60.0) -> None:
        super().__init__(daemon=True, name=f"sampler-{name}")
        if (interval is None) == (schedule is None):
            raise ValueError("a sampler takes an interval or a schedule")
        self.what, self.read, self.interval, self.path = name, read, interval, path
        self.columns, self.first = columns, first
        self.schedule, self.schedule_timeout = schedule, schedule_timeout
        self.samples: list[tuple[float, T]] = []
        self.error: str | None = None
        self._halt = threading.Event()
        self._first = threading.Event()     # set by the first sample, an error or the end

    def _take(self) -> None:
        value = self.read()
        self.samples.append((time.time(), value))
        self._first.set()

    def _scheduled(self) -> None:
        assert self.schedule is not None
        deadline = time.monotonic() + self.schedule_timeout
        while (times := self.schedule()) is None:
            if self._halt.wait(0.05):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"its window was not known within {self.schedule_timeout:g} s")
        for when in times:
            if self._halt.wait(max(0.0, when - time.time())):
                return
            self._take()

    def run(self) -> None:
        try:
            if self.schedule is not None:
                self._scheduled()
                return
            if self.first:
                self._take()
            while not self._halt.wait(self.interval):
                self._take()
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._first.set()

    def wait_first(self, timeout: float) -> None:
        """Return once the first sample is in (a baseline); RunError after ``timeout`` s."""
        self._first.wait(timeout)
        if not self.samples:
            raise RunError(f"{self.what} sampler took no first sample in {timeout:g} s "
                           f"({self.error or 'no error'})")

    def stop_quietly(self) -> None:
        """Stop without raising (a run that is already failing keeps its own error)."""
        try:
            self.stop()
        except RunError:
            pass

    def stop(self, timeout: float = 10.0) -> list[tuple[float, T]]:
        """Stop, write ``path`` (time plus ``columns``), return the samples; RunError if
        reading failed or the thread did not end."""
        self._halt.set()
        self.join(timeout=timeout)
        if self.is_alive():
            raise RunError(f"{self.what} sampler did not stop within {timeout:g} s")
        if self.error:
            raise RunError(f"{self.what} sampler failed: {self.error}")
        if self.path is not None and self.columns is not None:
            rows = [{"time": round(t, 3), **self.columns(v)} for t, v in self.samples]
            with open(self.path, "w", newline="", encoding="ascii") as fh:
                w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["time"])
                w.writeheader()
                w.writerows(rows)
        return self.samples


class CpuLoad:
    """Whole-machine CPU utilisation (%) since the previous call, from /proc/stat.  Time of
    niced processes counts as free: work run beside the emulation at a lower priority (a
    test suite under ``nice -n 19``) yields the CPU to it and is not its load."""

    def __init__(self) -> None:
        self._last = self._read()

    @staticmethod
    def _read() -> tuple[int, int]:
        with open("/proc/stat", encoding="ascii") as fh:
            vals = [int(v) for v in fh.readline().split()[1:]]
        free = vals[1] + vals[3] + vals[4]        # nice, idle, iowait
        return sum(vals) - free, sum(vals)

    def __call__(self) -> float:
        (busy0, total0), (busy, total) = self._last, self._read()
        self._last = (busy, total)
        return 100.0 * (busy - busy0) / max(1, total - total0)


def cpu_times() -> dict[str, float]:
    """The machine's CPU seconds since boot, all cores together, from one read of
    /proc/stat: ``busy`` (user, system, irq and softirq time: idle, iowait and steal are
    not ours, and neither is ``nice`` time, processes at a lower priority than the
    emulation, e.g. a test suite run with ``nice -n 19`` beside a benchmark), ``nice``
    (that niced work, which the CPU figures count as free), ``steal`` (time the hypervisor
    ran something else while this machine's cores wanted to run) and ``total``."""
    with open("/proc/stat", encoding="ascii") as fh:
        vals = [int(v) for v in fh.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = vals[:7]
    steal = vals[7] if len(vals) > 7 else 0
    # guest time is already inside user and nice
    tick = os.sysconf("SC_CLK_TCK")
    return {"busy": (user + system + irq + softirq) / tick, "nice": nice / tick,
            "steal": steal / tick, "total": sum(vals[:8]) / tick}


def cpu_shares(before: dict[str, float], after: dict[str, float]) -> dict[str, float | None]:
    """Between two cpu_times: the shares of the machine's CPU time that were niced work and
    steal (None over no time)."""
    total = after["total"] - before["total"]
    return {f"cpu_{k}_share": round((after[k] - before[k]) / total, 4) if total > 0 else None
            for k in ("nice", "steal")}


def cpu_sampler(path: Path, interval: float = 1.0) -> Sampler[float]:
    """The machine's CPU every ``interval`` s into ``path`` (time, cpu_percent)."""
    return Sampler("CPU", CpuLoad(), interval, path,
                   columns=lambda u: {"cpu_percent": round(u, 2)}, first=False)


#: tcp_info columns kept per socket and sample (tcp_samples.csv); times in microseconds
TCP_COLUMNS = ("ca_state", "snd_cwnd", "unacked", "sacked", "lost", "retrans", "rtt",
               "snd_wnd", "notsent_bytes", "total_retrans", "bytes_acked", "delivery_rate",
               "busy_time", "rwnd_limited", "sndbuf_limited")


def _socket_rows(when: float, dumps: dict[str, list[Any]], has: str,
                 columns: tuple[str, ...], more: Callable[[Any], dict[str, Any]]
                 ) -> list[dict[str, Any]]:
    """One sock_diag look at every host as CSV rows, one per socket whose info has ``has``:
    its addresses, ``columns`` of its info, and ``more(socket)``."""
    return [{"time": round(when, 3), "host": host, "saddr": s.saddr, "sport": s.sport,
             "daddr": s.daddr, "dport": s.dport, **{c: s.info.get(c) for c in columns},
             **more(s)}
            for host, socks in sorted(dumps.items()) for s in socks if has in s.info]


def tcp_rows(when: float, dumps: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """One sock_diag look at every host as CSV rows: one per socket (emulator.sockdiag)."""
    return _socket_rows(when, dumps, "snd_cwnd", TCP_COLUMNS, lambda s: {
        "in_flight": s.in_flight(), "wmem_alloc": s.mem.get("wmem_alloc")})


def tcp_sampler(host_pids: dict[str, int], interval: float = 0.5,
                mptcp: bool = False) -> Sampler[Any]:
    """tcp_info of every established TCP socket of these hosts every ``interval`` s, read
    in-process over sock_diag (one netlink socket per host, opened here); the samples are
    {host: [SockInfo]}.  ``mptcp``: mptcp_info of their MPTCP connections instead.
    stop_tcp_sampler (stop_mptcp_sampler) closes the sockets."""
    from emulator.sockdiag import HostSockets
    socks = HostSockets(host_pids)
    sampler: Sampler[Any] = Sampler("mptcp_info" if mptcp else "tcp_info",
                                    socks.dump_mptcp if mptcp else socks.dump, interval,
                                    first=True)
    sampler.sockets = socks  # type: ignore[attr-defined]
    return sampler


def stop_tcp_sampler(sampler: Sampler[Any], path: Path) -> list[dict[str, Any]]:
    """Stop it, close its sockets, write every sample to ``path`` (CSV) and return the rows."""
    return _stop_socket_sampler(sampler, path, tcp_rows, [
        "time", "host", "saddr", "sport", "daddr", "dport", *TCP_COLUMNS, "in_flight",
        "wmem_alloc"])


#: mptcp_info columns kept per MPTCP connection and sample (mptcp_samples.csv): the
#: connection-level byte counters (data sequence space: what the application wrote and
#: read, whatever subflow carried it)
MPTCP_COLUMNS = ("token", "subflows", "bytes_sent", "bytes_retrans", "bytes_acked",
                 "bytes_received", "retransmits")


def mptcp_rows(when: float, dumps: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """One look at every host's MPTCP connections as CSV rows (emulator.sockdiag, mptcp=True);
    ``data_in_flight``: bytes written to the connection and not yet acked at the data level
    (write_seq - snd_una)."""
    return _socket_rows(when, dumps, "bytes_received", MPTCP_COLUMNS, lambda s: {
        "data_in_flight": (s.info["write_seq"] - s.info["snd_una"]) % 2**64})


def stop_mptcp_sampler(sampler: Sampler[Any], path: Path) -> list[dict[str, Any]]:
    """Stop it, close its sockets, write every sample to ``path`` (CSV) and return the rows."""
    return _stop_socket_sampler(sampler, path, mptcp_rows, [
        "time", "host", "saddr", "sport", "daddr", "dport", *MPTCP_COLUMNS, "data_in_flight"])


def _stop_socket_sampler(sampler: Sampler[Any], path: Path,
                         rows_of: Callable[[float, dict[str, list[Any]]],
                                           list[dict[str, Any]]],
                         cols: list[str]) -> list[dict[str, Any]]:
    try:
        samples = sampler.stop()
    finally:
        sampler.sockets.close()  # type: ignore[attr-defined]
    rows = [r for t, dumps in samples for r in rows_of(t, dumps)]
    with open(path, "w", newline="", encoding="ascii") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return rows
