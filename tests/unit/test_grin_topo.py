"""The GRIN topology, its addressing and the grin experiment's models (no root)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import topos
from dcrepro import cli
from experiments.grin import experiment as grin
from experiments.grin import figures as agrin
from harness.params import typed
from model.flowmodel import goodput_capacity
from model.grin import address_maxmin, grin_overlay, network_of
from store import read_csv
from topos.base import TopologyError


def test_overlay_is_the_models_and_addresses_follow_the_paper():
    t = topos.build("grin,racks=2,servers=4,degree=2,seed=3")
    names = t.hosts()
    assert names[:2] == ["r0s0", "r0s1"] and len(names) == 8
    assert sorted(tuple(sorted((names.index(a), names.index(b)))) for a, b in t.horizontal) \
        == sorted(tuple(sorted(p)) for p in grin_overlay(2, 4, 2, "rack", 3))
    for i, h in enumerate(names):
        assert t.node(h).ip == f"10.0.{i + 1}.1"
        assert t.port(h, "sw") == 0                       # the uplink is port 0
        assert len(t.neighbours(h)) == 2
    for s in names:
        prefix = t.node(s).ip.rsplit(".", 1)[0]
        for n, nb in enumerate(t.neighbours(s)):
            # the interface of nb facing s takes s's prefix and GRIN id 2 + n
            assert t.secondary[(nb, s)] == f"{prefix}.{2 + n}"
            assert t.outgoing[(nb, s)] == f"{prefix}.{130 + n}"
            assert t.owner(t.secondary[(nb, s)]) == s and t.holder(t.secondary[(nb, s)]) == nb
    every = [a for h in names for a in t.addresses(h) + t.outgoing_addresses(h)]
    assert len(every) == len(set(every)) == 8 * 5


@pytest.mark.parametrize("spec,msg", [
    ("grin,servers=5,degree=1", "cannot be matched"),
    ("grin,servers=4,degree=4", "needs more than 4 servers"),
    ("grin,racks=1,placement=cross", "at least two racks"),
    ("grin,degree=-1", ">= 0"),
])
def test_impossible_overlays_are_one_line_errors(spec, msg, one_line_error):
    with one_line_error(msg, (TopologyError, ValueError)):
        topos.build(spec)


def test_subflow_paths_take_one_horizontal_hop_at_each_end():
    t = topos.build("grin,racks=2,servers=4,degree=1,seed=0")
    u, far = "r0s0", "r1s0"
    v, w = t.neighbours(u)[0], t.neighbours(far)[0]
    ip = lambda h: t.node(h).ip
    assert t.subflow_path(ip(u), ip(far)) == [u, "sw", far]
    assert t.subflow_path(t.outgoing[(u, v)], ip(far)) == [u, v, "sw", far]
    assert t.subflow_path(ip(u), t.secondary[(far, w)]) == [u, "sw", w, far]
    # neighbours talk over their own link
    assert t.subflow_path(ip(u), t.secondary[(v, u)]) == [u, v]
    assert t.subflow_path(t.outgoing[(u, v)], ip(v)) == [u, v]


def test_designed_subflows_one_per_horizontal_link_plus_the_direct_one():
    t = topos.build("grin,racks=2,servers=4,degree=3")
    subs = t.designed_subflows("r0s0", "r1s2")
    assert not t.full_mesh()                       # 16 would exceed upstream's 9
    assert len(subs) == 1 + 3 + 3 and len(set(subs)) == len(subs)
    assert subs[0] == (t.node("r0s0").ip, t.node("r1s2").ip)
    # the userspace path manager (--pm userspace) has no limit: the full mesh, 4 x 4
    mesh = t.designed_subflows("r0s0", "r1s2", mesh=True)
    assert len(mesh) == 16 == len(set(mesh)) and set(subs) <= set(mesh)
    assert {a for a, _ in mesh} == {t.ip("r0s0"), *t.outgoing_addresses("r0s0")}
    assert {b for _, b in mesh} == set(t.addresses("r1s2"))


def test_full_mesh_where_it_fits_and_its_model():
    """GRIN1 between two isolated servers: the star's three subflows share the source's
    uplink and the destination's downlink (1.5 links' worth with independent subflows);
    the full mesh's four reach the h1 optimum, 2."""
    t = topos.build("grin,racks=2,servers=4,degree=1,seed=0")
    u, far = "r0s0", "r1s0"
    subs = t.designed_subflows(u, far)
    assert t.full_mesh() and len(subs) == 4 == len(set(subs))
    assert {a for a, _ in subs} == {t.node(u).ip, *t.outgoing_addresses(u)}
    assert {b for _, b in subs} == set(t.addresses(far))
    cap = goodput_capacity(10.0)
    assert address_maxmin(t, 10.0, {"c": subs})["c"] == pytest.approx(2 * cap)
    assert grin.h1_optimum_mbps(t, 10.0, [(u, far)]) == pytest.approx(2 * cap)
    assert topos.build("grin,racks=2,servers=4,degree=2").full_mesh()    # 9 subflows


