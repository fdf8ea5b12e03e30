"""``dcrepro run EXPERIMENT ... --dry-run`` (issue #55): each experiment's plan (its
networks, phases and traffic seconds: harness/plan.py), the estimate of its wall time
(dcrepro/estimate.py: the reference's costs, scaled by earlier runs or by the bring-up the
check stored) and the dry run itself, which prints and builds nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcrepro import check, cli, estimate
from harness.common import checked
from harness.plan import Network, RunPlan, default_plan, repeat
from store import registry


def quick(name: str, **extra: object) -> object:
    """``name``'s quick parameters, checked as a run checks them (dataplane bpf: what the
    reference's quick runs record)."""
    mod = registry.module(name)
    values = {**mod.PARAMS.defaults(), **mod.QUICK, "quick": True, **extra}
    if "dataplane" in values:
        values["dataplane"] = "bpf"
    if values.get("idle_cpus") == "auto":
        values["idle_cpus"] = "halt"
    return checked(mod, values)


#: what each quick run brings up and runs (networks, phases, traffic s), as the CI's quick
#: run folders record it: one runtime entry per network (run00, run00-fattree, n02-run00,
#: run00-modern-ecmp, ...; orca: run00 and its seven transfers in transfers.csv)
QUICK_WORK = {
    "permutation": (5, 10, 120.0),     # 5 repetitions x (TCP, MPTCP) x 12 s
    "fairness": (10, 10, 120.0),       # 5 repetitions x (fat tree, Jellyfish) x 12 s
    "outcast": (10, 10, 120.0),        # 5 repetitions x N = 6, 12 x 12 s
    "outcast-fattree": (1, 1, 12.0),   # one repetition (the sweep: st, then hashed)
    "plts": (4, 4, 64.0),              # classic recovery x ecmp, rnd, cnt, rr x 16 s
    "grin": (10, 10, 120.0),           # 5 repetitions x (grin0, grin1) at 10 % x 12 s
    "grin-hops": (2, 16, 0.0),         # degrees 1, 2 x 4 patterns x 2 shares, no traffic
}


@pytest.mark.parametrize("name", sorted(QUICK_WORK))
def test_each_experiment_plans_what_its_quick_run_does(name):
    plan = estimate.plan_of(registry.module(name), quick(name))
    assert (len(plan.networks), plan.phases, plan.traffic_s) == QUICK_WORK[name]


def test_orcas_plan_has_every_transfer_a_phase_at_the_senders_pace():
    from experiments.orca import experiment as orca
    params = quick("orca")
    (net,) = estimate.plan_of(orca, params).networks
    # 1, 4, 16 in both modes, then 4 processes at 16
    assert net.phases == len(orca._cases(params, 0)) == 7
    files = orca.schedule(orca.base_bytes(params))
    copies = {"multicast": 1, "unicast": 4}       # the testbed: 4 receivers behind one link
    want = sum(sum(orca.bound_s([f * w for f in files], copies[m], params.bw))
               for _, w, m, _ in orca._cases(params, 0)) / params.pace
    assert net.traffic_s == pytest.approx(want)
    paced = estimate.plan_of(orca, quick("orca", pace=0.5)).networks[0]
    assert paced.traffic_s == pytest.approx(want * 0.95 / 0.5)


def test_every_registered_experiment_has_its_own_plan():
    """default_plan is for a newcomer; the registered ones count their own networks."""
    assert all(hasattr(registry.module(n), "plan") for n in registry.EXPERIMENTS)


def test_an_experiment_without_a_plan_gets_runs_networks_of_its_topo():
    class P:
        runs, topo, duration, bw = 3, "fattree,k=4", 20.0, 10.0
    plan = default_plan(P())
    assert (plan.repetitions, len(plan.networks), plan.traffic_s) == (3, 3, 60.0)
    assert plan.networks[0].nodes == 36


NET = Network("fattree,k=4", 16, 20, phases=2, traffic_s=24.0)
PLAN = repeat(2, [NET])


def test_the_estimate_is_traffic_plus_the_references_computing():
    c = estimate.EMULATED
    want = c.run + 2 * (c.network + 36 * c.node + 2 * c.phase)
    got = estimate.estimate(PLAN, "emulated")
    assert (got.traffic_s, got.computing_s) == (48.0, pytest.approx(want))
    assert got.seconds == pytest.approx(48.0 + want)
    assert "reference" in got.how


def test_earlier_runs_scale_the_computing_not_the_traffic():
    """Earlier runs that took twice the model's computing: this one is estimated so too,
    whatever their own size."""
    small = repeat(1, [NET])
    walls = [(p, p.traffic_s + 2 * estimate.computing(p, "emulated")) for p in (small, PLAN)]
    got = estimate.estimate(PLAN, "emulated", walls, whose=" of x")
    assert got.traffic_s == 48.0
    assert got.computing_s == pytest.approx(2 * estimate.computing(PLAN, "emulated"))
    assert "2 earlier emulated runs of x: 2.00x" in got.how


