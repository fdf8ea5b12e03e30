"""The simulation backend's translation (sim.spec), without ns-3: paths pinned as the plan
chooses them, per-flow addresses, static routes along both directions, refusals."""
from __future__ import annotations

import random

import pytest

import routing
import topos
from routing.walk import all_paths
from sim.spec import SimConfig, SimEntry, build, payload_ceiling, static_routes


def test_payload_ceiling_by_hand():
    # 1448 B of payload per 1448 + 20 (IP) + 32 (TCP with timestamps) + 2 (PPP) bytes
    assert payload_ceiling(10) == pytest.approx(10 * 1448 / 1502)
    assert payload_ceiling(1000) == pytest.approx(964.048, abs=1e-3)


def test_outcast_paths_and_routes():
    topo = topos.build("outcast,n=2")
    plan = routing.make_plan(topo, "st")
    pairs = [(s, "recv") for s in topo.senders()]
    net = build(topo, plan, pairs, SimConfig(), random.Random(1))
    by_src = {f.src: f for f in net.flows}
    assert by_src["lone"].path == ("s1",) and by_src["a1"].path == ("s2", "s1")
    assert by_src["a1"].rev_path == ("s1", "s2")
    # every flow its own /24: source .1, destination .2
    assert {f.src_addr.rsplit(".", 1)[0] for f in net.flows} == \
        {f.dst_addr.rsplit(".", 1)[0] for f in net.flows}
    assert len({f.dst_addr for f in net.flows}) == len(pairs)
    routes = static_routes(net)
    a1 = by_src["a1"]
    assert (a1.dst_addr, "s1") in routes["s2"] and (a1.dst_addr, "recv") in routes["s1"]
    assert (a1.src_addr, "s2") in routes["s1"] and (a1.src_addr, "a1") in routes["s2"]


def test_ecmp_flows_take_a_path_the_plan_allows_and_spread():
    topo = topos.build("fattree,k=4")
    plan = routing.make_plan(topo, "ecmp")
    hosts = topo.hosts()
    pairs = list(zip(hosts, hosts[8:] + hosts[:8]))
    net = build(topo, plan, pairs, SimConfig(), random.Random(3))
    used = set()
    for f in net.flows:
        assert f.path in all_paths(topo, plan, f.src, f.dst)
        assert f.rev_path in all_paths(topo, plan, f.dst, f.src)
        used.add(f.path[2])          # the core switch of an inter-pod path
    assert len(used) > 1             # hashed over several cores, not one


def test_sprays_forward_by_the_plan_tables():
    """Every spray mode is carried by plan forwarding: each switch holds the plan's entry
    per host (mode and neighbours); flows use the hosts' own addresses and a seeded port."""
    topo = topos.build("fattree,k=4")
    h = topo.hosts()
    pairs = [(h[0], h[-1])]
    for mode in ("rnd", "rr", "cnt"):
        plan = routing.make_plan(topo, f"spray,mode={mode}")
        net = build(topo, plan, pairs, SimConfig(), random.Random(1))
        assert net.spray and net.forwarding == "plan" and net.flows[0].path is None
        edge = topo.access_switch(h[0])
        up = next(e for e in net.tables[edge] if e.dst == h[-1])
        assert up.mode == mode and len(up.peers) == 2          # the two aggregation switches
        assert all(not topo.is_switch(p) or p != edge for p in up.peers)
        down = next(e for e in net.tables[edge] if e.dst == h[0])
        assert down == SimEntry(h[0], "forward", (h[0],))
        f = net.flows[0]
        assert f.src_addr == net.addr_of(h[0], edge) and 32768 <= f.src_port < 61000
        # a host's own address: the one on its link to its access switch
        assert net.host_peer(h[0]) == edge and net.host_addr(h[0]) == f.src_addr
        with pytest.raises(ValueError, match="pinned paths cannot"):
            build(topo, plan, pairs, SimConfig(), random.Random(1), forwarding="pinned")


def test_ecmp_by_the_plan_predicts_the_hash_path():
    """Per-flow hashing by the plan: the path the flow model's hash gives the flow's real
    5-tuple (what the simulated switches hash), one of the plan's paths."""
    topo = topos.build("fattree,k=4")
    plan = routing.make_plan(topo, "ecmp")
    h = topo.hosts()
    net = build(topo, plan, [(h[0], h[-1])], SimConfig(), random.Random(5), forwarding="plan")
    f = net.flows[0]
    assert net.forwarding == "plan" and not net.spray
    assert f.path in all_paths(topo, plan, h[0], h[-1])
    assert f.rev_path in all_paths(topo, plan, h[-1], h[0])
    assert static_routes(net) == {}      # the switches' tables route, not host routes
    with pytest.raises(ValueError, match="forwarding must be one of"):
        build(topo, plan, [(h[0], h[-1])], SimConfig(), random.Random(5), forwarding="x")


