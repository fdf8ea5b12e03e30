"""`dcrepro report` (analysis/report.py) without root: over copies of the committed reference
runs and small synthetic run folders.  The page is self-contained (relative links that
resolve, no network), its verdicts and counts are the terminal's, bad input is one line and
exit 2 with nothing created, and relative paths work from any folder."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analysis import report as R
from analysis.claims import HOLDS, VERDICTS
from dcrepro import cli
from store import papers, registry

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "results" / "reference"


class Page(HTMLParser):
    """What a reader sees of the page: the per-experiment totals, the claim rows (label,
    verdict), every image source and every link."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.totals: dict[str, list[str]] = {}
        self.claims: list[tuple[str, str, str]] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self._row: dict | None = None
        self._cell: list[str] | None = None
        self._label: list[str] | None = None
        self._badge = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class") or ""
        if tag == "tr" and cls in ("claim", "total"):
            self._row = {"kind": cls, "experiment": a.get("data-experiment"),
                         "verdict": a.get("data-verdict"), "cells": [], "badge": ""}
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "div" and "label" in cls.split() and self._row is not None:
            self._label = []
        elif tag == "span" and cls == "v" and self._row is not None:
            self._badge = True
        elif tag == "img":
            self.images.append(a["src"])
        elif tag == "a":
            self.links.append(a.get("href", ""))
        elif tag in ("script", "link", "iframe", "object"):
            self.links.append(f"<{tag}>")

    def handle_data(self, data):
        if self._badge:
            self._row["badge"] += data
        if self._label is not None:
            self._label.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag == "span":
            self._badge = False
        if tag == "div" and self._label is not None:
            self._row["label"] = "".join(self._label)
            self._label = None
        elif tag == "td" and self._cell is not None:
            self._row["cells"].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            row, self._row = self._row, None
            if row["kind"] == "claim":
                # the verdict as its badge shows it (a "because" may follow in the cell)
                self.claims.append((row["experiment"], row["label"], row["badge"]))
            else:
                self.totals[row["experiment"]] = row["cells"][2:2 + len(VERDICTS)]


@pytest.fixture(scope="module")
def reference_report(tmp_path_factory):
    """`dcrepro report --all` over a copy of results/reference: (results root, stdout
    lines: one per claim)."""
    root = tmp_path_factory.mktemp("ref") / "results"
    shutil.copytree(REFERENCE, root)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["report", "--all", str(root)]) == 0
    out = buf.getvalue().splitlines()
    return root, out


@pytest.mark.slow     # the reference judged twice more: about 3 s
def test_the_screen_sets_each_headline_beside_the_references_verdict(reference_report):
    """Issue #54 part 5: `dcrepro report` prints one screen, a line per headline claim with
    the reference's verdict beside it; a copy of the reference agrees with it on every one."""
    root, _ = reference_report
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["report", "--out", str(root.parent / "again"), str(root)]) == 0
    lines = buf.getvalue().splitlines()
    assert len(lines) <= 25 and lines[0].startswith("headline claims beside the reference")
    shown = [x for x in lines[1:] if x[:3].isdigit()]
    heads = R.build(*R.gather([root])).headline_claims
    assert len(shown) == sum(len(R._screen_view(views)[1]) for _, _, views in heads) >= 10
    assert all("; = ref " in x for x in shown), [x for x in shown if "; = ref " not in x]
    assert next(x for x in lines if x.startswith("other claims: "))
    # how many are decided, counted from the lines above it
    decided = sum(x.split()[1] == "holds" or x.split()[1:4] == ["does", "not", "hold"]
                  for x in shown)
    assert any(x.startswith(f"decided here: {decided} of {len(shown)} headline claims")
               for x in lines)
    assert lines[-1] == f"report: {root.parent / 'again' / 'index.html'}"
    # a copy drew the reference's networks: every paired difference is 0
    n = int(lines[0].split("contains 0 in ")[1].split(" of ")[1].split()[0])
    assert n >= 5 and f"contains 0 in {n} of {n} lines;" in lines[0], lines[0]
    # the page and report.md give each of them with its numbers
    html = (root.parent / "again" / "index.html").read_text()
    rows = html.count('<tr class="paired"')     # every condition's, the screen's and more
    assert rows >= n and html.count("<td>yes</td><td>the same</td></tr>") == rows
    md = (root.parent / "again" / "report.md").read_text()
    assert md.count("| +0 [+0, +0] | yes | the same |") == rows, md[:3000]
    # compared with nothing, it still shows every headline; a quick run that reads the
    # other decided verdict than the reference is named as contradicting it
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["report", "--reference", "none", "--out",
                         str(root.parent / "alone"), str(root)]) == 0
    alone = buf.getvalue().splitlines()
    assert alone[0].startswith("headline claims;") and \
        sum(x[:3].isdigit() for x in alone) == len(shown)
    v = heads[0][1]
    flip = HOLDS if v.verdict != HOLDS else "does not hold"
    assert R._against(replace(v, verdict=flip), [replace(v, verdict="does not hold"
                                                         if flip == HOLDS else HOLDS)]
                      ).startswith("CONTRADICTS ref ")
    assert R._against(replace(v, verdict="inconclusive"), [v]).startswith("ref ")
    # decided here where the reference is inconclusive: not opposite, and said to be ours only
    assert R._against(replace(v, verdict=flip), [replace(v, verdict="inconclusive")]
                      ).startswith(f"{R.OPEN_IN_REF} ref inconclusive ")
    assert R._against(v, []) == "no reference verdict"


