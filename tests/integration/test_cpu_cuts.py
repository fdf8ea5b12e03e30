"""The per-packet cuts of issue #22 on a real network (root): ``bpf,flows=sampled`` still
traces every TCP flow onto a path of the plan, from far fewer records; ``--shaper tbf``
builds, reads back and carries traffic.  The rates the flows reach (TBF 0.85-1.01 of the
payload ceiling; --rcvlowat's flows >= 0.9 of it, none above 1.01) are measurements of
this host: bench/bench_cpu_cut_rates.py
(``flock -o /tmp/dcrepro-heavy.lock .venv/bin/python bench/bench_cpu_cut_rates.py --repeat 5``)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

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
        run_iperf(emu, flows, "tcp", duration=4, trim=1, out=tmp_path / "tcp")
        traced = trace_flows(emu, flows)
        records = emu.dataplane.runtime.read_flows()
        sent = emu.dataplane.runtime.counters()["tx_packets"]
    for t in traced:
        assert tuple(t["path"]) in all_paths(topo, plan, t["src"], t["dst"]), t
    # every forwarded packet would be one count; sampled: SYN/FIN/RST + about 1 in 64
    counted = sum(r["packets"] for r in records if r["proto"] == 6)
    assert 0 < counted < sent / 10, (counted, sent)


def tbf_flow(out: Path, duration: float = 4, trim: float = 1) -> tuple[dict[str, Any], Flow]:
    """k=4 fat tree with --shaper tbf: what verify_qdiscs read back, and one TCP flow."""
    topo = topos.build("fattree,k=4")
    with Emulation(topo, routing.make_plan(topo, "ecmp"), LinkSpec(10, 100, shaper="tbf"),
                   out, "t-tbf", dataplane="bpf") as emu:
        found = emu.verify_qdiscs()
        flow = Flow("0_0_2", "3_1_3")
        run_iperf(emu, [flow], "tcp", duration=duration, trim=trim, out=out / "tcp")
    return found, flow


def test_tbf_shaper_is_read_back_and_carries_traffic(tmp_path):
    """TBF read back on all 96 interfaces with its one-frame bucket, and a flow across it.
    Its rate against the payload ceiling (0.85-1.01: with a one-frame bucket TBF cannot
    catch up a release that comes late; one flow, 4-s window, 2026-11-28: TBF 0.88 and 0.91
    of the ceiling, HTB 0.96 and 0.92, docs/measured.md; 0.9 failed 2 runs in 7) is judged
    by bench/bench_cpu_cut_rates.py."""
    found, flow = tbf_flow(tmp_path)
    assert found["root"] == "tbf" and found["interfaces"] == 96
    assert found["burst_bytes_read_back"] == [1600, 1600]
    # the flow went through: more than a tenth of the link (a sanity floor, not a rate)
    assert flow.iperf_mbps > 0.1 * goodput_capacity(10), flow


def lowat_flows(out: Path, duration: float = 4, trim: float = 1
                ) -> tuple[dict[str, int], list[Flow], Any] | None:
    """Two TCP flows under --rcvlowat 16384: the marks' counters, the flows, and ``bpftool
    cgroup show`` of the cgroup v2 root afterwards (None: no cgroup v2 is mounted)."""
    import subprocess

    from emulator.rcvlowat import cgroup2_root
    from harness.session import RECEIVER_PORTS
    with open("/proc/self/mounts") as m:
        root = cgroup2_root(m.read())
    if root is None:
        return None
    topo = topos.build("fattree,k=4")
    flows = [Flow(s, d) for s, d in PAIRS[:2]]
    with Emulation(topo, routing.make_plan(topo, "ecmp"), LinkSpec(10, 100), out,
                   "t-lowat", dataplane="bpf") as emu:
        with emu.receiver_lowat(16384, RECEIVER_PORTS) as marks:
            run_iperf(emu, flows, "tcp", duration=duration, trim=trim, out=out / "tcp")
    shown = subprocess.run(["bpftool", "cgroup", "show", str(root)],
                           capture_output=True, text=True, timeout=30)
    return marks, flows, shown


def test_rcvlowat_marks_only_data_connections_and_detaches(tmp_path):
    """--rcvlowat: of the two connections each iperf3 test makes to its server's port, only
    the data connection passes 256 KiB and gets the mark (the control connection, whose
    small messages a mark would stall, is watched and left alone); the flows carry data,
    and nothing stays attached after the block.  That they still reach a link's payload
    rate (sum >= 0.9, none above 1.01) is judged by bench/bench_cpu_cut_rates.py."""
    got = lowat_flows(tmp_path)
    if got is None:
        pytest.skip("no cgroup v2 hierarchy is mounted (--rcvlowat says so in one line)")
    marks, flows, shown = got
    assert marks["watched"] == 2 * len(flows), marks
    assert marks["set"] == len(flows) and marks["failed"] == 0, marks
    # each flow carried data (a sanity floor: a tenth of a link, not a rate)
    assert all(f.iperf_mbps > 0.1 * goodput_capacity(10) for f in flows), flows
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
