"""The flow model as a backend: each (sub)flow's path through the plan chosen by a seeded
hash of the 5-tuple the emulator would use, then max-min rates on those paths (goodput),
beside the TCP-like (proportionally fair) rates, over independent subflows and over each
connection's total (coupled, as LIA aims at), unless the workload says that its experiment
computes its own variants on the paths (``Workload.tcp_like``).  On a network that picks
MPTCP's subflows by address (GRIN), each connection's designed subflows take the paths their
addresses give, and its rate is the sum of their independent max-min rates.  A flow
sprayed per packet (rnd, rr, cnt) has no one path: it is split evenly over the plan's paths
(routing.walk.split) and the rates are max-min over those shares; the model has no
reordering, so a spray's model rate is what a perfect transport would get."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from emulator import aqm as aqm_spec
from harness.runfolder import RunFolder
from harness.transfer import TransferResult, Transfers
from harness.workload import FlowResult, Measurement, Phase, Workload, register
from model.flowmodel import goodput_capacity
from model.grin import address_maxmin, address_paths
from model.network import (
    rates_on_paths,
    route_by_hash,
    split_rates,
    synthetic_subflows,
    tcp_like_rates_on_paths,
)
from routing.walk import split
from store.views import VIEWS


def sprayed_rates(w: Workload, phase: Phase) -> dict[str, float]:
    """Max-min rates (keyed by source) of a phase whose flows are split evenly over the
    plan's paths (a per-packet spray; draws nothing from ``w.rng``)."""
    pairs = phase.pairs()
    return split_rates(w.topo, w.bw, {s: split(w.topo, w.plan, s, d) for s, d in pairs.items()},
                       pairs)


def model_phase(w: Workload, phase: Phase) -> Measurement:
    """The model's rates for every flow of one phase (draws its port numbers from
    ``w.rng``)."""
    if phase.addressed:
        return addressed_phase(w, phase)
    n = phase.subflows
    ceiling = goodput_capacity(w.bw)
    if w.sprayed:
        rates = sprayed_rates(w, phase)
        return Measurement("model", phase, tuple(FlowResult(f, rates[f.src], rates[f.src], n)
                                                 for f in phase.flows), ceiling_mbps=ceiling)
    pairs = phase.pairs()
    routed = route_by_hash(w.topo, w.plan, pairs, synthetic_subflows(w.topo, pairs, n, w.rng))
    maxmin = rates_on_paths(w.topo, w.bw, pairs, routed)
    extra: dict[str, dict[str, float]] = {f.src: {} for f in phase.flows}
    if w.tcp_like:
        tcp = tcp_like_rates_on_paths(w.topo, w.bw, pairs, routed)
        coupled = tcp_like_rates_on_paths(w.topo, w.bw, pairs, routed, coupled=True) \
            if n > 1 else tcp
        extra = {s: {"model_tcp": tcp[s], "model_tcp_coupled": coupled[s]} for s in pairs}
    flows = tuple(FlowResult(f, maxmin[f.src], maxmin[f.src], n, extra[f.src])
                  for f in phase.flows)
    return Measurement("model", phase, flows, paths=tuple(routed), ceiling_mbps=ceiling)


def addressed_phase(w: Workload, phase: Phase) -> Measurement:
    """Every connection on its designed subflows' address paths: independent max-min."""
    rates = address_maxmin(w.topo, w.bw, {f.key: list(f.subflows) for f in phase.flows})
    flows = tuple(FlowResult(f, rates[f.key], rates[f.key], len(f.subflows))
                  for f in phase.flows)
    paths = tuple({"src": f.src, "dst": f.dst, "src_ip": s, "dst_ip": d, "path": path}
                  for f in phase.flows
                  for (s, d), path in zip(f.subflows, address_paths(w.topo, f.subflows)))
    return Measurement("model", phase, flows, paths=paths,
                       ceiling_mbps=goodput_capacity(w.bw))


@register
class ModelBackend:
    """Seconds for networks far beyond one machine (``--topo fattree,k=16``)."""
    view = VIEWS["model"]

    def __init__(self, params: Any, folder: RunFolder) -> None:
        self.params, self.folder = params, folder

    @staticmethod
    def check(params: Any, w: Workload | Transfers) -> None:
        """The model has no queues: a network's own AQM is refused (the run's --aqm is, by
        NetworkParams.check); and no CPU: a sender's cap is refused."""
        if isinstance(w, Transfers):
            if any(t.cpu for t in w.transfers):
                raise ValueError("--sender-cpu caps a real sending process: it needs "
                                 "--backend emulated (the model has no CPU)")
            return
        if w.aqm and aqm_spec.parse(w.aqm, params.queue).active:
            raise ValueError(f"AQM {w.aqm}: the flow model has no queues; AQM applies to "
                             "emulated and simulated runs only")

    def transfer(self, net: Transfers, out: Path) -> Iterator[TransferResult]:
        """Nothing: the model measures no transfer (the experiment computes its bound)."""
        self.folder.network_done(net.key)
        return iter(())

    def run(self, w: Workload, out: Path) -> list[Measurement]:
        """Every phase's model rates (nothing is written to ``out``)."""
        got = [model_phase(w, p) for p in w.phases]
        self.folder.network_done(w.where)
        return got

