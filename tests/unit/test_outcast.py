"""Outcast: linear topology shape and port layout, flag validation, drop accounting (no root)."""
import ipaddress
import json

import pytest

import routing
import topos
from experiments.outcast import experiment as outcast
from experiments.outcast import fattree as outcast_fattree
from experiments.outcast.experiment import parse_flows
from harness.bottleneck import Watch, drop_rows, parse_segs_in, watches
from harness.params import rto_min_ms, typed
from routing.walk import all_paths, first_choice, walk
from topos.base import TopologyError
from topos.outcast import PORT_LONE, PORT_RECV, PORT_UPLINK, OutcastLinear


@pytest.mark.parametrize("n", [1, 2, 6, 12])
def test_linear_shape_and_port_layout(n):
    t = topos.build(f"outcast,n={n}")
    assert t.spec == f"outcast,n={n}" and isinstance(t, OutcastLinear)
    assert t.switches() == ["s1", "s2"]
    assert (t.node("s1").dpid, t.node("s2").dpid) == (1, 2)
    assert t.hosts() == ["recv", "lone", *[f"a{i}" for i in range(1, n + 1)]]
    # s1: 1 = receiver, 2 = lone sender, 3 = uplink from s2; nothing else
    assert t.ports("s1") == {PORT_RECV: ("recv", 0), PORT_LONE: ("lone", 0),
                             PORT_UPLINK: ("s2", 1)}
    assert t.ports("s2") == {1: ("s1", 3), **{i + 1: (f"a{i}", 0) for i in range(1, n + 1)}}
    assert t.access_switch("recv") == t.access_switch("lone") == "s1"
    assert all(t.access_switch(a) == "s2" for a in t.senders_behind_s2)
    assert t.senders() == ["lone", *t.senders_behind_s2]
    assert t.entry_port("lone") == 2 and {t.entry_port(a) for a in t.senders_behind_s2} == {3}
    with pytest.raises(TopologyError):
        t.entry_port("recv")


def test_linear_identities_unique_and_valid():
    t = OutcastLinear(200)
    nodes = [t.node(h) for h in t.hosts()]
    assert len({h.ip for h in nodes}) == len({h.mac for h in nodes}) == len(nodes)
    for h in nodes:
        ip = ipaddress.ip_address(h.ip)
        assert ip in ipaddress.ip_network("10.0.0.0/9") and len(h.name) <= 9
    with pytest.raises(TopologyError):
        OutcastLinear(0)
    with pytest.raises(TopologyError):
        OutcastLinear(201)


def test_every_sender_reaches_receiver_through_its_documented_port():
    t = topos.build("outcast,n=6")
    plan = routing.make_plan(t, "st")
    for s in t.senders():
        path = walk(t, plan, s, "recv", first_choice)
        assert path[-1] == "s1"
        assert t.port("s1", path[-2] if len(path) > 1 else s) == t.entry_port(s)
        assert len(all_paths(t, plan, s, "recv")) == 1


def test_flag_parsing_and_validation():
    assert parse_flows("2, 6,12") == [2, 6, 12]
    for bad in ("", "0", "2,x", "65", "2,2"):
        with pytest.raises(ValueError):
            parse_flows(bad)
    assert rto_min_ms(None) is None and rto_min_ms("2ms") == 2.0 and rto_min_ms("0.2s") == 200
    for bad in ("2", "0ms", "5s", "abc"):
        with pytest.raises(ValueError):
            rto_min_ms(bad)
    good = dict(outcast.PARAMS.defaults())
    outcast.validate(typed(outcast, good))
    for key, value in (("interval", 2.0), ("rto_min", "fast"), ("flows", "1,a"),
                       ("cc", "re no")):
        with pytest.raises(ValueError):
            outcast.validate(typed(outcast, {**good, key: value}))
    ft = dict(outcast_fattree.PARAMS.defaults())
    outcast_fattree.validate(typed(outcast_fattree, ft))
    for key, value in (("receiver", "h1"), ("topo", "jellyfish"), ("routing", "ksp")):
        with pytest.raises(ValueError):
            outcast_fattree.validate(typed(outcast_fattree, {**ft, key: value}))