def test_the_page_and_the_terminal_agree(reference_report):
    root, lines = reference_report
    page = Page((root / "report" / "index.html").read_text())
    claim_lines = [x for x in lines if x.split("  ")[0].strip() in VERDICTS]
    assert len(page.claims) == len(claim_lines) >= 2 * len(registry.EXPERIMENTS)
    for (experiment, label, verdict), line in zip(page.claims, claim_lines):
        assert line.startswith(verdict + " ") and f" {experiment} " in line, line
        assert label in line, (label, line)
    # the table on top counts the rows below it, and the terminal's summary says the same
    for name in registry.EXPERIMENTS:
        mine = [v for e, _, v in page.claims if e == name]
        assert page.totals[name] == [str(mine.count(k)) for k in VERDICTS]
        summary = next(x for x in lines if x.startswith(f"{name}: "))
        assert summary == f"{name}: {len(mine)} claims: " + ", ".join(
            f"{mine.count(k)} {k}" for k in VERDICTS if mine.count(k))
    assert lines[-1] == f"report: {root / 'report' / 'index.html'}"


def test_the_page_leads_with_contents_and_headlines_and_links_claims_to_figures(
        reference_report):
    """Part 7 of issue #52: a contents list, the headlines first (in every section too),
    the supporting claims folded, and every in-page link lands on an element of the page."""
    root, _ = reference_report
    text = (root / "report" / "index.html").read_text()
    assert text.index('<nav class="toc">') < text.index('id="headlines"') < text.index(
        'id="every-claim"')
    ids = set(re.findall(r' id="([^"]+)"', text))
    anchors = set(re.findall(r'href="#([^"]+)"', text))
    assert anchors and anchors <= ids, anchors - ids
    figure_links = [a for a in anchors if a.startswith("fig-")]
    assert len(figure_links) >= len(registry.EXPERIMENTS), "claim rows link to their figures"
    for s in R.build(*R.gather([root])).sections:
        flags = [v.headline for v in s.verdicts]
        assert flags == sorted(flags, reverse=True), s.experiment   # headlines first
    assert text.count("supporting claim") >= len(registry.EXPERIMENTS) - 1


def test_the_page_is_self_contained_and_can_be_copied(reference_report, tmp_path):
    root, _ = reference_report
    text = (root / "report" / "index.html").read_text()
    page = Page(text)
    assert not re.search(r"(src|href)=\"(https?:)?//", text), "no network"
    assert "<script" not in text and not [x for x in page.links if x.startswith("<")]
    assert len(page.images) >= len(registry.EXPERIMENTS)
    copy = tmp_path / "elsewhere"
    shutil.copytree(root / "report", copy)
    for src in page.images:
        assert not src.startswith("/") and src.startswith("figures/"), src
        assert (copy / src).stat().st_size > 5_000, src
    # run-folder links are relative, and resolve beside the report
    runs = [x for x in page.links if not x.startswith(("#", "figures/"))
            and not x.endswith("ablation.md")]
    assert runs and all(not x.startswith("/") and (root / "report" / x).is_dir() for x in runs)
    # an ablation's table is linked beside its figure, relatively too
    tables = [x for x in page.links if x.endswith("ablation.md")]
    assert tables and all(not x.startswith("/") and (root / "report" / x).is_file()
                          for x in tables)
    verdicts = json.loads((root / "report" / "verdicts.json").read_text())
    assert [e["experiment"] for e in verdicts["experiments"]] == list(registry.EXPERIMENTS)
    assert sum(len(e["verdicts"]) for e in verdicts["experiments"]) == len(page.claims)
    md = (root / "report" / "report.md").read_text()
    assert R.markdown_table(R.build(*R.gather([root]))) in md


