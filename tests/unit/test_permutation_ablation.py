"""experiments/permutation/ablation.py on hand-made flows.csv and fidelity.json (no network)."""
import json

from experiments.permutation import ablation
from store import read_csv, write_csv


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


def test_the_summary_pools_each_folders_repetitions_per_transport(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, pairs in ((a, [(0.9, 1.0)]), (b, [(1.0, 1.0)])):
        d.mkdir()
        write_csv(d / "flows.csv", _flows(0, "mptcp", pairs) + _flows(1, "mptcp", pairs))
        (d / "fidelity.json").write_text(json.dumps(_FID))
    assert ablation.main([str(tmp_path / "out"), f"perm={a}", f"pair={b}"]) == 0
    md = (tmp_path / "out" / "ablation.md").read_text()
    assert "| perm | mptcp | 0.900 | 1.000 | **0.900** | 0.900-0.900 | 0.98 | 0.99% |" in md
    assert "| pair | mptcp | 1.000 | 1.000 | **1.000** |" in md
    assert len(read_csv(tmp_path / "out" / "ablation.csv")) == 4
    assert (tmp_path / "out" / "ablation.png").stat().st_size > 0


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    assert ablation.main([str(tmp_path)]) == 2
    assert ablation.main([str(tmp_path), f"x={tmp_path}"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("has no flows.csv")
