"""How long a run takes on this machine, before it starts (``dcrepro run ... --dry-run``,
issue #55).

A run's wall time is its traffic's real time (emulated: every phase's seconds, the same on
any machine) plus computing: the run's own start, tables and figures, each network's
bring-up and tear-down (growing with its nodes), each phase's start and collection.  The
computing is ``COSTS`` (the reference VM's, per backend) for the run's plan
(harness/plan.py), scaled to this machine by one factor:

- from earlier runs: the finished run folders under the results root (this experiment's,
  else any experiment's on the same backend), their real wall time against this model
  for their own plans (the median ratio of their computing to the model's);
- else from the calibration: the bring-up ``dcrepro check`` stored, against the
  reference's (dcrepro/check.speed, the scaling of the check's own estimate);
- else the reference's.

The ns-3 backend's time is its import and its packets (SIM_*); the flow model's is a few
seconds plus its solver's.
"""
from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from harness.plan import RunPlan, default_plan
from store import wall_s

from . import check


@dataclass(frozen=True)
class Costs:
    """Seconds of computing beside the traffic, on the reference VM."""

    #: a run's own: the process, the run folder, tables, figures, claims
    run: float
    #: each network: bring-up and tear-down beyond its nodes, the plan, the flow model
    network: float
    #: each host or switch of a network (namespaces, links, qdiscs, rules, their removal)
    node: float
    #: each traffic phase: starting its flows, collecting and tracing them
    phase: float


#: Fitted (least squares, wall - traffic on run, networks, nodes, phases) on the nine
#: emulated quick runs of the fresh-clone CI of commit 568ad92 on the 2-core reference VM
#: (2026-12-02 23:11-23:21 UTC: permutation, fairness, outcast, outcast-fattree x3, plts,
#: orca, grin; bring-up of a k=4 fat tree 0.78-0.91 s there, the check's 0.80 s).  Every
#: one of those nine lies within 8 % of this model; the other CI folders check it
#: (docs/usage.md, "How long a run takes").
EMULATED = Costs(run=5.7, network=1.86, node=0.0411, phase=0.2)
#: the flow model: the process and figures (2.3-3.4 s for the model runs of outcast,
#: outcast-fattree, plts and orca in results/reference), and per phase a solve; grin-hops'
#: instances (three LPs each) dominate: 7.7-13.4 s for its 16 quick ones in the CI folders
MODEL = Costs(run=3.0, network=0.0, node=0.0, phase=0.4)
#: ns-3 (docs/sim.md, "Wall times"): the import and the first run of a process, then one
#: packet transmission on one link about every SIM_PACKET_S (633 s for 19.6 M at 1 Gb/s);
#: the packets are bounded, not known: every receiver's link full (min(flows, receivers)
#: at the link rate), SIM_HOPS links a packet, an ACK every other packet (x 1.5)
SIM = Costs(run=20.0, network=1.0, node=0.0, phase=0.0)
SIM_PACKET_S = 32e-6
SIM_HOPS = 6
SIM_PACKET_BYTES = 1500
COSTS = {"emulated": EMULATED, "model": MODEL, "sim": SIM}
#: the newest earlier runs read (a results root may hold hundreds)
EARLIER_MAX = 10


@dataclass(frozen=True)
class Estimate:
    """A run's wall time here (s): its traffic's real time and the computing beside it."""

    traffic_s: float
    computing_s: float
    how: str

    @property
    def seconds(self) -> float:
        """Both together."""
        return self.traffic_s + self.computing_s


def real_traffic(plan: RunPlan, backend: str) -> float:
    """Seconds the traffic takes in real time: all of it emulated, none simulated."""
    return plan.traffic_s if backend == "emulated" else 0.0


def computing(plan: RunPlan, backend: str) -> float:
    """The reference VM's seconds of computing for ``plan`` on ``backend`` (COSTS)."""
    c = COSTS.get(backend, EMULATED)
    out = c.run + sum(c.network + c.node * n.nodes + c.phase * n.phases
                      for n in plan.networks)
    if backend == "sim":
        out += sum(SIM_PACKET_S * 1.5 * SIM_HOPS * min(n.flows, n.receivers) * n.bw * 1e6 /
                   (8 * SIM_PACKET_BYTES) * n.traffic_s for n in plan.networks)
    return out


def estimate(plan: RunPlan, backend: str, earlier: Sequence[tuple[RunPlan, float]] = (),
             bringup: float | None = None, dataplane: str = "bpf",
             whose: str = "") -> Estimate:
    """The wall time of ``plan`` on ``backend`` here: the reference's computing scaled by
    the earlier runs (their plans and real wall times, on the same backend; ``whose``
    names them) when there are any, else by the stored bring-up (check.speed)."""
    base = computing(plan, backend)
    ratios = [(wall - real_traffic(p, backend)) / model for p, wall in earlier
              if (model := computing(p, backend)) > 0]
    if ratios:
        k = statistics.median(ratios)
        how = (f"from {len(ratios)} earlier {backend} run{'s' * (len(ratios) > 1)}"
               f"{whose}: {k:.2f}x the reference VM's computing")
    elif backend == "emulated":
        k, how = check.speed(bringup, dataplane)
        if bringup is None:
            how = ("the 2-core reference VM's (no earlier run here; `dcrepro check` "
                   "measures this machine)")
    else:
        k, how = 1.0, f"the reference VM's {backend} costs"
    return Estimate(real_traffic(plan, backend), max(0.0, base * k), how)


