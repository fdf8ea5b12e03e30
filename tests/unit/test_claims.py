"""The claims of every experiment as data (analysis/claims.py and experiments/*/claims.py):
the type and the vocabulary, which runs a claim is judged on, when a run is not trusted,
and each experiment's criteria on small synthetic run folders, on both sides of the line."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from analysis import claims as C
from store import read_csv, registry

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO.parent / "shared" / "papers"


def test_the_vocabulary_is_six_words():
    assert C.VERDICTS == ("holds", "does not hold", "inconclusive", "not in the paper's regime",
                          "not measured", "run not trusted")


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_experiment_declares_at_least_two_complete_claims(name):
    found = registry.claims(name)
    assert len(found) >= 2
    assert len({c.key for c in found}) == len(found), "claim keys are unique"
    for c in found:
        assert isinstance(c, C.Claim) and c.experiment == name
        for attr in ("text", "source", "paper", "criterion", "reason"):
            assert getattr(c, attr).strip(), (c.key, attr)
        paper = c.source.split(",")[0]
        assert paper.endswith(".txt") and paper[:3].isdigit(), c.source
        if PAPERS.is_dir():                       # shared/ sits beside the repository
            assert (PAPERS / paper).is_file(), c.source


@pytest.mark.skipif(not PAPERS.is_dir(), reason="shared/papers is not beside the repository")
@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_quote_is_the_papers_own_words(name):
    for c in registry.claims(name):
        if not c.quote:
            continue
        text = " ".join((PAPERS / c.source.split(",")[0]).read_text().split())
        words = " ".join(c.quote.removeprefix("... ").split())
        assert words in text, (c.key, words)


def test_an_experiment_without_a_claims_module_has_none(monkeypatch):
    monkeypatch.setitem(registry.EXPERIMENTS, "nothing",
                        ("experiments.nothing.experiment", "experiments.nothing.figures:plot"))
    assert registry.claims("nothing") == []


# -- choosing runs, trust ---------------------------------------------------------------------

def _fattree(run_folder, routing, ratios, duration=None, flows=(), **kw):
    """An outcast-fattree run folder: a summary row per repetition and one pooled row
    (``flows``: its flows.csv rows)."""
    below = sum(r < 0.5 for r in ratios)
    rows = [{"routing": routing, "run": i, "runs": 1, "local_over_remote": x}
            for i, x in enumerate(ratios)]
    rows += [{"routing": routing, "run": "all", "runs": len(ratios),
              "runs_local_below_half": below,
              "local_over_remote_median": sorted(ratios)[len(ratios) // 2]}]
    params = {"routing": routing, "runs": len(ratios),
              **({"duration": duration} if duration else {})}
    return run_folder("outcast-fattree", {"summary.csv": rows,
                                          **({"flows.csv": list(flows)} if flows else {})},
                      params=params, **kw)


def test_a_claim_is_judged_on_the_newest_complete_run_it_accepts(run_folder, judge):
    old = _fattree(run_folder, "st", [0.2, 0.3, 0.1, 0.2, 0.3])
    new = _fattree(run_folder, "st", [0.9, 0.8, 0.7, 0.9, 0.8])
    failed = _fattree(run_folder, "st", [0.1, 0.1, 0.1], status="failed")
    got = judge("outcast-fattree", old, new, failed)
    st = got["Under spanning-tree routing the sender on the receiver's edge switch gets well "
             "below the remote senders"]
    assert st.verdict == C.FAILS and st.measured.startswith("0.82 [")
    assert "n=5 repetitions" in st.interval and "0 of 5 runs below half" not in st.detail
    assert st.runs == (new.name,)
    hashed = [v for v in got.values() if v.key == "hashed-outcast"][0]
    assert hashed.verdict == C.NOT_MEASURED
    assert "routing=hashed" in hashed.detail and "-r hashed" in hashed.detail
    # only the failed run: not measured, and the failure is named
    (only,) = [v for v in judge("outcast-fattree", failed).values() if v.key == "st-outcast"]
    assert only.verdict == C.NOT_MEASURED and "'failed' (test failure)" in only.detail


def test_per_hop_ecmp_is_judged_on_ecmp_runs_only(run_folder, judge):
    """ecmp-outcast, a supporting claim: the hashed claim's test on --routing ecmp runs."""
    st = _fattree(run_folder, "st", [0.1, 0.1, 0.1, 0.1, 0.1])
    (v,) = [v for v in judge("outcast-fattree", st).values() if v.key == "ecmp-outcast"]
    assert v.verdict == C.NOT_MEASURED and "-r ecmp" in v.detail
    ecmp = _fattree(run_folder, "ecmp", [0.2, 0.3, 0.25, 0.2, 0.3])
    got = {v.key: v for v in judge("outcast-fattree", st, ecmp).values()}
    assert got["ecmp-outcast"].verdict == C.HOLDS and not got["ecmp-outcast"].headline
    assert got["ecmp-outcast"].runs == (ecmp.name,) and got["st-outcast"].runs == (st.name,)
    high = _fattree(run_folder, "ecmp", [0.9, 0.8, 0.85, 0.9, 0.8])
    (v,) = [v for v in judge("outcast-fattree", high).values() if v.key == "ecmp-outcast"]
    assert v.verdict == C.FAILS


def test_senders_that_never_connected_are_named_beside_the_interval(run_folder, judge):
    """Every repetition stays in the interval (a sender that never connects counts as
    0 Mb/s); the verdict says which repetitions had such senders and on which side."""
    flows = [{"routing": "st", "run": rep, "sender": f"h{i}", "local": i == 0,
              "connected": not lost} for rep, lost_at in ((0, ()), (1, (1, 2)), (2, (0,)))
             for i in range(4) for lost in [i in lost_at]]
    path = _fattree(run_folder, "st", [0.2, 2.5, 0.1], duration=12, flows=flows)
    (v,) = [v for v in judge("outcast-fattree", path).values() if v.key == "st-outcast"]
    assert "n=3 repetitions" in v.interval
    assert ("2 repetition(s) had senders that never connected, each counted as 0 Mb/s "
            "(repetition 1: 2 remote, 2: the local sender)") in v.detail
    assert "outlasts 12-s flows sooner" in v.detail
    clean = _fattree(run_folder, "st", [0.2, 0.3, 0.1])
    (v,) = [v for v in judge("outcast-fattree", clean).values() if v.key == "st-outcast"]
    assert "never connected" not in v.detail


def test_a_flagged_run_is_not_trusted_but_its_value_is_shown(run_folder, judge):
    path = _fattree(run_folder, "st", [0.1, 0.2, 0.3],
                    suspect=["run 0: CPU above 90 % in 40% of samples", "run 1: lost"])
    (v,) = [v for v in judge("outcast-fattree", path).values() if v.key == "st-outcast"]
    # the two flagged repetitions are left out: one is left, which decides nothing
    assert v.verdict == C.INCONCLUSIVE and v.measured == "0.3 (one repetition: no interval)"
    assert "2 repetition(s) left out: the fidelity check flagged them" in v.detail
    whole = _fattree(run_folder, "st", [0.1, 0.2, 0.3], suspect=["CPU above 90 %"])
    (v,) = [v for v in judge("outcast-fattree", whole).values() if v.key == "st-outcast"]
    assert v.verdict == C.NOT_TRUSTED and v.measured == "3 of 3 runs below half"
    assert "1 of 1 run folder(s) left out: the fidelity check flagged them" in v.detail
    C.write_run_claims(path, registry.claims("outcast-fattree"))   # the reasons: once
    md = (path / "claims.md").read_text()
    assert md.count("CPU above 90 % in 40% of samples") == 1 and "- run 1: lost" in md


def test_older_runs_are_flagged_by_fidelity_reports_and_row_columns(run_folder):
    fid = {"reports": [{"run": 0, "transport": "mptcp", "reasons": ["emulated aggregate is "
                                                                     "0.80 of the model's"]}]}
    a = run_folder("permutation", {"summary.csv": [{"run": "all"}]}, data={"fidelity.json":
                                                                           fid})
    assert C.Run.open(a).suspects() == ["run 0 mptcp: emulated aggregate is 0.80 of the "
                                        "model's"]
    b = run_folder("permutation", {"summary.csv": [{"run": "0", "suspect": "True"},
                                                   {"run": "1", "suspect": "False"}]})
    assert C.Run.open(b).suspects() == ["summary.csv: 1 row(s) marked suspect"]
    c = run_folder("permutation", {"summary.csv": [{"run": "0", "suspect": "False"}]})
    assert C.Run.open(c).suspects() == []


