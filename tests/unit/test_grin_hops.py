"""grin-hops (experiments/grin/hops.py): GRIN's section 5.1 hop-count study as a model-only
experiment.  A tiny grid through the real CLI into a run folder (no root, no network), and
its three claims (experiments/grin/claims.py) on synthetic hops.csv tables, on both sides of
each line and off the paper's grid."""
from __future__ import annotations

import itertools

import pytest

from analysis.claims import FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, NOT_REGIME
from dcrepro import cli
from emulator.dataplane_registry import capabilities
from experiments.grin import claims as gclaims
from harness.params import typed
from model.grin import hop_count_table, hop_instances
from store import read_csv, registry

COLUMNS = ["seed", "degree", "pattern", "active_pct", "active", "connections", "optimum", "h1",
           "h2", "h1_gap", "h2_gap", "sampled_h1", "sampled_h2", "sampled_h1_gap",
           "sampled_h2_gap", "seconds"]
TINY = ["--racks", "2", "--servers", "4", "--degrees", "1", "--patterns", "permutation",
        "--active", "50", "--seeds", "1", "--seed", "7"]


def test_a_tiny_grid_runs_through_the_cli_into_a_run_folder(tmp_path, capsys):
    out = tmp_path / "results"
    assert cli.main(["run", "grin-hops", *TINY, "--out", str(out)]) == 0
    (run_dir,) = (out / "grin-hops").iterdir()
    rows = read_csv(run_dir / "hops.csv")
    assert len(rows) == 1 and list(rows[0]) == COLUMNS
    (r,) = rows
    assert (r["seed"], r["degree"], r["pattern"], float(r["active_pct"])) == \
        ("7", "1", "permutation", 50.0)
    for col in ("h1_gap", "h2_gap", "sampled_h1_gap", "sampled_h2_gap"):
        assert 0.0 <= float(r[col]) <= 1.0, col
    opt, h1, h2 = (float(r[c]) for c in ("optimum", "h1", "h2"))
    assert 0 < h1 <= h2 + 1e-6 <= opt + 2e-6
    assert float(r["h1_gap"]) == pytest.approx(1 - h1 / opt, abs=1e-5)
    assert (run_dir / "hops.png").stat().st_size > 5_000
    assert [s["pattern"] for s in read_csv(run_dir / "summary.csv")] == ["permutation", "all"]
    assert "grin-hops" in (run_dir / "claims.md").read_text()
    verdicts = {v["claim"]: v["verdict"] for v in read_csv(run_dir / "claims.csv")}
    # 2 racks x 4 servers, one cell: none of the three is the paper's grid
    assert set(verdicts.values()) == {NOT_REGIME} and len(verdicts) == 3
    status = (run_dir / "status.json").read_text()
    assert '"ok"' in status
    assert '"backend": "model"' in (run_dir / "config.json").read_text()


def test_it_is_a_model_only_experiment_in_the_listings(capsys):
    assert registry.backends("grin-hops", capabilities()) == "model"
    assert registry.backends("grin", capabilities()).startswith("emulated (")
    assert "| `grin-hops` |" in registry.markdown_table(capabilities())
    assert ".venv/bin/dcrepro run grin-hops" in registry.sweep_commands()
    with pytest.raises(SystemExit):            # no emulated view: argparse's choices
        cli.main(["run", "grin-hops", "--backend", "emulated"])
    assert "invalid choice" in capsys.readouterr().err
    from store import papers
    assert "grin-hops" in papers.PAPERS["003_aa7e1801a46c453f.txt"].experiments


@pytest.mark.parametrize("values, msg", [
    ({"patterns": "permutation,shuffle"}, "unknown shuffle"),
    ({"degrees": "0,1"}, "degree 0"),
    ({"degrees": "1,1"}, "distinct"),
    ({"degrees": "30"}, "needs more than 20 servers per rack"),
    ({"active": "0"}, "percentage"),
    ({"seeds": 0}, "--seeds must be >= 1"),
    ({"racks": 1, "servers": 4, "degrees": "1", "active": "10"},
     "group traffic needs at least"),
])
def test_bad_grids_are_one_line_errors(values, msg, one_line_error):
    mod = registry.module("grin-hops")
    with one_line_error(msg):
        mod.validate(typed(mod, values))


