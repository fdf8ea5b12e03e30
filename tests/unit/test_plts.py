"""plts without a network: validation, the model of sprayed flows, sample windows."""
import random

import pytest

import routing
import topos
from experiments.plts import experiment as plts
from harness.params import typed
from harness.traffic import Flow, window_retransmits
from model.flowmodel import goodput_capacity
from model.network import split_rates
from topos.traffic import pairing


def _params(**kw):
    return typed(plts, {**plts.DEFAULTS, **kw})


@pytest.mark.parametrize("kw,msg", [
    ({"schemes": "ecmp,foo"}, "--schemes"),
    ({"schemes": "rr,rr"}, "distinct"),
    ({"recovery": "old"}, "--recovery"),
    ({"sample": -1}, "--sample"),
    ({"dataplane": "ovs"}, "dataplane does not offer; use --dataplane bpf"),
])
def test_bad_parameters_are_one_line_errors(kw, msg):
    with pytest.raises(ValueError, match=msg) as exc:
        plts.validate(_params(**kw))
    assert "\n" not in str(exc.value)


def test_model_backend_ignores_the_dataplane_and_has_one_recovery():
    params = _params(backend="model", dataplane="ovs", recovery="both")
    plts.validate(params)
    assert plts.recoveries(params) == ["modern"]
    assert plts.recoveries(_params(recovery="both")) == ["modern", "classic"]


def test_sprayed_flows_of_a_permutation_get_the_whole_host_link():
    topo = topos.build("fattree,k=4")
    pairs = dict(pairing(topo.hosts(), random.Random(1)))
    ideal = goodput_capacity(10.0)
    for scheme in ("rnd", "rr", "cnt"):
        plan = routing.make_plan(topo, plts.SCHEMES[scheme])
        rates = plts.model_rates(topo, plan, scheme, 10.0, pairs)
        assert all(abs(r - ideal) < 1e-6 for r in rates.values()), (scheme, rates)
    plan = routing.make_plan(topo, "ecmp")
    ecmp = plts.model_rates(topo, plan, "ecmp", 10.0, pairs, rng=random.Random(1))
    assert max(ecmp.values()) <= ideal + 1e-6


def test_split_rates_freeze_a_flow_at_its_most_loaded_share():
    """Two flows from one edge of a k=4 fat tree: one sprayed (half its packets on each
    uplink), one pinned to the first uplink.  The pinned flow and half of the sprayed one
    share that uplink: max-min gives the sprayed flow 2/3 and the pinned one 2/3 of it."""
    topo = topos.build("fattree,k=4")
    cap = goodput_capacity(10.0)
    a, b = "0_0_2", "0_0_3"
    da, db = "1_0_2", "1_0_3"
    up1, up2 = ("0_0_1", "0_2_1", "4_1_1", "1_2_1", "1_0_1"), \
        ("0_0_1", "0_3_1", "4_2_1", "1_3_1", "1_0_1")
    for p in (up1, up2):
        for s in p:
            assert topo.is_switch(s), s
    rates = split_rates(topo, 10.0, {a: {up1: 0.5, up2: 0.5}, b: {up1: 1.0}},
                        {a: da, b: db})
    assert rates[a] == pytest.approx(2 * cap / 3) and rates[b] == pytest.approx(2 * cap / 3)


def test_window_retransmits_counts_only_intervals_inside_the_window():
    report = {"intervals": [{"sum": {"start": float(i), "end": float(i + 1),
                                     "retransmits": i}} for i in range(10)]}
    assert window_retransmits(report, 2, 5) == 2 + 3 + 4


def test_latency_rows_keep_the_data_connection_inside_its_window():
    f = Flow("0_0_2", "1_0_2", start=1000.0)
    f.subflows = [{"src_ip": "10.0.0.2", "dst_ip": "10.1.0.2", "src_port": 40000,
                   "dst_port": 5201}]
    s = {"saddr": "10.0.0.2", "daddr": "10.1.0.2", "sport": 40000, "dport": 5201, "seq": 1,
         "latency_ns": 250_000}
    samples = [{**s, "at_ns": int(t * 1e9)} for t in (0.5, 3.0, 9.5)] + \
        [{**s, "sport": 40001, "at_ns": int(3e9)}]          # iperf3's control connection
    rows = plts.latency_rows(samples, [f], trim=1, duration=10, mono_to_wall=1000.0,
                             base={"run": 0, "scheme": "rr", "recovery": "modern"})
    assert rows == [{"run": 0, "scheme": "rr", "recovery": "modern", "src": "0_0_2",
                     "dst": "1_0_2", "latency_us": 250.0}]