def test_a_sweep_is_one_source_whose_runs_a_claim_pools(run_folder):
    """outcast over a sweep of N: each run has one N; the fall is judged across them."""
    def run(n, share, started):
        return C.Run.open(run_folder("outcast", {"summary.csv": [
            {"flows": n, "run": "all", "lone_share_of_fair": share}]},
            params={"flows": str(n)}, started=started))
    sweep = [run(2, 0.9, "20300101T000001Z"), run(6, 0.4, "20300101T000002Z"),
             run(12, 0.2, "20300101T000003Z")]
    falls = next(c for c in registry.claims("outcast") if c.key == "lone-falls")
    (v,) = C.evaluate(falls, [sweep])
    assert v.verdict == C.HOLDS and v.measured == "N=2: 0.90, N=6: 0.40, N=12: 0.20"
    assert len(v.runs) == 3
    # one run alone has one N: not measured, saying why
    (v,) = C.evaluate(falls, [sweep[:1]])
    assert v.verdict == C.NOT_MEASURED and "one N only" in v.detail


def test_run_claims_files_and_terminal_lines(run_folder):
    path = _fattree(run_folder, "st", [0.1, 0.2, 0.3, 0.2, 0.1])
    found = C.write_run_claims(path, registry.claims("outcast-fattree"))
    rows = read_csv(path / "claims.csv")
    # st judged; hashed and per-hop ECMP need runs of their own routing
    assert [r["verdict"] for r in rows] == [C.HOLDS, C.NOT_MEASURED, C.NOT_MEASURED]
    assert list(rows[0])[:2] == ["claim", "condition"]
    md = (path / "claims.md").read_text()
    assert "| 0.18 [0.0761, 0.284] 95 %, n=5 repetitions |" in md
    assert "backend=emulated: measured.  1 holds, 2 not measured." in md
    line = C.terminal_line(found[0])
    assert line.startswith("holds ") and "outcast-fattree" in line and "measured 0.18 [" in line
    assert C.summary_line("outcast-fattree", found) == (
        "outcast-fattree: 3 claims: 1 holds, 2 not measured")


# -- permutation ------------------------------------------------------------------------------

def _perm_rows(tcp, mptcp, bwm_over_iperf=1514 / 1448):
    rows = []
    for transport, values in (("tcp", tcp), ("mptcp", mptcp)):
        for run, vals in enumerate(values):
            for i, v in enumerate(vals):
                rows.append({"run": run, "transport": transport, "src": f"h{i}",
                             "iperf_mbps": 10 * v, "bwm_mbps": 10 * v * bwm_over_iperf,
                             "norm_iperf": v, "norm_bwm": v * bwm_over_iperf,
                             "norm_model": v})
    return rows


def test_permutation_claims(run_folder, judge):
    tcp = [[0.3, 0.9, 0.5, 1.0], [0.4, 0.8, 0.5, 0.9], [0.35, 0.85, 0.5, 0.95],
           [0.3, 0.9, 0.6, 1.0], [0.4, 0.8, 0.5, 0.9]]
    good = run_folder("permutation", {"flows.csv": _perm_rows(
        tcp, [[0.9, 0.95, 0.9, 1.0]] * 5)}, params={"backend": "emulated"})
    got = {v.key: v for v in judge("permutation", good).values()}
    assert {k: got[k].verdict for k in ("mptcp-mean", "mptcp-jain", "tools-agree")} == {
        "mptcp-mean": C.HOLDS, "mptcp-jain": C.HOLDS, "tools-agree": C.HOLDS}
    # per repetition MPTCP mean / TCP mean, averaged, with its t interval
    ratios = [0.9375 / (sum(t) / 4) for t in tcp]
    assert got["mptcp-mean"].measured.startswith(f"{sum(ratios) / 5:.3g} [")
    assert got["mptcp-mean"].headline and not got["mptcp-jain"].headline
    assert got["tools-agree"].measured.startswith("bwm-ng/iperf3 1.046 (+0.0% from 1.046)")
    # MPTCP no better, and the tools 8 % apart beyond the framing
    bad = run_folder("permutation", {"flows.csv": _perm_rows(
        [[0.9, 0.95, 0.9, 1.0]] * 5, [[0.3, 0.9, 0.5, 1.0]] * 5, 1514 / 1448 * 1.08)},
        params={"backend": "emulated"})
    got = {v.key: v.verdict for v in judge("permutation", bad).values()}
    assert {k: got[k] for k in ("mptcp-mean", "mptcp-jain", "tools-agree")} == {
        "mptcp-mean": C.FAILS, "mptcp-jain": C.FAILS, "tools-agree": C.FAILS}
    # the model measures nothing with tools (its rows have no wire rate: harness/backends/
    # model.py); and a run without TCP cannot compare
    model_rows = [{"run": 0, "transport": "mptcp", "src": "h0", "goodput_mbps": 9.0,
                   "norm_goodput": 0.9, "model_mbps": 9.0, "norm_model": 0.9}]
    model = run_folder("permutation", {"flows.csv": model_rows}, params={"backend": "model"})
    got = {v.key: v for v in judge("permutation", model).values()}
    assert got["tools-agree"].verdict == C.NOT_MEASURED
    assert "measures no wire rate" in got["tools-agree"].detail
    assert got["mptcp-mean"].verdict == C.NOT_MEASURED and "no tcp flows" in \
        got["mptcp-mean"].detail
    assert got["mptcp-mean"].basis == "model"


_K4 = {"backend": "emulated", "topo": "fattree,k=4"}


def test_permutation_fig4_ratio_and_htsim_anchor_per_control(run_folder, judge):
    # lia: MPTCP 0.88 everywhere, TCP 0.58: ratio 1.52, mean +0.3 %, Jain 1.0
    lia = run_folder("permutation", {"flows.csv": _perm_rows(
        [[0.58] * 4] * 5, [[0.88] * 4] * 5)}, params={**_K4, "cc": "lia"})
    # cubic: MPTCP 0.65 and unevenly shared (Jain 0.86), TCP 0.58: ratio 1.12, mean -26 %
    cubic = run_folder("permutation", {"flows.csv": _perm_rows(
        [[0.58] * 4] * 5, [[0.20, 0.80, 0.80, 0.80]] * 5)}, params={**_K4, "cc": "cubic"})
    got = {v.key: v for v in judge("permutation", lia, cubic).values()}
    assert {k: got[k].verdict for k in ("fig4-ratio-lia", "htsim-mean-lia",
                                        "htsim-jain-lia")} == dict.fromkeys(
        ("fig4-ratio-lia", "htsim-mean-lia", "htsim-jain-lia"), C.HOLDS)
    assert got["fig4-ratio-lia"].measured.startswith("1.52 [1.52, 1.52] 95 %, n=5")
    assert got["fig4-ratio-lia"].condition == "cc=lia" and got["fig4-ratio-lia"].runs == (
        lia.name,)
    assert got["htsim-mean-lia"].measured == "0.880 (+0.3% from 0.877)"
    assert {k: got[k].verdict for k in ("fig4-ratio-cubic", "htsim-mean-cubic",
                                        "htsim-jain-cubic")} == dict.fromkeys(
        ("fig4-ratio-cubic", "htsim-mean-cubic", "htsim-jain-cubic"), C.FAILS)
    assert got["htsim-jain-cubic"].measured.startswith("0.862 (-12.0%")
    # a ratio of 1.7 is beyond 'about 1.5' (10 %) the other way
    high = run_folder("permutation", {"flows.csv": _perm_rows(
        [[0.5] * 4] * 5, [[0.85] * 4] * 5)}, params={**_K4, "cc": "lia"})
    (v,) = [v for v in judge("permutation", high).values() if v.key == "fig4-ratio-lia"]
    assert v.verdict == C.FAILS and v.measured.startswith("1.7 [")
    # one repetition decides nothing, however clear
    one = run_folder("permutation", {"flows.csv": _perm_rows(
        [[0.5] * 4], [[0.85] * 4])}, params={**_K4, "cc": "lia"})
    (v,) = [v for v in judge("permutation", one).values() if v.key == "fig4-ratio-lia"]
    assert v.verdict == C.INCONCLUSIVE and "1 of the 5 repetitions" in v.detail


