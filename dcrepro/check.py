"""``dcrepro check``: before a reproduction, can this machine carry it?  (issue #54 part 4)

In well under a minute, as root, on a real emulated network:

- the CPUs, and what else runs: a quiet window before any network is up (work beside ours,
  from /proc/stat), the load average, and the hypervisor's steal and niced work over the
  whole check (harness/sampling.cpu_times);
- the single-flow calibration of ``dcrepro calibrate`` on the network and rate whose
  calibration the quick runs look up (CHECK_TOPO, CHECK_BW), stored in
  <results>/calibration.json exactly as calibrate stores it, and judged by the runs' own
  trust checks (analysis/fidelity.measurement_reasons);
- the network's bring-up time, median of BRINGUPS, against the reference VM's
  (REFERENCE_BRINGUP_S), which scales the reference's quick-reproduction time
  (REFERENCE_QUICK_S) into an estimate for this machine.

It prints a handful of lines ending in one verdict, fine, busy or slow (``verdict``: each
threshold is a trust check's own, from analysis/fidelity.py), and the estimate.  It
warns; it fails (exit 1) only when it cannot measure at all.
"""
from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.fidelity import BESIDE_NOTED, SUSPECT_RATIO, calibration_key, gap_share
from store import registry

#: the network and rate of the check's flow: the quick runs that show the calibration in
#: their fidelity line are permutation and fairness (a k=4 fat tree: their sweep scripts
#: pass --bw 5, scripts/permutation-sweep.sh and scripts/jellyfish-sweep.sh) and grin (its
#: own network at 10 Mb/s); outcast-fattree's k=4 runs at 10 Mb/s show none
#: (tests/unit/test_check.py holds these to the scripts and the experiments' defaults)
CHECK_TOPO = "fattree,k=4"
CHECK_BW = 5.0
#: the flow: 10 s with 2 s trimmed at each end, a 6-s window.  (A lone flow queues at its
#: sender's own link, so the switch ports seldom hold a backlog and the dequeue-gap check
#: has few busy gaps to judge: it is shown when measured.)
CHECK_DURATION = 10.0
CHECK_TRIM = 2.0
CHECK_CC = "cubic"             # dcrepro calibrate's default
#: seconds of the quiet window before any network is up (2 CPUs at 100 ticks a second:
#: 600 ticks, so 1 % of the machine is 6 ticks)
QUIET_S = 3.0
#: networks brought up (the last one carries the flow); their median is compared with the
#: reference's, so that one slow start (a fresh clone compiles the BPF switch program in
#: its first) does not count
BRINGUPS = 3
#: the check's own bound (the issue: "at most a minute"), and what it took on the reference
#: VM: 17.2-17.3 s wall in the five runs of REFERENCE_BRINGUP_S
BUDGET_S = 60.0
TOOK_S = 17.0

# -- the reference: the 2-core VM the reproduction's times were measured on ---------------
REFERENCE_CPUS = 2
REFERENCE_DATAPLANE = "bpf"
#: Wall time of each experiment's sweep in the quick reproduction (``./scripts/reproduce.sh``,
#: which runs them in registry order), seconds, on the 2-core reference VM (Debian 12,
#: kernel 6.18), since quick mode runs the headline claims' set-ups on the repetitions they
#: need (issue #54, docs/notebook/2026-12-03-quick-budgets.md): the fresh-clone CI (``.ci/run``)
#: of commit 9767b70, 2026-12-03 09:01-09:18 UTC, from the start times of consecutive run
#: folders (grin-hops: with the report after it); outcast-fattree, back to one repetition per
#: routing after that run, from the CI of 5673e54 the same morning (its st and hashed
#: folders, 24 s + 21 s).  Total 855 s.
REFERENCE_QUICK_S: dict[str, float] = {
    "permutation": 160, "fairness": 175, "outcast": 175, "outcast-fattree": 45, "plts": 99,
    "orca": 25, "grin": 165, "grin-hops": 11,
}
REFERENCE_QUICK_WHEN = "fresh-clone CI, 2026-12-03"
#: The check's bring-up (median of BRINGUPS) on the reference VM, the one the times above
#: come from (2 vCPUs, AMD EPYC, kernel 6.18): the median and the range of five ``dcrepro
#: check`` runs, 2026-12-02, commit 5802ada + this check, bpf, warm program cache
#: (``for i in 1 2 3 4 5; do dcrepro check --out /tmp/ref; done`` as root, nothing else
#: emulating: 0.78, 0.75, 0.78, 0.79, 0.79 s).  A median inside the range counts as the
#: reference's speed.
REFERENCE_BRINGUP_S = (0.78, 0.75, 0.79)
#: the check's calibration entry (CHECK_TOPO at CHECK_BW) also holds the median bring-up
#: under this key: what `dcrepro run --dry-run` reads (``stored_bringup``)
BRINGUP_KEY = "check_bringup_s"


