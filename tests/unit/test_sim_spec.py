"""The simulation backend's translation (sim.spec), without ns-3: paths pinned as the plan
chooses them, per-flow addresses, static routes along both directions, refusals."""
from __future__ import annotations

import random

import pytest

import routing
import topos
from routing.walk import all_paths
from sim.spec import SimConfig, build, payload_ceiling, static_routes


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


def test_spray_rnd_uses_global_ecmp_and_other_modes_are_refused():
    topo = topos.build("fattree,k=4")
    pairs = [(topo.hosts()[0], topo.hosts()[-1])]
    net = build(topo, routing.make_plan(topo, "spray,mode=rnd"), pairs, SimConfig(),
                random.Random(1))
    assert net.spray and net.flows[0].path is None and static_routes(net) == {}
    for mode in ("rr", "cnt"):
        with pytest.raises(ValueError, match=f"spray mode {mode} is not available"):
            build(topo, routing.make_plan(topo, f"spray,mode={mode}"), pairs, SimConfig(),
                  random.Random(1))


@pytest.mark.parametrize("cfg, msg", [
    (SimConfig(cc="vegas"), "no ns-3 counterpart"),
    (SimConfig(cc="dctcp"), "needs ECN"),
    (SimConfig(queue_disc="codel"), "queue discipline"),
    (SimConfig(duration=4, trim=2), "leaves no window"),
    (SimConfig(queue=0), "hold >= 1 packet"),
    (SimConfig(delay_us=-1), "propagation delay"),
    (SimConfig(start_jitter_s=20), "start jitter"),
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
    with pytest.raises(ValueError, match="--backend must be one of emulated, sim"):
        checked(outcast, {**outcast.PARAMS.defaults(), "backend": "model"})
