"""harness.workload and the model backend (pure): a workload's phases come back with the
model's rates, the rows have the same columns whatever the backend, and a folder written
before the goodput column reads as if it had it."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

import routing
import topos
from analysis.summaries import with_goodput
from experiments.permutation.experiment import PARAMS, workload
from harness.common import run_rng
from harness.workload import (
    Bottleneck,
    FlowSpec,
    Phase,
    Workload,
    backend_class,
    flow_rows,
    make,
)
from model.network import rates_on_paths, route_by_hash, synthetic_subflows
from store.views import VIEWS, view, view_of
from topos.traffic import permutation

#: what the model backend needs of a run folder: the progress line's step
_FOLDER = SimpleNamespace(network_done=lambda where: None)


def _params(**kw):  # type: ignore[no-untyped-def]
    return PARAMS(**{**PARAMS.defaults(), "backend": "model", "runs": 1, **kw})


def test_the_model_backend_draws_what_the_model_drew_by_hand():
    params = _params(transport="tcp,mptcp", subflows=4)
    w = workload(params, 0)
    got = make(params, _FOLDER).run(w, None)  # type: ignore[arg-type]
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
    with pytest.raises(ValueError, match="latency sampling must be >= 0"):
        replace(w, latency=-1)
    mptcp = Phase("mptcp", w.phases[0].flows, 2)
    with pytest.raises(ValueError, match="a watched bottleneck carries TCP only"):
        replace(w, phases=(mptcp,), bottleneck=Bottleneck("h1", ()))


def test_a_sprayed_workload_is_split_evenly_and_draws_nothing():
    """Per-packet spraying has no path per flow: the model splits each flow evenly over the
    plan's paths (a permutation of a fat tree then fills every host link) and, unlike the
    hash draw of a per-flow plan, takes nothing from the repetition's random stream."""
    params = _params(transport="tcp", routing="spray,mode=rr")
    w = workload(params, 0)
    assert w.sprayed and w.plan.sprays and not workload(_params(), 0).sprayed
    state = w.rng.getstate()
    (m,) = make(params, _FOLDER).run(w, None)  # type: ignore[arg-type]
    assert w.rng.getstate() == state
    assert {round(f.goodput_mbps, 6) for f in m.flows} == {round(m.ceiling_mbps, 6)}


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


def test_a_workloads_asks_and_names_reach_the_rows_and_the_model():
    """A network of several (``label``) names its facts and flags; without ``tcp_like`` the
    model backend leaves the TCP-like rates to the experiment; every measurement carries
    its (sub)flows' paths, and a flow's non-rate facts are columns of its row."""
    from dataclasses import replace

    from harness.workload import FlowResult, Measurement
    params = _params(transport="mptcp", subflows=2)
    w = replace(workload(params, 3), label="jellyfish", tcp_like=False)
    assert (w.where, w.key) == ("run 3 jellyfish", "run03-jellyfish")
    plain = workload(params, 3)
    assert (plain.where, plain.key) == ("run 3", "run03")
    (m,) = make(params, _FOLDER).run(w, None)  # type: ignore[arg-type]
    assert all(not f.extra for f in m.flows)
    assert len(m.paths) == 2 * len(m.flows)
    assert {p["src"] for p in m.paths} == {f.spec.src for f in m.flows}
    assert all(p["path"] and "five_tuple" in p for p in m.paths)
    f = FlowResult(FlowSpec("h1", "h2"), 5.0, 6.0, 2, {"bwm": 5.2}, {"src_addrs": 2})
    (row,) = flow_rows(w, Measurement("emulated", m.phase, (f,), {"cpu_mean": 40.0}))
    assert (row["norm_goodput"], row["norm_bwm"], row["src_addrs"], row["cpu_mean"]) == \
        (round(5.0 / w.bw, 5), round(5.2 / w.bw, 5), 2, 40.0)


