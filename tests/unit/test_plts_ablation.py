"""studies/plts_ablation.py on hand-made flows.csv tables (no network)."""
import pytest

from store import read_csv, write_csv
from studies import plts_ablation as ablation


def _flow(run, scheme, pct, recovery="modern", aqm="droptail", model=None):
    return {"run": str(run), "scheme": scheme, "aqm": aqm, "recovery": recovery,
            "ideal_mbps": "4.0", "mbps": str(pct / 25), "pct_ideal": str(pct),
            "model_mbps": str((pct if model is None else model) / 25)}


def test_draws_are_ecmp_means_per_repetition_in_run_order():
    rows = [_flow(10, "ecmp", 50), _flow(2, "ecmp", 60), _flow(2, "ecmp", 80),
            _flow(2, "rr", 100)]
    assert ablation.draws(rows) == [70, 50]


def test_a_network_row_has_ecmp_its_model_and_the_same_run_s_sprays():
    rows = [_flow(0, "ecmp", 60, aqm="red,min=20", model=62), _flow(0, "rnd", 80),
            _flow(0, "rr", 100), _flow(1, "ecmp", 70), _flow(1, "cnt", 84),
            _flow(0, "ecmp", 40, recovery="noundo")]
    nets = ablation.networks(rows, "x")
    assert [(n["run"], n["aqm"], n["pct_ideal"], n["model_pct"], n["sprays_pct"],
             n["spray_over_ecmp"]) for n in nets] == [
        ("0", "red", 60, 62, 90, 1.5), ("1", "droptail", 70, 70, 84, 1.2)]


def test_recovery_rows_only_for_runs_with_two_recoveries():
    one = [_flow(0, "rr", 90), _flow(1, "rr", 96)]
    assert ablation.recoveries(one, "x") == []
    two = one + [_flow(0, "rr", 70, recovery="noundo"), _flow(1, "ecmp", 50)]
    rows = ablation.recoveries(two, "x")
    # the mean over runs of each run's mean, and its Student-t 95 % interval: 93 +- 12.706
    # x 3 (sd 4.24 / sqrt 2); one run: the value alone
    assert [(r["recovery"], r["scheme"], r["pct_ideal"], r["pct_lo"], r["pct_hi"], r["runs"])
            for r in rows] == [("modern", "ecmp", 50, 50, 50, 1),
                               ("modern", "rr", 93, 54.88, 131.12, 2),
                               ("noundo", "rr", 70, 70, 70, 1)]


def test_main_writes_the_table_the_summary_and_the_figure(tmp_path):
    draws, run = tmp_path / "d", tmp_path / "plts" / "r"
    draws.mkdir()
    run.mkdir(parents=True)
    write_csv(draws / "flows.csv", [_flow(r, "ecmp", p) for r, p in enumerate([50, 60, 70])])
    write_csv(run / "flows.csv", [_flow(0, "ecmp", 60), _flow(0, "cnt", 90),
                                  _flow(0, "cnt", 80, recovery="noundo")])
    assert ablation.main([str(tmp_path / "out"), "--draws", str(draws),
                          "--runs", str(run)]) == 0
    md = (tmp_path / "out" / "ablation.md").read_text()
    # sprays 90 % / 1.5 = 60 %: the draws at 50 and 60 qualify
    assert "needs ECMP <= 60.0 %: 2 of 3 draws" in md
    assert "| r | noundo | PLTS-CNT (droptail) | 80.0 | 1 |" in md
    assert len(read_csv(tmp_path / "out" / "ablation.csv")) == 4   # 1 network, 3 recovery rows
    assert (tmp_path / "out" / "ablation.png").stat().st_size > 0


def test_a_folder_without_flows_is_a_one_line_error(tmp_path, capsys):
    assert ablation.main([str(tmp_path / "out"), "--runs", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().endswith("has no flows.csv")


@pytest.mark.parametrize("status,found", [("ok", True), ("failed", False)])
def test_newest_ok_run_skips_incomplete_runs(tmp_path, status, found):
    from store import newest_ok_run
    (tmp_path / "plts" / "a").mkdir(parents=True)
    (tmp_path / "plts" / "a" / "status.json").write_text(f'{{"status": "{status}"}}')
    assert (newest_ok_run(tmp_path, "plts") is not None) == found


def test_counter_rows_are_each_schemes_mean_per_labelled_run():
    rows = [_flow(0, "rr", 90), _flow(1, "rr", 96), _flow(0, "cnt", 80), _flow(1, "cnt", 84)]
    got = ablation.counted(rows, "packets")
    assert [(r["source"], r["scheme"], r["pct_ideal"], r["pct_lo"], r["pct_hi"], r["runs"])
            for r in got] == [("packets", "cnt", 82, 56.59, 107.41, 2),
                              ("packets", "rr", 93, 54.88, 131.12, 2)]


def test_counters_alone_write_their_table_and_a_one_panel_figure(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, pct in ((a, 90), (b, 80)):
        d.mkdir()
        write_csv(d / "flows.csv", [_flow(0, "cnt", pct), _flow(0, "rr", 95)])
    assert ablation.main([str(tmp_path / "out"), "--counters", f"bytes={a}",
                          f"packets={b}"]) == 0
    md = (tmp_path / "out" / "ablation.md").read_text()
    assert "| packets | PLTS-CNT | 80.0 | 1 |" in md
    assert len(read_csv(tmp_path / "out" / "ablation.csv")) == 4
    assert (tmp_path / "out" / "ablation.png").stat().st_size > 0
    assert ablation.main([str(tmp_path / "out"), "--counters", str(a)]) == 2
    assert capsys.readouterr().err.strip().endswith("--counters takes LABEL=RUN_FOLDER")
