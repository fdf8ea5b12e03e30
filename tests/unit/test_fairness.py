"""The fairness experiment without root: validation, seeding, the model backend, figures."""
from __future__ import annotations

import argparse
import json
import random

import pytest

import routing
import topos
from emulator.proc import RunError
from experiments.fairness import experiment as fairness
from experiments.fairness.figures import core_balance, fidelity_rows, plot_fairness
from harness.common import checked
from harness.runfolder import RunFolder
from harness.traffic import Flow, check_subflows
from store import read_csv


def params(**over):
    return checked(fairness, dict(fairness.PARAMS.defaults(), quick=False, **over))


@pytest.mark.parametrize("over,msg", [
    ({"fattree": "jellyfish"}, "--fattree must be a fattree spec"),
    ({"fattree": "fattree,k=3"}, "even number"),
    ({"jellyfish": "fattree,k=4"}, "--jellyfish must be a jellyfish spec"),
    ({"jellyfish": "jellyfish,ports=x"}, "not a valid int"),
    ({"k": 0}, "--k must be >= 1"),
    ({"backend": "sim"}, "--backend must be"),
    ({"grow": -1}, "--grow must be >= 0"),
    ({"extra_servers": 1.5}, "--extra-servers must be a fraction"),
    ({"aggregate": "maybe"}, "--aggregate must be"),
    ({"transport": "tcp,mptcp"}, "give one transport"),
    ({"jellyfish": "jellyfish,switches=4,ports=2,hosts=8"}, "cannot be built"),
])
def test_validation_errors_are_one_line(over, msg, one_line_error):
    with one_line_error(msg):
        checked(fairness, dict(fairness.PARAMS.defaults(), quick=False, **over))


def test_flags_and_help():
    ap = argparse.ArgumentParser()
    fairness.add_arguments(ap)
    text = ap.format_help()
    for flag in ("--fattree", "--jellyfish", "--k", "--backend", "--grow", "--extra-servers",
                 "--subflows", "--transport", "--bw", "--runs", "--seed", "--quick"):
        assert flag in text, flag
    assert "used 8" in " ".join(text.split())
    args = ap.parse_args(["--extra-servers", "0.12", "--backend", "model", "--k", "8"])
    assert (args.extra_servers, args.backend, args.k) == (0.12, "model", 8)


def test_jellyfish_variants_grow_and_extra_servers():
    v = fairness.jellyfish_variants(params(grow=2, extra_servers=0.12))
    assert v["jellyfish"]["grow"] == 2 and v["jellyfish"]["hosts"] == 16
    assert v["jellyfish-more"]["hosts"] == 18 and v["jellyfish-more"]["switches"] == 20
    assert list(fairness.jellyfish_variants(params())) == ["jellyfish"]


def test_runs_are_seeded_fresh_and_shared_between_topologies(tmp_path):
    from harness.backends.model import ModelBackend
    p = params()
    ft = topos.build(p["fattree"])
    ftp = routing.make_plan(ft, "ecmp")
    a = fairness.networks(p, 0, (ft, ftp))
    b = fairness.networks(p, 0, (ft, ftp))
    c = fairness.networks(p, 1, (ft, ftp))
    assert [w.topo.spec for w in a] == [w.topo.spec for w in b]
    assert [w.label for w in a] == ["fattree", "jellyfish"] and all(w.rep == 0 for w in a)
    assert a[1].topo.spec != c[1].topo.spec, "every run draws a fresh Jellyfish"
    assert a[0].phases != c[0].phases, "every run draws a fresh permutation"
    assert "seed=" in a[1].topo.spec and a[1].plan.routing == "ksp,k=4"
    # what the emulated backend is asked beyond its flows: counters, complete wire rates;
    # the experiment's own model variants instead of the backend's
    assert all(w.links and w.wire and not w.tcp_like for w in a)
    # equal host counts: the same permutation by host index on both topologies
    idx = {w.label: [w.topo.hosts().index(w.phases[0].pairs()[h]) for h in w.topo.hosts()]
           for w in a}
    assert idx["fattree"] == idx["jellyfish"]
    assert all(s != d for s, d in a[1].phases[0].pairs().items())
    # the model draws the subflows' source ports from the same stream, network after
    # network: the same seed gives the same paths; 8 subflows, one per address
    folder = RunFolder(tmp_path, "fairness", p)
    runs = [[m.paths for w in nets for m in ModelBackend(p, folder).run(w, tmp_path)]
            for nets in (a, b)]
    assert runs[0] == runs[1]
    subs = [x for x in runs[0][1] if x["src"] == "h0_0"]
    assert len(subs) == 8 and len({x["five_tuple"]["src_ip"] for x in subs}) == 8


