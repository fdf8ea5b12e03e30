"""experiments/plts/figures.py without root: summary numbers and figures from tiny CSVs (the
paper's claims: tests/unit/test_claims.py)."""
from __future__ import annotations

import json
import math

import pytest

import analysis
from experiments.plts import figures as plts
from experiments.plts.figures import plot_plts, spread, summarize
from store import read_csv, write_csv

COLS = ("run,scheme,recovery,src,dst,ideal_mbps,mbps,pct_ideal,model_mbps,retrans,reord_seen,"
        "dsack_dups,reordering,cpu_mean,cpu_saturated_share,emulator_loss_share").split(",")


def flow(run, scheme, mbps, ideal=10.0, recovery="modern", **over):
    """One flows.csv row as strings (empty cells for what is not given)."""
    row = dict.fromkeys(COLS, "")
    pct = "" if mbps == "" else str(100 * float(mbps) / ideal)
    row.update(run=str(run), scheme=scheme, recovery=recovery, src="h1", dst="h2",
               ideal_mbps=str(ideal), mbps=str(mbps), pct_ideal=pct)
    row.update({k: str(v) for k, v in over.items()})
    return row


def lat(scheme, values, recovery="modern", run=0):
    return [{"run": str(run), "scheme": scheme, "recovery": recovery, "src": "h1", "dst": "h2",
             "latency_us": str(v)} for v in values]


def tiny():
    # given out of order: the summary still lists ecmp, rnd, cnt, rr, then the others
    flows = [
        flow(0, "foo", 3),
        flow(0, "rr", 0), flow(0, "rr", 5), flow(0, "rr", ""),
        flow(0, "ecmp", 1, retrans=3, model_mbps=5, cpu_mean=10, emulator_loss_share=0.001),
        flow(0, "ecmp", 4, retrans=5, model_mbps=5, cpu_mean=20, emulator_loss_share=0.002),
        flow(1, "ecmp", 2, model_mbps=5),
        flow(1, "ecmp", 8, retrans=0, model_mbps=5),
        flow(0, "cnt", 6),
    ]
    return flows, lat("ecmp", range(1, 101))


def test_summarize_exact_numbers_on_tiny_input():
    rows = summarize(*tiny())
    assert [(r["scheme"], r["recovery"]) for r in rows] == [
        ("ecmp", "modern"), ("cnt", "modern"), ("rr", "modern"), ("foo", "modern")]
    e = rows[0]
    assert (e["flows"], e["flows_missing"], e["runs"]) == (4, 0, 2)
    assert e["mean_pct_ideal"] == 37.5 and e["median_pct_ideal"] == 30.0
    assert e["p10_pct_ideal"] == 13.0 and e["p90_pct_ideal"] == 68.0
    assert (e["min_pct_ideal"], e["max_pct_ideal"]) == (10.0, 80.0)
    assert (e["mean_mbps"], e["min_mbps"], e["max_mbps"]) == (3.75, 1.0, 8.0)
    assert e["max_over_min"] == 8.0            # pooled over both runs
    assert e["max_over_min_run_median"] == 4.0  # 4/1 in run 0, 8/2 in run 1
    assert e["jain"] == round(25 / 34, 4)      # (1+4)^2/(2*17) and (2+8)^2/(2*68)
    assert e["mean_model_pct_ideal"] == 50.0
    assert (e["retrans_sum"], e["retrans_median"]) == (8, 3.0)
    assert e["reord_seen_sum"] == "" and e["dsack_dups_median"] == ""
    assert e["cpu_mean"] == 15.0 and e["emulator_loss_share_max"] == 0.002
    assert e["latency_samples"] == 100
    assert (e["latency_p50_us"], e["latency_p90_us"], e["latency_p99_us"]) == (50.5, 90.1,
                                                                                 99.01)
    rr = rows[2]
    assert (rr["flows"], rr["flows_missing"]) == (3, 1)
    assert rr["max_over_min"] == math.inf and rr["max_over_min_run_median"] == math.inf
    assert rr["jain"] == 0.5
    assert rr["latency_samples"] == 0 and rr["latency_p90_us"] == ""
    assert rows[1]["max_over_min"] == 1.0 and rows[1]["jain"] == 1.0


def test_spread_edge_cases():
    assert spread(["2", "", "10"]) == 5.0
    assert spread([0, 3]) == math.inf      # a starved flow: more than any finite factor
    assert math.isnan(spread([0, 0])) and math.isnan(spread([]))


