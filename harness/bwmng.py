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


def series_mean(series: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Mean rate of a series ((unix time, rate) in time order) between unix times t0 and t1
    (NaN if no sample interval reaches into it).

    Each sample is bwm-ng's rate over the time since its previous sample, which is longer
    than asked when bwm-ng runs late on a busy machine (0.5 s asked, 0.5-2.3 s got: fairness,
    2026-11-28); so each rate is weighed by the part of its interval inside the window.  So
    weighted, one interface's samples over a whole run add up to 16.65 MB against its byte
    counter's 16.77 MB."""
    total = weight = 0.0
    for (t_prev, _), (t, rate) in zip(series, series[1:]):
        overlap = min(t, t1) - max(t_prev, t0)
        if overlap > 0:
            total += rate * overlap
            weight += overlap
    return total / weight if weight else float("nan")


def series_by_interface(path: Path, received: bool = False
                        ) -> dict[str, list[tuple[float, float]]]:
    """(unix time, Mb/s) of every sample, per interface and in time order, from one read of
    the file: what the switch transmits on it, or with ``received`` what it receives (a
    run asks for many interfaces: series_mean of each then)."""
    by: dict[str, list[tuple[float, float]]] = {}
    for t, intf, tx, rx in sorted(samples(path)):
        by.setdefault(intf, []).append((t, 8 * (rx if received else tx) / 1e6))
    return by


def coverage_problems(series: dict[str, list[tuple[float, float]]],
                      intfs: list[str] | dict[str, tuple[float, float]],
                      t0: float, t1: float, interval: float) -> dict[str, str]:
    """Interfaces bwm-ng did not sample across their measurement window ([t0, t1], or per
    interface when ``intfs`` maps it to its own window: flows start one after another),
    each with what was covered; ``series``: series_by_interface of the file (its times).

    A sample covers the time since the previous one, so bwm-ng's samples of an interface
    cover the span from its first to its last; up to two intervals plus a second, or a
    tenth of the window, of that span may be missing at an edge.  One sample may span at
    most half the window (more is a meter that stalled, whose rate is mostly from outside
    the window); slower samples on a busy machine are not a gap (a 2.3 s sample at a 6 s
    window's end failed two CI runs and a local one before this rule)."""
    windows = intfs if isinstance(intfs, dict) else {i: (t0, t1) for i in intfs}
    problems = {}
    for intf, (t0, t1) in windows.items():
        ts = [t for t, _ in series.get(intf, [])]
        slack = max(2 * interval + 1, 0.1 * (t1 - t0))
        longest = max((b - a for a, b in zip(ts, ts[1:]) if b > t0 and a < t1), default=0.0)
        if len(ts) < 2 or ts[0] > t0 + slack or ts[-1] < t1 - slack:
            covered = f"{max(ts[0], t0) - t0:.1f}-{min(ts[-1], t1) - t0:.1f} s" \
                if len(ts) > 1 and ts[0] < t1 and ts[-1] > t0 else "none"
            problems[intf] = f"{covered} of {t1 - t0:.1f} s"
        elif longest > (t1 - t0) / 2:
            problems[intf] = f"one sample spans {longest:.1f} s of a {t1 - t0:.1f} s window"
    return problems


def check_coverage(path: Path, series: dict[str, list[tuple[float, float]]],
                   intfs: list[str] | dict[str, tuple[float, float]],
                   t0: float, t1: float, interval: float) -> None:
    """Fail unless bwm-ng sampled every interface across its window (bwm-ng is the
    measurement itself, as in Outcast's offered-rate series); ``series``: series_by_interface
    of ``path``, which the message names."""
    problems = coverage_problems(series, intfs, t0, t1, interval)
    if problems:
        intf, covered = next(iter(problems.items()))
        raise RunError(f"bwm-ng sampled {intf} only partly ({covered} of its window)"
                       f"{f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''}: "
                       f"its data is incomplete ({path})")


def coverage_note(problems: dict[str, str]) -> str | None:
    """One suspect reason for incomplete bwm-ng cross-check data ('None' if complete)."""
    if not problems:
        return None
    intf, covered = next(iter(problems.items()))
    return (f"bwm-ng (the cross-check of iperf3) sampled {len(problems)} interface(s) only "
            f"partly, e.g. {intf}: {covered}; their bwm-ng rates are left empty")