def test_model_rates_tiny_fattree_full_rate_and_link_loads():
    topo = topos.build("fattree,k=2")
    plan = routing.make_plan(topo, "ecmp")
    h = topo.hosts()
    pairs = {h[0]: h[1], h[1]: h[0]}
    from model.network import route_by_hash, synthetic_subflows
    routed = route_by_hash(topo, plan, pairs, synthetic_subflows(topo, pairs, 4,
                                                                 random.Random(1)))
    pred, load, _ = fairness.model_rates(topo, pairs, routed, 10.0, aggregate=True)
    for s in h:
        assert pred[s]["mbps"] == pytest.approx(10 * 1448 / 1514)
        assert pred[s]["aggregate_mbps"] == pytest.approx(10 * 1448 / 1514)
        assert pred[s]["paths"] == 1
    assert load[(h[0], topo.access_switch(h[0]))] == pytest.approx(10 * 1448 / 1514)
    assert fairness.link_class(topo, h[0], topo.access_switch(h[0])) == "host-edge"
    jf = topos.build("jellyfish,switches=6,ports=3,hosts=4,seed=2")
    assert fairness.link_class(jf, "s0", "h0_0") == "host-tor"
    assert fairness.link_class(jf, *[(l.a, l.b) for l in jf.links()
                                     if jf.is_switch(l.a) and jf.is_switch(l.b)][0]) == "tor-tor"


def test_model_rates_on_traced_paths_per_subflow(tmp_path):
    """The models on given (traced) paths; per-subflow rows carry the models' rates and what
    the backend measured of each subflow; the coupled TCP-like rate of a connection is at
    most its total over independent subflows."""
    topo = topos.build("fattree,k=4")
    a, b, c = "0_0_2", "1_0_2", "1_0_3"
    pairs = {a: b, c: "2_0_2"}
    up = ["0_0_1", "0_2_1", "4_1_1", "1_2_1", "1_0_1"]     # one of a->b's four paths
    routed = [{"src": a, "dst": b, "five_tuple": {"src_ip": "10.0.0.2", "src_port": p},
               "path": up, "mbps": 4.0 + p, "rtt_ms": 1.5} for p in (1, 2)]
    routed.append({"src": c, "dst": "2_0_2", "path": ["1_0_1", "1_2_1", "4_1_1", "2_2_1",
                                                       "2_0_1"], "five_tuple": {}})
    pred, _, subs = fairness.model_rates(topo, pairs, routed, 10.0, False, "propfair")
    full = 10 * 1448 / 1514
    # a's two subflows share one path: together one link's worth; c shares 1_2_1>4_1_1?
    # no: its path crosses 1_2_1->4_1_1 in the other direction, so both get a full link
    assert pred[a]["mbps"] == pytest.approx(full) and pred[a]["paths"] == 1
    assert pred[a]["tcp_mbps"] == pytest.approx(full, rel=1e-4)
    assert pred[a]["tcp_coupled_mbps"] == pytest.approx(full, rel=1e-4)
    assert [s["links"] for s in subs] == [6, 6, 6]
    assert subs[0]["model_mbps"] == pytest.approx(full / 2, abs=1e-3)
    assert subs[0]["path"] == ">".join(up) and subs[0]["src_port"] == 1
    assert (subs[1]["mbps"], subs[1]["rtt_ms"]) == (6.0, 1.5) and "mbps" not in subs[2]


def test_subflow_rates_from_tcp_samples_inside_the_window(tmp_path):
    from harness.backends.emulated import subflow_rates
    from store import read_csv, write_csv
    rows = [{"time": t, "host": "h1", "saddr": "10.0.0.2", "sport": 40000, "bytes_acked": b,
             "rtt": r} for t, b, r in ((100.0, 0, 900), (103.0, 1_000_000, 1000),
                                      (105.0, 2_000_000, 3000), (108.0, 9_000_000, 5000))]
    write_csv(tmp_path / "tcp_samples.csv", rows)
    flows = [Flow("h1", "h2", start=100.0)]
    got = subflow_rates(read_csv(tmp_path / "tcp_samples.csv"), flows, duration=10.0, trim=2.0)
    # window [102, 108]: samples at 103, 105 and 108: 8 MB in 5 s
    assert got == {("10.0.0.2", 40000): {"mbps": 12.8, "rtt_ms": 3.0}}
    assert subflow_rates([], flows, 10.0, 2.0) == {}


def test_subflow_check_tolerates_late_subflows_not_single_path():
    flows = [Flow(f"a{i}", f"b{i}", subflows=[{}] * 8) for i in range(16)]
    assert check_subflows(flows, 8)["subflows_missing"] == 0
    flows[0].subflows = [{}] * 7
    assert check_subflows(flows, 8)["short_connections"] == {"a0->b0": 7}
    for f in flows[1:6]:
        f.subflows = [{}]
    with pytest.raises(RunError, match="fewer than 8 subflows"):
        check_subflows(flows, 8)