def folder(tmp_path, backend, status="measured"):
    run_dir = tmp_path / backend
    run_dir.mkdir()
    params = {"topo": "fattree,k=6", "schemes": "ecmp,rnd,cnt,rr", "bw": 10.0,
              "duration": 10, "runs": 2, "seed": 1, "recovery": "both", "backend": backend,
              "dataplane": "bpf"}
    (run_dir / "config.json").write_text(json.dumps(
        {"experiment": "plts", "run_id": f"test-{backend}", "params": params}))
    (run_dir / "status.json").write_text(json.dumps({"status": status, "error": None}))
    emulated = backend == "emulated"
    rates = {"ecmp": (0.5, 4, 9), "rnd": (6, 7, 8), "cnt": (7, 8, 8.5), "rr": (8.5, 9, 9.2)}
    flows, latency = [], []
    for rec in ("modern", "classic"):
        for scheme, mbps in rates.items():
            for run in (0, 1):
                for m in mbps:
                    tcp = dict(retrans=2, reord_seen=1, dsack_dups=0, reordering=3,
                               cpu_mean=30, cpu_saturated_share=0, emulator_loss_share=0) \
                        if emulated else {}
                    flows.append(flow(run, scheme, m, ideal=9.5, recovery=rec, model_mbps=m,
                                      **tcp))
                base = 1000 if scheme == "ecmp" else 100
                latency += lat(scheme, [base + i for i in range(50)], rec, run)
    write_csv(run_dir / "flows.csv", flows)
    if emulated:
        write_csv(run_dir / "latency.csv", latency)
    return run_dir, json.loads((run_dir / "config.json").read_text())


@pytest.fixture
def captions(monkeypatch):
    seen: list[str] = []
    real = plts.caption

    def record(config, extra=""):
        seen.append(real(config, extra))
        return seen[-1]

    monkeypatch.setattr(plts, "caption", record)
    return seen


def test_plot_plts_emulated_writes_figures_and_tables(tmp_path, captions):
    run_dir, config = folder(tmp_path, "emulated")
    out = analysis.plot(run_dir)          # plot_plts, then the claims (analysis.claims)
    # the experiment's three, then the headline claims beside the paper's numbers
    assert [p.name for p in out] == ["throughput.png", "latency_rank.png", "flows_rank.png",
                                     "headlines.png"]
    for name in ("throughput.png", "latency_rank.png", "flows_rank.png", "summary.csv",
                 "claims.csv", "claims.md"):
        assert (run_dir / name).stat().st_size > 0, name
    summary = read_csv(run_dir / "summary.csv")
    assert [(r["recovery"], r["scheme"]) for r in summary] == [
        (rec, s) for rec in ("modern", "classic") for s in ("ecmp", "rnd", "cnt", "rr")]
    assert summary[0]["latency_samples"] == "100" and summary[0]["max_over_min"] == "18.0"
    found = read_csv(run_dir / "claims.csv")
    assert len(found) == 18 and list(found[0])[:2] == ["claim", "condition"]
    # ECMP on the sprays' drop-tail queue is the ablation, not the paper's RED/ECN set-up
    assert {r["verdict"] for r in found if "latency" in r["claim"]} == {
        "not in the paper's regime"}
    assert {r["verdict"] for r in found if r["claim"] == "every spray above ECMP"} <= {
        "holds", "does not hold"}
    md = (run_dir / "claims.md").read_text()
    assert "| RR % of ideal [recovery=modern,ecmp=droptail] | 92 % |" \
        in md and "backend=emulated" in md
    # short titles; the methods are the figures' notes, which the report page shows
    assert len(captions) == 3 and all(c.count("\n") == 1 for c in captions)
    # what it shows, then the run: its experiment, backend, conditions and id
    assert all(c.split("\n")[1].startswith("plts [emulated]: ") and
               c.endswith(" · test-emulated") and "Mb/s links" in c for c in captions)
    notes = json.loads((run_dir / "figures.json").read_text())
    assert notes.pop("headlines.png")
    assert list(notes) == ["throughput.png", "latency_rank.png", "flows_rank.png"]
    assert all(plts.NO_RED in n for n in notes.values())
    assert plts.LATENCY_DEF in notes["latency_rank.png"]
    assert "backend=emulated: iperf3 goodput" in notes["throughput.png"]