def test_a_slower_bringup_from_the_check_scales_the_computing():
    med = check.REFERENCE_BRINGUP_S[0]
    base = estimate.computing(PLAN, "emulated")
    got = estimate.estimate(PLAN, "emulated", bringup=3 * med)
    assert got.computing_s == pytest.approx(3 * base) and "3.00x" in got.how
    assert estimate.estimate(PLAN, "emulated", bringup=med).computing_s == pytest.approx(base)
    # the reference ran bpf: another dataplane is not scaled by it
    ovs = estimate.estimate(PLAN, "emulated", bringup=3 * med, dataplane="ovs")
    assert ovs.computing_s == pytest.approx(base)


def test_the_model_has_no_real_time_traffic_and_the_simulator_pays_its_packets():
    model = estimate.estimate(PLAN, "model")
    assert model.traffic_s == 0.0 and model.seconds < 10
    slow = repeat(1, [Network("x", 2, 1, 1, 10.0, flows=1, receivers=1, bw=10.0)])
    fast = repeat(1, [Network("x", 2, 1, 1, 10.0, flows=1, receivers=1, bw=1000.0)])
    packets = estimate.computing(fast, "sim") - estimate.computing(slow, "sim")
    # 99 x (10 Mb/s for 10 s) more packets, each ~1.5 x SIM_HOPS transmissions
    assert packets == pytest.approx(estimate.SIM_PACKET_S * 1.5 * estimate.SIM_HOPS *
                                    990e6 * 10 / 8 / 1500)


def _folder(root: Path, name: str, run_id: str, params: dict[str, object], status: str,
            end: str) -> Path:
    where = root / name / run_id
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(
        {"experiment": name, "params": params, "started_utc": run_id.split("-")[0]}))
    (where / "status.json").write_text(json.dumps({"status": status, "time_utc": end}))
    return where


def test_earlier_runs_are_finished_folders_of_the_backend_with_their_wall_time(tmp_path):
    mod = registry.module("permutation")
    p = {**dict(quick("permutation")), "backend": "model", "an_old_flag": 1}
    _folder(tmp_path, "permutation", "20261201T100000Z-aaaaaa", p, "ok",
            "2026-12-01T10:00:42+00:00")
    _folder(tmp_path, "permutation", "20261201T110000Z-bbbbbb", p, "failed",
            "2026-12-01T11:00:09+00:00")
    _folder(tmp_path, "permutation", "20261201T120000Z-cccccc",
            {**p, "backend": "emulated"}, "ok", "2026-12-01T12:01:00+00:00")
    got = estimate.earlier_runs(tmp_path, ["permutation"], "model", {"permutation": mod})
    assert [(len(plan.networks), wall) for plan, wall in got] == [(5, 42.0)]
    emulated = estimate.earlier_runs(tmp_path, ["permutation"], "emulated",
                                     {"permutation": mod})
    assert [wall for _, wall in emulated] == [60.0]


def _dry(capsys, *argv: str) -> tuple[int, list[str], str]:
    rc = cli.main(["run", *argv, "--dry-run"])
    got = capsys.readouterr()
    return rc, got.out.splitlines(), got.err


@pytest.fixture
def nothing_built(monkeypatch):
    """Anything that would make a run folder, bring a network up or run the experiment
    fails the test."""
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a dry run built something")
    monkeypatch.setattr("harness.runfolder.RunFolder.__init__", refuse)
    monkeypatch.setattr("emulator.emulation.Emulation.__init__", refuse)
    monkeypatch.setattr("dcrepro.cli._execute", refuse)
    for name in registry.EXPERIMENTS:
        monkeypatch.setattr(registry.module(name), "run", refuse)
    monkeypatch.setattr("os.geteuid", lambda: 1000)      # and it needs no root


def test_a_dry_run_prints_the_run_and_its_estimate_and_builds_nothing(tmp_path, capsys,
                                                                     nothing_built):
    out = tmp_path / "results"
    rc, lines, err = _dry(capsys, "permutation", "--quick", "--dataplane", "bpf",
                          "--out", str(out))
    assert rc == 0 and err == ""
    assert lines[0] == "dry run: permutation on emulated; nothing is built or written"
    assert lines[1].startswith("parameters: quick=True ") and " runs=5 " in lines[1]
    assert "network: fattree,k=4: 16 hosts, 20 switches (x5)" in lines
    assert any(x.startswith("work: 5 repetitions x 24 s of traffic = 120 s, on 5 networks "
                            "in 10 phases") for x in lines)
    want = estimate.minutes(estimate.estimate(
        estimate.plan_of(registry.module("permutation"), quick("permutation")),
        "emulated").seconds)
    assert any(x.startswith(f"estimate: about {want} here") for x in lines)
    assert f"output: {out}/permutation/<UTC time>-<id>/ (a new run folder)" in lines
    assert lines[-1].startswith("note: the run itself needs root")
    assert not out.exists()                        # not even the results root


