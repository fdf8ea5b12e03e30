"""The GRIN topology, its addressing and the grin experiment's models (no root)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import topos
from analysis import grin as agrin
from experiments import cli, grin
from model.flowmodel import goodput_capacity
from model.grin import grin_overlay
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
def test_impossible_overlays_are_one_line_errors(spec, msg):
    with pytest.raises((TopologyError, ValueError), match=msg) as exc:
        topos.build(spec)
    assert "\n" not in str(exc.value)


def test_subflow_paths_take_one_horizontal_hop_at_each_end():
    t = topos.build("grin,racks=2,servers=4,degree=1,seed=0")
    u, far = "r0s0", "r1s0"
    v, w = t.neighbours(u)[0], t.neighbours(far)[0]
    ip = lambda h: t.node(h).ip  # noqa: E731
    assert t.subflow_path(ip(u), ip(far)) == [u, "sw", far]
    assert t.subflow_path(t.outgoing[(u, v)], ip(far)) == [u, v, "sw", far]
    assert t.subflow_path(ip(u), t.secondary[(far, w)]) == [u, "sw", w, far]
    # neighbours talk over their own link
    assert t.subflow_path(ip(u), t.secondary[(v, u)]) == [u, v]
    assert t.subflow_path(t.outgoing[(u, v)], ip(v)) == [u, v]


def test_designed_subflows_one_per_horizontal_link_plus_the_direct_one():
    t = topos.build("grin,racks=2,servers=4,degree=3")
    subs = grin.designed_subflows(t, "r0s0", "r1s2")
    assert len(subs) == 1 + 3 + 3 and len(set(subs)) == len(subs)
    assert subs[0] == (t.node("r0s0").ip, t.node("r1s2").ip)


def test_hand_solved_pair_of_neighbours():
    """Two linked servers, u -> t: the direct subflow has the uplinks to itself, the two
    horizontal ones share the link: 2 links' worth, by max-min and by the h1 optimum."""
    params = {**grin.DEFAULTS, "racks": 1, "servers": 2, "degrees": "0,1", "seed": 0}
    t = topos.build(grin.spec(params, 1))
    subs = {"u->t": grin.designed_subflows(t, "r0s0", "r0s1")}
    cap = goodput_capacity(10.0)
    assert grin.maxmin_mbps(t, 10.0, subs)["u->t"] == pytest.approx(2 * cap)
    assert grin.h1_optimum_mbps(params, 1, [(0, 1)]) == pytest.approx(2 * cap)
    assert grin.h1_optimum_mbps(params, 0, [(0, 1)]) == pytest.approx(cap)


@pytest.mark.parametrize("kw,msg", [
    ({"degrees": "1,2"}, "must include 0"),
    ({"degrees": "0,5"}, "at most 9"),
    ({"active": "0,50"}, "--active"),
    ({"servers": 5}, "cannot be matched"),
    ({"backend": "model", "pattern": "group", "active": "10"}, "at least 4"),
])
def test_bad_parameters_are_one_line_errors(kw, msg):
    with pytest.raises(ValueError, match=msg) as exc:
        grin.validate({**grin.DEFAULTS, **kw})
    assert "\n" not in str(exc.value)


def test_model_backend_through_the_cli(tmp_path: Path):
    assert cli.main(["run", "grin", "--backend", "model", "--pattern", "group",
                     "--active", "40,70", "--runs", "1", "--out", str(tmp_path)]) == 0
    run = next((tmp_path / "grin").iterdir())
    summary = {(r["degree"], r["active_pct"]): r
               for r in agrin.summarize(agrin.read_csv(run / "flows.csv"))}
    # the original network gives every connection one uplink's worth at any activity
    assert summary[(0, 40.0)]["h1_optimum_mbps_norm"] == pytest.approx(1.0)
    assert summary[(1, 40.0)]["h1_optimum_mbps_norm"] > 1.0
    assert (run / "throughput.png").exists()
    assert "GRIN1 vs original" in (run / "claims.md").read_text()
    assert json.loads((run / "status.json").read_text())["status"] == "ok"


def test_claims_judge_the_lowest_activity():
    rows = []
    for d, mbps in ((0, 9.0), (1, 17.0), (2, 20.0)):
        rows.append({"degree": str(d), "active_pct": "10", "active": "2", "mbps": str(mbps),
                     "uncoupled_model_mbps": str(mbps), "h1_optimum_mbps": str(mbps)})
    got = {c["claim"]: c["holds"] for c in agrin.claims(agrin.summarize(rows))}
    assert got["GRIN1 vs original at 10 % active (emulated)"] == "yes"    # 1.89x >= 1.8
    assert got["GRIN2 vs original at 10 % active (emulated)"] == "no"     # 2.22x < 2.6