@dataclass(frozen=True)
class Found:
    """What the check measured (the verdict and the estimate read only this)."""

    cpus: int
    #: before any network: the machine's non-niced busy share (work beside ours)
    others_share: float | None
    #: over the whole check: niced work and the hypervisor's steal, shares of the machine
    nice_share: float | None
    steal_share: float | None
    load1: float
    dataplane: str
    #: other registered dataplanes this machine cannot run -> why
    unavailable: Mapping[str, str]
    utilisation: float
    payload_ceiling: float
    cpu_mean: float | None
    gaps: float | None
    #: the runs' own trust checks on the one flow (analysis/fidelity.measurement_reasons)
    reasons: tuple[str, ...]
    bringups: tuple[float, ...]

    @property
    def bringup(self) -> float | None:
        """Median bring-up time of the check's networks, s."""
        return statistics.median(self.bringups) if self.bringups else None


def verdict(f: Found) -> tuple[str, str]:
    """'fine', 'busy' or 'slow', and one sentence: the measured numbers and what they mean.

    slow: the machine cannot keep even one flow exact, by the thresholds every run is
    judged by: one flow alone is flagged by the runs' trust checks (dequeue gaps, CPU
    saturation, losses: analysis/fidelity.measurement_reasons), or reaches less than
    SUSPECT_RATIO of the flow model's rate (a lone flow's model rate is the payload
    ceiling); or it has fewer CPUs than the reference (nothing was measured on fewer).
    busy: work beside the runs (steal, niced work, other work) from BESIDE_NOTED of the
    machine's CPU, the share the trust checks name beside late link dequeues.
    """
    slow = []
    if f.cpus < REFERENCE_CPUS:
        slow.append(f"{f.cpus} CPU, fewer than the reference's {REFERENCE_CPUS} (the "
                    "reproduction's times and checks were measured on 2)")
    if f.reasons:
        slow.append(f"one flow alone is flagged by the runs' trust checks: {f.reasons[0]}")
    ratio = f.utilisation / f.payload_ceiling if f.payload_ceiling else 0.0
    if ratio < SUSPECT_RATIO:
        slow.append(f"one flow alone reaches {ratio:.2f} of the flow model's rate (a run is "
                    f"flagged below {SUSPECT_RATIO})")
    busy = [f"{what} {share:.1%} of the CPU" for what, share in (
        ("steal", f.steal_share), ("niced work", f.nice_share),
        ("other work before the network was up", f.others_share))
        if share is not None and share >= BESIDE_NOTED]
    if slow:
        return "slow", "; ".join(slow + busy) + (
            ": nearly every emulated run here will be flagged ('run not trusted'); the "
            "verdicts to quote are the committed reference's (README)")
    if busy:
        return "busy", ", ".join(busy) + (
            f" (from {BESIDE_NOTED:.0%} the trust checks name it beside late link "
            "dequeues): expect more flagged repetitions, which the intervals leave out, "
            "so more quick verdicts read 'run not trusted' or inconclusive")
    return "fine", (
        f"one flow keeps the trust checks and nothing beside it took {BESIDE_NOTED:.0%} "
        "of the CPU: the quick runs should fare as on the reference VM")


def quick_runs(name: str) -> int:
    """How many repetitions quick mode runs of the experiment ``name`` (its QUICK's count,
    else its default)."""
    mod = registry.module(name)
    return int(mod.QUICK.get("runs", mod.PARAMS.defaults().get("runs", 1)))


