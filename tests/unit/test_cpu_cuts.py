"""The per-packet cuts of issue #22 without root: ``--shaper tbf``'s tc lines, its read-back
and checks; ``bpf,flows=sampled`` as a dataplane option; the profile bench's attribution of
switch-program samples to source lines; the cuts bench's variant syntax."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from dataplanes.bpf import switch as bs
from emulator import dataplane_registry, shaping
from emulator.shaping import LinkSpec
from harness.params import NetworkParams

REPO = Path(__file__).resolve().parents[2]


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_tbf_lines_put_the_same_pfifo_under_tbf_last():
    lines = shaping.tc_lines("s1-eth1", 10.0, 100, None, "tbf")
    assert lines[0] == ("qdisc replace dev s1-eth1 root handle 1: tbf rate 10.0mbit burst "
                        f"{shaping.TBF_DEFAULT_BURST} limit {100 * shaping.FRAME_BYTES}")
    # the leaf comes after the root: replacing a TBF root resizes its child
    assert lines[-1] == "qdisc replace dev s1-eth1 parent 1:1 handle 10: pfifo limit 100"
    assert lines[-1] == shaping.tc_lines("s1-eth1", 10.0, 100)[-1]
    assert "burst 15360 " in shaping.tc_lines("x", 10.0, 7, 15360, "tbf")[0]
    assert all("tbf" not in l for l in shaping.tc_lines("x", 10.0, 7))


def test_shaper_is_checked_and_htb_stays_the_default():
    assert LinkSpec().shaper == "htb" and NetworkParams().shaper == "htb"
    assert LinkSpec(10, 100, "default", "droptail", "tbf").shaper == "tbf"
    with pytest.raises(ValueError, match="--shaper must be one of htb, tbf"):
        LinkSpec(10, 100, shaper="cbq")


def test_tbf_read_back_from_tc_json():
    state = {"s1-eth1": [{"kind": "tbf", "root": True,
                          "options": {"rate": 1250000, "burst": 1600, "lat": 78720}},
                         {"kind": "pfifo", "parent": "1:1", "options": {"limit": 100}}],
             "s1-eth2": [{"kind": "htb", "root": True, "options": {}}]}
    got = shaping._tbf_classes(state)
    assert list(got) == ["s1-eth1"]
    assert got["s1-eth1"][0].rate == 10e6 and got["s1-eth1"][0].burst == 1600


def test_flows_sampled_is_a_bpf_option_only():
    dp = dataplane_registry.make("bpf,flows=sampled")
    assert dp.flows_sampled and not dp.keep_socket
    assert dataplane_registry.make("bpf,cnt=packets").cnt_packets
    assert not dp.cnt_packets and not dataplane_registry.make("bpf").cnt_packets
    assert not dataplane_registry.make("bpf").flows_sampled
    assert "flow_records" in dataplane_registry.make("bpf").facts()
    with pytest.raises(ValueError, match="takes no option"):
        dataplane_registry.make("bpf,flows=some")
    with pytest.raises(ValueError, match="takes no option"):
        dataplane_registry.make("ovs,flows=sampled")


def test_profile_counts_samples_that_end_in_a_mitigation_thunk():
    prof = _bench("bench_profile")
    text = "\n".join([
        "iperf3 99/99 [001]", "\tffffffff82203500 srso_safe_ret",
        "\tffffffff81000030 tcp_sendmsg", "",
        "swapper 0/0 [000]", "\tffffffff81000070 pv_native_safe_halt", "",
        "iperf3 99/99 [001]", "\tffffffff82202a40 __x86_indirect_thunk_rax",
        "\tffffffff81000080 __dev_queue_xmit", "",
        "iperf3 99/99 [001]", "\tffffffff81000030 tcp_sendmsg", "",
        "iperf3 99/99 [001]", "\tffffffff81000090 srso_alias_trap", ""])
    # idle leaves the count; a thunk counts by the leaf only
    assert prof.thunk_samples(prof.classified(text)) == (3, 4)


def test_a_runs_machine_lists_the_mitigations_that_tax_every_call(tmp_path, monkeypatch):
    from emulator import sysinfo
    (tmp_path / "spectre_v2").write_text("Mitigation: Retpolines; STIBP: disabled\n")
    (tmp_path / "spec_rstack_overflow").write_text("Vulnerable: Safe RET, no microcode\n")
    (tmp_path / "mds").write_text("Not affected\n")
    monkeypatch.setattr(sysinfo, "VULNERABILITIES", str(tmp_path))
    assert sysinfo.mitigations() == {"spectre_v2": "Mitigation: Retpolines",
                                     "spec_rstack_overflow": "Vulnerable: Safe RET, no microcode"}


def test_flag_values_mirror_the_program():
    src = Path(bs.SOURCE).read_text()
    for name in ("CONF_KEEP_SOCKET", "CONF_FLOWS_SAMPLED", "FLOW_SAMPLE_EVERY"):
        m = re.search(rf"#define {name} (\d+)", src)
        assert m and int(m.group(1)) == getattr(bs, name), name


def test_profile_samples_go_to_the_line_of_the_call():
    prof = _bench("bench_profile")
    base = 0xffffffffc0001000
    lines = [(base, 500), (base + 0x10, 0), (base + 0x20, 520), (base + 0x40, 540)]
    sym = "bpf_prog_0123456789abcdef_dcrepro_switch"
    text = "\n".join([
        # a lookup called from line 520: return address just past the call
        "ksoftirqd/0 12/12 [000]", "\tffffffff81000010 lookup_nulls_elem_raw",
        "\tffffffff81000020 __htab_map_lookup_elem", f"\t{base + 0x40:x} {sym}", "",
        # the program itself at line 500 (line 0 folds into the line before it)
        "iperf3 99/99 [001]", f"\t{base + 0x18:x} {sym}", "",
        "iperf3 99/99 [001]", "\tffffffff81000030 tcp_sendmsg", ""])
    got = prof.switch_sites(text, lines)
    assert got == {(520, "__htab_map_lookup_elem"): 1, (500, "(the program)"): 1}
    assert sum(prof.per_component(prof.classified(text)).values()) == 3
    # MPTCP's own work apart from the TCP of its subflows
    assert prof.classify("iperf3", [("ffffffff81000040", "mptcp_sendmsg")]) == "MPTCP (hosts)"
    assert prof.classify("iperf3", [("ffffffff81000050", "tcp_ack"),
                                    ("ffffffff81000060", "mptcp_incoming_options")]) == \
        "TCP/UDP/IP stack"


def test_cuts_bench_variant_syntax():
    cuts = _bench("bench_cpu_cuts")
    assert cuts.parse_variant("flows=sampled:bpf,flows=sampled") == (
        "flows=sampled", "bpf,flows=sampled", "htb", "halt", "", "")
    assert cuts.parse_variant("tbf:bpf:tbf") == ("tbf", "bpf", "tbf", "halt", "", "")
    assert cuts.parse_variant("spin:bpf::spin") == ("spin", "bpf", "htb", "spin", "", "")
    assert cuts.parse_variant("before:bpf:::HEAD~1") == ("before", "bpf", "htb", "halt",
                                                         "HEAD~1", "")
    assert cuts.parse_variant("f:bpf:htb:auto::fifo").machine == "fifo"
    assert cuts.parse_variant("b:bpf:::x:fifo,net.core.dev_weight=16").machine == \
        "fifo,net.core.dev_weight=16"
    assert cuts.parse_variant("k:bpf::::batch=0").machine == "batch=0"
    assert cuts.parse_variant("l:bpf::::batch=2,lowat=16384").machine == "batch=2,lowat=16384"
    assert cuts.parse_variant("n:bpf::::napi,batch=2").machine == "napi,batch=2"
    assert cuts.parse_variant("n:bpf::::napififo").machine == "napififo"
    assert cuts.parse_variant("g:bpf::::gro").machine == "gro"
    assert cuts.parse_variant("b:bpf::::schedbatch,batch=2").machine == \
        "schedbatch,batch=2"
    for bad in ("nolabel", "x:bpf:htb:spin:HEAD:rr", "x:bpf:htb:spin:HEAD:fifo:more",
                "x:bpf::::net.ipv4.tcp_mem=1", "x:bpf::::net.core.dev_weight=a",
                "x:bpf::::lowat=16k", "x:bpf::::napi=1"):
        with pytest.raises(ValueError):
            cuts.parse_variant(bad)


def test_cuts_bench_program_costs_over_the_switch_programs_window():
    """ns per run and per packet-hop between the first and last look that saw the switch
    program; a program loaded in between counts whole, one unloaded before the last look
    up to its own last look; other programs are ignored."""
    cuts = _bench("bench_cpu_cuts")
    looks = [{7: ("other", 5, 5)},
             {1: ("dcrepro_switch", 1000, 10), 2: ("on_dequeue", 400, 20)},
             {1: ("dcrepro_switch", 2000, 20), 2: ("on_dequeue", 1200, 60),
              3: ("on_dequeue", 200, 10), 7: ("other", 99, 99)},
             {1: ("dcrepro_switch", 3000, 30)}, {}]
    got = cuts.window_costs(looks)
    # switch: 2000 ns over 20 runs; probe: 800 + 200 ns over 40 + 10 runs, 20 packet-hops
    assert got == {"switch_ns_per_run": 100.0, "switch_runs_per_packet_hop": 1.0,
                   "switch_ns_per_packet_hop": 100.0, "probe_ns_per_run": 20.0,
                   "probe_runs_per_packet_hop": 2.5, "probe_ns_per_packet_hop": 50.0}
    assert cuts.window_costs(looks[:2]) == {}


def test_cuts_bench_congestion_control_ops_each_by_name():
    """Every BPF congestion-control op seen in the window gets its own figures, per
    packet-hop of the same window; other programs' names stay out."""
    cuts = _bench("bench_cpu_cuts")
    looks = [{1: ("dcrepro_switch", 0, 0), 4: ("lia_cong_avoid", 0, 0)},
             {1: ("dcrepro_switch", 1000, 100), 4: ("lia_cong_avoid", 300, 10),
              5: ("lia_in_ack_even", 40, 20), 6: ("ssthresh_other", 9, 9)}]
    got = cuts.window_costs(looks)
    assert got["cc lia_cong_avoid_ns_per_run"] == 30.0
    assert got["cc lia_in_ack_even_runs_per_packet_hop"] == 0.2
    assert got["cc lia_in_ack_even_ns_per_packet_hop"] == 0.4
    assert not any("ssthresh_other" in k for k in got)


def test_release_latency_bench_reads_bpftraces_maps():
    """bench_release_latency.parse: counters, and late releases by the context in their
    stack (the first rule that matches)."""
    _bench("bench_profile")          # which the latency bench imports by name
    parse = _bench("bench_release_latency").parse
    text = ("Attaching 4 probes...\n@fires: 900\n@fires_late: 3\n@late: 12\n"
            "@late_same_cpu[0]: 2\n@late_same_cpu[1]: 10\n@late_stack[\n"
            "    __qdisc_run+465\n    net_tx_action+464\n    run_ksoftirqd+47\n]: 4\n"
            "@late_stack[\n    net_tx_action+464\n    __irq_exit_rcu+142\n]: 5\n"
            "@late_stack[\n    __dev_queue_xmit+1401\n    __bpf_redirect+471\n]: 3\n"
            "@releases: 1000\n@fired[0xffff1]: 5\n")
    r = parse(text)
    assert (r["fires"], r["fires_late"], r["releases"], r["late"]) == (900, 3, 1000, 12)
    assert r["late_same_cpu"] == 10
    assert r["late_by_context"] == {"softirq at an interrupt's exit": 5, "ksoftirqd": 4,
                                    "transmit that found the qdisc idle": 3}