def network_shares(plan: RunPlan, backend: str, est: Estimate) -> list[float]:
    """``est`` split over the plan's networks in the order the run brings them up: each
    network's traffic and its share of the computing (the run's own part, its tables and
    figures, is what the split leaves at the end)."""
    c = COSTS.get(backend, EMULATED)
    base = computing(plan, backend)
    k = est.computing_s / base if base > 0 else 0.0
    own = [c.network + c.node * n.nodes + c.phase * n.phases for n in plan.networks]
    if backend == "sim":
        own = [x + SIM_PACKET_S * 1.5 * SIM_HOPS * min(n.flows, n.receivers) * n.bw * 1e6 /
               (8 * SIM_PACKET_BYTES) * n.traffic_s for x, n in zip(own, plan.networks)]
    return [k * x + (n.traffic_s if backend == "emulated" else 0.0)
            for x, n in zip(own, plan.networks)]


def plan_of(mod: ModuleType, params: object) -> RunPlan:
    """The experiment's own plan of a run (``plan``), else harness.plan.default_plan."""
    made = getattr(mod, "plan", None)
    got = made(params) if made is not None else default_plan(params)
    assert isinstance(got, RunPlan)
    return got


def wall_time(run_dir: Path) -> tuple[dict[str, object], float] | None:
    """A finished ('ok') run folder's config and its wall time (s): from its start
    (config.json's started_utc) to its final status (status.json's time_utc, after the
    figures); None for any other folder."""
    try:
        config = json.loads((run_dir / "config.json").read_text())
        status = json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return None
    wall = wall_s(config, status) if isinstance(config, dict) and isinstance(status, dict) \
        else None
    if wall is None or status.get("status") != "ok":
        return None
    return config, wall


def earlier_runs(root: Path, names: Iterable[str], backend: str,
                 modules: dict[str, ModuleType]) -> list[tuple[RunPlan, float]]:
    """The newest EARLIER_MAX finished runs on ``backend`` of the experiments ``names``
    under ``root`` (root/<experiment>/<run id>/), each as its plan and wall time.  A folder
    whose parameters this version no longer reads is left out: an estimate is no place
    for an error."""
    from harness.params import typed
    found: list[tuple[str, RunPlan, float]] = []
    for name in names:
        mod = modules[name]
        kinds = mod.PARAMS.types()
        for run_dir in sorted((root / name).glob("*T*Z-*"))[-EARLIER_MAX:]:
            got = wall_time(run_dir)
            if got is None:
                continue
            config, wall = got
            given = config.get("params")
            if not isinstance(given, dict):
                continue
            try:
                params = typed(mod, {k: v for k, v in given.items() if k in kinds})
                if params.backend_name() != backend:
                    continue
                found.append((run_dir.name, plan_of(mod, params), wall))
            except (ValueError, TypeError, KeyError):   # an old folder: not this
                continue                                # version's parameters
    found.sort(key=lambda x: x[0])
    return [(p, w) for _, p, w in found[-EARLIER_MAX:]]


def minutes(seconds: float) -> str:
    """'45 s', '3 min 20 s' or '2 h 05 min'."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def lines(experiment: str, params: Mapping[str, object], plan: RunPlan, backend: str,
          est: Estimate, out: Path) -> list[str]:
    """What ``--dry-run`` prints: the resolved parameters, the network's size, repetitions x
    traffic time, the estimate and the output folder."""
    values = " ".join(f"{k}={v}" for k, v in params.items())
    nets, reps = len(plan.networks), plan.repetitions
    out_lines = [f"dry run: {experiment} on {backend}; nothing is built or written",
                 f"parameters: {values}"]
    out_lines += [f"network: {size}" for size in plan.sizes()] or \
        ["network: none brought up"]
    per = plan.traffic_s / reps if reps else 0.0
    traffic = ("simulated " if backend == "sim" else "") + "traffic"
    work = (f"{reps} repetition{'s' * (reps != 1)} x {per:.4g} s of {traffic} = "
            f"{plan.traffic_s:.4g} s, on {nets} network{'s' * (nets != 1)} in "
            f"{plan.phases} phase{'s' * (plan.phases != 1)}")
    if backend == "model":      # the flow model has no real-time traffic
        work = (f"{reps} repetition{'s' * (reps != 1)}, {nets} network{'s' * (nets != 1)}, "
                f"{plan.phases} flow-model solve{'s' * (plan.phases != 1)}")
    out_lines.append(f"work: {work}" + (f" ({plan.note})" if plan.note else ""))
    out_lines.append(f"estimate: about {minutes(est.seconds)} here (traffic "
                     f"{minutes(est.traffic_s)} + computing {minutes(est.computing_s)}; "
                     f"{est.how})")
    # a repetition flagged for this machine's timing runs again (harness.params'
    # --repeat-flagged): the estimate is for the planned ones, this the most it adds
    again = int(str(params.get("repeat_flagged", 0) or 0))
    if again > 0 and backend == "emulated" and reps:
        out_lines.append(f"repeats: up to {again} repetition{'s' * (again != 1)} flagged for "
                         f"this machine's timing run again, at most "
                         f"{minutes(again * est.seconds / reps)} more")
    out_lines.append(f"output: {out / experiment}/<UTC time>-<id>/ (a new run folder)")
    return out_lines
