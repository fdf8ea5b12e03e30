"""Routing plans: golden files, and behaviour checked by walking packets through the rules."""
import itertools

import networkx as nx
import pytest

import routing
import topos
from routing.plan import Plan, switch_seed
from routing.strategies import k_shortest_paths
from routing.walk import ETH_TYPE_ARP, WalkError, all_paths, first_choice, split, walk


def validate(values: dict[str, object]) -> None:
    """``values`` checked as a permutation run's parameters are (Params.check), the others
    its defaults; the bpf dataplane unless given (the door resolves 'auto' first)."""
    from experiments.permutation.experiment import PermutationParams
    PermutationParams(**{"dataplane": "bpf", **values}).check()


FT4 = topos.build("fattree,k=4")
JF = topos.build("jellyfish,switches=8,ports=4,hosts=6,seed=1")


@pytest.mark.parametrize("topo,spec,golden_name", [
    (FT4, "st", "plan-fattree4-st.json"),
    (FT4, "ecmp", "plan-fattree4-ecmp.json"),
    (FT4, "hashed", "plan-fattree4-hashed.json"),
    (JF, "ksp,k=3", "plan-jellyfish8-ksp3.json"),
])
def test_golden_plans(topo, spec, golden_name, golden):
    plan = routing.make_plan(topo, spec)
    text = plan.dumps()
    golden(golden_name, text)
    assert Plan.loads(text).dumps() == text  # lossless round trip


def _pairs(t):
    return [(a, b) for a, b in itertools.permutations(t.hosts(), 2)]


@pytest.mark.parametrize("topo", [FT4, JF], ids=["fattree4", "jellyfish8"])
@pytest.mark.parametrize("spec", ["st", "ecmp", "hashed", "ksp,k=3"])
def test_every_pair_delivered_loop_free_for_ip_and_arp(topo, spec):
    plan = routing.make_plan(topo, spec)
    for a, b in _pairs(topo):
        for path in all_paths(topo, plan, a, b):
            assert len(set(path)) == len(path)
            assert path[0] == topo.access_switch(a) and path[-1] == topo.access_switch(b)
        walk(topo, plan, a, b, first_choice, eth_type=ETH_TYPE_ARP)


def _expected_shortest(t, a, b):
    g = t.switch_graph()
    return {tuple(p) for p in nx.all_shortest_paths(g, t.access_switch(a), t.access_switch(b))}


@pytest.mark.parametrize("spec", ["ecmp", "hashed"])
def test_multipath_uses_exactly_all_shortest_paths(spec):
    plan = routing.make_plan(FT4, spec)
    for a, b in _pairs(FT4):
        got = all_paths(FT4, plan, a, b)
        assert got == _expected_shortest(FT4, a, b)
    # k=4: 4 paths between pods, 2 inside a pod, 1 under one edge switch
    assert len(all_paths(FT4, plan, "0_0_2", "3_1_3")) == 4
    assert len(all_paths(FT4, plan, "0_0_2", "0_1_2")) == 2


def test_st_is_one_leftmost_path_and_concentrates_on_one_port():
    plan = routing.make_plan(FT4, "st")
    assert all(len(all_paths(FT4, plan, a, b)) == 1 for a, b in _pairs(FT4))
    assert walk(FT4, plan, "1_0_2", "0_0_2", first_choice) == \
        ["1_0_1", "1_2_1", "4_1_1", "0_2_1", "0_0_1"]
    # the outcast pattern: every sender outside the receiver's edge switch enters it on
    # one port; the neighbour under the same edge switch uses its own port
    recv = "0_0_2"
    entry = {}
    for s in FT4.hosts():
        if s == recv:
            continue
        path = walk(FT4, plan, s, recv, first_choice)
        entry[s] = path[-2] if len(path) > 1 else s
    remote = {e for s, e in entry.items() if s != "0_0_3"}
    assert len(entry) - 1 == 14 and remote == {"0_2_1"}
    assert entry["0_0_3"] == "0_0_3"


