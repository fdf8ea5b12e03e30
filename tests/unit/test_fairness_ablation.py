"""experiments/fairness/ablation.py on hand-made flows.csv tables (no network)."""
from experiments.fairness import ablation
from store import write_csv


def _flows(run, fat, jelly):
    """Two flows per topology; each measure's values given per topology."""
    out = []
    for topo, vals in (("fattree", fat), ("jellyfish", jelly)):
        for v in vals:
            out.append({"run": str(run), "topology": topo, "norm_iperf": v,
                        "norm_model": v, "norm_model_tcp": v, "norm_model_tcp_coupled": 1.0})
    return out


def test_ratio_per_repetition_is_jellyfish_mean_over_fat_tree_mean():
    rows = ablation.ratios(_flows(1, [0.8, 1.0], [0.6, 0.6]) + _flows(0, [1, 1], [1, 1]), "x")
    assert [(r["run"], r["norm_iperf"], r["norm_model_tcp_coupled"]) for r in rows] == [
        (0, 1.0, 1.0), (1, round(0.6 / 0.9, 4), 1.0)]


def test_the_summary_pairs_each_folder_with_the_first_by_repetition(labelled_ablation):
    second = {0: [0.9, 0.9], 1: [0.8, 0.8]}

    def fill(d, i):
        write_csv(d / "flows.csv", _flows(0, [1, 1], second[i]) + _flows(1, [1, 1], [0.8, 0.8]))
    md = labelled_ablation(ablation, fill, ("lia", "reno"), rows=4)
    assert "| lia | 0.850 | 0.850 | 0.850 | 1.000 |" in md
    assert "measured lia minus reno: +0.100, +0.000; mean +0.050 (sd 0.071)" in md