def estimate(bringup: float | None, dataplane: str, experiments: Iterable[str],
             runs: int | None = None) -> tuple[float, float, str]:
    """The quick reproduction's sweeps here, seconds (low, high), and why.

    Its time on the reference is part real time (each repetition's traffic: the same on any
    machine) and part computing (networks up and down, tables, figures); the bring-up ratio
    ``r`` here against there scales the second part only, so the time here lies between
    the reference's and ``r`` times it.  A bring-up within the reference's own range, or
    none measured, or another dataplane (not what the reference ran): the reference's.
    ``runs``: every sweep runs that many repetitions (reproduce.sh --runs), and each
    experiment's time scales by it over its quick count (a repetition is nearly all of a
    sweep's time)."""
    names = list(experiments)
    total = float(sum(REFERENCE_QUICK_S.get(n, 0.0) * (
        runs / quick_runs(n) if runs and registry.takes_runs(n) else 1) for n in names))
    missing = [n for n in names if n not in REFERENCE_QUICK_S]
    gap = f"; no time measured for {', '.join(missing)}" if missing else ""
    r, why = speed(bringup, dataplane)
    return total * min(1.0, r), total * max(1.0, r), why + gap


def speed(bringup: float | None, dataplane: str) -> tuple[float, str]:
    """How many times the reference VM's time this machine's computing takes (networks up
    and down, tables, figures; not the traffic's real time), and why: the bring-up here
    against the reference's; 1 within the reference's own range, with none measured, or on
    another dataplane (not what the reference ran).  ``estimate`` and ``dcrepro run
    --dry-run`` (dcrepro/estimate.py) scale by it."""
    med, lo, hi = REFERENCE_BRINGUP_S
    if bringup is None or dataplane.split(",")[0] != REFERENCE_DATAPLANE:
        return 1.0, (f"the 2-core reference's with {REFERENCE_DATAPLANE}, not scaled "
                     f"to this machine's {dataplane}")
    if lo <= bringup <= hi:
        return 1.0, f"bring-up {bringup:.2f} s, within the reference's {lo:.2f}-{hi:.2f} s"
    r = bringup / med
    return r, (f"bring-up {bringup:.2f} s against {med:.2f} s there, {r:.2f}x: that scales "
               "the computing, not the traffic's real time")


def minutes(seconds: float) -> int:
    """Whole minutes, at least 1."""
    return max(1, round(seconds / 60))


def lines(f: Found, stored: Path, experiments: Iterable[str],
          runs: int | None = None) -> list[str]:
    """What the check prints: 4 lines, a fifth on a fine machine with more CPUs than the
    reference; ``runs``: the estimate is for that many repetitions of every experiment."""
    off = "".join(f"; {name} unavailable: {why}" for name, why in f.unavailable.items())
    others = "?" if f.others_share is None else f"{f.others_share:.1%}"
    out = [f"check: {f.cpus} CPUs (the reference VM: {REFERENCE_CPUS}); before the network "
           f"other work took {others} of the CPU, load average {f.load1:.2f}; dataplane "
           f"{f.dataplane}{off}"]
    gaps = "" if f.gaps is None else f", busy-link dequeue gaps on time {f.gaps:.1%}"
    steal = "?" if f.steal_share is None else f"{f.steal_share:.1%}"
    nice = "?" if f.nice_share is None else f"{f.nice_share:.1%}"
    out.append(f"check: one TCP flow on {CHECK_TOPO} at {CHECK_BW:g} Mb/s reaches "
               f"{f.utilisation:.3f} of the link (payload ceiling {f.payload_ceiling:.3f})"
               f"{gaps}, CPU {f.cpu_mean}%; steal {steal}, niced work {nice}; "
               f"stored in {stored}")
    word, why = verdict(f)
    out.append(f"check: {word}: {why}")
    low, high, how = estimate(f.bringup, f.dataplane, experiments, runs)
    span = f"{minutes(low)}" if minutes(low) == minutes(high) else \
        f"{minutes(low)}-{minutes(high)}"
    which = f" with {runs} repetitions each" if runs else ""
    out.append(f"check: the quick reproduction's sweeps{which} take about {span} min here "
               f"({how}); {sum(REFERENCE_QUICK_S.values()):.0f} s on the reference "
               f"({REFERENCE_QUICK_WHEN})")
    if word == "fine" and f.cpus > REFERENCE_CPUS:
        out.append(f"check: {f.cpus} CPUs, {f.cpus / REFERENCE_CPUS:g}x the reference's: "
                   "room for the paper-length runs (./scripts/reproduce.sh --full, hours) "
                   "or more repetitions (./scripts/reproduce.sh --runs N, or one sweep "
                   "script's --runs); one emulation runs at a "
                   "time either way")
    return out