def test_an_addressed_phase_says_what_is_wrong_in_one_line():
    subs = (("10.0.0.1", "10.0.0.2"),)
    with pytest.raises(ValueError, match="one path"):
        Phase("tcp", (FlowSpec("h1", "h2", subs),))
    with pytest.raises(ValueError, match="every flow names its subflows"):
        Phase("mptcp", (FlowSpec("h1", "h2", subs), FlowSpec("h2", "h1")))
    with pytest.raises(ValueError, match="a connection twice"):
        Phase("mptcp", (FlowSpec("h1", "h2", subs), FlowSpec("h1", "h2", subs)))
    # a source may send several connections: they are told apart by their keys
    p = Phase("mptcp", (FlowSpec("h1", "h2", subs), FlowSpec("h1", "h3", subs + subs)))
    assert p.addressed and [p.wanted(f) for f in p.flows] == [1, 2]
    assert [f.key for f in p.flows] == ["h1->h2", "h1->h3"]


def test_the_model_runs_an_addressed_workload_on_its_designed_subflows():
    """GRIN's workload in the model view: each connection's rate is the independent
    max-min sum on its designed subflows' address paths, whatever the source repeats."""
    from experiments.grin import experiment as grin
    from model.grin import address_maxmin
    params = grin.PARAMS(**{**grin.PARAMS.defaults(), "backend": "model", "degrees": "0,1"})
    topo = topos.build(grin.spec(params, 1))
    s = topo.servers
    pairs = [(s[0], s[1]), (s[0], s[5]), (s[3], s[0])]          # s[0] sends twice
    w = grin.workload(params, topo, pairs, 0, 50.0, "grin1", run_rng(1, 0))
    assert w.key == "run00-active50-grin1" and w.phases[0].addressed
    (m,) = make(params, _FOLDER).run(w, None)  # type: ignore[arg-type]
    designed = {f"{a}->{b}": topo.designed_subflows(a, b) for a, b in pairs}
    want = address_maxmin(topo, params.bw, designed)
    assert [f.goodput_mbps for f in m.flows] == [want[f"{a}->{b}"] for a, b in pairs]
    assert [f.subflows for f in m.flows] == [len(designed[f"{a}->{b}"]) for a, b in pairs]
    # one path per designed subflow, each from the source's server to the destination's
    assert len(m.paths) == sum(len(v) for v in designed.values())
    assert all(p["path"][0] == p["src"] and p["path"][-1] == p["dst"] for p in m.paths)
    # a degree-1 network lends each connection at least one horizontal link
    assert all(f.subflows >= 2 for f in m.flows)
    rows = grin.rows_of(m, topo, {"network": "grin1"}, measured=False)
    assert [r["mbps"] for r in rows] == [""] * 3
    assert [r["uncoupled_model_mbps"] for r in rows] == [round(want[f"{a}->{b}"], 4)
                                                         for a, b in pairs]


def test_every_backend_declares_the_view_its_folders_are_read_with():
    """A claim reads a folder's view from the store's list (no backend import there): it is
    the one each backend class declares."""
    for name, v in VIEWS.items():
        assert backend_class(name).view is v and view(name).name == name
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        view("nope")


def test_experiments_ask_the_view_not_the_backends_name():
    """Issue #53: no test of the backend's name inside experiments/; what differs between
    views (what measures goodput, where the queues are, exact drop counts) is a field of
    the view, and the one packet-level view without interfaces is ns-3's."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "experiments"
    said = re.compile(r"""backend(["')\]]*|"[^)]*\))\s*(==|!=|\bin\b)""")
    found = [f"{p.relative_to(root)}:{i}" for p in sorted(root.rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if said.search(line)]
    assert not found, found
    assert [v.name for v in VIEWS.values() if v.simulates] == ["sim"]
    assert all(v.goodput_by and v.queues for v in VIEWS.values())
    assert view_of({}) is VIEWS["emulated"] and view_of({"backend": "model"}) is VIEWS["model"]
