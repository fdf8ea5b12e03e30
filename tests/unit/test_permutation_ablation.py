"""experiments/permutation/ablation.py on hand-made flows.csv and fidelity.json (no network)."""
import json

from experiments.permutation import ablation
from store import write_csv


def _flows(run, transport, pairs):
    """One flows.csv row per (measured, model) pair, normalized to the link rate."""
    return [{"run": str(run), "transport": transport, "src": f"h{i}", "norm_iperf": e,
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
    assert "| perm | mptcp | 0.900 | 1.000 | **0.900** | 0.900-0.900 | 0.98 | 0.99% |" in md
    assert "| pair | mptcp | 1.000 | 1.000 | **1.000** |" in md


def test_the_model_bounds_mptcp_only_where_no_access_link_carries_acks_and_data():
    """The wire-bytes ablation's reading: in a permutation MPTCP's shortfall from the model
    is its own (ACKs queued behind data), so the ratio is reported, not judged; pairing and
    single-path TCP keep the check."""
    from experiments.permutation.experiment import model_is_bound
    assert not model_is_bound("mptcp", "permutation")
    assert model_is_bound("mptcp", "pairing")
    assert model_is_bound("tcp", "permutation") and model_is_bound("tcp", "pairing")
