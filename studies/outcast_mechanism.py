"""Issue #26: why the lone flow loses, point by point, from the arrival tracer.

For every repetition of one or more ``dcrepro run outcast`` folders: the lone flow's share of
its fair share beside what the bottleneck's arrival trace says about the two input ports:

- ``shared_idle_share``: the share of the window in which the shared port (s2's uplink)
  delivered nothing for more than two service times (``analysis.arrivals.idle_share``);
  while s2's uplink queue is backlogged its packets come one service time apart and take
  every slot the bottleneck frees;
- ``lone_in_shared_idle``: the share of the lone flow's accepted packets that arrived inside
  such a silence of the shared port;
- the lone port's drop rate, and the RTOs / fast retransmits of the lone flow and (median) of
  the shared flows, from flows.csv;
- ``lone_early_share``: the share of the lone flow's arrivals that come within a tenth of a
  service time after a shared-port packet, and the acceptance of those and of the later
  ones (``lone_accept_early`` / ``lone_accept_later``): the phase between the lone flow's
  packets and the shared port's stream;
- where the point has releases.csv (the queue's releases, traced since session 15): the
  race for each slot a release frees: the share of the lone flow's arrivals that were the
  first arrival after a release (``lone_first_share``), the acceptance of those and of the
  others, and the median delay after the last release of the lone flow's and of the shared
  port's arrivals (``lone_delay_us``, ``shared_delay_us``), and how often the shared
  port's delay (its phase against the bottleneck's releases) moves by more than 100 us
  from one second to the next (``shared_delay_jumps`` of ``shared_delay_transitions``),
  split by whether either second held a silence of the shared port (a gap over two
  service times): ``jumps_silent`` of ``steps_silent``, ``jumps_quiet`` of ``steps_quiet``.

Per point it recomputes the port statistics from the point folder's arrivals.csv over the
window config.json records (so folders written before these measures existed are read too).
Usage (writes nothing but ``--csv`` when given)::

    .venv/bin/python -m studies.outcast_mechanism default=RUN_FOLDER queue-100=RUN_FOLDER
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from analysis.arrivals import IDLE_GAP, bracket, port_stats
from store import Row, cell, read_csv, write_csv

LONE_PORT = "s1 port 2 (lone)"


#: a lone packet this soon after a shared-port packet (in service times) is "early"
EARLY = 0.1


def _arrivals(point: Path, window: list[float], service_s: float
              ) -> tuple[dict[str, dict[str, Any]], dict[str, float | None]]:
    """Port statistics by port name from a point folder's arrivals.csv, over ``window``,
    the lone flow's arrival phase (``lone_phase``) and, where the point has releases.csv,
    the race for each freed slot (``slot_race``)."""
    rows = read_csv(point / "arrivals.csv")   # harness/arrivals.py writes both in ASCII
    extra = lone_phase(rows, service_s, *window)
    if (point / "releases.csv").exists():
        extra.update(slot_race(rows, read_csv(point / "releases.csv"), window[0], window[1],
                               service_s))
    return {s["port"]: s for s in port_stats(rows, service_s, *window)}, extra


#: a change of the shared port's median delay after a release from one second to the next
#: larger than this is a jump of the phase between the two link clocks (microseconds)
JUMP_US = 100.0


def _by_second(t: list[float], v: list[float], t_lo: float, t_hi: float) -> list[list[float]]:
    """``v`` grouped by the whole second of the window its ``t`` falls in."""
    out: list[list[float]] = [[] for _ in range(max(0, int(t_hi - t_lo)))]
    for x, y in zip(t, v):
        k = int(x - t_lo)
        if 0 <= k < len(out):
            out[k].append(y)
    return out


def slot_race(arrivals: list[dict[str, str]], releases: list[dict[str, str]], t_lo: float,
              t_hi: float, service_s: float) -> dict[str, float | None]:
    """Who takes the slot a release frees.  For each arrival in the window, the time since
    the queue's last release, and whether it is the first arrival since then.  Per port
    (lone, shared): the median delay after a release (microseconds); for the lone flow,
    the share of its arrivals that came first after a release and the acceptance of those
    and of the others."""
    rel = np.array(sorted(float(r["t"]) for r in releases))
    events = sorted((float(r["t"]), str(r["port"]) == LONE_PORT, not int(r["dropped"]))
                    for r in arrivals)
    delay: dict[bool, list[float]] = {True: [], False: []}
    first: list[bool] = []
    accepted: list[bool] = []
    shared_t: list[float] = []            # the shared port's arrival times (delay[False])
    last_seen = -1                        # index of the release the previous arrival followed
    for t, lone, acc in events:
        i = int(np.searchsorted(rel, t, side="right")) - 1
        if i < 0:
            continue
        is_first = i != last_seen
        last_seen = i
        if not t_lo <= t <= t_hi:
            continue
        delay[lone].append((t - rel[i]) * 1e6)
        if lone:
            first.append(is_first)
            accepted.append(acc)
        else:
            shared_t.append(t)
    f, a = np.array(first, dtype=bool), np.array(accepted, dtype=bool)
    med = {k: round(float(np.median(v)), 1) if v else None for k, v in delay.items()}
    # how steady the shared port's phase is: its median delay per second of the window,
    # and how often it moves by more than JUMP_US from one second to the next
    meds = [float(np.median(d)) if d else None
            for d in _by_second(shared_t, delay[False], t_lo, t_hi)]
    per_s = [m for m in meds if m is not None]
    jumps = sum(abs(x - y) > JUMP_US for x, y in zip(per_s, per_s[1:]))
    # steps between two seconds with samples: did the phase jump; did either second hold a
    # silence of the shared port (a gap over IDLE_GAP service times between its packets)
    gaps = np.diff(np.array(shared_t)) if len(shared_t) > 1 else np.empty(0)
    silent = {int(shared_t[i] - t_lo) for i in np.nonzero(gaps > IDLE_GAP * service_s)[0]}
    steps = {True: [0, 0], False: [0, 0]}          # silence? -> [steps, jumps]
    for k, (x, y) in enumerate(zip(meds, meds[1:])):
        if x is not None and y is not None:
            c = steps[k in silent or k + 1 in silent]
            c[0] += 1
            c[1] += abs(x - y) > JUMP_US
    return {"shared_delay_jumps": jumps if len(per_s) > 1 else None,
            "shared_delay_seconds": len(per_s),
            "steps_silent": steps[True][0], "jumps_silent": steps[True][1],
            "steps_quiet": steps[False][0], "jumps_quiet": steps[False][1],
            "lone_first_share": round(float(f.mean()), 4) if f.size else None,
            "lone_accept_first": round(float(a[f].mean()), 4) if f.any() else None,
            "lone_accept_not_first": round(float(a[~f].mean()), 4) if (~f).any() else None,
            "lone_delay_us": med[True], "shared_delay_us": med[False]}


def lone_phase(rows: list[dict[str, str]], service_s: float, t_lo: float, t_hi: float
               ) -> dict[str, float | None]:
    """Where in the shared port's service period the lone flow's packets arrive: for each
    lone arrival between two shared-port arrivals at most 1.5 service times apart, its
    phase (time since the earlier one over their gap); the share of lone arrivals that are
    early (phase < EARLY), and the acceptance of early and of later ones."""
    sel = [r for r in rows if t_lo <= float(r["t"]) <= t_hi]
    shared = np.array(sorted(float(r["t"]) for r in sel if str(r["port"]) != LONE_PORT))
    lone = [r for r in sel if str(r["port"]) == LONE_PORT]
    t = np.array([float(r["t"]) for r in lone])
    before, after = bracket(t, shared, side="left")
    keep = np.isfinite(before) & np.isfinite(after) & (after - before <= 1.5 * service_s)
    e = (t[keep] - before[keep]) / (after[keep] - before[keep]) < EARLY
    a = np.array([not int(r["dropped"]) for r in lone], dtype=bool)[keep]
    return {"lone_early_share": round(float(e.mean()), 4) if e.size else None,
            "lone_accept_early": round(float(a[e].mean()), 4) if e.any() else None,
            "lone_accept_later": round(float(a[~e].mean()), 4) if (~e).any() else None}


def point_rows(label: str, run: Path) -> list[Row]:
    """One row per (N, repetition) of one run folder that has its arrival trace."""
    runtime = json.loads((run / "config.json").read_text()).get("runtime", {})
    summary = {(int(cell(r["flows"])), int(cell(r["run"]))): r
               for r in read_csv(run / "summary.csv") if r.get("run") != "all"}
    flows = read_csv(run / "flows.csv")
    out: list[Row] = []
    for (n, rep), s in sorted(summary.items()):
        key = f"n{n:02d}-run{rep:02d}"
        facts = runtime.get(key, {}).get("arrivals", {})
        if not (run / key / "arrivals.csv").exists() or "window_s" not in facts:
            continue
        ports, phase = _arrivals(run / key, facts["window_s"], facts["service_time_s"])
        lone = ports.get(LONE_PORT, {})
        shared = next((p for name, p in ports.items() if name.startswith("s1 port 3")), {})
        mine = [f for f in flows if int(cell(f["flows"])) == n and int(cell(f["run"])) == rep]
        lone_f = next((f for f in mine if f["role"] == "lone"), {})
        others = [f for f in mine if f["role"] != "lone"]
        out.append({
            "setting": label, "flows": n, "run": rep,
            "lone_share": cell(s["lone_share_of_fair"]),
            "shared_idle_share": shared.get("idle_share"),
            "lone_in_shared_idle": lone.get("accepted_in_others_idle"),
            "lone_accepted": (lone.get("arrivals", 0) or 0) - (lone.get("drops", 0) or 0),
            "lone_drop_rate": lone.get("drop_rate"),
            "shared_drop_rate": shared.get("drop_rate"),
            "lone_rtos": cell(lone_f.get("rtos", "")),
            "lone_fast_retrans": cell(lone_f.get("fast_retrans", "")),
            "shared_rtos_median": _median([cell(f.get("rtos", "")) for f in others]),
            "shared_fast_retrans_median": _median([cell(f.get("fast_retrans", ""))
                                                   for f in others]),
            **phase,
        })
    return out


def _median(values: Sequence[object]) -> float | None:
    v = [float(x) for x in values if isinstance(x, (int, float)) and x == x]
    return round(float(np.median(v)), 4) if v else None


def _count(p: Row, key: str) -> int:
    """A point's count (0 where it has none)."""
    v = p.get(key)
    return v if isinstance(v, int) else 0