def test_an_experiments_ablation_shows_in_its_section(reference_report):
    """results/reference/<experiment>-ablation/ (ablation.png, ablation.md) are
    drawn in their experiment's section of both renderings, and in no other section."""
    root, _ = reference_report
    html_text = (root / "report" / "index.html").read_text()
    sections = dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', html_text, re.S))
    owners = {"outcast": "outcast-ablation", "plts": "plts-ablation",
              "fairness": "fairness-ablation", "permutation": "permutation-ablation"}
    for exp, folder in owners.items():
        assert f'src="figures/{exp}/{folder}/ablation.png"' in sections[exp]
    assert not any("ablation.png" in body for name, body in sections.items()
                   if name not in owners)
    assert (root / "report" / "figures/outcast/outcast-ablation/ablation.png").stat().st_size \
        > 5_000
    md = (root / "report" / "report.md").read_text()
    assert "### ablation outcast-ablation" in md
    assert R.ablations_of(root, "outcast") == [root / "outcast-ablation",
                                               root / "outcast-ablation-jitter"]
    # a folder of the same prefix that is not '<experiment>-ablation[-name]' is not one
    assert R.ablations_of(root, "outcast-fattree") == []


def test_each_section_has_provenance_fidelity_and_the_rerun_command(reference_report):
    root, _ = reference_report
    data = json.loads((root / "report" / "verdicts.json").read_text())
    text = (root / "report" / "index.html").read_text()
    for exp in data["experiments"]:
        assert exp["runs"], exp["experiment"]
        for run in exp["runs"]:
            assert run["rerun"] == f"dcrepro rerun {run['folder']}"
            assert Path(run["folder"]).is_absolute() and Path(run["folder"]).is_dir()
            for key in ("commit", "dataplane", "machine", "date", "run id"):
                assert run[key] and run[key] != "unknown", (key, run)
            assert run["rerun"] in text and run["fidelity"]
            # the run box says what the run's own status says: flagged with its reasons
            suspect = json.loads((Path(run["folder"]) / "status.json").read_text()).get(
                "suspect") or []
            if suspect:
                n = len(suspect)
                assert run["fidelity"].startswith(f"flagged: {n} reason{'s' if n > 1 else ''}")
        # a single flagged run (not a pooled sweep) leaves every claim of it "run not trusted"
        flagged = [r for r in exp["runs"] if r["fidelity"].startswith("flagged")]
        if len(exp["runs"]) == 1 and flagged:
            assert all(v["verdict"] in ("run not trusted", "not measured")
                       for v in exp["verdicts"]), exp["experiment"]


def _st_rows(ratio, reps=5):
    """An outcast-fattree summary: ``reps`` repetitions at local/remote ``ratio``, pooled."""
    rows = [{"routing": "st", "run": r, "runs": 1, "local_over_remote": ratio}
            for r in range(reps)]
    return rows + [{"routing": "st", "run": "all", "runs": reps,
                    "runs_local_below_half": reps if ratio < 0.5 else 0,
                    "local_over_remote_median": ratio}]


def test_newest_complete_run_by_default_and_failed_runs_are_named(run_folder, tmp_path):
    old = run_folder("outcast-fattree", {"summary.csv": _st_rows(0.3)},
                     params={"routing": "st"})
    new = run_folder("outcast-fattree", {"summary.csv": _st_rows(0.9)},
                     params={"routing": "st"})
    run_folder("outcast-fattree", {}, params={"routing": "hashed"}, status="failed")
    judged = R.build(*R.gather([tmp_path / "results"]))
    sec = next(s for s in judged.sections if s.experiment == "outcast-fattree")
    assert [r.run_id for r in sec.runs] == [new.name]
    assert {r.run_id for r in sec.others} >= {old.name}
    st, hashed, ecmp = sec.verdicts
    assert st.verdict == "does not hold" and hashed.verdict == "not measured"
    assert ecmp.verdict == "not measured" and ecmp.key == "ecmp-outcast"
    assert "'failed' (test failure)" in hashed.detail
    # every registry experiment has a section: the ones without runs say so
    perm = next(s for s in judged.sections if s.experiment == "permutation")
    assert not perm.runs and {v.verdict for v in perm.verdicts} == {"not measured"}