def test_hand_solved_pair_of_neighbours():
    """Two linked servers, u -> t: the direct subflow has the uplinks to itself, the two
    horizontal ones share the link: 2 links' worth, by max-min and by the h1 optimum."""
    params = typed(grin, {"racks": 1, "servers": 2, "degrees": "0,1", "seed": 0})
    t = topos.build(grin.spec(params, 1))
    subs = {"u->t": t.designed_subflows("r0s0", "r0s1")}
    cap = goodput_capacity(10.0)
    assert address_maxmin(t, 10.0, subs)["u->t"] == pytest.approx(2 * cap)
    pair = [("r0s0", "r0s1")]
    assert grin.h1_optimum_mbps(t, 10.0, pair) == pytest.approx(2 * cap)
    assert grin.h1_optimum_mbps(topos.build(grin.spec(params, 0)), 10.0, pair) == \
        pytest.approx(cap)


def test_multihomed_baseline_divides_the_rack_uplinks_over_its_tors():
    t = topos.build("multihomed,racks=2,servers=6,extra=2")
    assert len(t.servers) == 12 and len(t.hosts()) == 36       # 24 port hosts
    assert sorted(t.switches()) == ["sw"] + [f"t{r}_{j}" for r in range(2) for j in range(3)]
    rates = t.link_rates(10.0)
    for r in range(2):
        for j in range(3):
            assert rates[(f"t{r}_{j}", "sw")] == pytest.approx(20.0)  # 6 / 3 links
    u = "r0s4"
    assert t.access_switch(u) == "t0_0" and t.port(u, "t0_0") == 0
    assert [t.access_switch(p) for p in t.neighbours(u)] == ["t0_1", "t0_2"]
    assert t.faces(t.neighbours(u)[0]) == []          # port hosts are never endpoints
    subs = t.designed_subflows(u, "r1s1")
    assert t.full_mesh() and len(subs) == 9 == len(set(subs))   # 3 NICs x 3 NICs
    # the extra NIC j leaves through ToR j of its rack
    assert t.subflow_path(t.outgoing_addresses(u)[1], t.node("r1s1").ip) == \
        [u, "r0s4p2", "t0_2", "sw", "t1_0", "r1s1"]
    assert all(grin.uses_horizontal(t, *s) for s in subs[1:])
    assert not grin.uses_horizontal(t, *subs[0])


def test_multihomed_bounds_hand_solved():
    """Dual-homed, 2 racks x 2 servers, rack uplink worth 2 links split over 2 ToRs (1 each):
    one connection between racks gets both NICs (2 links' worth); two connections out of
    the same rack share its 2 links of uplink (1 each), as on the original network."""
    params = typed(grin, {"racks": 2, "servers": 2, "multihomed": "1"})
    (_, t), = [n for n in grin.networks(params) if n[0] == "mh1"]
    t = topos.build(t)
    cap = goodput_capacity(10.0)
    one = [("r0s0", "r1s0")]
    two = [("r0s0", "r1s0"), ("r0s1", "r1s1")]
    assert grin.h1_optimum_mbps(t, 10.0, one) == pytest.approx(2 * cap)
    assert grin.h1_optimum_mbps(t, 10.0, two) == pytest.approx(cap)
    subs = {f"{s}->{d}": t.designed_subflows(s, d) for s, d in one}
    # the full mesh (NIC i -> NIC j) fills both NICs even with uncoupled subflows
    assert address_maxmin(t, 10.0, subs)["r0s0->r1s0"] == pytest.approx(2 * cap)