def test_mptcp_on_one_subflow_is_not_in_the_papers_regime(run_folder, judge):
    rows = _perm_rows([[0.58] * 4] * 5, [[0.88] * 4] * 5)
    for r in rows:
        r["subflows"] = 1 if r["transport"] == "tcp" or r["src"] != "h0" else 8
    lost = run_folder("permutation", {"flows.csv": rows}, params={**_K4, "cc": "lia"})
    got = {v.key: v for v in judge("permutation", lost).values()}
    v = got["fig4-ratio-lia"]
    assert v.verdict == C.NOT_REGIME and "15 of 20 MPTCP flows ran on fewer than 2" in v.detail
    assert v.measured.startswith("1.52 [")     # the value is still shown
    # not measured: no run with that control; a k=8 or a model run is not the anchor's case
    k8 = run_folder("permutation", {"flows.csv": _perm_rows([[0.58]], [[0.88]])},
                    params={**_K4, "topo": "fattree,k=8", "cc": "lia"})
    got = {v.key: v for v in judge("permutation", k8).values()}
    assert got["htsim-mean-lia"].verdict == C.NOT_MEASURED
    assert "--cc lia" in got["htsim-mean-lia"].detail
    assert got["fig4-ratio-cubic"].verdict == C.NOT_MEASURED


# -- fairness ---------------------------------------------------------------------------------

def _fair_rows(ft, jf, **scale):
    """Flow rows whose every column holds the given value, times ``scale[column]`` (e.g.
    norm_model_tcp=0.9) for the Jellyfish's flows."""
    cols = ("norm_bwm", "norm_iperf", "norm_model", "norm_model_tcp", "norm_model_tcp_coupled")
    return [{"run": run, "topology": topo, **{c: v * (scale.get(c, 1.0) if topo == "jellyfish"
                                                    else 1.0) for c in cols}}
            for topo, values in (("fattree", ft), ("jellyfish", jf))
            for run, vals in enumerate(values) for v in vals]


_BASE3 = ("mean", "rank", "jain")


def test_fairness_claims(run_folder, judge):
    ft = [[0.5, 0.7, 0.9, 1.0], [0.6, 0.7, 0.8, 1.0]] * 3
    close = [[0.52, 0.7, 0.88, 1.0], [0.6, 0.72, 0.8, 0.98]] * 3
    path = run_folder("fairness", {"flows.csv": _fair_rows(ft, close)},
                      params={"backend": "emulated"})
    got = {v.key: v.verdict for v in judge("fairness", path).values()}
    assert {k: got[k] for k in _BASE3} == {"mean": C.HOLDS, "rank": C.HOLDS, "jain": C.HOLDS}
    # two repetitions: the interval claims decide nothing; the rank (no interval) still does
    two = run_folder("fairness", {"flows.csv": _fair_rows(ft[:2], close[:2])},
                     params={"backend": "emulated"})
    got = {v.key: v.verdict for v in judge("fairness", two).values()}
    assert {k: got[k] for k in _BASE3} == {"mean": C.INCONCLUSIVE, "rank": C.HOLDS,
                                           "jain": C.INCONCLUSIVE}
    # Jellyfish's worst flow 0.15 lower at one rank: the mean stays within 5 %, the rank not
    low = [[0.35, 0.75, 0.92, 1.0], [0.45, 0.72, 0.85, 1.0]] * 3
    got = {v.key: v for v in judge("fairness", run_folder(
        "fairness", {"flows.csv": _fair_rows(ft, low)}, params={"backend": "emulated"})).values()}
    assert got["mean"].verdict == C.HOLDS and got["rank"].verdict == C.FAILS
    assert got["rank"].measured == "largest gap 0.150 of the link rate"
    assert "at rank 1 of 4: Jellyfish below" in got["rank"].detail
    # a Jellyfish 20 % above fails "within a few percent" too (both ways)
    high = [[min(1.0, 1.2 * v) for v in vals] for vals in ft]
    got = {v.key: v.verdict for v in judge("fairness", run_folder(
        "fairness", {"flows.csv": _fair_rows(ft, high)}, params={"backend": "emulated"})
    ).values()}
    assert got["mean"] == C.FAILS


def test_fairness_claims_on_the_tcp_like_model_at_k4_and_paper_scale(run_folder, judge):
    ft = [[0.5, 0.7, 0.9, 1.0], [0.6, 0.7, 0.8, 1.0]]
    # k=4, emulated, cubic: measured Jellyfish 20 % low; the uncoupled TCP-like model 18 %
    # low (agrees: -2.4 %), max-min equal (does not: -20 %); the coupled column is ignored
    k4 = run_folder("fairness", {"flows.csv": _fair_rows(
        ft, ft, norm_bwm=0.8, norm_iperf=0.8, norm_model_tcp=0.82,
        norm_model_tcp_coupled=1.0)},
        params={"backend": "emulated", "fattree": "fattree,k=4", "cc": "cubic"})
    got = {v.label: v for v in judge("fairness", k4).values()}
    agree = got["The emulated Jellyfish/fat-tree mean ratio agrees with the TCP-like model's "
                "on the same traced paths [TCP-like model]"]
    assert agree.verdict == C.HOLDS and agree.measured == "emulated 0.800 vs model 0.820 (-2.4%)"
    assert "norm_model_tcp" in agree.detail and "coupled" not in agree.detail
    maxmin = [v for v in got.values() if v.key == "agrees-tcp-model" and
              v.condition == "max-min model"][0]
    assert maxmin.verdict == C.FAILS and maxmin.measured.endswith("(-20.0%)")
    by = {v.key: v for v in got.values()}
    assert by["mean-tcp-k4"].verdict == C.FAILS and by["mean-tcp-k4"].condition == \
        "TCP-like model, k=4"
    assert by["mean-tcp-k4"].measured == "Jellyfish/fat tree mean 0.820"
    assert by["mean-tcp-paper"].verdict == C.NOT_MEASURED     # no k=10 run
    # under a coupled control (lia, balia, olia) the TCP-like model is the coupled one
    for cc in ("lia", "balia", "olia"):
        coupled = run_folder("fairness", {"flows.csv": _fair_rows(
            ft, ft, norm_bwm=0.8, norm_iperf=0.8, norm_model_tcp=1.0,
            norm_model_tcp_coupled=0.82)},
            params={"backend": "emulated", "fattree": "fattree,k=4", "cc": cc})
        got = {v.label: v for v in judge("fairness", coupled).values()}
        agree = [v for v in got.values() if v.key == "agrees-tcp-model" and
                 v.condition == "TCP-like model"][0]
        assert agree.verdict == C.HOLDS and "norm_model_tcp_coupled" in agree.detail, cc
    # paper scale, model backend: TCP-like and max-min judged apart; measured claims and
    # the agreement are not measured on a model run
    paper = run_folder("fairness", {"flows.csv": _fair_rows(ft, ft, norm_model=0.97,
                                                            norm_model_tcp=0.9)},
                       params={"backend": "model", "fattree": "fattree,k=10"})
    got = {v.key: v for v in judge("fairness", paper).values()}
    assert got["mean-maxmin-paper"].verdict == C.HOLDS
    assert got["mean-tcp-paper"].verdict == C.FAILS
    assert got["mean-tcp-paper"].basis == "model"
    assert got["jain-tcp-paper"].verdict == C.HOLDS
    for key in (*_BASE3, "agrees-tcp-model", "mean-tcp-k4"):
        assert got[key].verdict == C.NOT_MEASURED, key
    # a run without the TCP-like model's column: not measured, saying how to get it
    bare = run_folder("fairness", {"flows.csv": [
        {k: v for k, v in r.items() if not k.startswith("norm_model_tcp")}
        for r in _fair_rows(ft, ft)]}, params={"backend": "model", "fattree": "fattree,k=10"})
    got = {v.key: v for v in judge("fairness", bare).values()}
    assert got["mean-tcp-paper"].verdict == C.NOT_MEASURED
    assert "norm_model_tcp" in got["mean-tcp-paper"].detail
    assert got["mean-maxmin-paper"].verdict == C.HOLDS


