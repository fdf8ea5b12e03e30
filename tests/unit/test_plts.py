"""plts without a network: validation, the model of sprayed flows, sample windows, and the
fabric measurements (harness/fabric.py) plts was the first to ask for."""
import random
from dataclasses import replace

import pytest

import topos
from experiments.plts import experiment as plts
from harness import fabric
from harness.backends.model import model_phase
from harness.backends.sim import SimBackend
from harness.params import typed
from harness.simrun import sim_config, sim_queue
from harness.traffic import Flow, window_retransmits
from model.flowmodel import goodput_capacity
from model.network import split_rates
from topos.traffic import pairing


def _params(**kw):
    return typed(plts, {**plts.PARAMS.defaults(), **kw})


@pytest.mark.parametrize("kw,msg", [
    ({"schemes": "ecmp,foo"}, "--schemes"),
    ({"schemes": "rr,rr"}, "distinct"),
    ({"recovery": "old"}, "--recovery"),
    ({"recovery": "modern,modern"}, "--recovery .*distinct"),
    ({"recovery": ","}, "--recovery"),
    ({"recovery": "noundo", "backend": "sim"}, "--recovery 'noundo': the simulator has"),
    ({"sample": -1}, "--sample"),
    ({"dataplane": "ovs"}, "dataplane does not offer; use --dataplane bpf"),
    ({"dataplane": "ovs", "ecmp_aqm": "red"}, "dataplane does not offer; use --dataplane bpf"),
    ({"ecmp_aqm": "codel"}, "--ecmp-aqm 'codel': --aqm must be one of"),
    ({"ecmp_aqm": "red,min=50,max=20"}, "--ecmp-aqm .*need 1 <= min < max"),
    ({"ecmp_aqm": "red/droptail/"}, "--ecmp-aqm .*must be one of"),
    ({"ecmp_aqm": "red/red,p=0.2"}, "each mode at most once"),
    ({"ecmp_aqm": "red", "schemes": "rr,cnt"}, "--schemes has no ecmp"),
    ({"ecmp_aqm": "ecn", "backend": "model"}, "the flow model has no queues"),
])
def test_bad_parameters_are_one_line_errors(kw, msg, one_line_error):
    with one_line_error(msg):
        plts.validate(_params(**kw))


def test_ecmp_aqm_gives_ecmp_one_network_per_queue_and_the_sprays_the_run_s_own():
    red = "red,min=20,max=60,p=0.1,w=9"
    params = _params(ecmp_aqm="red/droptail", schemes="rr,ecmp")
    plts.validate(params)
    assert plts.variants(params) == [("rr", "droptail"), ("ecmp", red), ("ecmp", "droptail")]
    assert [plts.label(s, a, params) for s, a in plts.variants(params)] == [
        "rr", "ecmp-red", "ecmp"]
    # default: ECMP on --aqm, named as before
    assert plts.variants(_params(schemes="ecmp,rnd")) == [("ecmp", "droptail"),
                                                          ("rnd", "droptail")]
    both = _params(aqm="ecn,k=10", ecmp_aqm="droptail", schemes="ecmp,cnt")
    assert plts.variants(both) == [("ecmp", "droptail"), ("cnt", "ecn,k=10")]
    assert plts.label("ecmp", "droptail", both) == "ecmp-droptail"


def test_port_tiers_name_the_queue_a_packet_meets_leaving_each_switch_port():
    tiers = fabric.port_tiers(topos.build("fattree,k=4"))
    assert len(tiers) == 20 * 4
    assert {t: list(tiers.values()).count(t) for t in set(tiers.values())} == {
        "edge->host": 16, "edge->agg": 16, "agg->edge": 16, "agg->core": 16, "core->agg": 16}
    assert tiers["0_0_1-eth1"] == "edge->host" and tiers["0_0_1-eth3"] == "edge->agg"


def test_queue_rows_per_tier_inside_the_window_with_drops_and_marks():
    tiers = {"a-eth1": "edge->agg", "a-eth2": "edge->agg", "b-eth1": "agg->core"}
    samples = [(0.0, {"a-eth1": 100, "a-eth2": 100, "b-eth1": 100}),      # before the window
               (1.0, {"a-eth1": 0, "a-eth2": 4, "b-eth1": 1}),
               (2.0, {"a-eth1": 2, "a-eth2": 2, "b-eth1": 0})]
    ports = [{"switch": "a", "port": "1", "qdisc_sent_packets": "10", "qdisc_drops": "1",
              "aqm_drops": "0", "aqm_marks": "3"},
             {"switch": "a", "port": "2", "qdisc_sent_packets": "5", "qdisc_drops": "2",
              "aqm_drops": "1", "aqm_marks": "0"},
             {"switch": "z", "port": "9", "qdisc_sent_packets": "7"}]   # not a tiered port
    rows = fabric.queue_rows(samples, tiers, ports, (0.5, 2.5), 5.0, {"run": 0})
    edge, agg = (next(r for r in rows if r["tier"] == t) for t in ("edge->agg", "agg->core"))
    assert edge["samples"] == 4 and edge["mean_pkts"] == 2.0 and edge["max_pkts"] == 4
    assert edge["busy_share"] == 0.75 and edge["mean_ms"] == round(2 * 1514 * 8 / 5e3, 3)
    assert (edge["sent_packets"], edge["tail_drops"], edge["aqm_drops"],
            edge["aqm_marks"]) == (15, 3, 1, 3)
    assert agg["samples"] == 2 and agg["mean_pkts"] == 0.5 and agg["tail_drops"] == 0