def test_plot_plts_model_omits_latency(tmp_path, captions):
    run_dir, config = folder(tmp_path, "model")
    out = analysis.plot(run_dir)
    assert [p.name for p in out] == ["throughput.png", "flows_rank.png", "headlines.png"]
    assert not (run_dir / "latency_rank.png").exists()
    found = read_csv(run_dir / "claims.csv")
    assert {r["verdict"] for r in found if "latency" in r["claim"]} == {"not measured"}
    summary = read_csv(run_dir / "summary.csv")
    assert all(r["retrans_sum"] == "" and r["latency_samples"] == "0" for r in summary)
    assert "flow-model numbers, not measurements" in (run_dir / "claims.md").read_text()
    notes = json.loads((run_dir / "figures.json").read_text())
    assert notes.pop("headlines.png")
    assert len(captions) == 2 and list(notes) == ["throughput.png", "flows_rank.png"]
    assert all(plts.NO_RED in n and "backend=model: flow-model numbers, not measurements" in n
               for n in notes.values())


def test_plot_plts_refuses_a_failed_run(tmp_path):
    run_dir, config = folder(tmp_path, "model", status="failed")
    with pytest.raises(ValueError, match="never plotted"):
        plot_plts(run_dir, config)


def test_latency_sources_per_tier_path_length_and_retransmissions(tmp_path, captions):
    """ECMP on RED and on drop-tail beside RR: a row each, the tiers' shares of the path's
    queueing, p99 by path length, and the slowest samples' retransmissions."""
    red = "red,min=20,max=60,p=0.1,w=9"
    latency, queues = [], []
    for scheme, aqm, base in (("ecmp", red, 10_000), ("ecmp", "droptail", 100_000),
                              ("rr", "droptail", 1_000)):
        for i in range(100):      # 2-hop samples fast, 4-hop slow; the slowest retransmit
            row = lat(scheme, [base * (1 + i % 2) + i], run=0)[0]
            row.update(aqm=aqm, hops=str(2 + 2 * (i % 2)), flow_retrans=str(int(i >= 98)))
            latency.append(row)
        for tier, ms in (("edge->agg", 1.0), ("agg->core", 3.0), ("core->agg", 0.0),
                         ("agg->edge", 0.0), ("edge->host", 9.0)):
            for run, n in ((0, 10), (1, 30)):   # weighted by samples: 1*10 + 3*30 / 40 ...
                queues.append({"run": str(run), "scheme": scheme, "aqm": aqm,
                               "recovery": "modern", "tier": tier, "samples": str(n),
                               "mean_ms": str(ms * (1 + run)), "p99_ms": str(2 * ms),
                               "tail_drops": "5", "aqm_drops": "0", "aqm_marks": "1"})
    rows = plts.latency_sources(latency, queues)
    assert [(r["scheme"], r["aqm"]) for r in rows] == [("ecmp", red), ("ecmp", "droptail"),
                                                       ("rr", "droptail")]
    rr = rows[2]
    assert rr["samples"] == 100 and rr["hops2_samples"] == rr["hops4_samples"] == 50
    assert rr["hops2_p99_ms"] < rr["hops4_p99_ms"]
    # edge->agg: (1*10 + 2*30) / 40 = 1.75; agg->core 3 * 1.75 = 5.25; path 7.0
    assert rr["edge->agg_mean_ms"] == 1.75 and rr["agg->core_mean_ms"] == 5.25
    assert rr["path_mean_ms"] == 7.0 and rr["edge->agg_share"] == 0.25
    assert rr["agg->core_share"] == 0.75 and rr["core->agg_share"] == 0.0
    assert rr["edge->agg_tail_drops"] == 10 and rr["agg->core_aqm_marks"] == 2
    assert "edge->host_mean_ms" not in rr           # outside the fabric latency
    # 2 of 100 samples retransmitted, and they are the two slowest (the top 1 %)
    assert rr["retrans_share_all"] == 0.02 and rr["retrans_share_p99"] == 1.0
    run_dir, config = folder(tmp_path, "emulated")
    write_csv(run_dir / "latency.csv", latency)
    write_csv(run_dir / "queues.csv", queues)
    out = plot_plts(run_dir, config)
    assert [p.name for p in out][-1] == "latency_sources.png"
    assert read_csv(run_dir / "latency_sources.csv")[0]["aqm"] == red
    notes = json.loads((run_dir / "figures.json").read_text())
    assert plts.SOURCES_DEF in notes["latency_sources.png"]
