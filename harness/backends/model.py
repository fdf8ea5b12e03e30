"""The flow model as a backend: each (sub)flow's path through the plan chosen by a seeded
hash of the 5-tuple the emulator would use, then max-min rates on those paths (goodput),
beside the TCP-like (proportionally fair) rates, over independent subflows and over each
connection's total (coupled, as LIA aims at)."""
from __future__ import annotations

from pathlib import Path

from harness.workload import FlowResult, Measurement, Workload, register
from model.network import (
    rates_on_paths,
    route_by_hash,
    synthetic_subflows,
    tcp_like_rates_on_paths,
)


class ModelBackend:
    name = "model"

    def run(self, w: Workload, out: Path) -> Measurement:
        """The model's rates for every flow of ``w`` (``out`` is not written)."""
        pairs = {f.src: f.dst for f in w.flows}
        if len(pairs) != len(w.flows):
            raise ValueError("the model backend keys connections by source: one flow per "
                             "source host")
        counts = {f.subflows for f in w.flows}
        if len(counts) != 1:
            raise ValueError("the model backend draws one subflow count for every flow")
        n = counts.pop()
        routed = route_by_hash(w.topo, w.plan, pairs,
                               synthetic_subflows(w.topo, pairs, n, w.rng))
        maxmin = rates_on_paths(w.topo, w.bw, pairs, routed)
        tcp = tcp_like_rates_on_paths(w.topo, w.bw, pairs, routed)
        coupled = tcp_like_rates_on_paths(w.topo, w.bw, pairs, routed, coupled=True) \
            if n > 1 else tcp
        paths: dict[str, list[tuple[str, ...]]] = {}
        for r in routed:
            paths.setdefault(r["src"], []).append(tuple(r["path"]))
        flows = tuple(FlowResult(f, maxmin[f.src], tuple(paths[f.src]),
                                 extra={"model_tcp": tcp[f.src],
                                        "model_tcp_coupled": coupled[f.src]})
                      for f in w.flows)
        return Measurement(self.name, flows, tuple(maxmin[f.src] for f in w.flows))


register("model")(ModelBackend)