def _selects(sp):
    return any(a.op == "select" for a in sp.table.values())


def test_ecmp_decides_per_hop_with_per_switch_seed_hashed_only_at_ingress():
    ecmp = routing.make_plan(FT4, "ecmp")
    seeds = {sp.seed for sp in ecmp.switches.values() if _selects(sp)}
    # every edge and aggregation switch hashes, each with its own seed; cores never choose
    assert seeds == {switch_seed(s) for s in FT4.switches()
                     if FT4.node(s).attrs["layer"] in ("edge", "agg")}
    assert len(seeds) == 16
    assert {a.mode for sp in ecmp.switches.values() for a in sp.table.values()} == {"", "hash"}
    hashed = routing.make_plan(FT4, "hashed")
    for name, sp in hashed.switches.items():
        assert _selects(sp) == (FT4.node(name).attrs["layer"] == "edge"), name


def test_hashed_choice_pins_whole_path():
    plan = routing.make_plan(FT4, "hashed")
    seen = []
    for choice in range(4):
        calls = []

        def select(sw, n, choice=choice):
            calls.append(sw)
            return choice % n
        seen.append(tuple(walk(FT4, plan, "0_0_2", "3_1_3", select)))
        assert calls == ["0_0_1"], "hashed must choose once, at the ingress switch"
    assert len(set(seen)) == 4


def test_ksp_paths_loop_free_distinct_shortest_first():
    g = JF.switch_graph()
    for a, b in itertools.permutations(sorted(g.nodes), 2):
        paths = k_shortest_paths(g, a, b, 4)
        assert len(paths) == len({tuple(p) for p in paths}) and 1 <= len(paths) <= 4
        assert all(len(set(p)) == len(p) and p[0] == a and p[-1] == b for p in paths)
        assert [len(p) for p in paths] == sorted(len(p) for p in paths)
        assert len(paths[0]) == nx.shortest_path_length(g, a, b) + 1


def test_ksp_plan_offers_k_paths():
    plan = routing.make_plan(JF, "ksp,k=3")
    a, b = JF.hosts()[0], JF.hosts()[-1]
    got = all_paths(JF, plan, a, b)
    want = {tuple(p) for p in k_shortest_paths(JF.switch_graph(), JF.access_switch(a),
                                                JF.access_switch(b), 3)}
    assert got == want


def test_walk_detects_broken_plans():
    plan = routing.make_plan(FT4, "st")
    plan.switches["4_1_1"].table.clear()
    with pytest.raises(WalkError, match="dropped at 4_1_1"):
        walk(FT4, plan, "1_0_2", "0_0_2", first_choice)


@pytest.mark.parametrize("mode", ["rnd", "rr", "cnt"])
def test_spray_chooses_per_packet_among_all_shortest_next_hops(mode):
    plan = routing.make_plan(FT4, f"spray,mode={mode}")
    assert plan.modes() == {"forward", mode}
    ecmp = routing.make_plan(FT4, "ecmp")
    for a, b in [("0_0_2", "3_1_3"), ("0_0_2", "0_1_3"), ("0_0_2", "0_0_3")]:
        assert all_paths(FT4, plan, a, b) == all_paths(FT4, ecmp, a, b)
        shares = split(FT4, plan, a, b)
        assert set(shares) == all_paths(FT4, plan, a, b)
        assert abs(sum(shares.values()) - 1) < 1e-9
        assert len(set(round(v, 9) for v in shares.values())) == 1, "an even split"


def test_spray_is_refused_by_openflow_before_anything_is_built():
    with pytest.raises(ValueError, match="routing 'spray,mode=rnd' needs rnd, which the ovs "
                                         "dataplane cannot carry; use --dataplane bpf"):
        validate({"routing": "spray,mode=rnd", "dataplane": "ovs"})
    validate({"routing": "spray,mode=rnd", "dataplane": "bpf"})
    with pytest.raises(ValueError, match="mode=x is invalid"):
        validate({"routing": "spray,mode=x", "dataplane": "bpf"})