def test_a_dry_run_bounds_what_repeated_flagged_repetitions_add(tmp_path, capsys,
                                                                  nothing_built):
    """The estimate is for the planned repetitions; up to --repeat-flagged of them may run
    again, each one repetition's share of it (none without repeats, none in the model)."""
    def dry(*extra: str) -> list[str]:
        rc, lines, _ = _dry(capsys, "permutation", "--quick", "--dataplane", "bpf",
                            "--out", str(tmp_path / "r"), *extra)
        assert rc == 0
        return lines
    plan = estimate.plan_of(registry.module("permutation"), quick("permutation"))
    per = estimate.estimate(plan, "emulated").seconds / plan.repetitions
    assert (f"repeats: up to 2 repetitions flagged for this machine's timing run again, "
            f"at most {estimate.minutes(2 * per)} more") in dry()
    assert any(x.startswith("repeats: up to 1 repetition flagged ")
               for x in dry("--repeat-flagged", "1"))
    assert not any(x.startswith("repeats:") for x in dry("--repeat-flagged", "0"))
    assert not any(x.startswith("repeats:") for x in dry("--backend", "model"))


def test_a_dry_run_estimates_from_the_earlier_runs_in_its_results_root(tmp_path, capsys,
                                                                      nothing_built):
    p = {**dict(quick("permutation")), "backend": "model"}
    _folder(tmp_path, "permutation", "20261201T100000Z-aaaaaa", p, "ok",
            "2026-12-01T10:00:42+00:00")
    rc, lines, _ = _dry(capsys, "permutation", "--quick", "--backend", "model",
                        "--out", str(tmp_path))
    # the earlier run took 42 s: the same run is estimated at 42 s
    assert rc == 0 and any(x.startswith("estimate: about 42 s here (traffic 0 s + "
                                        "computing 42 s; from 1 earlier model run of "
                                        "permutation") for x in lines)
    # another experiment without runs of its own borrows this machine's speed from them
    _, lines, _ = _dry(capsys, "outcast", "--quick", "--backend", "model",
                       "--out", str(tmp_path))
    assert any("earlier model run of other experiments" in x for x in lines)


def test_a_dry_run_reads_the_bringup_the_check_stored(tmp_path, capsys, nothing_built):
    med = check.REFERENCE_BRINGUP_S[0]
    key = f"{check.CHECK_TOPO}|{check.CHECK_BW:g}|bpf"
    (tmp_path / "calibration.json").write_text(json.dumps(
        {key: {"utilisation": 0.95, check.BRINGUP_KEY: 2 * med}}))
    assert check.stored_bringup(tmp_path, "bpf") == 2 * med
    assert check.stored_bringup(tmp_path, "ovs") is None
    _, lines, _ = _dry(capsys, "outcast-fattree", "--quick", "--dataplane", "bpf",
                       "--out", str(tmp_path))
    assert any("2.00x: that scales the computing" in x for x in lines)


@pytest.mark.parametrize("argv", [["permutation", "--runs", "0"],
                                  ["outcast", "--flows", "0"],
                                  ["grin", "--degrees", "1,2"]])
def test_bad_input_is_the_same_one_line_as_a_real_runs(argv, tmp_path, capsys,
                                                       nothing_built):
    rc, out, err = _dry(capsys, *argv, "--out", str(tmp_path))
    assert cli.main(["run", *argv, "--out", str(tmp_path)]) == rc == 2
    real = capsys.readouterr().err
    assert out == [] and err == real and len(err.strip().splitlines()) == 1
    assert err.startswith("dcrepro: error: ")


def test_a_bad_out_is_refused_without_making_anything(tmp_path, capsys, nothing_built):
    (tmp_path / "file").write_text("")
    rc, _, err = _dry(capsys, "permutation", "--backend", "model",
                      "--out", str(tmp_path / "file" / "below"))
    assert rc == 2 and err.startswith("dcrepro: error: --out")


def test_the_minutes_read_as_time():
    assert [estimate.minutes(s) for s in (42.4, 61, 3725)] == ["42 s", "1 min 01 s",
                                                               "1 h 02 min"]


def test_runplan_counts_its_networks_sizes_once():
    plan = RunPlan(2, (NET, NET, Network("outcast,n=2", 4, 2, 1, 12.0)))
    assert plan.sizes() == ["fattree,k=4: 16 hosts, 20 switches (x2)",
                            "outcast,n=2: 4 hosts, 2 switches"]
    assert (plan.phases, plan.traffic_s) == (5, 60.0)