def test_retransmissions_around_a_sample_come_from_the_two_looks_around_it():
    rows = [{"time": str(t), "saddr": "a", "daddr": "b", "sport": "1", "dport": "2",
             "total_retrans": str(n)} for t, n in ((1.0, 0), (0.5, 0), (1.5, 4), (2.0, 4))]
    steps = fabric.retrans_steps(rows)[("a", "b", 1, 2)]
    assert steps == [(0.5, 0), (1.0, 0), (1.5, 4), (2.0, 4)]
    assert fabric.retrans_around(steps, 1.2) == 4 and fabric.retrans_around(steps, 1.7) == 0
    assert fabric.retrans_around(steps, 0.7) == 0 and fabric.retrans_around(steps, 3.0) == ""


def test_model_backend_ignores_the_dataplane_and_has_one_recovery():
    params = _params(backend="model", dataplane="ovs", recovery="both")
    plts.validate(params)
    assert plts.recoveries(params) == ["modern"]
    assert plts.recoveries(_params(recovery="both")) == ["modern", "classic"]
    assert plts.recoveries(_params(recovery="modern, noundo")) == ["modern", "noundo"]


def test_noundo_is_classic_with_every_undo_off_and_reads_back_what_it_sets():
    classic, noundo = fabric.RECOVERY["classic"], fabric.RECOVERY["noundo"]
    assert noundo.items() >= classic.items()
    assert {k: noundo[k] for k in noundo.keys() - classic.keys()} == {
        "net.ipv4.tcp_dsack": "0", "net.ipv4.tcp_timestamps": "0", "net.ipv4.tcp_frto": "0"}
    assert set(fabric.RECOVERY_READBACK) == set(classic)


def test_sprayed_flows_of_a_permutation_get_the_whole_host_link():
    """The model view of each scheme's workload: sprayed flows split evenly over the plan's
    paths (a pairing of a fat tree is then link-limited at the hosts); ECMP on hashed paths
    at most that."""
    topo = topos.build("fattree,k=4")
    pairs = dict(pairing(topo.hosts(), random.Random(1)))
    params = _params(topo="fattree,k=4", bw=10.0, backend="model")
    ideal = goodput_capacity(10.0)
    for scheme in ("rnd", "rr", "cnt"):
        w = plts.workload(params, topo, pairs, 0, random.Random(1), scheme, "droptail", "modern")
        assert w.sprayed
        m = model_phase(w, w.phases[0])
        assert all(abs(f.goodput_mbps - ideal) < 1e-6 for f in m.flows), scheme
        assert m.ceiling_mbps == ideal
    w = plts.workload(params, topo, pairs, 0, random.Random(1), "ecmp", "droptail", "modern")
    ecmp = model_phase(w, w.phases[0])
    assert not w.sprayed and max(f.goodput_mbps for f in ecmp.flows) <= ideal + 1e-6
    assert min(f.goodput_mbps for f in ecmp.flows) < ideal - 1e-6, "some hash collision"


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
    rows = fabric.latency_rows(samples, [f], trim=1, duration=10, mono_to_wall=1000.0,
                               base={"run": 0, "scheme": "rr", "recovery": "modern"})
    assert rows == [{"run": 0, "scheme": "rr", "recovery": "modern", "src": "0_0_2",
                     "dst": "1_0_2", "latency_us": 250.0}]


def test_sim_config_carries_red_s_parameters_and_asks_for_ecn():
    """--backend sim: a network on RED gets ns-3's RED with the AQM's own thresholds,
    probability and weight, and hosts that ask for ECN; tail drop otherwise; the workload's
    recovery and latency sampling go with it."""
    params = _params(backend="sim", sample=32)
    topo = topos.build("fattree,k=4")
    pairs = dict(pairing(topo.hosts(), random.Random(1)))
    red = SimBackend.config(params, plts.workload(params, topo, pairs, 0, random.Random(1),
                                                  "ecmp", "red,min=20,max=60,p=0.1,w=9", "modern"))
    assert (red.queue_disc, red.ecn, red.red_min, red.red_max, red.red_p, red.red_wlog,
            red.sample) == ("red", True, 20.0, 60.0, 0.1, 9, 32)
    red.check()
    assert red.recovery == "prr"
    tail = SimBackend.config(params, plts.workload(params, topo, pairs, 1, random.Random(1),
                                                   "rr", "droptail", "classic"))
    assert (tail.queue_disc, tail.ecn, tail.sample, tail.run, tail.recovery) == \
        ("droptail", False, 32, 2, "classic")
    with pytest.raises(ValueError, match="the simulator has modern, classic only"):
        SimBackend.config(params, replace(plts.workload(params, topo, pairs, 0,
                                                        random.Random(1), "rr", "droptail",
                                                        "modern"), recovery="noundo"))
    with pytest.raises(ValueError, match="ECN marking at a fixed threshold is not simulated"):
        sim_queue(sim_config(params, 0), "ecn,k=20", params.queue)