def test_the_defaults_are_the_criterions_study_and_quick_is_small():
    mod = registry.module("grin-hops")
    p = typed(mod, {})
    assert (mod.degrees(p), mod.patterns(p), mod.actives(p), mod.seeds(p)) == (
        list(gclaims.HOP_DEGREES), list(gclaims.HOP_PATTERNS), list(gclaims.HOP_SHARES),
        list(gclaims.HOP_SEEDS))
    assert (p.racks, p.servers) == gclaims.HOP_NETWORK
    q = typed(mod, {**mod.QUICK, "quick": True})
    assert not set(mod.seeds(q)) & set(gclaims.HOP_SEEDS), "quick spends no fresh seed"
    assert mod.degrees(typed(mod, {"degrees": "1-3,5"})) == [1, 2, 3, 5]


def test_the_bench_table_is_the_experiments_instances_aggregated():
    """One loop (model.grin.hop_instances) for the bench's table and the experiment."""
    rows = hop_count_table(2, 4, degrees=[1], patterns=["permutation"], active_pcts=[50],
                           seeds=2)
    found = list(hop_instances(2, 4, [1], ["permutation"], [50], [0, 1]))
    assert [x.seed for x in found] == [0, 1]
    assert rows[0].h1_ratio == pytest.approx(sum(x.result.ratio("h1") for x in found) / 2)
    assert rows[0].opt == pytest.approx(sum(x.result.opt for x in found) / 2)


# -- the claims on synthetic hops.csv ---------------------------------------------------------

PAPER_PARAMS = {"racks": 6, "servers": 20, "degrees": "1,2,3,4,5,6", "active": "10,30,50,70",
                "patterns": "permutation,random,group,all-to-all", "seeds": 5, "seed": 101,
                "backend": "model"}
H1_MEAN = "h1 is within 7 % of the optimum on average"
H2 = "h2 is seldom more than 1 % below the optimum"
WORST = "the worst h1 gap is GRIN6 with permutation traffic"