def test_fairness_agreement_with_lias_own_equilibrium_under_lia_only(run_folder, judge):
    """Under --cc lia the agreement claim has a third condition, LIA's fluid model
    (norm_model_lia); under balia it has not.  A run without the column and without a
    subflows.csv to solve it from: not measured."""
    ft = [[0.5, 0.7, 0.9, 1.0], [0.6, 0.7, 0.8, 1.0]]
    rows = [{**r, "norm_model_lia": r["norm_model"] * (0.84 if r["topology"] == "jellyfish"
                                                       else 1.0)}
            for r in _fair_rows(ft, ft, norm_iperf=0.8)]
    for cc, want in (("lia", C.HOLDS), ("balia", None)):
        got = [v for v in judge("fairness", run_folder(
            "fairness", {"flows.csv": rows}, params={"backend": "emulated", "cc": cc})
        ).values() if v.key == "agrees-tcp-model" and v.condition == "LIA fluid model"]
        assert [v.verdict for v in got] == ([want] if want else []), cc
        if want:
            assert got[0].measured == "emulated 0.800 vs model 0.840 (-4.8%)"
    # the paper's claims on LIA's equilibrium at k=4: the mean 16 % low fails
    by = {v.key: v for v in judge("fairness", run_folder(
        "fairness", {"flows.csv": rows},
        params={"backend": "emulated", "cc": "lia", "fattree": "fattree,k=4"})).values()}
    assert by["mean-lia-k4"].verdict == C.FAILS
    assert by["mean-lia-k4"].measured == "Jellyfish/fat tree mean 0.840"
    assert by["mean-lia-paper"].verdict == C.NOT_MEASURED          # no k=10 run
    bare = [{k: v for k, v in r.items() if k != "norm_model_lia"} for r in rows]
    got = [v for v in judge("fairness", run_folder(
        "fairness", {"flows.csv": bare}, params={"backend": "emulated", "cc": "lia"})
    ).values() if v.condition == "LIA fluid model"]
    assert [v.verdict for v in got] == [C.NOT_MEASURED]
    # a subflows.csv it cannot be solved from (no spec column): not measured, saying why
    got = [v for v in judge("fairness", run_folder(
        "fairness", {"flows.csv": bare, "subflows.csv": [
            {"src": "a", "dst": "b", "path": "s1", "run": "0", "topology": "fattree"}]},
        params={"backend": "emulated", "cc": "lia", "bw": 5.0})
    ).values() if v.condition == "LIA fluid model"]
    assert [v.verdict for v in got] == [C.NOT_MEASURED]
    assert "not solvable from the run's subflows.csv: KeyError" in got[0].detail


def test_fairness_ranks_compare_at_equal_fractions_of_different_counts():
    from experiments.fairness.claims import rank_curve
    assert list(rank_curve([[0.2, 0.4, 1.0]], 5)) == pytest.approx([0.2, 0.3, 0.4, 0.7, 1.0])


# -- outcast ----------------------------------------------------------------------------------

def _outcast(run_folder, shares, others=(5.0, 5.0, 5.0)):
    summary = [{"flows": n, "run": "all", "lone_share_of_fair": s} for n, s in shares.items()]
    summary += [{"flows": n, "run": r, "lone_share_of_fair": s} for n, s in shares.items()
                for r in range(5)]
    flows = [{"flows": n, "run": 0, "sender": f"s{i}", "role": "aggregate",
              "iperf_mbps": others[i % len(others)]}
             for n in shares for i in range(n)]
    flows += [{"flows": n, "run": 0, "sender": "lone", "role": "lone", "iperf_mbps": 0.1}
              for n in shares]
    return run_folder("outcast", {"summary.csv": summary, "flows.csv": flows})


def test_outcast_model_view_has_no_outcast(tmp_path, judge):
    """The flow model's view of Outcast: no queue, so every sender gets the same share of
    link / (N + 1) and the lone flow is never an outcast; the claims say so, basis 'model'."""
    from dcrepro import cli
    assert cli.main(["run", "outcast", "--backend", "model", "--flows", "2,6,12", "--runs",
                     "10", "--out", str(tmp_path)]) == 0
    run = next((tmp_path / "outcast").iterdir())
    rows = read_csv(run / "flows.csv")
    assert len(rows) == 10 * (3 + 7 + 13)
    # the model's rates are goodput (1448 B of every 1514-B frame), the fair share the link's
    assert {float(r["share_of_fair"]) for r in rows} == {round(1448 / 1514, 4)}
    got = {v.key: v for v in judge("outcast", run).values()}
    for key in ("lone-n6", "lone-n12", "lone-n6-runs", "lone-n12-runs", "lone-falls"):
        assert got[key].verdict == C.FAILS and got[key].basis == "model", key
    assert got["others-equal"].verdict == C.HOLDS
    assert json.loads((run / "status.json").read_text())["status"] == "ok"


@pytest.mark.parametrize("routing", ["st", "hashed"])
def test_outcast_fattree_model_view_has_no_outcast(tmp_path, judge, routing):
    """The flow model's view of the fat tree: the 15 senders share the receiver's link
    equally whatever their path, so the local sender is no outcast and both claims fail."""
    from dcrepro import cli
    assert cli.main(["run", "outcast-fattree", "--backend", "model", "--routing", routing,
                     "--runs", "2", "--out", str(tmp_path)]) == 0
    run = next((tmp_path / "outcast-fattree").iterdir())
    rows = read_csv(run / "flows.csv")
    assert len(rows) == 2 * 15 and {r["backend"] for r in rows} == {"model"}
    assert {float(r["share_of_fair"]) for r in rows} == {round(1448 / 1514, 4)}
    assert sum(r["local"] == "True" for r in rows) == 2
    got = {v.key: v for v in judge("outcast-fattree", run).values()}
    key = f"{routing}-outcast"
    assert got[key].verdict == C.FAILS and got[key].basis == "model"


def test_outcast_robust_claims_count_repetitions(run_folder, judge):
    """8 of 10 repetitions below half hold; 7 of 10 do not; the pooled row is not one."""
    def folder(n6_below: int, n12_below: int):
        summary = [{"flows": n, "run": r, "lone_share_of_fair": 0.1 if r < below else 0.9}
                   for n, below in ((6, n6_below), (12, n12_below)) for r in range(10)]
        summary += [{"flows": n, "run": "all", "lone_share_of_fair": 0.3} for n in (6, 12)]
        return run_folder("outcast", {"summary.csv": summary, "flows.csv": []})
    got = {v.key: v for v in judge("outcast", folder(8, 7)).values()}
    assert got["lone-n6-runs"].verdict == C.HOLDS
    assert got["lone-n6-runs"].measured == "8 of 10 repetitions below half"
    assert got["lone-n12-runs"].verdict == C.FAILS


def test_outcast_claims(run_folder, judge):
    got = {v.key: v for v in judge("outcast", _outcast(
        run_folder, {2: 0.8, 6: 0.45, 12: 0.2})).values()}
    assert {k: v.verdict for k, v in got.items()} == {
        "lone-n6": C.HOLDS, "lone-n12": C.HOLDS, "lone-falls": C.HOLDS,
        "others-equal": C.HOLDS, "lone-n6-runs": C.NOT_MEASURED,
        "lone-n12-runs": C.NOT_MEASURED}
    assert "5 repetitions at N = 6; the criterion needs 10" in got["lone-n6-runs"].detail
    assert got["lone-n6"].measured == "0.45 [0.45, 0.45] 95 %, n=5 repetitions"
    # above half the fair share it is not "well below"; a rise breaks the fall; unequal others
    got = {v.key: v for v in judge("outcast", _outcast(
        run_folder, {2: 0.55, 6: 0.55, 12: 0.6}, others=(1.0, 9.0))).values()}
    assert {k: v.verdict for k, v in got.items()} == {
        "lone-n6": C.FAILS, "lone-n12": C.FAILS, "lone-falls": C.FAILS,
        "others-equal": C.FAILS, "lone-n6-runs": C.NOT_MEASURED,
        "lone-n12-runs": C.NOT_MEASURED}
    # a run without N = 12: that claim is not measured and says what was
    got = {v.key: v for v in judge("outcast", _outcast(run_folder, {2: 0.9, 6: 0.3})).values()}
    assert got["lone-n12"].verdict == C.NOT_MEASURED
    assert "no run with N = 12 (measured: N = 2, 6)" in got["lone-n12"].detail