def stored_bringup(out_root: Path, dataplane: str) -> float | None:
    """The bring-up the last ``dcrepro check`` measured and stored under ``out_root``
    (calibration.json), for ``dataplane``; None when it has not run there."""
    import json

    from analysis.fidelity import CALIBRATION_FILE
    try:
        kept = json.loads((out_root / CALIBRATION_FILE).read_text())
    except (OSError, ValueError):
        return None
    entry = kept.get(calibration_key(CHECK_TOPO, CHECK_BW, dataplane.split(",")[0]))
    value = entry.get(BRINGUP_KEY) if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


# -- measuring (root, a real network) -----------------------------------------------------

def _shares(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float | None]:
    """Shares of the machine's CPU time between two harness/sampling.cpu_times: busy
    (non-niced work), nice and steal."""
    total = after["total"] - before["total"]
    return {k: (after[k] - before[k]) / total if total > 0 else None
            for k in ("busy", "nice", "steal")}


def load_average() -> float:
    """The 1-minute load average (/proc/loadavg)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def _bring_up(topo: Any, plan: Any, link: Any, run_dir: Path, run_id: str,
              dataplane: str) -> float:
    """Bring a network up, take it down; its bring-up time, s."""
    from emulator.emulation import Emulation
    with Emulation(topo, plan, link, run_dir, run_id, cc=CHECK_CC,
                   dataplane=dataplane) as emu:
        return emu.facts.bringup_s


def run(out_root: Path, dataplane: str,
        say: Any = print) -> tuple[Found, Path]:
    """Measure (as root, on a real network) and store the calibration; what was found and
    where it is.  ``dataplane``: resolved ('bpf', 'ovs')."""
    import routing
    import topos
    from analysis.fidelity import measurement_reasons
    from emulator.dataplane_registry import REGISTRY, dataplane_class
    from emulator.shaping import LinkSpec
    from harness.sampling import cpu_times

    from .calibrate import measure_flow, store, utc_stamp
    topo = topos.build(CHECK_TOPO)
    plan = routing.make_plan(topo, "ecmp")
    stamp = utc_stamp()
    folder = out_root / "calibration" / f"{stamp}-{CHECK_BW:g}-check"
    unavailable = {name: why for name in REGISTRY
                   if name != dataplane.split(",")[0] and (why := dataplane_class(name)
                                                            .unavailable())}
    load1 = load_average()
    say(f"check: measuring this machine (about {TOOK_S:.0f} s: {QUIET_S:g} s quiet, "
        f"{BRINGUPS} networks up, one {CHECK_DURATION:g}-s flow)")
    t0 = cpu_times()
    time.sleep(QUIET_S)
    quiet = _shares(t0, cpu_times())
    bringups = [_bring_up(topo, plan, LinkSpec(CHECK_BW), folder / f"bringup{i}",
                          f"check-{stamp}-{i}", dataplane) for i in range(1, BRINGUPS)]
    entry, meas, last = measure_flow(topo, CHECK_BW, CHECK_DURATION, CHECK_TRIM, CHECK_CC,
                                     folder, f"check-{stamp}", stamp, dataplane=dataplane)
    whole = _shares(t0, cpu_times())
    # the bring-up beside the calibration: what `dcrepro run --dry-run` scales its estimate
    # by later (speed), without measuring again
    path = store(out_root, {calibration_key(topo.spec, CHECK_BW, dataplane): {
        **entry, BRINGUP_KEY: round(statistics.median((*bringups, last)), 3)}})
    found = Found(cpus=os.cpu_count() or 1, others_share=quiet["busy"],
                  nice_share=whole["nice"], steal_share=whole["steal"], load1=load1,
                  dataplane=dataplane, unavailable=unavailable,
                  utilisation=entry["utilisation"], payload_ceiling=entry["payload_ceiling"],
                  cpu_mean=meas["cpu_mean"], gaps=gap_share(meas["dequeue_gaps"]),
                  reasons=tuple(measurement_reasons(meas)),
                  bringups=(*bringups, last))
    return found, path