def test_grin_on_a_fat_tree_keeps_its_fabric_and_the_papers_addresses():
    t = topos.build("grin-fattree,k=4,degree=1")
    plain = topos.build("fattree,k=4")
    assert t.switches() == plain.switches() and t.hosts() == plain.hosts()
    for h in plain.hosts():        # same cabling, ports and uplinks as the plain fat tree
        assert t.access_switch(h) == plain.access_switch(h)
        assert t.port(h, t.access_switch(h)) == 0
    assert t.node("0_0_2").ip == "10.0.1.1" and t.node("3_1_3").ip == "10.0.16.1"
    # in-rack pairing: the two servers of an edge switch are neighbours
    assert all(t.access_switch(a) == t.access_switch(b) for a, b in t.horizontal)
    u, v = "0_0_2", "0_0_3"
    assert t.subflow_path(t.outgoing[(u, v)], t.node("3_1_2").ip) == \
        [u, v, "fabric", "3_1_2"]
    m = network_of(t)
    assert (m.racks, m.servers_per_rack) == (8, 2) and m.non_blocking


@pytest.mark.parametrize("kw,msg", [
    # network choices
    ({"base": "fattree"}, "needs --base racks"),
    ({"base": "fattree", "multihomed": "0", "degrees": "0,2"}, "needs more than 2 servers"),
    ({"multihomed": "5"}, "at most 9"),
    # the other parameters
    ({"degrees": "1,2"}, "must include 0"),
    ({"degrees": "0,5"}, "at most 9"),
    ({"active": "0,50"}, "--active"),
    ({"servers": 5}, "cannot be matched"),
    ({"backend": "model", "pattern": "group", "active": "10"}, "at least 4"),
    ({"pm": "mptcpd"}, "--pm must be kernel or userspace"),
])
def test_bad_parameters_are_one_line_errors(kw, msg, one_line_error):
    with one_line_error(msg):
        grin.validate(typed(grin, kw))


def test_model_backend_through_the_cli(tmp_path: Path):
    assert cli.main(["run", "grin", "--backend", "model", "--pattern", "group",
                     "--active", "40,70", "--runs", "1", "--out", str(tmp_path)]) == 0
    run = next((tmp_path / "grin").iterdir())
    summary = {(r["network"], r["active_pct"]): r
               for r in agrin.summarize(read_csv(run / "flows.csv"))}
    # the original network gives every connection one uplink's worth at any activity
    assert summary[("grin0", 40.0)]["h1_optimum_mbps_norm"] == pytest.approx(1.0)
    assert summary[("grin1", 40.0)]["h1_optimum_mbps_norm"] > 1.0
    # dual-homing: twice the original while the rack's uplinks allow it
    assert summary[("mh1", 40.0)]["h1_optimum_mbps_norm"] > 1.0
    assert (run / "throughput.png").exists()
    assert "GRIN1 vs original" in (run / "claims.md").read_text()  # analysis.claims
    assert json.loads((run / "status.json").read_text())["status"] == "ok"


def test_link_rates_are_resolved_once_per_run_rate_on_the_topology():
    """Every link's rate both ways, from the run's rate: a GRIN ToR uplink at its multiple,
    a link with its own rate at that; the same read-only mapping is kept for the next
    reader, and a link added afterwards is in the next resolution."""
    t = topos.build("multihomed,racks=2,servers=6,extra=2")
    rates = t.link_rates(10.0)
    assert set(rates) == {e for l in t.links() for e in ((l.a, l.b), (l.b, l.a))}
    assert rates[("sw", "t1_2")] == rates[("t1_2", "sw")] == pytest.approx(20.0)
    assert rates[("r0s0", "t0_0")] == 10.0 and t.link_rates(50.0)[("r0s0", "t0_0")] == 50.0
    assert t.link_rates(10.0) == rates
    with pytest.raises(TypeError):
        rates[("r0s0", "t0_0")] = 1.0          # read-only
    t.add_switch("extra", 999)
    t.add_link("extra", "sw", bw=3.0)
    assert t.link_rates(10.0)[("sw", "extra")] == 3.0 and ("sw", "extra") not in rates