def test_model_backend_writes_run_folder_and_figures(tmp_path):
    p = params(backend="model", runs=2, extra_servers=0.12)
    folder = RunFolder(tmp_path, "fairness", p)
    fairness.run(p, folder)
    folder.set_status("ok")
    run = folder.path
    rows = read_csv(run / "flows.csv")
    assert {r["topology"] for r in rows} == {"fattree", "jellyfish", "jellyfish-more"}
    assert len(rows) == 2 * (16 + 16 + 18)
    assert all(0 < float(r["norm_model"]) <= 1448 / 1514 + 1e-4 for r in rows)
    # aggregate (coupled ideal) is never below independent subflows by much, on average
    assert all(r["norm_model_aggregate"] != "" for r in rows)
    summary = read_csv(run / "summary.csv")
    assert {(s["topology"], s["measure"]) for s in summary if s["run"] == "all"} >= {
        ("fattree", "norm_model"), ("jellyfish", "norm_model")}
    fid = {r["topology"]: r for r in read_csv(run / "fidelity.csv")}
    assert float(fid["fattree"]["mean_vs_fattree"]) == 1.0 and fid["jellyfish"]["jain_model"]
    lengths = read_csv(run / "path_lengths.csv")
    ft_share = {int(r["hops"]): float(r["share"]) for r in lengths
                if r["topology"] == "fattree" and r["run"] == "0"}
    assert ft_share[2] == pytest.approx(1 / 15, abs=1e-5)
    assert ft_share[6] == pytest.approx(12 / 15, abs=1e-5)
    links = read_csv(run / "links.csv")
    assert {r["layer"] for r in links if r["topology"] == "fattree"} == {
        "host-edge", "edge-agg", "agg-core"}
    assert "fattree" in core_balance(links)
    config = json.loads((run / "config.json").read_text())
    assert config["runtime"]["run01-jellyfish"]["spec"].startswith("jellyfish,switches=20")
    figs = plot_fairness(run, config)
    names = {f.name for f in figs}
    assert {"rank.png", "path_lengths.png", "utilisation.png", "rank_aggregate.png"} <= names
    assert all(f.stat().st_size > 10_000 for f in figs)


def test_fidelity_rows_emulated_columns():
    rows = [{"topology": t, "run": 0, "servers": 2, "norm_bwm": b, "norm_goodput": i,
             "norm_model": m, "norm_model_aggregate": "", "cpu_mean": 50,
             "cpu_saturated_share": 0.1, "subflows": 8}
            for t, b, i, m in (("fattree", 0.5, 0.48, 0.6), ("fattree", 0.7, 0.67, 0.6),
                               ("jellyfish", 0.8, 0.76, 0.9), ("jellyfish", 0.6, 0.57, 0.9))]
    fid = {r["topology"]: r for r in fidelity_rows(rows)}
    assert fid["jellyfish"]["mean_vs_fattree"] == pytest.approx(1.1667, abs=1e-3)
    assert fid["fattree"]["bwm_over_iperf_median"] == pytest.approx(1.0434, abs=1e-3)
    # payload against payload: iperf3's mean (0.665), not bwm-ng's frames (0.7)
    assert fid["jellyfish"]["emulated_over_model_mean"] == pytest.approx(0.665 / 0.9, abs=1e-3)
    assert fid["fattree"]["cpu_mean"] == 50 and fid["fattree"]["subflows_min"] == 8


def test_subflow_facts_count_sibling_collisions_and_fabric_sharing():
    """Connection a: two subflows on one path (they collide) and one apart; b crosses one
    of a's links.  Host links are not fabric: the shared access link is no collision."""
    from experiments.fairness.figures import subflow_facts, subflow_summary
    row = {"run": "0", "topology": "jellyfish", "model_mbps": "1", "model_tcp_mbps": "1",
           "rtt_ms": "2"}
    rows = [{**row, "src": "a", "dst": "z", "path": "s1>s2>s3", "links": "4", "mbps": "1"},
            {**row, "src": "a", "dst": "z", "path": "s1>s2>s3", "links": "4", "mbps": "2"},
            {**row, "src": "a", "dst": "z", "path": "s1>s4>s3", "links": "4", "mbps": "3"},
            {**row, "src": "b", "dst": "y", "path": "s5>s2>s3>s6", "links": "5", "mbps": "4"}]
    facts = subflow_facts(rows)
    assert [f["siblings"] for f in facts] == [1, 1, 0, 0]
    # s2->s3 carries a's two subflows and b's: 3; s1->s4->s3 only itself
    assert [f["fabric_share"] for f in facts] == [3, 3, 1, 3]
    assert [f["paths"] for f in facts] == [2, 2, 2, 1]
    summary = {(r["by"], r["value"]): r for r in subflow_summary(facts)}
    assert summary[("all", "")]["share_colliding"] == 0.5
    assert summary[("all", "")]["rate"] == "mbps"
    assert summary[("links", 4)]["mean_mbps"] == 2.0
    assert summary[("sibling_collides", True)]["mean_mbps"] == 1.5
    assert summary[("all", "")]["spearman_rate_links"] > 0