def test_each_backend_is_a_view_of_its_own_and_disagreements_are_named(run_folder,
                                                                          tmp_path):
    """Runs of two backends a claim accepts give one verdict each, side by side (labelled
    with the view), not the newest alone; the section names where they disagree; one
    backend alone keeps today's unlabelled verdict."""
    emulated = run_folder("outcast-fattree", {"summary.csv": _st_rows(0.3)},
                          params={"routing": "st"})
    run_folder("outcast-fattree", {"summary.csv": _st_rows(2.0)},    # deterministic
               params={"routing": "st", "backend": "sim"})
    judged = R.build(*R.gather([tmp_path / "results"]))
    sec = next(s for s in judged.sections if s.experiment == "outcast-fattree")
    st = [v for v in sec.verdicts if v.key == "st-outcast"]
    assert [(v.view, v.verdict, v.basis) for v in st] == [
        ("emulated", "holds", "measured"), ("sim", "does not hold", "sim")]
    assert st[0].runs == (emulated.name,) and st[1].label.endswith(" [ns-3]")
    assert len(sec.disagree) == 1 and "emulated holds" in sec.disagree[0] and \
        "ns-3 does not hold" in sec.disagree[0]
    assert any(line.startswith("views disagree  outcast-fattree") for line in R.terminal(judged))
    assert "Where the views disagree" in R.markdown(judged, tmp_path, {})
    assert "Where the views disagree" in R.page(judged, tmp_path, {})
    # a backend that cannot measure the claim adds no view (ns-3 has no MPTCP)
    run_folder("outcast-fattree", {}, params={"routing": "st", "backend": "model"})
    judged = R.build(*R.gather([tmp_path / "results"]))
    sec = next(s for s in judged.sections if s.experiment == "outcast-fattree")
    assert [v.view for v in sec.verdicts if v.key == "st-outcast"] == ["emulated", "sim"]
    # the emulated run alone: one verdict, no view
    alone = R.build(tmp_path / "results", [[R.Run.open(emulated)]])
    sec = next(s for s in alone.sections if s.experiment == "outcast-fattree")
    assert all(not v.view for v in sec.verdicts) and not sec.disagree


def test_bad_input_is_one_line_exit_2_and_creates_nothing(tmp_path, run_folder, capsys):
    not_a_run = tmp_path / "empty"
    not_a_run.mkdir()
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("not a report")
    good = run_folder("outcast", {"summary.csv": []})
    for argv, msg in (
            (["report", str(tmp_path / "nowhere")], "no such folder"),
            (["report", str(not_a_run)], "not a run folder, sweep folder or results folder"),
            (["report", str(good), "--out", str(taken)], "is not a dcrepro report folder")):
        before = sorted(p for p in tmp_path.rglob("*"))
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and msg in err and err.startswith("dcrepro: error:"), err
        assert sorted(p for p in tmp_path.rglob("*")) == before
    assert (taken / "mine.txt").read_text() == "not a report"


def test_relative_paths_from_any_folder_and_a_report_replaced_whole(tmp_path, run_folder,
                                                                     monkeypatch, capsys):
    rows = [{"flows": n, "run": "all", "lone_share_of_fair": s}
            for n, s in ((2, 0.9), (6, 0.3), (12, 0.2))]
    run = run_folder("outcast", {"summary.csv": rows}, params={"flows": "2,6,12"})
    (run / "outcast_share.png").write_bytes((REFERENCE / "outcast").glob(
        "*/outcast_share.png").__next__().read_bytes())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    rel = os.path.relpath(run, elsewhere)
    # (--reference none: what is judged here is where things are written, not the screen)
    assert cli.main(["report", rel, "--out", "rep", "--reference", "none"]) == 0
    out = elsewhere / "rep"
    assert (out / "index.html").is_file()
    assert f"report: {out / 'index.html'}" in capsys.readouterr().out
    assert (out / "figures" / "outcast" / run.name / "outcast_share.png").is_file()
    data = json.loads((out / "verdicts.json").read_text())
    assert data["results_root"] == str(tmp_path / "results")
    # the default output is the results folder's report/; a second report replaces the first
    monkeypatch.chdir(tmp_path)
    (out / "figures" / "stale.png").write_bytes(b"x")
    assert cli.main(["report", "results", "--reference", "none"]) == 0
    assert (tmp_path / "results" / "report" / "index.html").is_file()
    assert cli.main(["report", str(run), "--out", str(out), "--reference", "none"]) == 0
    assert not (out / "figures" / "stale.png").exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".rep-")]


