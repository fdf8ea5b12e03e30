"""bwm-ng, the per-interface rate meter every experiment runs beside iperf3: which switch
interface to watch for a host, and the readers of its CSV (``-o csv -T rate -u bytes``).

Each CSV line is ``unix time, interface, bytes out/s, bytes in/s, ...`` for one sampling
interval; the switch-side interface facing a host sends what the host receives (tx) and
receives what the host sends (rx).
"""
from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from emulator.proc import RunError
from topos.base import Topology


def host_port(topo: Topology, host: str) -> str:
    """The switch-side interface facing ``host``: its tx is what the host receives, its rx
    what the host sends."""
    sw = topo.access_switch(host)
    return f"{sw}-eth{topo.port(sw, host)}"


def samples(path: Path) -> Iterator[tuple[float, str, float, float]]:
    """(unix time, interface, bytes out/s, bytes in/s) of every line of a bwm-ng CSV
    (nothing when the file is missing: bwm-ng writes it only once it has a sample)."""
    if not path.exists():
        return
    with open(path, encoding="ascii", errors="replace") as fh:
        for row in csv.reader(fh):
            if len(row) > 3:
                yield float(row[0]), row[1], float(row[2]), float(row[3])


def window_mbps(path: Path, intf: str, t0: float, t1: float) -> float:
    """Mean transmit rate (Mb/s, L2 bytes) of ``intf`` between unix times t0 and t1 (NaN
    without a sample there)."""
    rates = [tx for t, i, tx, _ in samples(path) if i == intf and t0 <= t <= t1]
    return 8 * sum(rates) / len(rates) / 1e6 if rates else float("nan")


def rx_series(path: Path, intf: str) -> list[tuple[float, float]]:
    """(unix time, Mb/s received by the switch on ``intf``) for every sample of it."""
    return [(t, 8 * rx / 1e6) for t, i, _, rx in samples(path) if i == intf]


def coverage_problems(path: Path, intfs: list[str] | dict[str, tuple[float, float]],
                      t0: float, t1: float, interval: float) -> dict[str, str]:
    """Interfaces bwm-ng did not sample across their measurement window ([t0, t1], or per
    interface when ``intfs`` maps it to its own window: flows start one after another),
    each with what was covered.  Up to two intervals plus a second, or a tenth of the
    window, may be missing at an edge."""
    windows = intfs if isinstance(intfs, dict) else {i: (t0, t1) for i in intfs}
    seen: dict[str, list[float]] = {i: [] for i in windows}
    for t, intf, _, _ in samples(path):
        if intf in seen:
            seen[intf].append(t)
    problems = {}
    for intf, ts in seen.items():
        t0, t1 = windows[intf]
        slack = max(2 * interval + 1, 0.1 * (t1 - t0))
        inside = [t for t in ts if t0 <= t <= t1]
        if not inside or min(inside) > t0 + slack or max(inside) < t1 - slack:
            covered = f"{min(inside) - t0:.1f}-{max(inside) - t0:.1f} s" if inside else "none"
            problems[intf] = f"{covered} of {t1 - t0:.1f} s"
    return problems


def check_coverage(path: Path, intfs: list[str] | dict[str, tuple[float, float]],
                   t0: float, t1: float, interval: float) -> None:
    """Fail unless bwm-ng sampled every interface across its window (bwm-ng is the
    measurement itself, as in Outcast's offered-rate series)."""
    problems = coverage_problems(path, intfs, t0, t1, interval)
    if problems:
        intf, covered = next(iter(problems.items()))
        raise RunError(f"bwm-ng sampled {intf} over {covered} of the measurement window"
                       f"{f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''}: "
                       f"its data is incomplete ({path})")


def coverage_note(problems: dict[str, str]) -> str | None:
    """One suspect reason for incomplete bwm-ng cross-check data ('None' if complete)."""
    if not problems:
        return None
    intf, covered = next(iter(problems.items()))
    return (f"bwm-ng (the cross-check of iperf3) sampled {len(problems)} interface(s) only "
            f"partly, e.g. {intf}: {covered}; their bwm-ng rates are left empty")
