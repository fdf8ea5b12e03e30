"""The generated results pages (analysis/pages.py): current with the reference folders,
short, every headline on its paper's page, causes without typed numbers, an ablation's own
trust read from its runs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis import claims, pages
from analysis.claims import FAILS, HOLDS, INCONCLUSIVE, Cause, Verdict
from dcrepro import cli
from store import papers, registry

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "results"


def test_the_committed_pages_are_what_the_reference_folders_give(reference_report):
    """A reference rerun or a claim's new words must regenerate them:
    `dcrepro report --pages docs/results results/reference`."""
    stale = [p.name for p, text in pages.pages(reference_report, DOCS).items()
             if not p.is_file() or p.read_text() != text]
    assert not stale, (f"stale generated pages {stale}: run `dcrepro report --pages "
                       "docs/results results/reference`")


def test_each_paper_page_is_short_and_names_every_headline(reference_report):
    for paper in papers.PAPERS.values():
        text = pages.paper_page(reference_report, paper, DOCS)
        assert len(text.splitlines()) <= 150, paper.page
        heads = {c.text for e in paper.experiments for c in registry.claims(e) if c.headline}
        assert heads and all(h in text for h in heads), paper.page
        assert f"../notebook/{paper.notebook}" in text
        assert (DOCS.parent / "notebook" / paper.notebook).is_file()


def test_the_index_lists_a_folder_for_every_measured_headline(reference_report):
    text = pages.index_page(reference_report, DOCS)
    section = text[text.index("## Which folder"):text.index("## Gallery")]
    rows = [line for line in section.splitlines() if line.startswith("| 00")
            and "| not measured |" not in line]
    folder_rows = [line for line in rows if "../../results/reference/" in line]
    assert rows and len(folder_rows) == len(rows)


#: a typed measurement: a decimal, a percentage or a ratio like '1.5x' (names such as GRIN2,
#: k=6 or p99 are not numbers of a run)
TYPED = re.compile(r"\d\.\d|\d ?%|\d+(\.\d+)?x\b")


def test_no_cause_types_a_number():
    """A cause's number would go stale when the runs change; the page quotes only what it
    reads from folders."""
    found = [(c.experiment, c.key, view, cause.text)
             for e in registry.EXPERIMENTS for c in registry.claims(e)
             for view, cause in c.causes.items() if TYPED.search(cause.text)]
    assert not found


def test_a_cause_names_an_ablation_folder_that_exists():
    root = REPO / "results" / "reference"
    for e in registry.EXPERIMENTS:
        for c in registry.claims(e):
            for cause in c.causes.values():
                for folder in cause.folders:
                    assert (root / folder).is_dir(), folder


def test_the_ablation_trust_is_read_from_its_runs(run_folder, tmp_path):
    root = tmp_path / "ablation"
    assert claims.ablation_trust(root) == "no run folder in it"
    run_folder("plts", {}, root=root / "a")
    assert claims.ablation_trust(root) == "1 run, none flagged"
    run_folder("plts", {}, root=root / "b", suspect=["run 1: CPU saturated"])
    assert claims.ablation_trust(root) == "2 runs, 1 flagged: not yet evidence"


def test_a_cause_says_what_tested_it_and_how_far_to_trust_that(run_folder, tmp_path):
    run_folder("plts", {}, root=tmp_path / "arm-a" / "r")
    run_folder("plts", {}, root=tmp_path / "arm-b" / "r", suspect=["run 1: CPU saturated"])
    two = Cause("queues differ", ablation=("arm-a", "arm-b"))
    assert two.folders == ("arm-a", "arm-b")
    assert claims.cause_words(two, tmp_path) == (
        "queues differ (ablation: arm-a (1 run, none flagged); "
        "arm-b (1 run, 1 flagged: not yet evidence))")
    assert claims.cause_words(Cause("no queue", by_construction=True)) == \
        "no queue (by construction)"
    assert claims.cause_words(Cause("asserted")) == "asserted (not ablated)"
    assert Cause("x").folders == ()


def _verdict(verdict: str, detail: str = "", key: str = "k") -> Verdict:
    return Verdict("plts", key, "", "a claim", "src", "", "1", "2", "crit", "why", verdict,
                   detail, "measured", ("r1",))


def test_why_says_what_tested_the_cause(monkeypatch, tmp_path):
    causes = {"a": Cause("queues differ", ablation="x-ablation"),
              "b": Cause("no queue in a fluid model", by_construction=True),
              "c": Cause("asserted only")}
    monkeypatch.setattr(pages, "_cause", lambda e, k, view: causes.get(k))
    (tmp_path / "x-ablation").mkdir()
    got = {k: pages.why(_verdict(FAILS, key=k), "emulated", tmp_path, tmp_path) for k in causes}
    assert got["a"].startswith("queues differ (ablation: [x-ablation](x-ablation) (no run")
    assert got["b"] == "no queue in a fluid model (by construction)"
    assert got["c"] == "asserted only (not ablated)"
    assert pages.why(_verdict(HOLDS, key="a"), "emulated", tmp_path, tmp_path) == ""
    assert "not ablated" in pages.why(_verdict(FAILS, key="none"), "emulated", tmp_path,
                                      tmp_path)
    straddles = pages.why(_verdict(INCONCLUSIVE, "x; criterion [1.35, 1.65]: straddles",
                                   key="none"), "emulated", tmp_path, tmp_path)
    assert "band [1.35, 1.65]" in straddles
    few = pages.why(_verdict(INCONCLUSIVE, "x; 4 repetition(s) left out: the fidelity check "
                             "flagged them; criterion >= 1.00: 1 of the 5 repetitions a "
                             "verdict needs", key="none"), "emulated", tmp_path, tmp_path)
    assert few == ("1 of the 5 repetitions a verdict needs (band >= 1.00); 4 repetition(s) "
                   "left out: the fidelity check flagged them")


def test_the_cli_writes_the_pages_or_says_in_one_line_why_not(tmp_path, capsys):
    ref = str(REPO / "results" / "reference")
    assert cli.main(["report", "--pages", str(tmp_path / "pages"), ref]) == 0
    assert sorted(p.name for p in (tmp_path / "pages").iterdir()) == sorted(
        [p.page for p in papers.PAPERS.values()] + ["index.md"])
    capsys.readouterr()
    (tmp_path / "file").write_text("")
    assert cli.main(["report", "--pages", str(tmp_path / "file" / "x"), ref]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dcrepro: error: cannot write the pages") and err.count("\n") == 1


@pytest.mark.parametrize("paper", list(papers.PAPERS.values()), ids=lambda p: p.file[:3])
def test_every_condition_is_read_from_a_parameter_the_judged_run_has(reference_report, paper):
    for c in paper.conditions:
        run = pages.judged_run(reference_report, c.experiment)
        assert run is not None and c.param in {**run.config, **run.params}, (c.what, c.param)


def test_the_headline_figure_draws_ours_beside_the_paper(tmp_path):
    """Part 8 of issue #52: a headline's figure shows our interval, the band, the paper's
    number and the run's conditions; every figure says how it is made."""
    import dataclasses
    import json
    import math

    from analysis import figures
    config = {"experiment": "plts", "run_id": "20300101T000000Z-abcdef",
              "params": {"cc": "cubic", "bw": 5.0, "runs": 5, "duration": 25.0}}
    assert figures.conditions(config) == "cc cubic, 5 Mb/s links, 5 repetitions, 25 s each"
    v = dataclasses.replace(_verdict(FAILS, key="rr-pct"), values=(97.5, 98.0, 99.1),
                            bounds=(98.2, 96.2, 100.2), band=(87.0, 97.0))
    one_sided = dataclasses.replace(v, key="other", band=(-math.inf, 0.5),
                                    values=(0.1, 0.2), bounds=(0.15, 0.0, 0.3))
    path = figures.headline_plot(tmp_path / figures.HEADLINES, config, [v, one_sided],
                                 {"rr-pct": 92.0, "other": None})
    assert path.stat().st_size > 10_000
    assert figures.HEADLINES in json.loads((tmp_path / figures.NOTES).read_text())


def test_a_headline_axis_says_what_it_measures():
    """Issue #55 (the figure audit of session 47): every headline row's x axis was bare; it
    now reads the statistic, the first clause of the claim's criterion."""
    from analysis.figures import statistic_words
    assert statistic_words("per repetition MPTCP mean / TCP mean; the 95 % interval of its "
                           "mean above 1") == "MPTCP mean / TCP mean"
    assert statistic_words("per repetition the lone flow's goodput / fair share at N = 6; "
                           "the 95 % interval of its mean below 0.5") == \
        "lone flow's goodput / fair share at N = 6"
    assert statistic_words("per repetition, GRIN2 / multihomed at the shares below 40 %; "
                           "the 95 % interval of its mean at or above 1") == \
        "GRIN2 / multihomed at the shares below 40 %"
    assert statistic_words("per seed, the mean over the grid's 96 rows") == \
        "mean over the grid's 96 rows"
    assert statistic_words("under hashed routing, per repetition local / remote; the 95 % "
                           "interval of its mean below 0.5") == "local / remote"
    assert statistic_words("rnd mean < cnt and rr means") == ""
    assert statistic_words("the flows per repetition") == ""
