"""studies/fairness_ablation.py on hand-made flows.csv tables (no network)."""
from store import write_csv
from studies import fairness_ablation as ablation


def _flows(run, fat, jelly):
    """Two flows per topology; each measure's values given per topology."""
    out = []
    for topo, vals in (("fattree", fat), ("jellyfish", jelly)):
        for v in vals:
            out.append({"run": str(run), "topology": topo, "norm_goodput": v,
                        "norm_model": v, "norm_model_tcp": v, "norm_model_tcp_coupled": 1.0})
    return out


def test_ratio_per_repetition_is_jellyfish_mean_over_fat_tree_mean():
    rows = ablation.ratios(_flows(1, [0.8, 1.0], [0.6, 0.6]) + _flows(0, [1, 1], [1, 1]), "x")
    assert [(r["run"], r["norm_goodput"], r["norm_model_tcp_coupled"]) for r in rows] == [
        (0, 1.0, 1.0), (1, round(0.6 / 0.9, 4), 1.0)]


def test_the_summary_pairs_each_folder_with_the_first_by_repetition(labelled_ablation):
    second = {0: [0.9, 0.9], 1: [0.8, 0.8]}

    def fill(d, i):
        write_csv(d / "flows.csv", _flows(0, [1, 1], second[i]) + _flows(1, [1, 1], [0.8, 0.8]))
    md = labelled_ablation(ablation, fill, ("lia", "reno"), rows=4)
    assert "| lia | 0.850 | 0.850 | 0.850 | 1.000 |" in md
    # the measured ratio's Student-t 95 % interval over the two repetitions (0.9 and 0.8)
    assert md.split("\n\n")[2].splitlines()[2].endswith("| 0.850 [0.215, 1.485], 2 |")
    # over every flow: lia's Jellyfish mean (0.9 + 0.8) / 2 against the fat tree's 1
    assert "| lia | 0.850 | 0.850 | 0.850 | 1.000 |" in md.split("ratio of the means")[1]
    assert "measured lia minus reno: +0.100, +0.000; mean +0.050 (sd 0.071)" in md


def test_interleaved_arms_are_paired_by_seed_with_a_t_interval():
    whole = [{"label": f"{arm}-s{s}", "norm_goodput": v} for arm, vals in
             (("lia", (0.8, 0.9, 1.0)), ("reno", (0.9, 0.9, 0.9))) for s, v in zip((4, 5, 6), vals)]
    # differences -0.1, 0, +0.1: mean 0, sd 0.1, t(0.975, 2) = 4.303
    assert ablation.seed_pairs(whole) == (
        "Paired by seed (4, 5, 6), measured lia minus reno: -0.100, +0.000, +0.100; mean "
        "+0.000, 95 % interval [-0.248, +0.248] (Student t, 3 pairs)")
    assert ablation.seed_pairs(whole[:3]) == ""                 # one arm
    assert ablation.seed_pairs([{"label": "lia", "norm_goodput": 1.0}] * 2) == ""


def test_remodel_solves_lias_equilibrium_on_the_runs_stored_paths(tmp_path):
    """Two connections on a k=4 fat tree, one with two subflows: the column is filled from
    subflows.csv with the link rate of config.json, as model.lia_rates gives it on the
    same links; a column the run has is left alone; no subflows.csv, nothing filled."""
    import json

    from analysis.remodel import remodel
    from model import goodput_capacity, lia_rates
    from model.network import path_links

    spec = "fattree,k=4"
    subs = [("0_0_2", "2_0_2", "0_0_1>0_2_1>4_1_1>2_2_1>2_0_1"),
            ("0_0_2", "2_0_2", "0_0_1>0_3_1>4_2_1>2_3_1>2_0_1"),
            ("0_0_3", "2_0_3", "0_0_1>0_2_1>4_1_1>2_2_1>2_0_1")]
    write_csv(tmp_path / "subflows.csv", [{"src": s, "dst": d, "path": p, "run": "0",
                                           "topology": "fattree", "spec": spec}
                                          for s, d, p in subs])
    (tmp_path / "config.json").write_text(json.dumps({"params": {"bw": 5.0}}))
    rows = [{"run": "0", "topology": "fattree", "src": s, "norm_model_reno": "0.5"}
            for s in ("0_0_2", "0_0_3")]
    got = remodel(tmp_path, rows)
    caps = {}
    flows = [[path_links(s, p.split(">"), d) for s, d, p in subs[:2]],
             [path_links(*subs[2][:1], subs[2][2].split(">"), subs[2][1])]]
    for f in flows:
        for path in f:
            caps.update(dict.fromkeys(path, goodput_capacity(5.0)))
    want = lia_rates(caps, flows) / 5.0
    assert [float(r["norm_model_lia"]) for r in got] == [round(w, 5) for w in want]
    assert [r["norm_model_reno"] for r in got] == ["0.5", "0.5"]     # present: kept
    assert "norm_model_reno_coupled" in got[0]
    assert "norm_model_lia_rtt" not in got[0]         # no RTTs in subflows.csv: left out
    # the RTT ablation: each subflow's measured RTT; one without (empty) gets the median
    # of its connection's others (here its sibling's 40 ms)
    write_csv(tmp_path / "subflows.csv", [{"src": s, "dst": d, "path": p, "run": "0",
                                           "topology": "fattree", "spec": spec, "rtt_ms": t}
                                          for (s, d, p), t in zip(subs, ("40", "", "160"))])
    got = remodel(tmp_path, rows)
    want = lia_rates(caps, flows, rtts=[40.0, 40.0, 160.0]) / 5.0
    assert [float(r["norm_model_lia_rtt"]) for r in got] == [round(w, 5) for w in want]
    want = lia_rates(caps, flows, coupled=False, rtts=[40.0, 40.0, 160.0]) / 5.0
    assert [float(r["norm_model_reno_rtt"]) for r in got] == [round(w, 5) for w in want]
    # the 160 ms connection gets less than with equal RTTs
    assert want[1] < lia_rates(caps, flows, coupled=False)[1] / 5.0 - 0.05
    # the delivered-capacity ablation: a link that dropped packets keeps only the share
    # of its capacity it carried; no links.csv, no column
    assert "norm_model_lia_delivered" not in got[0]
    first_core = ("0_2_1", "4_1_1")              # on the shared path only
    write_csv(tmp_path / "links.csv", [
        {"run": "0", "topology": "fattree", "source": "measured", "u": u, "v": v,
         "util": util, "drops": drops}
        for u, v, util, drops in ((*first_core, "0.5", "3"), ("0_3_1", "4_2_1", "0.5", "0"),
                                  ("0_0_1", "0_2_1", "0.4", ""))])
    got = remodel(tmp_path, rows)
    shrunk = dict(caps)
    shrunk[first_core] *= 0.5                    # dropped: scaled; no drops: nominal
    want = lia_rates(shrunk, flows) / 5.0
    assert [float(r["norm_model_lia_delivered"]) for r in got] == [round(w, 5) for w in want]
    assert sum(want) < sum(lia_rates(caps, flows) / 5.0) - 0.1
    (tmp_path / "subflows.csv").unlink()
    assert remodel(tmp_path, rows) == rows