@pytest.mark.slow     # two real model runs draw Orca's figures: 2.0-2.4 s on 2 cores
def test_a_sweep_folder_is_judged_on_its_runs(tmp_path, capsys):
    """A real model-backend sweep (no root): its complete runs are one source."""
    assert cli.main(["sweep", "orca", "--backend", "model", "--quick", "--grid",
                     "pace=0.95/0", "--out", str(tmp_path)]) == 0
    (sweep,) = (tmp_path / "sweeps").iterdir()
    capsys.readouterr()
    assert cli.main(["report", "--all", "--reference", "none", str(sweep)]) == 0
    lines = capsys.readouterr().out.splitlines()
    orca = [x for x in lines if " orca " in x]
    assert len(orca) == len(registry.claims("orca"))
    # the model has no CPU: its sender is link-bound, outside the paper's regime
    assert any(x.startswith("not in the paper's regime ") and "(model)" in x for x in orca)
    data = json.loads((tmp_path / "report" / "verdicts.json").read_text())
    runs = next(e for e in data["experiments"] if e["experiment"] == "orca")["runs"]
    assert len(runs) == 1 and runs[0]["folder"].startswith(str(sweep / "runs"))


@pytest.mark.slow     # two reports over every reference folder: about 3 s
def test_markdown_table_prints_and_writes_nothing(reference_report, tmp_path, capsys,
                                                  verdict_table):
    root = tmp_path / "results"
    shutil.copytree(REFERENCE, root)
    before = sorted(root.rglob("*"))
    assert cli.main(["report", "--markdown-table", str(root)]) == 0
    table = capsys.readouterr().out
    assert sorted(root.rglob("*")) == before
    assert table.startswith("| experiment | runs | claims | holds |")
    assert len(table.strip().splitlines()) == 2 + len(registry.EXPERIMENTS)
    assert cli.main(["report", "--headlines", str(root)]) == 0
    heads = capsys.readouterr().out
    assert sorted(root.rglob("*")) == before
    assert heads.startswith("| paper | headline claim | paper's value | emulated |")
    # one row per headline claim, each paper with 2-4 of them
    claims = {(c.experiment, c.key) for name in registry.EXPERIMENTS
              for c in registry.claims(name) if c.headline}
    assert len(heads.strip().splitlines()) == 2 + len(claims)
    for paper in papers.PAPERS.values():
        assert 2 <= sum(e in paper.experiments for e, _ in claims) <= 4, paper.file
    readme = f"# dcrepro\n\nintro\n\n{heads}\nmore\n"
    verdict_table(readme, root)                      # the helper accepts the current table
    with pytest.raises(AssertionError, match="dcrepro report --headlines"):
        verdict_table(readme.replace("**holds**", "**does not hold**", 1), root)


