"""studies/permutation_ablation.py on hand-made flows.csv and fidelity.json (no network)."""
import json

from store import write_csv
from studies import permutation_ablation as ablation


def _flows(run, transport, pairs):
    """One flows.csv row per (measured, model) pair, normalized to the link rate."""
    return [{"run": str(run), "transport": transport, "src": f"h{i}", "norm_goodput": e,
             "norm_model": m} for i, (e, m) in enumerate(pairs)]


#: 1,000 data segments delivered, 10 retransmitted, 980 ACKs: 2,000 segments sent
_FID = {"reports": [{"run": 0, "transport": "mptcp", "stack_counters": {
    "OutSegs": 1990, "TCPDelivered": 1000, "RetransSegs": 10}}]}


def test_a_repetitions_ratio_is_summed_measured_over_summed_model_with_its_counters():
    rows = ablation.per_run(_flows(0, "mptcp", [(0.8, 1.0), (0.6, 0.6)]), _FID, "x")
    assert rows == [{"label": "x", "run": 0, "transport": "mptcp", "flows": 2,
                     "measured": 0.7, "model": 0.8, "ratio": 0.875,
                     "acks_per_segment": 0.98, "retrans_share": round(10 / 1010, 4)}]


def test_a_report_without_counters_leaves_them_out():
    rows = ablation.per_run(_flows(1, "tcp", [(0.5, 0.5)]), _FID, "x")
    assert "acks_per_segment" not in rows[0] and rows[0]["ratio"] == 1.0


def test_the_summary_pools_each_folders_repetitions_per_transport(labelled_ablation):
    pairs = {0: [(0.9, 1.0)], 1: [(1.0, 1.0)]}

    def fill(d, i):
        write_csv(d / "flows.csv", _flows(0, "mptcp", pairs[i]) + _flows(1, "mptcp", pairs[i]))
        (d / "fidelity.json").write_text(json.dumps(_FID))
    md = labelled_ablation(ablation, fill, ("perm", "pair"), rows=4)
    assert "| perm | mptcp | 0.900 | 1.000 | **0.900** | 0.900 [0.900, 0.900] | 0.98 | 0.99% |" in md
    assert "| pair | mptcp | 1.000 | 1.000 | **1.000** |" in md


def test_the_model_judges_the_emulator_only_for_single_path_tcp():
    """Issue #52 part 4: the max-min model doubts a run only where it is exact (single-path
    TCP on its traced path); for MPTCP (either pattern) and the sprays, falling short of it
    is the effect under study, so the ratio is reported, not judged."""
    from analysis.fidelity import model_is_exact, report
    assert model_is_exact("tcp")
    assert not model_is_exact("mptcp") and not model_is_exact("tcp", sprayed=True)
    model = {"a": 5.0, "b": 5.0}
    low = {"a": 3.0, "b": 3.0}                       # 0.6 of the model
    assert any("of the model's" in r for r in report(low, model, 10.0, {})["reasons"])
    fid = report(low, model, 10.0, {}, model_bound=model_is_exact("mptcp"))
    assert not fid["suspect"] and fid["aggregate_ratio"] == 0.6