def summary_rows(points: list[Row]) -> list[Row]:
    """Per setting and N: medians over the repetitions, outcasts (share < 0.5), and the rank
    correlation between the lone flow's share and the shared port's idle share."""
    out: list[Row] = []
    order = list(dict.fromkeys(str(p["setting"]) for p in points))      # as given
    for label, n in sorted({(str(p["setting"]), _count(p, "flows")) for p in points},
                           key=lambda k: (order.index(k[0]), k[1])):
        mine = [p for p in points if p["setting"] == label and p["flows"] == n]
        share = [cell(p["lone_share"]) for p in mine]
        idle = [p["shared_idle_share"] for p in mine]
        rho = _spearman(share, idle)
        delay = [p.get("shared_delay_us") for p in mine]
        rho_delay = _spearman(*zip(*[(a, b) for a, b in zip(share, delay) if b is not None])) \
            if any(d is not None for d in delay) else None
        out.append({"setting": label, "flows": n, "runs": len(mine),
                    "outcasts": sum(x < 0.5 for x in share),
                    **{f"{k}_median": _median([p.get(k) for p in mine])
                       for k in ("lone_share", "shared_idle_share", "lone_in_shared_idle",
                                 "lone_drop_rate", "shared_drop_rate", "lone_rtos",
                                 "lone_fast_retrans", "shared_rtos_median",
                                 "lone_early_share", "lone_accept_early",
                                 "lone_accept_later", "lone_first_share",
                                 "lone_accept_first", "lone_accept_not_first",
                                 "lone_delay_us", "shared_delay_us")},
                    "shared_delay_jumps": sum(_count(p, "shared_delay_jumps") for p in mine),
                    "shared_delay_transitions": sum(max(0, _count(p, "shared_delay_seconds")
                                                        - 1) for p in mine),
                    **{k: sum(_count(p, k) for p in mine)
                       for k in ("jumps_silent", "steps_silent", "jumps_quiet",
                                 "steps_quiet")},
                    "spearman_share_vs_idle": rho,
                    "spearman_share_vs_shared_delay": rho_delay})
    return out


def _spearman(x: Sequence[object], y: Sequence[object]) -> float | None:
    """Rank correlation, or None with fewer than 3 points or a constant side."""
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return round(float(spearmanr(x, y).statistic), 3)


def markdown(rows: list[Row]) -> str:
    """The summary as a Markdown table."""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |"
              for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", metavar="LABEL=RUN_FOLDER",
                   help="outcast run folders with per-point arrival traces")
    p.add_argument("--csv", type=Path, help="also write every repetition's row here")
    args = p.parse_args(argv)
    points: list[Row] = []
    for item in args.runs:
        label, sep, folder = item.partition("=")
        run = Path(folder)
        if not sep or not (run / "summary.csv").exists():
            print(f"outcast-mechanism: {item!r} is not LABEL=<outcast run folder with "
                  "summary.csv>", file=sys.stderr)
            return 2
        found = point_rows(label, run)
        if not found:
            print(f"outcast-mechanism: {run} has no point with an arrival trace",
                  file=sys.stderr)
            return 1
        points += found
    if args.csv:
        write_csv(args.csv, points)
    print(markdown(summary_rows(points)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
