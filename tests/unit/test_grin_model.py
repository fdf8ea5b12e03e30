"""Unit tests of the GRIN hop-count model (model.grin), with hand-solved cases."""

import random
from collections import Counter

import networkx as nx
import pytest

from model.grin import (
    CORE,
    PATTERNS,
    GrinTopology,
    active_servers,
    evaluate_instance,
    grin_overlay,
    grin_topology,
    hn_paths,
    hop_count_table,
    max_flow_edge,
    max_flow_hn,
    max_flow_path_set,
    path_length,
    pattern_options,
    sampled_flow,
    summarize,
)
from topos import traffic

TOL = 1e-6
T0 = ("tor", 0)


def hand_topology() -> GrinTopology:
    """One rack of 8: 0-1, 3-1, 1-2 (a star around 1 with tail 2), 4-6, 5-7.

    Connections 0->4 and 3->5. Up capacity of {0,1,2,3} is 4 uplinks, and
    4 and 5 can each take 2 (own downlink + neighbour's), so the optimum is 4:
    0->4 direct + 0-1-up-6-4, 3->5 direct + 3-1-2-up-7-5 (two hops before the
    uplink: h2). Under h1 uplink 2 is out of reach (two hops from 0 and 3), so
    only uplinks 0, 1, 3 remain: h1 = 3.
    """
    return GrinTopology(1, 8, [(0, 1), (3, 1), (1, 2), (4, 6), (5, 7)])


HAND_CONNS = [(0, 4), (3, 5)]


# ------------------------------------------------------------------- overlay


@pytest.mark.parametrize("degree", range(0, 8))
def test_in_rack_overlay_invariants(degree):
    topo = grin_topology(3, 8, degree, seed=degree)
    links = topo.grin_links
    assert len(links) == 3 * 8 * degree // 2
    assert len(set(links)) == len(links)
    assert all(a != b for a, b in links)
    assert all(topo.rack_of(a) == topo.rack_of(b) for a, b in links)
    assert all(topo.degree(s) == degree for s in range(topo.n_servers))


@pytest.mark.parametrize("racks,servers,degree", [(2, 5, 3), (4, 5, 3), (3, 4, 4), (6, 20, 5)])
def test_cross_rack_overlay_invariants(racks, servers, degree):
    topo = grin_topology(racks, servers, degree, placement="cross", seed=1)
    links = topo.grin_links
    assert len(set(links)) == len(links) == racks * servers * degree // 2
    for a, b in links:
        ra, rb = topo.rack_of(a), topo.rack_of(b)
        assert ra != rb and (ra - rb) % racks in (1, racks - 1)  # adjacent racks on a ring
    assert all(topo.degree(s) == degree for s in range(topo.n_servers))


def test_overlay_is_deterministic_per_seed():
    assert grin_overlay(6, 20, 3, seed=5) == grin_overlay(6, 20, 3, seed=5)
    assert sorted(grin_overlay(6, 20, 3, seed=5)) != sorted(grin_overlay(6, 20, 3, seed=6))
    assert grin_overlay(4, 6, 3, "cross", seed=2) == grin_overlay(4, 6, 3, "cross", seed=2)


@pytest.mark.parametrize("args,kwargs", [
    ((1, 4, 4), {}),                         # degree must be below servers per rack
    ((2, 5, 3), {}),                         # 5 servers x 3 ports is odd: no matching
    ((2, 4, -1), {}),                        # negative degree
    ((1, 4, 1), {"placement": "cross"}),     # no neighbouring rack
    ((3, 4, 3), {"placement": "cross"}),     # odd degree on an odd ring of racks
    ((2, 3, 4), {"placement": "cross"}),     # more links than servers next door
    ((2, 4, 1), {"placement": "diagonal"}),  # unknown placement
])
def test_impossible_degrees_raise(args, kwargs):
    with pytest.raises(ValueError):
        grin_overlay(*args, **kwargs)


def test_bad_links_raise():
    with pytest.raises(ValueError):
        GrinTopology(1, 4, [(0, 0)])
    with pytest.raises(ValueError):
        GrinTopology(1, 4, [(0, 1), (1, 0)])
    with pytest.raises(ValueError):
        GrinTopology(1, 4, [(0, 4)])


def test_capacity_model():
    topo = grin_topology(3, 4, 1, seed=0)
    g = topo.to_networkx()
    assert g[0][T0]["capacity"] == g[T0][0]["capacity"] == 1.0
    assert g[T0][CORE]["capacity"] == 4.0  # non-blocking: a whole rack's worth
    a, b = topo.grin_links[0]
    assert g[a][b]["capacity"] == g[b][a]["capacity"] == 1.0
    assert topo.non_blocking
    assert g.number_of_edges() == 2 * (12 + 3 + 6)


