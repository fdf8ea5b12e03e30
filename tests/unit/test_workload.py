"""harness.workload and the model backend (pure): a workload's flows come back with the
model's rates, and the rows have the same columns whatever the backend."""
from __future__ import annotations

import pytest

import routing
import topos
from harness.backends import model as _model  # noqa: F401 - registers "model"
from harness.common import run_rng
from harness.workload import BACKENDS, FlowSpec, Workload, flow_rows
from model.network import rates_on_paths, route_by_hash, synthetic_subflows
from topos.traffic import permutation


def _workload(transport: str = "tcp", subflows: int = 1) -> tuple[Workload, dict[str, str]]:
    topo = topos.build("fattree,k=4")
    plan = routing.make_plan(topo, "ecmp")
    rng = run_rng(1, 0)
    pairs = dict(permutation(topo.hosts(), rng))
    flows = tuple(FlowSpec(s, d, transport, subflows) for s, d in pairs.items())  # type: ignore[arg-type]
    return Workload(topo, plan, 10.0, flows, 30.0, 5.0, 1, 0, rng), pairs


def test_model_backend_gives_what_the_model_gives_on_the_same_draws():
    w, pairs = _workload()
    m = BACKENDS["model"]().run(w, None)  # type: ignore[arg-type]
    # the same draws by hand: the permutation, then the model's port numbers
    rng = run_rng(1, 0)
    topo, plan = w.topo, w.plan
    assert dict(permutation(topo.hosts(), rng)) == pairs
    routed = route_by_hash(topo, plan, pairs, synthetic_subflows(topo, pairs, 1, rng))
    want = rates_on_paths(topo, 10.0, pairs, routed)
    assert [f.goodput_mbps for f in m.flows] == [want[f.spec.src] for f in m.flows]
    assert list(m.model_mbps) == [f.goodput_mbps for f in m.flows]
    rows = flow_rows(w, m)
    assert {"goodput_mbps", "norm_goodput", "model_mbps", "model_tcp_mbps"} <= set(rows[0])
    assert all(r["backend"] == "model" for r in rows)


def test_a_bad_workload_says_why_in_one_line():
    w, _ = _workload()
    with pytest.raises(ValueError, match="no window"):
        Workload(w.topo, w.plan, 10.0, w.flows, 10.0, 5.0, 1, 0)
    with pytest.raises(ValueError, match="one path"):
        FlowSpec("h1", "h2", "tcp", 4)
    with pytest.raises(ValueError, match="at least one flow"):
        Workload(w.topo, w.plan, 10.0, (), 10.0, 1.0, 1, 0)