@pytest.mark.slow     # the report sets its headlines beside the judged reference: about 3 s
def test_reproduce_ends_with_the_report_over_its_own_runs(tmp_path, run_folder):
    """The end of scripts/reproduce.sh, run as it is: the run folders made after its stamp
    (not older ones) get the report, one screen of headlines, the page agreeing; exit 0
    although claims do not hold."""
    text = (REPO / "scripts" / "reproduce.sh").read_text()
    tail = text[text.index("# which claims hold"):]
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    cli_sh = repo / ".venv" / "bin" / "dcrepro"
    cli_sh.write_text(f'#!/bin/sh\nexec {sys.executable} -m dcrepro.cli "$@"\n')
    cli_sh.chmod(0o755)
    rows = [{"flows": n, "run": "all", "lone_share_of_fair": s}     # rises: lone-falls fails
            for n, s in ((2, 0.2), (6, 0.7), (12, 0.9))]
    old = run_folder("outcast", {"summary.csv": rows}, root=repo / "results")
    os.utime(old, (1e9, 1e9))
    stamp = repo / "stamp"
    stamp.write_text("")
    os.utime(stamp, (1.5e9, 1.5e9))
    new = run_folder("outcast", {"summary.csv": rows}, root=repo / "results")
    (repo / "results" / "reference" / "outcast").mkdir(parents=True)   # not a run folder
    script = f"set -uo pipefail\nfailed=()\nstamp={stamp}\n{tail}"
    done = subprocess.run(["bash", "-c", script], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # one screen: the headline claims, one line for the others (every claim is on the page)
    screen = lines[lines.index(next(x for x in lines if x.startswith("headline claims"))):]
    assert len(screen) <= 25, screen
    page = Page((repo / "results" / "report" / "index.html").read_text())
    shown = [x for x in screen if x[:3].isdigit()]
    others = next(x for x in screen if x.startswith("other claims: "))
    assert len(page.claims) == len(shown) + int(others.split()[2])
    assert "does not hold" in others          # lone-falls, not a headline
    assert screen[-1] == f"report: {repo / 'results' / 'report' / 'index.html'}"
    data = json.loads((repo / "results" / "report" / "verdicts.json").read_text())
    runs = {r["run id"] for e in data["experiments"] for r in e["runs"]}
    assert runs == {new.name}
    assert not stamp.exists()


def test_the_suite_installs_its_browser():
    """tests/unit/test_report_browser.py needs Chromium: scripts/test.sh asks setup.sh."""
    setup = (REPO / "setup.sh").read_text()
    assert "--with-browser) with_browser=1" in setup and "PKGS+=(chromium)" in setup
    assert "./setup.sh --with-slurm --with-browser" in (REPO / "scripts" / "test.sh").read_text()


def test_damaged_folders_are_named_and_the_report_goes_on(run_folder, tmp_path, capsys):
    """Issue #56 part 6: a half-written run folder and a table of random bytes are each
    named in one line; the good runs are reported; exit 0, no traceback."""
    good = run_folder("outcast-fattree", {"summary.csv": _st_rows(0.2)},
                      params={"routing": "st"})
    bad = run_folder("outcast-fattree", {"summary.csv": []}, params={"routing": "hashed"})
    (bad / "summary.csv").write_bytes(bytes(range(128, 256)) * 4)
    half = tmp_path / "results" / "outcast-fattree" / "20300102T000000Z-abcdef"
    half.mkdir()
    (half / "config.json").write_text("{}")
    assert cli.main(["report", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out.splitlines()
    skipped = [x for x in out if x.startswith("skipped  ")]
    assert len(skipped) == 2
    assert any(str(half) in x and "half-written run folder (no status.json)" in x
               for x in skipped)
    assert any(str(bad / "summary.csv") in x and "not UTF-8 text" in x for x in skipped)
    page = (tmp_path / "results" / "report" / "index.html").read_text()
    assert "Left out" in page and str(half) in page
    st = [x for x in out if "spanning-tree" in x]
    assert st and st[0].startswith("002 holds ") and good.name  # the good run still judged


def test_a_runs_answer_is_its_headlines_a_count_of_the_rest_and_its_trust(tmp_path):
    """What `dcrepro run` ends with (report.run_answer): each headline claim with its
    verdict, value and the paper's (or why it has none), one line for the other claims,
    the trust line; long texts cut to fit."""
    from types import SimpleNamespace

    from analysis.claims import Verdict

    def v(verdict: str, headline: bool, measured: str = "", detail: str = "",
          text: str = "a claim") -> Verdict:
        return Verdict("permutation", text, "", text, "src", "", "1.5x", measured, "crit",
                       "", verdict, detail, "measured", ("r",), headline=headline,
                       interval=measured)
    long = "x" * 80
    found = [v("holds", True, "1.26 [1.08, 1.45] 95 %, n=5 repetitions"),
             v("not measured", True, detail="no complete run with cc=lia; more", text=long),
             v("holds", False), v("inconclusive", False)]
    run = SimpleNamespace(config={"params": {"runs": 5}}, path=tmp_path,
                          suspects=lambda: [], experiment="permutation",
                          params={"runs": 5, "bw": 5.0})
    lines = R.run_answer(run, found)  # type: ignore[arg-type]
    assert lines[0].startswith("claims of this run, judged on 5 repetitions")
    # the set-up against the paper's (store.papers.scale), then the headlines
    assert lines[1] == "  set-up against the paper: " + papers.scale("permutation", {"bw": 5.0})
    assert lines[1].startswith("  set-up against the paper: link rate 5 of 15 Mb/s (0.333x)")
    assert lines[2].split() == ["holds", "a", "claim", "1.26", "[1.08,", "1.45],", "n=5;",
                                "paper", "1.5x"]
    assert "x" * 47 + "..." in lines[3] and "- (no complete run with cc=lia)" in lines[3]
    assert lines[4] == "  other claims: 2 (1 holds, 1 inconclusive)"
    assert lines[5] == "trust: no repetition flagged by the fidelity checks"
    run.suspects = lambda: ["run 1 tcp: CPU above 90 % in 40% of samples"]
    assert R.run_answer(run, found)[-1].startswith(  # type: ignore[arg-type]
        "trust: flagged (1: run 1 tcp: CPU above 90 %")
    assert R.run_answer(run, [])[2] == "  (this experiment has no claims)"  # type: ignore[arg-type]


def test_a_runs_answer_shows_its_own_view_of_a_claim_judged_in_several_conditions(tmp_path):
    """GRIN judges each claim on the measured throughput and on two models beside it: the
    answer shows the measured verdict once; a claim with only other conditions shows each,
    named."""
    from types import SimpleNamespace

    from analysis.claims import Verdict

    def v(key: str, condition: str, measured: str) -> Verdict:
        return Verdict("grin", key, condition, f"claim {key}", "src", "", "2x", measured,
                       "crit", "", "inconclusive", "", "measured", ("r",), headline=True,
                       interval=measured)
    found = [v("a", "emulated", "1.98"), v("a", "uncoupled model", "2"),
             v("a", "h1 optimum", "2"), v("b", "recovery=classic", "0.5"),
             v("b", "recovery=modern", "0.7")]
    run = SimpleNamespace(config={"params": {"runs": 2}}, path=tmp_path, suspects=lambda: [],
                          experiment="grin-hops", params={"runs": 2})  # (no scale line)
    lines = R.run_answer(run, found)[1:-1]  # type: ignore[arg-type]
    assert len(lines) == 3
    assert "claim a " in lines[0] and "1.98" in lines[0] and "[" not in lines[0].split("1.98")[0]
    assert "claim b [recovery=classic]" in lines[1] and "claim b [recovery=modern]" in lines[2]


def test_a_claim_not_measured_in_any_condition_takes_one_screen_line():
    """GRIN2's emulated run and its two models: three "not measured" lines said one thing;
    once one condition is measured, each gets its line again."""
    from analysis.claims import NOT_MEASURED, Verdict
    v = Verdict(experiment="grin", key="grin2", condition="emulated", text="GRIN2", source="",
                quote="", paper="3x", measured="", criterion="", reason="",
                verdict=NOT_MEASURED, detail="", basis="measured", runs=(), view="emulated")
    views = {"emulated": [v, replace(v, condition="model: a"), replace(v, condition="model: b")]}
    assert R._screen_view(views) == ("emulated", [v])
    views["emulated"][1] = replace(v, condition="model: a", verdict=HOLDS)
    assert len(R._screen_view(views)[1]) == 3


def test_a_runs_scale_against_the_paper_is_its_parameters_over_the_papers_numbers():
    """Issue #54 part 2: rate and duration against the paper's, from store/papers.py's
    conditions; an experiment without a condition of its own takes its paper's (permutation
    the write-up's 15 Mb/s); a paper that states no number says so."""
    from store.papers import scale
    assert scale("fairness", {"bw": 10.0, "duration": 12.0}) == \
        "link rate 10 of 15 Mb/s (0.667x); flow duration 12 of 60 s (0.2x)"
    # a value whose effect was checked (ns-3, bench/bench_scaled_rate.py) says what it does
    assert scale("permutation", {"bw": 5.0}) == "link rate 5 of 15 Mb/s (0.333x) (in ns-3 " \
        "the TCP mean reads +0.041 [+0.002, +0.079] of the link above 15 Mb/s's: not the " \
        "paper's regime for it; bench/bench_scaled_rate.py)"
    assert scale("permutation", {"bw": 10.0}) == "link rate 10 of 15 Mb/s (0.667x)"
    assert scale("grin", {"bw": 10.0}) == "link rate 10 of 1000-10000 Mb/s (0.001-0.01x)"
    assert scale("outcast", {"bw": 10.0}) == "link rate 10 Mb/s (the paper's not stated)"
    assert scale("grin-hops", {"racks": 6}) == "" and scale("nosuch", {"bw": 1.0}) == ""


def test_multi_panel_figures_span_the_page_below_the_claims(tmp_path, run_folder):
    """A figure 1,100 px wide or wider (outcast_n12.png: 4 panels, 1,320 px) is shown across
    the page, no wider than it is; a single panel (outcast_share.png, 770 px) stays in the
    figure column beside the claims."""
    from analysis.report import WIDE_PX, png_width
    rows = [{"flows": n, "run": "all", "lone_share_of_fair": s}
            for n, s in ((2, 0.9), (6, 0.3), (12, 0.2))]
    run = run_folder("outcast", {"summary.csv": rows}, params={"flows": "2,6,12"})
    for name in ("outcast_share.png", "outcast_n12.png"):
        (run / name).write_bytes(next((REFERENCE / "outcast").glob(f"*/{name}")).read_bytes())
    assert png_width(run / "outcast_share.png") < WIDE_PX <= png_width(run / "outcast_n12.png")
    (run / "summary.csv").rename(run / "not-a.png")
    assert png_width(run / "not-a.png") == 0 and png_width(run / "absent.png") == 0
    (run / "not-a.png").rename(run / "summary.csv")
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--out", str(out), "--reference", "none"]) == 0
    html = (out / "index.html").read_text()
    section = html[html.index('<section id="outcast">'):]
    section = section[:section.index("</section>")]
    cols, wide = section.split('<div class="wide">')
    assert "outcast_share.png" in cols and "outcast_n12.png" not in cols
    assert "outcast_n12.png" in wide and 'style="max-width:1320px"' in wide


def test_too_few_repetitions_name_each_sweep_and_the_whole_reproduction_again(tmp_path):
    """A headline left inconclusive on fewer repetitions than its claim needs: the screen
    says which sweep with how many decides it, and that reproduce.sh --runs N runs them all."""
    from analysis.claims import Verdict
    claim = next(c for c in registry.claims("plts") if c.headline)
    v = Verdict("plts", claim.key, "", claim.text, "", "", "", "", "", "", "inconclusive",
                "", "measured", ("r",), headline=True, values=(1.0,))
    got = R.to_decide_lines(R.Report(tmp_path, [], []), [v])
    assert got[0].startswith("decided here: 0 of 1 headline claims") and got[0].endswith(
        f"./scripts/reproduce.sh --runs {claim.repetitions} (its check says how long), or "
        "one experiment at a time:")
    assert got[1] == (f"  plts: 1 of {claim.repetitions} repetitions; "
                      f"{registry.sweep_command('plts')} --quick --runs {claim.repetitions}")


def test_the_same_draws_words_name_each_difference_that_excludes_zero():
    """Issue #54: a quick run on the reference's networks is compared with it repetition by
    repetition; a difference whose interval misses 0 is named with it."""
    from analysis.intervals import Interval
    from analysis.paired import Paired
    v = R.Verdict("outcast", "lone-n6", "", "t", "s", "q", "p", "m", "c", "r", HOLDS, "d",
                  "measured", ("x",))
    zero = Interval(0.01, -0.05, 0.07, 5)
    off = Interval(0.12, 0.05, 0.2, 5)
    one = Interval(1.0, 0.9, 1.1, 5)
    assert R.same_draws_words([]) == ""
    words = R.same_draws_words([(v, Paired("lone-n6", "", ("0", "1"), one, one, zero)),
                                (replace(v, key="lone-n12"),
                                 Paired("lone-n12", "", ("0", "1"), one, one, off))])
    assert words.endswith("contains 0 in 1 of 2 lines (not: outcast lone-n12 +0.12 "
                          "[+0.05, +0.2])"), words
    # a run with other flows than the reference's is told the window may be the cause
    longer = replace(twice_p := Paired("lone-n12", "", ("0", "1"), one, one, off),
                     windows=("12 s, trim 3 s", "20 s, trim 4 s"))
    assert R.same_draws_words([(v, longer)]).endswith(
        "(not: outcast lone-n6 +0.12 [+0.05, +0.2]; its flows are longer: the window's, or "
        "this machine's)")
    assert twice_p.same_window and not longer.same_window
    # one statistic behind two headlines (permutation's two) is named once
    twice = [(replace(v, key=k), Paired(k, "", ("0", "1"), one, one, off))
             for k in ("mptcp-mean", "fig4-ratio-lia")]
    assert R.same_draws_words(twice).endswith(
        "contains 0 in 0 of 2 lines (not: outcast mptcp-mean/fig4-ratio-lia +0.12 "
        "[+0.05, +0.2])")


def test_a_line_short_of_repetitions_names_the_flagged_ones_and_the_steal(tmp_path):
    """The screen's 'n of 5 repetitions' line says how many repetitions were flagged and
    the most steal named beside them (the CI of ebed455 kept 2 of permutation's 5 under
    3-13 % steal, and its screen did not say why)."""
    from analysis.claims import Run
    gaps = ("only 92.6% of 54,867 busy-link dequeue gaps within 10 % of the packet time "
            "(beside the run: steal {}% of the machine's CPU)")
    run = Run(tmp_path, {"experiment": "permutation", "params": {}},
              {"status": "ok", "suspect": [f"run 2 tcp: {gaps.format(5.9)}",
                                           f"run 3 mptcp: {gaps.format(13.3)}",
                                           "run 3 tcp: CPU above 90 % in 33% of samples"]})
    assert R.flagged_words([run]) == " (2 flagged, steal up to 13.3 % beside them)"
    calm = Run(tmp_path, {"experiment": "permutation", "params": {}},
               {"status": "ok", "suspect": ["run 4 tcp: CPU above 90 % in 40% of samples"]})
    assert R.flagged_words([calm]) == " (1 flagged)"
    assert R.flagged_words([run, calm]) == " (3 flagged, steal up to 13.3 % beside them)"
    clean = Run(tmp_path, {"experiment": "permutation", "params": {}},
                {"status": "ok", "suspect": []})
    assert R.flagged_words([clean]) == ""