# ---------------------------------------------------------------------- paths


def test_h1_paths_hand_checked():
    topo = hand_topology()
    assert set(hn_paths(topo, 0, 4, 1)) == {
        (0, T0, 4), (0, 1, T0, 4), (0, T0, 6, 4), (0, 1, T0, 6, 4)}
    # 0->2: via 1's uplink, via 1's downlink, or all horizontal (one hop after
    # the source and one before the destination); 0-1-up-down-1-2 is no path.
    assert set(hn_paths(topo, 0, 2, 1)) == {(0, T0, 2), (0, 1, T0, 2), (0, T0, 1, 2), (0, 1, 2)}
    assert hn_paths(topo, 0, 2, 1)[0] == (0, T0, 2)  # direct path first
    assert hn_paths(topo, 0, 2, 0) == [(0, T0, 2)]


def test_h2_adds_two_hop_segments_and_cross_rack_paths_use_core():
    topo = hand_topology()
    h1, h2 = set(hn_paths(topo, 0, 5, 1)), set(hn_paths(topo, 0, 5, 2))
    assert h1 < h2
    assert (0, 1, 2, T0, 7, 5) in h2 - h1
    two = GrinTopology(2, 2, [(0, 1)])
    assert set(hn_paths(two, 0, 2, 1)) == {(0, T0, CORE, ("tor", 1), 2), (0, 1, T0, CORE, ("tor", 1), 2)}


def test_path_length():
    topo = hand_topology()
    assert path_length(topo, (0, T0, 4)) == 0
    assert path_length(topo, (0, 1)) == 0          # a single horizontal link
    assert path_length(topo, (0, 1, 2)) == 2
    assert path_length(topo, (0, 1, T0, 4)) == 1
    assert path_length(topo, (0, 1, T0, 6, 4)) == 2


# ------------------------------------------------------------------------- LPs


def test_lp_hand_case_h1_below_h2():
    topo = hand_topology()
    assert max_flow_edge(topo, HAND_CONNS) == pytest.approx(4, abs=TOL)
    for form in ("path", "compact"):
        assert max_flow_hn(topo, HAND_CONNS, 0, form) == pytest.approx(2, abs=TOL)
        assert max_flow_hn(topo, HAND_CONNS, 1, form) == pytest.approx(3, abs=TOL)
        assert max_flow_hn(topo, HAND_CONNS, 2, form) == pytest.approx(4, abs=TOL)


def test_lp_one_rack_four_servers_degree_one():
    topo = grin_topology(1, 4, 1, seed=3)
    (a, b), (c, d) = topo.grin_links
    # Two uplinks + two downlinks per side: each connection gets 2.
    assert max_flow_edge(topo, [(a, c)]) == pytest.approx(2, abs=TOL)
    assert max_flow_hn(topo, [(a, c)], 1) == pytest.approx(2, abs=TOL)
    # Neighbours: direct path plus the GRIN link itself.
    assert max_flow_edge(topo, [(a, b)]) == pytest.approx(2, abs=TOL)
    assert max_flow_hn(topo, [(a, b)], 1) == pytest.approx(2, abs=TOL)
    # Both of a pair sending across: the pair's two uplinks are the cut.
    assert max_flow_edge(topo, [(a, c), (b, d)]) == pytest.approx(2, abs=TOL)
    # Permutation across the pairs: the 4 uplinks; within pairs: 2 per connection.
    assert max_flow_edge(topo, [(a, c), (c, a), (b, d), (d, b)]) == pytest.approx(4, abs=TOL)
    assert max_flow_edge(topo, [(a, b), (b, a), (c, d), (d, c)]) == pytest.approx(8, abs=TOL)
    assert max_flow_hn(topo, [(a, b), (b, a), (c, d), (d, c)], 1) == pytest.approx(8, abs=TOL)


def test_edge_lp_matches_networkx_single_source():
    topo = grin_topology(2, 6, 3, seed=4)
    g = topo.to_networkx()
    g.add_edge(7, "sink", capacity=100.0)
    g.add_edge(9, "sink", capacity=100.0)
    expected = nx.maximum_flow_value(g, 0, "sink")
    assert max_flow_edge(topo, [(0, 7), (0, 9)]) == pytest.approx(expected, abs=TOL)


def random_instance(racks=2, servers=6, degree=3, pattern="permutation", pct=100, seed=0,
                    placement="rack"):
    topo = grin_topology(racks, servers, degree, placement=placement, seed=seed)
    rng = random.Random(seed)
    act = active_servers(topo.n_servers, pct, rng)
    return topo, traffic.make(pattern, act, rng, **pattern_options(pattern))