def test_outcast_judges_the_absolute_time_rate_when_a_run_has_it(run_folder, judge):
    """flows.csv's ``mbps`` (bytes acked over the common window) is the measure; iperf3's
    own-clock rate only for tables without it: here iperf3 credits one of the others with
    9 Mb/s measured after the rest had ended, its absolute-time rate is equal theirs."""
    summary = [{"flows": 6, "run": "all", "lone_share_of_fair": 0.2}]
    flows = [{"flows": 6, "run": 0, "sender": f"s{i}", "role": "aggregate",
              "iperf_mbps": 9.0 if i == 0 else 1.5, "mbps": 1.5} for i in range(6)]
    got = {v.key: v for v in judge("outcast", run_folder(
        "outcast", {"summary.csv": summary, "flows.csv": flows})).values()}
    assert got["others-equal"].verdict == C.HOLDS
    old = [{k: v for k, v in r.items() if k != "mbps"} for r in flows]
    got = {v.key: v for v in judge("outcast", run_folder(
        "outcast", {"summary.csv": summary, "flows.csv": old})).values()}
    assert got["others-equal"].verdict == C.FAILS

# -- plts (the criteria moved from figures.py: same numbers) ----------------------------------

RED = "red,min=20,max=60,p=0.1,w=9"


def summary_row(scheme, pct, p90="", p99="", spread_=1.2, recovery="classic", aqm=None):
    """A summary row; ECMP on RED (the paper's set-up) unless ``aqm`` says otherwise."""
    aqm = aqm if aqm is not None else (RED if scheme == "ecmp" else "droptail")
    return {"scheme": scheme, "aqm": aqm, "recovery": recovery, "flows": 27,
            "mean_pct_ideal": pct, "latency_p90_us": p90, "latency_p99_us": p99,
            "max_over_min_run_median": spread_}


def _latencies(p90, p99):
    """1,000 samples whose 90th and 99th percentiles (numpy's linear) are p90 and p99."""
    return [p90 / 3] * 895 + [p90] * 90 + [p99] * 15


def _per_rep(summary, reps=5):
    """flows.csv and latency.csv of ``reps`` repetitions in which every scheme gets its
    summary row's % of ideal and latency percentiles."""
    flows, lat = [], []
    for r in range(reps):
        for row in summary:
            key = {"run": r, "scheme": row["scheme"], "aqm": row.get("aqm", ""),
                   "recovery": row["recovery"]}
            flows.append({**key, "pct_ideal": row["mean_pct_ideal"]})
            if row["latency_p90_us"] != "":
                lat += [{**key, "latency_us": x}
                        for x in _latencies(row["latency_p90_us"], row["latency_p99_us"])]
    return flows, lat


def _plts(run_folder, judge, rows, backend="emulated", reps=5):
    flows, lat = _per_rep(rows, reps)
    path = run_folder("plts", {"summary.csv": rows, "flows.csv": flows, "latency.csv": lat},
                      params={"backend": backend})
    return judge("plts", path)


def _holds(got, recovery="classic", ecmp="red"):
    return {v.text: v.verdict for v in got.values()
            if v.condition == f"recovery={recovery},ecmp={ecmp}"}


#: every plts claim's words, in the claims module's order
PLTS_CLAIMS = ("RR % of ideal", "CNT % of ideal", "RND lowest of the three sprays",
               "every spray above ECMP", "spray/ECMP throughput", "latency p90 spray/ECMP",
               "latency p99 spray/ECMP", "ECMP per-flow max/min >= 10",
               "spray per-flow max/min < 10")
PLTS_HEADLINES = ("RR % of ideal", "spray/ECMP throughput", "latency p90 spray/ECMP",
                  "latency p99 spray/ECMP")


def test_plts_claims_hold(run_folder, judge):
    got = _plts(run_folder, judge, [summary_row("ecmp", 55, 300, 1200, 12),
                                    summary_row("rnd", 78, 90, 200),
                                    summary_row("cnt", 82, 90, 200),
                                    summary_row("rr", 93, 90, 200, 1.1)])
    assert _holds(got) == dict.fromkeys(PLTS_CLAIMS, C.HOLDS)
    by = {v.text: v for v in got.values()}
    assert {t for t, v in by.items() if v.headline} == set(PLTS_HEADLINES)
    ratio = (78 + 82 + 93) / 3 / 55
    assert by["spray/ECMP throughput"].measured.startswith(f"{ratio:.3g} [")
    assert by["spray/ECMP throughput"].paper == "1.5"
    assert by["latency p90 spray/ECMP"].measured.startswith("0.3 [")
    assert by["latency p99 spray/ECMP"].measured.startswith("0.167 [")
    assert by["RR % of ideal"].measured.startswith("93 [") and \
        by["RR % of ideal"].paper == "92 %"


def test_plts_claims_do_not_hold(run_folder, judge):
    got = _plts(run_folder, judge, [summary_row("ecmp", 70, 300, 1200, 5),
                                    summary_row("rnd", 85, 200, 600, 2),
                                    summary_row("cnt", 74, 200, 600, 11),
                                    summary_row("rr", 80, 200, 600)])
    assert _holds(got) == {**dict.fromkeys(PLTS_CLAIMS, C.FAILS),
                           "every spray above ECMP": C.HOLDS}
    # CNT at exactly 5 points away still counts; a spray below ECMP breaks "every spray"
    got = _holds(_plts(run_folder, judge, [summary_row("ecmp", 80), summary_row("cnt", 86),
                                           summary_row("rnd", 79)]))
    assert got["CNT % of ideal"] == C.HOLDS and got["every spray above ECMP"] == C.FAILS
    # a spray far below the paper's latency fraction does not reproduce it either
    got = _holds(_plts(run_folder, judge, [summary_row("ecmp", 55, 300, 1200),
                                           summary_row("rr", 93, 30, 100)]))
    assert got["latency p90 spray/ECMP"] == got["latency p99 spray/ECMP"] == C.FAILS


def test_plts_headlines_outside_the_papers_regime(run_folder, judge):
    """Modern recovery (RACK tolerates reordering) or ECMP on drop-tail is not the paper's
    set-up: the headlines say so, never 'holds'; the supporting claims are still judged."""
    rows = [summary_row(s, p, 90 if s != "ecmp" else 300, 200 if s != "ecmp" else 1200,
                        recovery="modern") for s, p in (("ecmp", 55), ("rr", 93))]
    got = _plts(run_folder, judge, rows)
    h = _holds(got, "modern")
    assert {t: h[t] for t in PLTS_HEADLINES} == dict.fromkeys(PLTS_HEADLINES, C.NOT_REGIME)
    regime = next(v for v in got.values() if v.text == "RR % of ideal")
    assert "--recovery classic" in regime.detail and regime.measured.startswith("93 [")
    assert h["every spray above ECMP"] == C.HOLDS


def test_plts_claims_not_measured_without_inputs(run_folder, judge):
    rows = [summary_row(s, p, recovery=rec) for rec in ("classic", "modern")
            for s, p in (("ecmp", 60), ("rnd", 80), ("cnt", 81), ("rr", 92))]
    got = _plts(run_folder, judge, rows)
    assert [v.condition for v in got.values()][:2] == ["recovery=modern,ecmp=red",
                                                       "recovery=classic,ecmp=red"]
    for rec, rr in (("classic", C.HOLDS), ("modern", C.NOT_REGIME)):
        h = _holds(got, rec)
        assert h["latency p90 spray/ECMP"] == h["latency p99 spray/ECMP"] == C.NOT_MEASURED
        assert h["RR % of ideal"] == rr
    na = [v for v in got.values() if v.verdict == C.NOT_MEASURED]
    assert na and all(v.measured == "" and v.detail for v in na)
    # only ECMP measured: every claim about sprays is not measured, ECMP's own spread judged
    only_ecmp = _holds(_plts(run_folder, judge, [summary_row("ecmp", 60)], backend="model"))
    assert only_ecmp.pop("ECMP per-flow max/min >= 10") == C.FAILS
    assert set(only_ecmp.values()) == {C.NOT_MEASURED}
    # one repetition: the headlines are inconclusive, however close to the paper
    one = _holds(_plts(run_folder, judge, rows, reps=1))
    assert one["RR % of ideal"] == C.INCONCLUSIVE