def hops(seeds=gclaims.HOP_SEEDS, degrees=gclaims.HOP_DEGREES, h1=0.07, h2_over=5,
         worst=(6, "permutation", 70.0)):
    """hops.csv rows: per seed the grid's cells with h1 gap ``h1`` (plus 0.001 per seed
    step, so that seeds differ), ``h2_over + i`` cells (seed i) with h2 more than 1 % below,
    and the largest h1 gap of all at ``worst`` of the middle seed."""
    rows = []
    for i, seed in enumerate(seeds):
        cells = list(itertools.product(degrees, gclaims.HOP_PATTERNS, gclaims.HOP_SHARES))
        for j, (d, p, a) in enumerate(cells):
            gap = h1 + 0.001 * (i - len(seeds) // 2)
            if (d, p, a) == worst and i == len(seeds) // 2:
                gap = 0.3
            rows.append({"seed": seed, "degree": d, "pattern": p, "active_pct": a,
                         "optimum": 10.0, "h1": 10 * (1 - gap), "h1_gap": gap,
                         "h2_gap": 0.02 if j < h2_over + i else 0.0})
    return rows


def _judged(run_folder, judge, rows, **params):
    return judge("grin-hops", run_folder("grin-hops", {"hops.csv": rows},
                                         params={**PAPER_PARAMS, **params}))


def test_the_three_claims_hold_on_the_paper_grid(run_folder, judge):
    got = _judged(run_folder, judge, hops())
    assert {k: v.verdict for k, v in got.items()} == {H1_MEAN: HOLDS, H2: HOLDS, WORST: HOLDS}
    assert got[H1_MEAN].headline and got[H1_MEAN].interval.endswith("n=5 seeds")
    assert "seeds 101-105, 480 rows" in got[H1_MEAN].detail
    assert "[0.0595, 0.0805]" in got[H1_MEAN].detail
    assert got[WORST].measured.startswith("GRIN6, permutation, 70 % active, seed 103")
    assert got[H1_MEAN].basis == "model"


def test_each_claim_fails_across_its_line(run_folder, judge):
    got = _judged(run_folder, judge, hops(h1=0.12, h2_over=30, worst=(3, "group", 10.0)))
    assert {k: v.verdict for k, v in got.items()} == {H1_MEAN: FAILS, H2: FAILS, WORST: FAILS}
    assert got[WORST].measured.startswith("GRIN3, group")
    low = _judged(run_folder, judge, hops(h1=0.04))
    assert low[H1_MEAN].verdict == FAILS       # two-sided: far below 7 % is not 'just 7 %'


def test_a_grid_other_than_the_papers_is_not_its_regime(run_folder, judge):
    quick = _judged(run_folder, judge, hops(degrees=(1, 2)), degrees="1,2")
    for label in (H1_MEAN, H2, WORST):
        assert quick[label].verdict == NOT_REGIME, label
    assert "(32 cells)" in quick[H1_MEAN].detail
    small = _judged(run_folder, judge, hops(), racks=2, servers=4)
    assert small[H1_MEAN].verdict == NOT_REGIME and "2 racks x 4 servers" in \
        small[H1_MEAN].detail


def test_fewer_seeds_than_the_criterion_decide_nothing(run_folder, judge):
    got = _judged(run_folder, judge, hops(seeds=(1, 2, 3)), seed=1, seeds=3)
    assert got[H1_MEAN].verdict == INCONCLUSIVE
    assert "not the criterion's fresh seeds 101-105" in got[H1_MEAN].detail
    assert got[WORST].verdict == NOT_MEASURED and "5 seeds" in got[WORST].detail


def test_judge_rewrites_the_claims_and_keeps_a_folder_whose_table_is_gone(tmp_path, capsys):
    """`dcrepro judge`: the claims judged again from the folder's tables, one line per
    folder; a folder whose table a claim read is gone is left as it was; bad paths exit 2."""
    out = tmp_path / "results"
    assert cli.main(["run", "grin-hops", *TINY, "--out", str(out)]) == 0
    (run_dir,) = (out / "grin-hops").iterdir()
    capsys.readouterr()
    assert cli.main(["judge", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"{run_dir}: 3 verdicts, 0 changed"
    before = (run_dir / "claims.md").read_text()
    (run_dir / "hops.csv").unlink()
    assert cli.main(["judge", str(run_dir)]) == 0
    assert "kept as it was: 3 claim(s) would measure differently" in capsys.readouterr().out
    assert (run_dir / "claims.md").read_text() == before
    assert cli.main(["judge", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert cli.main(["judge", str(tmp_path)]) == 0     # searched: the run folder under it
    (tmp_path / "empty").mkdir()
    assert cli.main(["judge", str(tmp_path / "empty")]) == 2
    assert "no run folder under" in capsys.readouterr().err


def test_the_figures_paper_numbers_are_the_claims_with_their_source():
    """hops.png draws the paper's numbers from the claims (h1-mean's paper_value, the 32 %
    of h1-worst-grin6's paper text, h2-seldom's threshold), each labelled with the paper
    and its place in it, and no number of its own."""
    from analysis.figures import paper_source
    from experiments.grin.figures import PAPER_H2_SELDOM, hop_paper
    paper = hop_paper({"experiment": "grin-hops"})
    by_key = {c.key: c for c in gclaims.CLAIMS if c.experiment == "grin-hops"}
    assert [(k, y) for k, _, y, _ in paper["h1"]] == [
        ("line", by_key["h1-mean"].paper_value), ("mark", 0.32)]
    assert paper["h1"][1][1] == 6 and "(32 %)" in by_key["h1-worst-grin6"].paper
    assert [(k, y) for k, _, y, _ in paper["h2"]] == [("line", PAPER_H2_SELDOM)]
    assert paper_source(by_key["h1-worst-grin6"]) == "003 Fig. 5"
    assert paper_source(by_key["h1-mean"]) == "003 section 5.1"
    assert all(label.startswith("paper, 003 ") for refs in paper.values()
               for *_, label in refs)
    assert hop_paper({"experiment": "nosuch"}) == {"h1": [], "h2": []}