def test_fattree_layout_st_pins_remote_senders_to_one_uplink():
    topo = topos.build("fattree,k=4")
    b, entry, extra = outcast_fattree.layout(topo, routing.make_plan(topo, "st"), "0_0_2")
    assert len(entry) == 15 and b.receiver == "0_0_2" and b.switch(topo) == "0_0_1"
    assert extra["0_0_3"]["hops"] == 2 and entry["0_0_3"] == "0_0_1 port 2 (own)"
    assert sorted(e["hops"] for e in extra.values()) == [2] + [4] * 2 + [6] * 12
    # every sender in exactly one inlet; the inlets' interfaces derived from their peers
    assert sorted(x for i in b.inlets for x in i.senders) == sorted(entry)
    assert [(w.intfs, len(w.senders)) for w in watches(topo, b)] == [(["0_0_1-eth2"], 1),
                                                                    (["0_0_1-eth3"], 14)]
    b, _, _ = outcast_fattree.layout(topo, routing.make_plan(topo, "hashed"), "0_0_2")
    assert [(w.intfs, len(w.senders)) for w in watches(topo, b)] == [
        (["0_0_1-eth2"], 1), (["0_0_1-eth3", "0_0_1-eth4"], 14)]


def test_linear_bottleneck_inlets_are_the_lone_port_and_s2s_uplink():
    topo = topos.build("outcast,n=3")
    b = outcast.bottleneck_of(topo)
    assert [(w.label, w.intfs, w.senders) for w in watches(topo, b)] == [
        ("s1 port 2 (lone)", ["s1-eth2"], ["lone"]),
        ("s1 port 3 (from s2, 3 flows)", ["s1-eth3"], ["a1", "a2", "a3"])]


SS = """ESTAB 0 0 10.0.0.1:5201 10.0.0.2:40000
\t reno wscale:7,7 rto:204 segs_out:10 segs_in:12 data_segs_in:10
ESTAB 0 0 10.0.0.1:5201 10.0.0.2:40002
\t reno segs_out:3 segs_in:100 data_segs_in:98
ESTAB 0 0 [::ffff:10.0.0.1]:5202 [::ffff:10.1.0.1]:40010
\t reno segs_out:3 segs_in:7 data_segs_in:5
"""


def test_segs_in_summed_per_source():
    assert parse_segs_in(SS) == {"10.0.0.2": 112, "10.1.0.1": 7}


def test_derived_drops_per_input_port():
    groups = [Watch("lone", ["s1-eth2"], ["lone"]), Watch("up", ["s1-eth3"], ["a1", "a2"])]

    def sample(t, rx2, rx3, d_lone, d1, d2, qd):
        return {"t": t, "rx": {"s1-eth2": rx2, "s1-eth3": rx3},
                "delivered": {"lone": d_lone, "a1": d1, "a2": d2},
                "q_drops": qd, "q_backlog_pkts": 0}
    samples = [sample(0, 5, 5, 0, 0, 0, 0), sample(1, 105, 205, 60, 90, 95, 55),
               sample(2, 205, 405, 150, 190, 195, 65), sample(9, 0, 0, 0, 0, 0, 0)]
    series, totals = drop_rows(samples, groups, t0=0.0, t_end=2.5)
    assert [(r["port"], r["drops"]) for r in series if r["t"] == 1] == [
        ("lone", 40), ("up", 15), ("bottleneck qdisc", 55)]
    assert [(r["port"], r["rx_packets"], r["delivered"], r["drops"]) for r in totals] == [
        ("lone", 200, 150, 50), ("up", 400, 385, 15)]
    assert all(r["check_residual"] == 0 and r["bottleneck_qdisc_drops"] == 65 for r in totals)