# -- orca -------------------------------------------------------------------------------------

def _orca(run_folder, summary, receivers=(), rounds=(), pace=0.95, transfers=(), **params):
    return run_folder("orca", {"summary.csv": summary, "receivers.csv": list(receivers),
                               "rounds.csv": list(rounds), "transfers.csv": list(transfers)},
                      params={"pace": pace, **params})


def test_orca_claims_judge_the_measurements(run_folder, judge):
    from experiments.orca import figures as aorca
    transfers = []
    for (w, mode, procs), t in {(1, "multicast", 1): 1.0, (1, "unicast", 1): 4.1,
                                (4, "multicast", 1): 2.0, (4, "unicast", 1): 8.4,
                                (4, "unicast", 4): 3.0}.items():
        transfers.append({"run": "0", "workload": str(w), "mode": mode, "procs": str(procs),
                          "total_bytes": str(1000 * w), "bound_s": str(t * 0.9),
                          "total_s": str(t), "copies": "1.2" if mode == "multicast" else "4.01",
                          "repairs_sent": "0", "cpu_mean": "20",
                          "sender_link_bytes": str((1.2 if mode == "multicast" else 4.01)
                                                   * 1000 * w)})
    rounds = [{"run": "0", "workload": "1", "mode": "multicast", "procs": "1", "round": "1",
               "size_bytes": "1000"}]
    receivers = [{**rounds[0], "receiver": "r1", "bytes_received": "999", "complete": "True",
                  "lost_before_repair": "0", "repaired": "0"}]
    # one single-process unicast puts 4.01 kB / 4.1 s = 7.8 kb/s on a 8 kb/s link:
    # link-bound, so the ratio is the copies' by construction, not the paper's regime
    got = {v.key: v for v in judge("orca", _orca(run_folder, aorca.summarize(transfers),
                                                 receivers, rounds, transfers=transfers,
                                                 bw=0.008)).values()}
    assert got["speedup"].verdict == C.NOT_REGIME         # 4.2x, but link-bound
    assert got["speedup"].measured == "4.2 (one repetition: no interval)"
    assert "link-bound: one unicast process puts" in got["speedup"].detail
    assert got["procs"].verdict == C.NOT_REGIME           # 3.0 / 2.0 = 1.5x, link-bound
    assert got["procs"].measured.startswith("unicast time = 1.50x")
    assert got["multicast-once"].verdict == C.FAILS       # 1.2 copies > 1.05
    assert got["unicast-n"].verdict == C.HOLDS
    assert got["complete"].verdict == C.FAILS             # 999 of 1000 bytes
    assert "link-bound (paced sender)" in got["speedup"].detail


def _capped(cap, mode, procs, time_s, mbps, speedup=""):
    return {"sender_cpu": cap, "workload": 16, "mode": mode, "procs": procs, "runs": 5,
            "total_mb": 7.04, "time_s": time_s, "measured": "True", "copies": 1,
            "copies_max": 1.0, "mbps_per_process": mbps, "sender_cores": cap,
            "speedup_of_multicast": speedup}


def _transfers(summary, reps=5):
    """transfers.csv of ``reps`` repetitions, each taking the summary row's time."""
    return [{"run": r, "sender_cpu": row["sender_cpu"], "workload": row["workload"],
             "mode": row["mode"], "procs": row["procs"], "total_s": row["time_s"]}
            for r in range(reps) for row in summary]


def test_orca_cpu_bound_claims_one_verdict_per_cap(run_folder, judge):
    rows = [_capped(0, "multicast", 1, 1.25, 47), _capped(0, "unicast", 1, 5.0, 47, 4.0),
            _capped(0, "unicast", 4, 5.0, 12, 4.0),
            # 0.05: CPU-bound (20 of 50 Mb/s); 4 processes fill the link: 4.8 / 3.2 = 1.5x
            _capped(0.05, "multicast", 1, 3.2, 18), _capped(0.05, "unicast", 1, 12, 20, 3.75),
            _capped(0.05, "unicast", 2, 6, 20, 1.875), _capped(0.05, "unicast", 4, 4.8, 12, 1.5),
            # 0.1: one process already puts 45 of 50 Mb/s on the link: not the regime
            _capped(0.1, "multicast", 1, 1.5, 40), _capped(0.1, "unicast", 1, 5, 45, 3.3),
            _capped(0.1, "unicast", 4, 5, 11, 3.3),
            # 0.2 (hand-made): 30 Mb/s a process; 2 -> 4 processes 2.5 % slower is spread
            _capped(0.2, "multicast", 1, 2, 30), _capped(0.2, "unicast", 1, 8, 30, 4.0),
            _capped(0.2, "unicast", 2, 4, 30, 2.0), _capped(0.2, "unicast", 4, 4.1, 12, 2.05)]
    run = _orca(run_folder, rows, transfers=_transfers(rows), bw=50.0, sender_net="away")
    got = {(v.key, v.condition): v for v in judge("orca", run).values()}
    falls, gain = "procs-cpu-falls", "procs-cpu"
    assert got[(falls, "sender_cpu=0.05")].verdict == C.HOLDS
    assert got[(gain, "sender_cpu=0.05")].verdict == C.FAILS          # 1.5x < 1.57x
    assert "predicted 4 r_m / min(4 r_u, paced link) = 1.52x" in \
        got[(gain, "sender_cpu=0.05")].detail                          # 4 x 18 / 47.5
    assert "the paper's regime" in got[(gain, "sender_cpu=0.05")].detail
    assert got[(falls, "sender_cpu=0.1")].verdict == C.NOT_MEASURED
    assert "not CPU-bound" in got[(falls, "sender_cpu=0.1")].detail
    assert got[(gain, "sender_cpu=0.1")].verdict == C.NOT_REGIME      # 45 of 50 Mb/s
    assert "link-bound: one unicast process puts 0.90" in got[(gain, "sender_cpu=0.1")].detail
    assert got[(falls, "sender_cpu=0.2")].verdict == C.HOLDS
    assert got[(gain, "sender_cpu=0.2")].verdict == C.HOLDS           # 2.05x
    assert got[("speedup-cpu", "sender_cpu=0.2")].verdict == C.HOLDS  # 8 / 2 = 4.0x
    # the uncapped claim still judges the uncapped rows only, and they are link-bound
    assert got[("procs", "")].measured.startswith("unicast time = 4.00x")
    assert got[("procs", "")].verdict == C.NOT_REGIME
    # a step that gets slower than 5 % breaks "falls"
    rows[-1] = _capped(0.2, "unicast", 4, 4.3, 12, 2.15)
    run = run_folder("orca", {"summary.csv": rows, "receivers.csv": [], "rounds.csv": []},
                     params={"pace": 0.95, "bw": 50.0})
    got = {(v.key, v.condition): v for v in judge("orca", run).values()}
    assert got[(falls, "sender_cpu=0.2")].verdict == C.FAILS


def test_orca_cpu_bound_claims_need_a_cap(run_folder, judge):
    rows = [_capped(0, "multicast", 1, 1.25, 47), _capped(0, "unicast", 1, 5.0, 47, 4.0)]
    run = run_folder("orca", {"summary.csv": rows, "receivers.csv": [], "rounds.csv": []},
                     params={"pace": 0.95, "bw": 50.0})
    got = {v.key: v for v in judge("orca", run).values()}
    for key in ("procs-cpu-falls", "procs-cpu"):
        assert got[key].verdict == C.NOT_MEASURED and "--sender-cpu" in got[key].detail


