"""The sweep's comparison figure (analysis/sweep.py): which columns are metrics, which name
rows, and the figure from a summary table."""
from __future__ import annotations

from analysis.sweep import metrics, plot_sweep, row_keys
from store import write_csv


def _rows() -> list[dict]:
    rows = []
    for bw in (10.0, 20.0):
        for net in ("grin0", "grin1"):
            for pct in (10, 50):
                rows.append({"bw": bw, "run_id": f"r{bw}", "network": net, "active_pct": pct,
                             "mbps": bw * (1 + (net == "grin1")) / (1 + pct / 50),
                             "connections": 2})
    return rows


def test_row_keys_metrics_and_the_figure(tmp_path):
    rows = [{k: str(v) for k, v in r.items()} for r in _rows()]
    assert row_keys(rows, ["bw"]) == ["active_pct"]          # the same in every point
    assert metrics(rows, ["bw"]) == ["mbps"]                 # constant columns are left out
    write_csv(tmp_path / "summary.csv", _rows())
    (fig,) = plot_sweep(tmp_path, ["bw"])
    assert fig == tmp_path / "compare.png" and fig.stat().st_size > 10_000


def test_nothing_to_compare_draws_nothing(tmp_path):
    assert plot_sweep(tmp_path, ["bw"]) == []
    write_csv(tmp_path / "summary.csv", [{"bw": 1.0, "run_id": "a", "x": 1}])
    assert plot_sweep(tmp_path, ["bw"]) == []