@pytest.mark.parametrize("cfg, msg", [
    (SimConfig(cc="vegas"), "no ns-3 counterpart"),
    (SimConfig(cc="dctcp"), "needs ECN"),
    (SimConfig(queue_disc="codel"), "queue discipline"),
    (SimConfig(duration=4, trim=2), "leaves no window"),
    (SimConfig(queue=0), "hold >= 1 packet"),
    (SimConfig(delay_us=-1), "propagation delay"),
    (SimConfig(start_jitter_s=20), "start jitter"),
    (SimConfig(ecn=True), "ECN marks need"),
    (SimConfig(queue_disc="red", red_min=60, red_max=20), "RED needs 0 < min < max"),
    (SimConfig(queue_disc="red", red_p=2.0), "maximum probability"),
    (SimConfig(sample=-1), "latency sampling"),
])
def test_bad_config_is_one_line(cfg, msg):
    with pytest.raises(ValueError, match=msg):
        cfg.check()


def test_start_jitter_is_seeded():
    topo = topos.build("outcast,n=3")
    plan = routing.make_plan(topo, "st")
    pairs = [(s, "recv") for s in topo.senders()]
    cfg = SimConfig(start_jitter_s=0.1)
    a = [f.start for f in build(topo, plan, pairs, cfg, random.Random(7)).flows]
    b = [f.start for f in build(topo, plan, pairs, cfg, random.Random(7)).flows]
    assert a == b and all(0 <= x <= 0.1 for x in a) and len(set(a)) == len(a)


def test_packet_jitter_is_bounded_by_one_frame_time():
    SimConfig(bw=10, packet_jitter_us=1000).check()
    with pytest.raises(ValueError, match="one frame's time"):
        SimConfig(bw=1000, packet_jitter_us=100).check()


def test_simulation_only_flags_are_refused_for_the_emulator():
    from experiments.outcast import experiment as outcast
    from harness.common import checked
    for flag in ({"delay_us": 10.0}, {"jitter": 0.1}, {"pkt_jitter_us": 5.0}):
        with pytest.raises(ValueError, match="simulation-only"):
            checked(outcast, {**outcast.PARAMS.defaults(), **flag})
    with pytest.raises(ValueError, match="--backend must be one of emulated, model, sim"):
        checked(outcast, {**outcast.PARAMS.defaults(), "backend": "htsim"})


def test_the_simulated_switches_take_cnt_packets_from_the_dataplane_spec():
    # the sim's switches forward as the BPF switch does, so its cnt=packets ablation too;
    # any other dataplane option is not simulated: one line
    from harness.params import SimFlowParams
    from harness.simrun import sim_config

    def cfg(dataplane: str):  # type: ignore[no-untyped-def]
        return sim_config(SimFlowParams(duration=10, trim=1, bw=5, queue=100, cc="cubic",
                                        seed=1, dataplane=dataplane), 0)

    assert not cfg("bpf").cnt_packets
    assert cfg("bpf,cnt=packets").cnt_packets
    with pytest.raises(ValueError, match="'flows=sampled' is not simulated"):
        cfg("bpf,flows=sampled")


# -- multicast groups (orca --backend sim) ---------------------------------------------------

def _orca_group(spec: str = "orca,receivers=4,racks=2"):  # type: ignore[no-untyped-def]
    from routing.multicast import add_group
    topo = topos.build(spec)
    plan = routing.make_plan(topo, "st")
    add_group(topo, plan, "239.1.1.1", topo.sender, topo.receivers)
    return topo, plan


def test_group_of_the_plan_is_the_tree():
    """The plan's group entries, read back per switch as (input neighbour, outputs), are the
    tree routing.multicast builds: agg from the sender to both ToRs, each ToR to its two
    receivers."""
    from sim.spec import SimHop, group_of_plan, tree_hops
    topo, plan = _orca_group()
    g = group_of_plan(topo, plan, "239.1.1.1", "snd", topo.receivers)
    assert sorted(g.hops, key=lambda h: h.switch) == [
        SimHop("agg", "snd", ("tor1", "tor2")), SimHop("tor1", "agg", ("r1", "r2")),
        SimHop("tor2", "agg", ("r3", "r4"))]
    assert sorted(g.hops, key=lambda h: h.switch) == sorted(
        tree_hops(topo, "snd", topo.receivers), key=lambda h: h.switch)


def test_group_refusals_are_one_line(one_line_error):
    from sim.spec import group_of_plan
    topo, plan = _orca_group()
    with one_line_error("does not reach"):
        group_of_plan(topo, plan, "239.9.9.9", "snd", topo.receivers)   # no such group


def test_replies_route_back_to_the_sender_along_each_members_flow():
    """Every member replies to the sender's own address: one host route per switch on the
    way back (ToR -> agg -> snd), none elsewhere."""
    from sim.spec import group_of_plan, reply_routes
    topo, plan = _orca_group()
    g = group_of_plan(topo, plan, "239.1.1.1", "snd", topo.receivers)
    net = build(topo, plan, [("snd", m) for m in topo.receivers], SimConfig(), random.Random(1))
    addr = net.addr_of("snd", "agg")
    assert reply_routes(net, g) == {"tor1": [(addr, "agg")], "tor2": [(addr, "agg")],
                                    "agg": [(addr, "snd")]}