def test_orca_ablation_runs_are_judged_by_no_claim(run_folder, judge):
    rows = [_capped(0.05, "multicast", 1, 7, 8), _capped(0.05, "unicast", 1, 18, 12, 2.6),
            _capped(0.05, "unicast", 4, 6, 12, 0.9)]
    run = run_folder("orca", {"summary.csv": rows, "receivers.csv": [], "rounds.csv": []},
                     params={"pace": 0.95, "bw": 50.0, "sender_net": "same"})
    got = list(judge("orca", run).values())
    assert got and all(v.verdict == C.NOT_MEASURED and "ablation" in v.detail for v in got)


def test_orca_model_runs_judge_bounds_and_measure_no_precondition(tmp_path, judge):
    from dcrepro import cli
    assert cli.main(["run", "orca", "--backend", "model", "--quick", "--out",
                     str(tmp_path)]) == 0
    run = next((tmp_path / "orca").iterdir())
    got = {v.key: v for v in judge("orca", run).values()}
    assert got["speedup"].basis == "model" and got["speedup"].verdict == C.NOT_REGIME
    assert "the model view has no CPU" in got["speedup"].detail
    assert "model bound, not a measurement" in got["speedup"].detail
    for key in ("multicast-once", "unicast-n", "complete"):
        assert got[key].verdict == C.NOT_MEASURED and "model backend" in got[key].detail
    # analysis.plot wrote the same verdicts into the run folder
    assert [r["verdict"] for r in read_csv(run / "claims.csv")] == \
        [v.verdict for v in got.values()]
    assert json.loads((run / "status.json").read_text())["status"] == "ok"


# -- grin -------------------------------------------------------------------------------------

def _grin(run_folder, rows, pattern="all-to-all", reps=5):
    """A grin run folder: the flow-like ``rows`` as every one of ``reps`` repetitions'
    flows.csv, and their summary."""
    from experiments.grin import figures as agrin
    flows = [{**r, "run": k, "network": agrin.network_of(r)} for k in range(reps) for r in rows]
    shares = sorted({float(r["active_pct"]) for r in rows})
    return run_folder("grin", {"summary.csv": agrin.summarize(rows), "flows.csv": flows},
                      params={"pattern": pattern, "active": ",".join(f"{a:g}" for a in shares)})


def _grin_rows(active):
    rows = []
    for d, mbps in ((0, 9.0), (1, 17.0), (2, 20.0)):
        rows.append({"degree": str(d), "active_pct": "10", "active": active, "mbps": str(mbps),
                     "uncoupled_model_mbps": str(mbps), "h1_optimum_mbps": str(mbps)})
        rows.append({"degree": str(d), "active_pct": "50", "active": "6", "mbps": "1",
                     "uncoupled_model_mbps": "1", "h1_optimum_mbps": "1"})
    rows.append({"network": "mh1", "degree": "", "active_pct": "10", "active": active,
                 "mbps": "18.0", "uncoupled_model_mbps": "18", "h1_optimum_mbps": "18"})
    return rows


def test_grin_claims_judge_the_lowest_activity(run_folder, judge):
    got = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, _grin_rows("4"))).values()}
    assert len(got) == 15     # the crossover's two claims: not measured (all-to-all)
    # no GRIN3 network in the run: its claim is not measured and says which flag adds it
    v = got[("grin3-original", "emulated")]
    assert v.verdict == C.NOT_MEASURED and "--degrees" in v.detail and not v.because
    em = {k: v.verdict for (k, c), v in got.items() if c == "emulated"}
    assert em == {"grin1-original": C.HOLDS,           # 1.89x in [1.8, 2.1]
                  "grin2-original": C.FAILS,           # 2.22x < 2.6
                  "grin1-multihomed": C.HOLDS,         # 17 < 18
                  "grin3-original": C.NOT_MEASURED}    # no degree 3 in the run
    g1 = got[("grin1-original", "emulated")]
    assert g1.measured.startswith("1.89 [1.89, 1.89] 95 %, n=5") and g1.headline
    assert g1.basis == "measured"
    assert got[("grin1-original", "model: h1 optimum (paper)")].basis == "model"
    # Fig. 6's claim is judged on random traffic only: an all-to-all run does not judge it
    v = got[("grin2-multihomed", "")]
    assert v.verdict == C.NOT_MEASURED and "pattern=random" in v.detail
    rnd = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, _grin_rows("4"), pattern="random")).values()}
    assert rnd[("grin2-multihomed", "emulated")].verdict == C.HOLDS    # 20 / 18
    assert rnd[("grin1-original", "")].verdict == C.NOT_MEASURED      # Fig. 7's, all-to-all
    # a random run with too few active servers: outside Fig. 6's regime
    few = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, _grin_rows("2"), pattern="random")).values()}
    assert few[("grin2-multihomed", "emulated")].verdict == C.NOT_REGIME
    # two active servers: a GRIN port is an idle neighbour's, a second NIC by construction
    two = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, _grin_rows("2"))).values()}
    v = two[("grin1-original", "emulated")]
    assert v.verdict == C.NOT_REGIME and "2 active servers at 10 % active" in v.detail
    # no multihomed network: those claims are not measured, and say how to get one
    rows = [r for r in _grin_rows("4") if r.get("network") != "mh1"]
    got = {(v.key, v.condition): v for v in judge("grin", _grin(run_folder, rows,
                                                                pattern="random")).values()}
    v = got[("grin2-multihomed", "emulated")]
    assert v.verdict == C.NOT_MEASURED and "--multihomed 1" in v.detail


def _cross_rows(g2_low: float, g2_high: float) -> list[dict[str, str]]:
    """30 and 60 % active: the original, GRIN2 and dual-homing (mh1 18 then 10 Mb/s)."""
    rows = []
    for share, active, g0, g2, mh in (("30", "12", 9.0, g2_low, 18.0),
                                      ("60", "24", 5.0, g2_high, 10.0)):
        for net, deg, m in (("grin0", "0", g0), ("grin2", "2", g2), ("mh1", "", mh)):
            rows.append({"network": net, "degree": deg, "active_pct": share, "active": active,
                         "mbps": str(m), "uncoupled_model_mbps": str(m),
                         "h1_optimum_mbps": str(m)})
    return rows


def test_grin_crossover_at_40_percent_judges_each_side_on_a_run_across_it(run_folder, judge):
    """Fig. 6: GRIN2 better than dual-homing below 40 % active, level with it (within 10 %)
    above; judged only on random-traffic runs with shares on both sides of 40 %, and never
    standing in for the lowest-share claim's 10 %."""
    below, above = "grin2-multihomed-below-40", "grin2-multihomed-above-40"
    got = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, _cross_rows(20.0, 9.5), pattern="random")).values()}
    assert got[(below, "emulated")].verdict == C.HOLDS                 # 20 / 18 = 1.11
    assert got[(below, "emulated")].measured.startswith("1.11 [1.11, 1.11] 95 %, n=5")
    assert got[(above, "emulated")].verdict == C.HOLDS                 # 9.5 / 10 in [0.9, 1.1]
    assert "0.95x at 60 %" in got[(above, "emulated")].detail
    # the run starts at 30 %: the 10 % claim does not read it, and says what it needs
    v = got[("grin2-multihomed", "")]
    assert v.verdict == C.NOT_MEASURED and "lowest active share is 10 %" in v.detail
    # below 1 below 40 %, and far above dual-homing after it: neither side holds
    got = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, _cross_rows(16.0, 12.0), pattern="random")).values()}
    assert got[(below, "emulated")].verdict == C.FAILS                 # 0.89
    assert got[(above, "emulated")].verdict == C.FAILS                 # 1.2 > 1.1
    # a run of 10 % only (Fig. 6's first point) judges neither side
    ten = [r for r in _grin_rows("4") if r["active_pct"] == "10"]
    got = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, ten, pattern="random")).values()}
    for key in (below, above):
        v = got[(key, "")]
        assert v.verdict == C.NOT_MEASURED and "both sides of 40 %" in v.detail


