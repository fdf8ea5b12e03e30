"""harness.workload and the model backend (pure): a workload's phases come back with the
model's rates, the rows have the same columns whatever the backend, and a folder written
before the goodput column reads as if it had it."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import routing
import topos
from analysis.summaries import with_goodput
from experiments.permutation.experiment import PARAMS, workload
from harness.common import run_rng
from harness.workload import FlowSpec, Phase, Workload, flow_rows, make
from model.network import rates_on_paths, route_by_hash, synthetic_subflows
from topos.traffic import permutation


def _params(**kw):  # type: ignore[no-untyped-def]
    return PARAMS(**{**PARAMS.defaults(), "backend": "model", "runs": 1, **kw})


def test_the_model_backend_draws_what_the_model_drew_by_hand():
    params = _params(transport="tcp,mptcp", subflows=4)
    w = workload(params, 0)
    got = make(params, SimpleNamespace()).run(w, None)  # type: ignore[arg-type]
    # the same draws by hand: the permutation, then the model's port numbers per transport
    rng = run_rng(params.seed, 0)
    topo = topos.build(params.topo)
    plan = routing.make_plan(topo, params.routing)
    pairs = dict(permutation(topo.hosts(), rng))
    assert w.phases[0].pairs() == pairs
    for m, n in zip(got, (1, 4)):
        routed = route_by_hash(topo, plan, pairs, synthetic_subflows(topo, pairs, n, rng))
        want = rates_on_paths(topo, params.bw, pairs, routed)
        assert [f.goodput_mbps for f in m.flows] == [want[f.spec.src] for f in m.flows]
        assert [f.model_mbps for f in m.flows] == [f.goodput_mbps for f in m.flows]
        assert {f.subflows for f in m.flows} == {n}
    rows = [r for m in got for r in flow_rows(w, m)]
    assert {"goodput_mbps", "norm_goodput", "model_mbps", "norm_model", "model_tcp_mbps",
            "subflows"} <= set(rows[0])
    assert [r["transport"] for r in rows] == ["tcp"] * 16 + ["mptcp"] * 16


def test_a_bad_workload_says_why_in_one_line():
    w = workload(_params(), 0)
    with pytest.raises(ValueError, match="no window"):
        Workload(w.topo, w.plan, 10.0, w.phases, 10.0, 5.0, 1, 0)
    with pytest.raises(ValueError, match="one path"):
        Phase("tcp", (FlowSpec("h1", "h2"),), 4)
    with pytest.raises(ValueError, match="at least one phase"):
        Workload(w.topo, w.plan, 10.0, (), 10.0, 1.0, 1, 0)
    with pytest.raises(ValueError, match="one flow per source"):
        Phase("tcp", (FlowSpec("h1", "h2"), FlowSpec("h1", "h3"))).pairs()


def test_an_older_folders_rows_read_their_backends_rate_as_goodput():
    old = [{"run": "0", "iperf_mbps": "5.0", "norm_iperf": "0.5", "norm_model": "0.6"}]
    assert with_goodput(old, "emulated")[0]["norm_goodput"] == "0.5"
    assert with_goodput(old, "emulated")[0]["goodput_mbps"] == "5.0"
    sim = [{"run": "0", "sim_mbps": "4.0", "norm_sim": "0.4", "norm_model": "0.6"}]
    assert with_goodput(sim, "sim")[0]["norm_goodput"] == "0.4"
    model = [{"run": "0", "model_mbps": "6.0", "norm_model": "0.6"}]
    assert with_goodput(model, "model")[0]["norm_goodput"] == "0.6"
    new = [{"run": "0", "norm_goodput": "0.7", "norm_iperf": "0.1"}]
    assert with_goodput(new, "emulated") == new     # a new folder's own column wins
    assert with_goodput([], "emulated") == []