def test_ablation_reads_each_settings_newest_complete_run(tmp_path):
    """studies/outcast_ablation.py: per setting and N, the repetitions' lone shares,
    the count below half, and a table line; an unfinished run is skipped."""
    from store import write_csv
    from studies import outcast_ablation as ablation

    def run(setting: str, stamp: str, status: str, shares: list[float]) -> None:
        d = tmp_path / setting / "outcast" / stamp
        d.mkdir(parents=True)
        (d / "status.json").write_text(json.dumps({"status": status}))
        write_csv(d / "summary.csv",
                  [{"flows": 6, "run": i, "lone_share_of_fair": x, "drop_rate_lone_port": 0.1,
                    "drop_rate_uplink_port": 0.01, "cpu_mean": 5} for i, x in enumerate(shares)]
                  + [{"flows": 6, "run": "all", "lone_share_of_fair": 0.5,
                      "drop_rate_lone_port": 0.1, "drop_rate_uplink_port": 0.01,
                      "cpu_mean": 5}])
        write_csv(d / "flows.csv", [{"flows": 6, "run": 0, "role": "lone", "iperf_mbps": 0}])

    run("default", "20261126T000000Z-a", "ok", [0.1, 0.2, 0.9, 0.3])
    run("default", "20261126T010000Z-b", "running", [1.0])      # newer, not complete
    run("ovs", "20261126T000000Z-c", "ok", [0.8, 0.9])
    rows = ablation.collect(tmp_path)
    assert [(r["setting"], r["runs"], r["runs_below_half"], r["lone_zero_runs"]) for r in rows] \
        == [("default", 4, 3, 1), ("ovs", 2, 0, 1)]
    assert rows[0]["lone_share_median"] == 0.25
    # the mean and its Student-t 95 % interval, the claims' statistic (not min-max)
    assert (rows[0]["lone_share_mean"], rows[0]["lone_share_lo"], rows[0]["lone_share_hi"]) \
        == (0.375, -0.1969, 0.9469)
    table = ablation.markdown(rows)
    assert "| `default` |" in table and \
        "0.250 (0.175-0.450), 3 of 4; mean 0.375 [-0.197, 0.947]" in table
    assert table.index("`default`") < table.index("`ovs`")


def test_mechanism_reads_each_points_arrival_trace(tmp_path):
    """studies/outcast_mechanism.py: per repetition, the shared port's idle share and
    where the lone flow's accepted packets fell, from arrivals.csv over the recorded window;
    per N, medians and the rank correlation with the lone flow's share."""
    from store import write_csv
    from studies import outcast_mechanism as mechanism

    service, runtime, summary, flows = 0.001, {}, [], []
    for rep, silence in enumerate((0.0, 0.010, 0.020)):
        key = f"n12-run{rep:02d}"
        # the shared port at line rate over 0-100 ms except a silence from 40 ms; the
        # lone port's packets at 45 ms (inside any silence) and 90 ms (shared port busy)
        shared = [i * service for i in range(101) if not 0.040 < i * service < 0.040 + silence]
        rows = ([{"t": t, "port": "s1 port 3 (from s2, 12 flows)", "dropped": 0} for t in shared]
                + [{"t": t, "port": mechanism.LONE_PORT, "dropped": 0} for t in (0.0455, 0.0905)])
        (tmp_path / key).mkdir()
        write_csv(tmp_path / key / "arrivals.csv", sorted(rows, key=lambda r: r["t"]))
        runtime[key] = {"arrivals": {"window_s": [0.0, 0.1], "service_time_s": service}}
        summary.append({"flows": 12, "run": rep, "lone_share_of_fair": 0.1 * (rep + 1)})
        flows += [{"flows": 12, "run": rep, "role": "lone", "rtos": 3, "fast_retrans": 5},
                  {"flows": 12, "run": rep, "role": "aggregated", "rtos": rep, "fast_retrans": 1}]
    summary.append({"flows": 12, "run": "all", "lone_share_of_fair": 0.2})
    (tmp_path / "config.json").write_text(json.dumps({"runtime": runtime}))
    write_csv(tmp_path / "summary.csv", summary)
    write_csv(tmp_path / "flows.csv", flows)
    points = mechanism.point_rows("default", tmp_path)
    assert [p["shared_idle_share"] for p in points] == pytest.approx([0.0, 0.1, 0.2], abs=1e-3)
    assert [p["lone_in_shared_idle"] for p in points] == [0.0, 0.5, 0.5]
    assert [p["shared_rtos_median"] for p in points] == [0.0, 1.0, 2.0]
    # the lone packet at 90.5 ms is half a service time after a shared one: not early;
    # at 45.5 ms it is inside the silence (no phase) except in repetition 0
    assert [p["lone_early_share"] for p in points] == [0.0, 0.0, 0.0]
    assert points[0]["lone_accept_later"] == 1.0 and points[0]["lone_accept_early"] is None
    rows = [{"t": 0.0, "port": "shared", "dropped": 0}, {"t": 0.001, "port": "shared",
             "dropped": 0}, {"t": 0.00005, "port": mechanism.LONE_PORT, "dropped": 1}]
    assert mechanism.lone_phase(rows, 0.001, 0.0, 1.0) == {
        "lone_early_share": 1.0, "lone_accept_early": 0.0, "lone_accept_later": None}
    (row,) = mechanism.summary_rows(points)
    assert row["runs"] == 3 and row["outcasts"] == 3 and row["spearman_share_vs_idle"] == 1.0
    assert "| default | 12 | 3 | 3 |" in mechanism.markdown([row])
    assert mechanism.main([f"x={tmp_path / 'nowhere'}"]) == 2