def test_grin3_short_of_its_goal_names_the_star_as_the_cause(run_folder, judge):
    """GRIN3's mesh (16 subflows) exceeds the kernel's 1 + 8: a run on the star (7) that falls
    short gets 'does not hold, because' the star; one that reaches the goal holds, no cause."""
    def rows(grin3: float, subflows: int) -> list[dict[str, str]]:
        return [{"degree": str(d), "active_pct": "10", "active": "4", "mbps": str(m),
                 "uncoupled_model_mbps": str(m), "h1_optimum_mbps": str(h),
                 "subflows": str(n), "horizontal_subflows": str(n - 1)}
                for d, m, h, n in ((0, 9.0, 9.0, 1), (3, grin3, 36.0, subflows))]
    got = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, rows(16.2, 7))).values()}
    em = got[("grin3-original", "emulated")]
    assert em.verdict == C.FAILS and em.measured.startswith("1.8 [1.8, 1.8]")
    assert "7 subflows per connection (a star: the mesh needs 16" in em.detail
    assert "star" in em.because
    assert "because" in C.verdict_words(em) and "because" in C.terminal_line(em)
    h1 = got[("grin3-original", "model: h1 optimum (paper)")]
    assert h1.verdict == C.HOLDS and not h1.because and "because" not in C.verdict_words(h1)
    got = {(v.key, v.condition): v for v in judge("grin", _grin(
        run_folder, rows(31.0, 16))).values()}
    em = got[("grin3-original", "emulated")]
    assert em.verdict == C.HOLDS and "(a full mesh)" in em.detail and not em.because


def test_plts_claims_per_ecmp_queue_compare_the_same_sprays_with_each_ecmp(run_folder, judge):
    """ECMP on RED (the paper's set-up) and on drop-tail in one run: one condition each;
    ECMP's numbers come from its own queue's row, the sprays' from theirs in both; every
    claim says which condition is the paper's set-up.  A row without an AQM (older runs)
    counts as drop-tail."""
    rows = [summary_row("ecmp", 60, 300, 1200, 12),
            {k: v for k, v in summary_row("ecmp", 70, 100, 200, 5).items() if k != "aqm"},
            summary_row("rnd", 80, 90, 200), summary_row("cnt", 81, 90, 200),
            summary_row("rr", 92, 90, 200)]
    got = _plts(run_folder, judge, rows)
    assert list(dict.fromkeys(v.condition for v in got.values())) == [
        "recovery=classic,ecmp=red", "recovery=classic,ecmp=droptail"]
    on_red, on_tail = _holds(got, ecmp="red"), _holds(got, ecmp="droptail")
    assert on_red["latency p99 spray/ECMP"] == C.HOLDS        # 200 / 1200
    assert on_tail["latency p99 spray/ECMP"] == C.NOT_REGIME  # ECMP on drop-tail
    assert on_red["ECMP per-flow max/min >= 10"] == C.HOLDS
    assert on_tail["ECMP per-flow max/min >= 10"] == C.FAILS
    assert on_red["RR % of ideal"] == C.HOLDS and on_tail["RR % of ideal"] == C.NOT_REGIME
    assert all("ecmp=red" in v.reason and "set-up" in v.reason for v in got.values())


def test_a_cause_stays_with_its_own_view_and_verdict(run_folder):
    """A cause explains a result measured in one view: the emulation's ablation is shown
    beside an emulated 'does not hold', never beside the ns-3 or model view's, which show
    their own (or none); never beside a 'holds'; beside 'inconclusive' only when the cause
    says it applies there.  The words say what tested it."""
    claim = C.Claim(experiment="outcast-fattree", key="k", text="t", source="s", paper="p",
                    criterion="c", reason="r",
                    causes={"emulated": C.Cause("an ablation showed it"),
                            "model": C.Cause("no fluid model has a queue",
                                             by_construction=True)},
                    measure=lambda runs, cond: C.Outcome("x", False))
    emulated = C.Run.open(run_folder("outcast-fattree", {}, params={}))
    sim = C.Run.open(run_folder("outcast-fattree", {}, params={"backend": "sim"}))
    model = C.Run.open(run_folder("outcast-fattree", {}, params={"backend": "model"}))
    got = C.evaluate(claim, [[emulated], [sim], [model]])
    assert [(v.view, v.verdict, v.because) for v in got] == [
        ("emulated", C.FAILS, "an ablation showed it (not ablated)"), ("sim", C.FAILS, ""),
        ("model", C.FAILS, "no fluid model has a queue (by construction)")]
    assert C.evaluate(claim, [[sim]])[0].because == ""
    holds = replace(claim, measure=lambda runs, cond: C.Outcome("x", True))
    assert C.evaluate(holds, [[model]])[0].because == ""
    assert C.verdict_words(got[0]) == "does not hold, because an ablation showed it " \
        "(not ablated)"


def test_fairness_variant_causes_name_existing_variants():
    # a cause written for a variant that does not exist would never be shown
    from experiments.fairness import claims as fc
    keys = {c.key: c for c in fc.CLAIMS}
    for (base, suffix), cause in fc.VARIANT_CAUSES.items():
        c = keys[f"{base}-{suffix}"]
        # the same model's cause in either view it can be judged in
        assert c.causes == {"emulated": cause, "model": cause}


def test_outcast_outside_tail_drop_or_the_kernels_timer_is_not_the_papers_regime(run_folder,
                                                                                 judge):
    """The write-up: 'This experiment will NOT work' away from tail drop; a run with RED
    or a shortened minimum RTO (the ablations) judges no headline."""
    shares = {6: 0.2, 12: 0.2}
    for params, words in (({"aqm": "red"}, "queues with red, not tail drop"),
                          ({"rto_min": 2}, "minimum RTO to 2 ms")):
        summary = [{"flows": n, "run": r, "lone_share_of_fair": s} for n, s in shares.items()
                   for r in [*range(5), "all"]]
        got = {v.key: v for v in judge("outcast", run_folder(
            "outcast", {"summary.csv": summary, "flows.csv": []}, params=params)).values()}
        assert got["lone-n6"].verdict == C.NOT_REGIME and words in got["lone-n6"].detail


def test_no_cause_cites_a_flagged_or_missing_folder():
    """#52's goal '0 causes that rest on flagged runs', on the committed references: every
    folder a cause cites holds run folders, and the fidelity check flagged none of them."""
    from store.registry import EXPERIMENTS, claims
    seen: dict[str, str] = {}
    bad = []
    for exp in EXPERIMENTS:
        for c in claims(exp):
            for view, cause in c.causes.items():
                for f in cause.folders:
                    trust = seen.setdefault(f, C.ablation_trust(C.REFERENCE / f))
                    if "flagged:" in trust or "no run" in trust:
                        bad.append(f"{exp}/{c.key} [{view}] cites {f}: {trust}")
    assert seen and not bad, bad


def test_a_figure_takes_the_papers_numbers_from_its_claims():
    """analysis.figures.paper_number: a claim's paper_value, else the one number its paper
    text states (not one inside a word); paper_source: the paper and its figure."""
    from analysis.figures import paper_claims, paper_number, paper_source
    by_key = {c.key: c for c in paper_claims({"experiment": "permutation"}, "rank.png")}
    assert paper_number(by_key["htsim-mean-lia"]) == 0.877
    assert paper_number(by_key["fig4-ratio-lia"]) == by_key["fig4-ratio-lia"].paper_value
    assert paper_number(by_key["mptcp-mean"]) is None         # 'MPTCP above TCP (no number)'
    assert paper_source(by_key["fig4-ratio-lia"]) == "000 Fig. 4"
    assert paper_claims({"experiment": "nosuch"}, "rank.png") == []


def test_a_paper_line_label_goes_where_no_line_runs():
    """analysis.figures.free_x: the first candidate place along the axes where the label
    above the paper's value covers no data line; a line on the value itself is no bar."""
    import matplotlib.pyplot as plt

    from analysis.figures import free_x
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot([0, 10], [1.0, 1.0])                 # on the paper's value: runs under the gap
    ax.plot([7, 10], [1.02, 1.04])               # just above it, over the right part
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 1.2)
    ax.axhline(1.0)
    assert free_x(ax, 1.0, "paper, 003 Fig. 7: GRIN1 close to 2x") == 0.32
    ax.plot([0, 10], [1.03, 1.03])               # over the whole width: the fewest, first
    assert free_x(ax, 1.0, "paper") == 0.62
    plt.close(fig)
