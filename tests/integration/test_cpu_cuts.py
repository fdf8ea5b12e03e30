"""The per-packet cuts of issue #22 on a real network (root): ``bpf,flows=sampled`` still
traces every TCP flow onto a path of the plan, from far fewer records; ``--shaper tbf``
builds, reads back and carries traffic at the link's rate."""
from __future__ import annotations

import pytest

import routing
import topos
from dataplanes.bpf import switch as bs
from emulator.emulation import Emulation
from emulator.shaping import LinkSpec
from harness.trace import trace_flows
from harness.traffic import Flow, run_iperf
from model.flowmodel import goodput_capacity
from routing.walk import all_paths

pytestmark = pytest.mark.integration
PAIRS = [("0_0_2", "3_1_3"), ("1_1_3", "2_0_2"), ("0_0_2", "0_1_3"), ("3_0_2", "2_1_2")]


def test_sampled_flow_records_trace_tcp_flows_on_the_plans_paths(tmp_path):
    topo = topos.build("fattree,k=4")
    plan = routing.make_plan(topo, "ecmp")
    with Emulation(topo, plan, LinkSpec(10, 100), tmp_path, "t-sampled",
                   dataplane="bpf,flows=sampled") as emu:
        assert emu.dataplane.runtime.read_conf().flags & bs.CONF_FLOWS_SAMPLED
        flows = [Flow(s, d) for s, d in PAIRS]
        run_iperf(emu, flows, "tcp", duration=6, trim=1, out=tmp_path / "tcp")
        traced = trace_flows(emu, flows)
        records = emu.dataplane.runtime.read_flows()
        sent = emu.dataplane.runtime.counters()["tx_packets"]
    for t in traced:
        assert tuple(t["path"]) in all_paths(topo, plan, t["src"], t["dst"]), t
    # every forwarded packet would be one count; sampled: SYN/FIN/RST + about 1 in 64
    counted = sum(r["packets"] for r in records if r["proto"] == 6)
    assert 0 < counted < sent / 10, (counted, sent)


def test_tbf_shaper_is_read_back_and_carries_the_links_rate(tmp_path):
    topo = topos.build("fattree,k=4")
    with Emulation(topo, routing.make_plan(topo, "ecmp"), LinkSpec(10, 100, shaper="tbf"),
                   tmp_path, "t-tbf", dataplane="bpf") as emu:
        found = emu.verify_qdiscs()
        assert found["root"] == "tbf" and found["interfaces"] == 96
        assert found["burst_bytes_read_back"] == [1600, 1600]
        flows = [Flow("0_0_2", "3_1_3")]
        run_iperf(emu, flows, "tcp", duration=8, trim=2, out=tmp_path / "tcp")
    # the payload ceiling, not more: TBF charges the same frame bytes as HTB.  Not less than
    # 0.85 of it: with a one-frame bucket TBF cannot catch up a release that comes late, so
    # it loses that time (one flow, 4-s window, 2026-11-28: TBF 0.88 and 0.91 of the
    # ceiling, HTB 0.96 and 0.92, docs/measured.md); 0.9 failed 2 runs in 7 here
    assert 0.85 * goodput_capacity(10) <= flows[0].iperf_mbps <= 1.01 * goodput_capacity(10)


def test_rcvlowat_marks_only_data_connections_and_keeps_the_rate(tmp_path):
    """--rcvlowat: of the two connections each iperf3 test makes to its server's port, only
    the data connection passes 256 KiB and gets the mark (the control connection, whose
    small messages a mark would stall, is watched and left alone); the flows still reach
    a link's payload rate, and nothing stays attached after the block."""
    import subprocess

    from emulator.rcvlowat import cgroup2_root
    from harness.session import RECEIVER_PORTS
    with open("/proc/self/mounts") as m:
        root = cgroup2_root(m.read())
    if root is None:
        pytest.skip("no cgroup v2 hierarchy is mounted (--rcvlowat says so in one line)")
    topo = topos.build("fattree,k=4")
    flows = [Flow(s, d) for s, d in PAIRS[:2]]
    with Emulation(topo, routing.make_plan(topo, "ecmp"), LinkSpec(10, 100), tmp_path,
                   "t-lowat", dataplane="bpf") as emu:
        with emu.receiver_lowat(16384, RECEIVER_PORTS) as marks:
            run_iperf(emu, flows, "tcp", duration=6, trim=1, out=tmp_path / "tcp")
    assert marks["watched"] == 2 * len(flows), marks
    assert marks["set"] == len(flows) and marks["failed"] == 0, marks
    # (two ECMP flows may share a link: their sum, and neither above one link's ceiling)
    assert sum(f.iperf_mbps for f in flows) >= 0.9 * goodput_capacity(10), flows
    assert all(f.iperf_mbps <= 1.01 * goodput_capacity(10) for f in flows), flows
    shown = subprocess.run(["bpftool", "cgroup", "show", str(root)],
                           capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0 and "dcrepro_rcvlowat" not in shown.stdout, shown


def test_hosts_have_their_own_tcp_table_while_the_network_is_up(tmp_path):
    """Each host namespace has a TCP table of its own (HOST_TCP_EHASH buckets), so a
    sock_diag dump there does not walk the root namespace's; the sysctl that gives it is
    restored at teardown."""
    from emulator.emulation import HOST_TCP_EHASH
    from emulator.sysinfo import read_sysctl

    before = read_sysctl("net.ipv4.tcp_child_ehash_entries")
    topo = topos.build("fattree,k=4")
    with Emulation(topo, routing.make_plan(topo, "ecmp"), LinkSpec(10, 100), tmp_path,
                   "t-ehash") as emu:
        own = emu.host_cmd(emu.host("0_0_2"), ["sysctl", "-n", "net.ipv4.tcp_ehash_entries"])
        root = read_sysctl("net.ipv4.tcp_ehash_entries")
        assert own.strip() == str(HOST_TCP_EHASH) != root
        assert emu.facts_dict()["host_tcp_ehash"] == HOST_TCP_EHASH
    assert read_sysctl("net.ipv4.tcp_child_ehash_entries") == before