def test_slot_race_names_who_took_each_freed_slot():
    """mechanism.slot_race: releases at 0, 1, 2, 3 ms; the shared port arrives 0.1 ms after
    each; the lone flow arrives first after the releases at 1 ms (accepted) and second
    after the one at 2 ms (dropped)."""
    from studies import outcast_mechanism as mechanism
    lone, shared = mechanism.LONE_PORT, "s1 port 3 (from s2, 12 flows)"
    releases = [{"t": t} for t in (0.0, 0.001, 0.002, 0.003)]
    arrivals = ([{"t": t + 0.0001, "port": shared, "dropped": 0} for t in (0.0, 0.002, 0.003)]
                + [{"t": 0.00105, "port": lone, "dropped": 0},
                   {"t": 0.0011, "port": shared, "dropped": 1},
                   {"t": 0.0023, "port": lone, "dropped": 1}])
    r = mechanism.slot_race(arrivals, releases, 0.0, 1.0, 0.001)
    assert r["lone_first_share"] == 0.5
    assert (r["lone_accept_first"], r["lone_accept_not_first"]) == (1.0, 0.0)
    assert r["shared_delay_us"] == 100.0 and r["lone_delay_us"] == 175.0
    # a window of under two seconds has no second-to-second change to count
    assert r["shared_delay_jumps"] is None and r["shared_delay_seconds"] == 1
    # the shared port 100 us after each release in second 0, 600 us in second 1: one jump
    rel = [{"t": i * 0.001} for i in range(2000)]
    arr = [{"t": i * 0.001 + (0.0001 if i < 1000 else 0.0006), "port": shared, "dropped": 0}
           for i in range(2000)]
    r = mechanism.slot_race(arr, rel, 0.0, 3.0, 0.001)
    assert (r["shared_delay_jumps"], r["shared_delay_seconds"]) == (1, 2)
    assert (r["jumps_quiet"], r["steps_quiet"], r["steps_silent"]) == (1, 1, 0)
    # a silence of 5 ms in second 1 (packets 1500-1504 missing): the step is silent
    gap = [a for i, a in enumerate(arr) if not 1500 <= i < 1505]
    r = mechanism.slot_race(gap, rel, 0.0, 3.0, 0.001)
    assert (r["jumps_silent"], r["steps_silent"], r["steps_quiet"]) == (1, 1, 0)
    # nothing released: no arrival has a release before it
    assert mechanism.slot_race(arrivals, [], 0.0, 1.0, 0.001)["lone_first_share"] is None


@pytest.mark.parametrize("folder", ["outcast/20261127T073537Z-ab24b1",
                                    "outcast-fattree/20261124T230445Z-8082d8"])
def test_a_folder_without_its_time_series_still_draws_what_flows_csv_allows(
        folder, tmp_path, capsys):
    """An ablation's copy keeps only some tables (burst-15k has no series.csv): `dcrepro
    plot` draws the figures its tables allow and names, in one line, the one it cannot."""
    import shutil
    from pathlib import Path

    import analysis
    src = Path(__file__).resolve().parents[2] / "results" / "reference" / folder
    run = tmp_path / folder
    shutil.copytree(src, run, ignore=shutil.ignore_patterns("run*", "*.png"))
    (run / "series.csv").unlink()
    drawn = {p.name for p in analysis.plot(run)}
    err = capsys.readouterr().err
    assert ("outcast_share.png" in drawn) if folder.startswith("outcast/") else (
        "fattree_outcast_runs.png" in drawn)
    assert not {"outcast_n06.png", "fattree_outcast.png"} & drawn
    assert err.count("not drawn: no series.csv") == 1, err