@pytest.mark.parametrize("pattern,pct,placement", [
    ("permutation", 50, "rack"), ("all-to-all", 100, "rack"), ("group", 70, "rack"),
    ("random", 100, "cross")])
def test_hn_ordering_and_formulations_agree(pattern, pct, placement):
    topo, conns = random_instance(pattern=pattern, pct=pct, seed=7, placement=placement)
    opt = max_flow_edge(topo, conns)
    vals = {}
    for hops in (0, 1, 2):
        vals[hops] = max_flow_hn(topo, conns, hops, "path")
        assert max_flow_hn(topo, conns, hops, "compact") == pytest.approx(vals[hops], abs=1e-6)
    assert vals[0] <= vals[1] + TOL <= vals[2] + 2 * TOL <= opt + 3 * TOL
    paths = [hn_paths(topo, s, t, 1) for s, t in conns]
    assert max_flow_path_set(topo, paths) == pytest.approx(vals[1], abs=1e-6)


@pytest.mark.parametrize("placement,degree", [("rack", 2), ("cross", 2)])
def test_unrestricted_paths_reach_edge_optimum(placement, degree):
    # Paths that cross the switch once suffice (also with cross-rack links).
    topo, conns = random_instance(2, 4, degree, "permutation", 100, seed=2, placement=placement)
    assert max_flow_hn(topo, conns, None, "path") == pytest.approx(max_flow_edge(topo, conns), abs=1e-6)


def test_permutation_h0_is_one_per_connection():
    topo, conns = random_instance(pct=50, seed=3)
    assert max_flow_hn(topo, conns, 0) == pytest.approx(len(conns), abs=TOL)


# ------------------------------------------------------------- path sampling


def test_sampling_hand_case():
    topo = hand_topology()
    # All four h1 paths of 0->4: direct (1), both length-1 paths blocked, then
    # the length-2 path 0-1-up-6-4 (1).
    assert sampled_flow(topo, [(0, 4)], 1) == pytest.approx(2, abs=TOL)
    assert sampled_flow(topo, HAND_CONNS, 1, n_paths=1) == pytest.approx(2, abs=TOL)
    assert sampled_flow(topo, HAND_CONNS, 2, seed=1) <= 4 + TOL


def test_sampling_is_feasible_and_deterministic():
    topo, conns = random_instance(2, 10, 4, "permutation", 80, seed=1)
    for hops in (1, 2):
        est = sampled_flow(topo, conns, hops, seed=5)
        assert est == sampled_flow(topo, conns, hops, seed=5)
        assert len(conns) - TOL <= est <= max_flow_hn(topo, conns, hops) + TOL


# ------------------------------------------------------------------- traffic


def test_active_servers():
    rng = random.Random(0)
    act = active_servers(120, 30, rng)
    assert len(act) == 36 and len(set(act)) == 36 and act == sorted(act)
    assert active_servers(120, 30, random.Random(0)) == act
    assert len(active_servers(10, 1, rng)) == 2
    with pytest.raises(ValueError):
        active_servers(10, 0, rng)


def test_patterns_are_topos_traffic_patterns_with_the_papers_options():
    # their structure is tested in test_traffic_patterns.py
    assert set(PATTERNS) <= set(traffic.PATTERNS)
    assert pattern_options("group") == {"size": 4}
    assert pattern_options("all-to-all", a2a_cap=7) == {"cap": 7}
    assert pattern_options("permutation") == {} == pattern_options("random")
    act = list(range(0, 60, 2))
    conns = traffic.make("all-to-all", act, random.Random(5), **pattern_options("all-to-all"))
    assert set(Counter(s for s, _ in conns).values()) == {20}


# --------------------------------------------------------------------- table


def test_table_smoke():
    rows = hop_count_table(2, 4, degrees=[1], patterns=["permutation", "all-to-all"],
                           active_pcts=[50], seeds=2)
    assert [(r.degree, r.pattern) for r in rows] == [(1, "permutation"), (1, "all-to-all")]
    for r in rows:
        assert r.seeds == 2
        assert 0 < r.h1_ratio_worst <= r.h1_ratio <= r.h2_ratio + TOL <= 1 + 2 * TOL
        assert r.sampled_h1_ratio <= r.h1_ratio + TOL
    s = summarize(rows)
    assert 0 <= s["h1_gap_mean"] <= s["h1_gap_worst"] < 1


def test_evaluate_instance_fields():
    topo = hand_topology()
    res = evaluate_instance(topo, HAND_CONNS)
    assert (res.opt, res.h1, res.h2) == pytest.approx((4, 3, 4), abs=TOL)
    assert res.connections == 2
