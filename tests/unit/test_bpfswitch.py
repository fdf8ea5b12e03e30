"""The BPF switch's map layouts and hash, without root: sizes and field offsets match
switch.bpf.c (its source text, and the compiled object's BTF when clang is installed),
every pack/unpack pair round-trips, the seeded hash decides independently per seed."""
import json
import random
import re
import shutil
import socket
import struct
import subprocess
from pathlib import Path

import pytest

from dataplanes.bpf import aqm as bq
from dataplanes.bpf import switch as bs
from emulator import bpfobj

SOURCE = Path(bs.SOURCE).read_text()
AQM_H = Path(bs.SOURCE).parent / "aqm.h"
C_TEXT = SOURCE + AQM_H.read_text()     # every struct the maps hold

# C struct name -> (Python format, C field names in order)
LAYOUTS = {
    "port_info": (bs.PORT_INFO, ["sw", "port", "seed", "flags", "rx_packets", "rx_bytes",
                                 "miss_packets"]),
    "port_key": (bs.PORT_KEY, ["sw", "port"]),
    "egress_info": (bs.EGRESS_INFO, ["ifindex", "aqm", "tx_packets", "tx_bytes"]),
    "fib_key": (bs.FIB_KEY, ["sw", "in_port", "label", "kind", "pad", "addr"]),
    "fib_action": (bs.FIB_ACTION, ["kind", "mode", "pop", "n", "group", "port", "push"]),
    "rr_key": (bs.RR_KEY, ["sw", "group", "saddr", "daddr", "sport", "dport", "proto", "pad"]),
    "flow_key": (bs.FLOW_KEY, ["sw", "saddr", "daddr", "sport", "dport", "proto", "pad",
                               "out_port"]),
    "flow_stat": (bs.FLOW_STAT, ["packets", "bytes", "in_label", "out_label", "pad"]),
    "conf": (bs.CONF, ["sample_every", "flags", "stamped", "measured", "lost"]),
    "lat_key": (bs.LAT_KEY, ["saddr", "daddr", "sport", "dport", "seq"]),
    "lat_val": (bs.LAT_VAL, ["at_ns", "latency_ns"]),
    "aqm_port": (bq.AQM_PORT, ["mode", "netns", "k", "min_th", "max_th", "max_p", "wlog",
                               "qlen", "frame_ns", "idle_since", "avg", "count", "marks",
                               "drops", "unmarkable", "events"]),
}
SPEC_SIZES = {"port_info": 40, "port_key": 8, "egress_info": 24, "fib_key": 16,
              "fib_action": 72, "rr_key": 24, "flow_key": 20, "flow_stat": 24, "conf": 32,
              "lat_key": 16, "lat_val": 16, "aqm_port": 96}


def python_offsets(fmt: struct.Struct) -> list[int]:
    """Offset of every field of a '<' format (an array or pad run is one field)."""
    tokens = [t for n, c in re.findall(r"(\d*)([a-zA-Z])", fmt.format[1:])
              for t in ([c] * int(n) if n and c in "IQ" else [n + c])]
    return [struct.calcsize("<" + "".join(tokens[:i])) for i in range(len(tokens))]


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_sizes_match_the_spec_and_the_c_source(name):
    fmt, fields = LAYOUTS[name]
    assert fmt.size == SPEC_SIZES[name]
    assert len(python_offsets(fmt)) == len(fields)
    body = re.search(r"struct %s \{(.*?)\};" % name, C_TEXT, re.S).group(1)
    sizes = {"__u8": 1, "__u16": 2, "__u32": 4, "__u64": 8}
    members = re.findall(r"(__u\d+) (\w+)(?:\[(\w+)\])?;", body)
    assert [m[1] for m in members] == fields
    total = sum(sizes[t] * (16 if n == "MAX_CHOICES" else int(n or 1)) for t, _, n in members)
    assert total == fmt.size


@pytest.mark.skipif(not (shutil.which("clang") and shutil.which("bpftool")),
                    reason="needs clang and bpftool")
def test_layouts_match_the_compiled_btf(tmp_path):
    obj = bs.build_program(tmp_path)
    dump = json.loads(subprocess.run(["bpftool", "-j", "btf", "dump", "file", str(obj)],
                                     capture_output=True, text=True, check=True,
                                     timeout=60).stdout)
    structs = {t["name"]: t for t in dump["types"] if t["kind"] == "STRUCT"}
    for name, (fmt, fields) in LAYOUTS.items():
        t = structs[name]
        assert t["size"] == fmt.size, name
        assert [(m["name"], m["bits_offset"] // 8) for m in t["members"]] == \
            list(zip(fields, python_offsets(fmt))), name


def test_build_is_cached_by_source(tmp_path):
    if not shutil.which("clang"):
        pytest.skip("needs clang")
    src = tmp_path / "switch.bpf.c"
    src.write_text(SOURCE)
    (tmp_path / "aqm.h").write_text(AQM_H.read_text())
    first = bpfobj.build(tmp_path / "cache", src)
    mtime = first.stat().st_mtime_ns
    assert bpfobj.build(tmp_path / "cache", src) == first and first.stat().st_mtime_ns == mtime
    src.write_text(SOURCE + "\n/* changed */\n")
    assert bpfobj.build(tmp_path / "cache", src) != first


def test_build_without_clang_says_so(monkeypatch, tmp_path, one_line_error):
    monkeypatch.setattr(bpfobj.shutil, "which", lambda _: None)
    with one_line_error("clang is missing", bs.RunError):
        bs.build_program(tmp_path)


ROUND_TRIPS = [
    (bs.pack_ifindex, bs.unpack_ifindex, 4_000_000_001, 4),
    (bs.pack_port_info, bs.unpack_port_info, bs.PortInfo(3, 7, 0xDEADBEEF, bs.PORT_HOST, 1, 2**40, 5), 40),
    (bs.pack_port_key, bs.unpack_port_key, bs.PortKey(3, 65535), 8),
    (bs.pack_egress_info, bs.unpack_egress_info, bs.EgressInfo(17, 9, 2**63), 24),
    (bs.pack_fib_key, bs.unpack_fib_key,
     bs.FibKey(7, 3, bs.LABEL_ANY, bs.KIND_ETH, bytes.fromhex("01005e010203")), 16),
    (bs.pack_fib_key, bs.unpack_fib_key,
     bs.FibKey(7, 0, 4094, bs.KIND_ARP, socket.inet_aton("10.0.0.3") + b"\0\0"), 16),
    (bs.pack_fib_action, bs.unpack_fib_action,
     bs.FibAction(bs.ACT_FORWARD, bs.MODE_RR, 1, 9, (3, 4, 5), (0, 17, 4094)), 72),
    (bs.pack_fib_action, bs.unpack_fib_action,
     bs.FibAction(bs.ACT_REPLICATE, 0, 0, 2**32 - 1, tuple(range(1, 17)), (1,) * 16), 72),
    (bs.pack_rr_key, bs.unpack_rr_key,
     bs.RrKey(2, 5, "10.0.0.1", "10.255.3.4", 40000, 5201, 17), 24),
    (bs.pack_rr_value, bs.unpack_rr_value, 15, 4),
    (bs.pack_flow_key, bs.unpack_flow_key,
     bs.FlowKey(4, "10.0.0.2", "10.3.1.3", 40000, 5201, 6, 3), 20),
    (bs.pack_flow_stat, bs.unpack_flow_stat, bs.FlowStat(10, 15140, 0, 5), 24),
    (bs.pack_conf, bs.unpack_conf, bs.Conf(64, bs.CONF_KEEP_SOCKET, 2**40, 7, 1), 32),
    (bs.pack_lat_key, bs.unpack_lat_key, bs.LatKey("10.0.0.2", "10.3.1.3", 40000, 5201,
                                                   2**32 - 1), 16),
    (bs.pack_lat_start, bs.unpack_lat_start, 2**63, 8),
    (bs.pack_lat_val, bs.unpack_lat_val, bs.LatVal(2**50, 123456), 16),
    (bq.pack_aqm_port, bq.unpack_aqm_port,
     bq.AqmPort(2, 4026531840, 20, 5, 15, 1677722, 9, 7, 1211200, 2**62, 5 << 16, 3, 10,
                11, 1, 2**40), 96),
    (bs.pack_egress_info, bs.unpack_egress_info, bs.EgressInfo(17, 9, 2**63, 1), 24),
]


@pytest.mark.parametrize("pack,unpack,value,size", ROUND_TRIPS)
def test_round_trip(pack, unpack, value, size):
    raw = pack(value)
    assert len(raw) == size and unpack(raw) == value


def test_codecs_cover_every_map_with_its_sizes():
    samples = {v[0]: v[2] for v in ROUND_TRIPS}
    for name, (pk, uk, pv, uv) in bs.CODECS.items():
        k, v = pk(samples[pk]), pv(samples[pv])
        assert (len(k), len(v)) == bs.SIZES[name]
        assert uk(k) == samples[pk] and uv(v) == samples[pv]


def test_pad_fields_are_zero_and_fields_sit_where_c_has_them():
    raw = bs.pack_port_info(bs.PortInfo(1, 2, 3, 0, 4, 5, 6))
    assert raw[12:16] == bytes(4) and struct.unpack_from("<Q", raw, 32)[0] == 6
    assert bs.pack_port_info((1, 2, 3, bs.PORT_HOST))[12:16] == b"\x01\0\0\0"
    assert bs.pack_conf(64)[4:8] == bytes(4)   # default: the socket is released
    assert bs.pack_conf((64, bs.CONF_KEEP_SOCKET))[4:8] == b"\x01\0\0\0"
    raw = bs.pack_fib_key((1, 2, 3, bs.KIND_ETH, b"\xaa" * 6))
    assert raw[9] == 0 and raw[10:] == b"\xaa" * 6 and raw[8] == bs.KIND_ETH
    raw = bs.pack_fib_action((bs.ACT_FORWARD, bs.MODE_HASH, 0, 1, (5, 6), (0, 100)))
    assert raw[3] == 2 and struct.unpack_from("<2H", raw, 8) == (5, 6)
    assert struct.unpack_from("<2H", raw, 40) == (0, 100) and raw[12:40] == bytes(28)
    raw = bs.pack_rr_key((1, 2, "1.2.3.4", "5.6.7.8", 1, 2, 6))
    assert raw[8:12] == bytes([1, 2, 3, 4]) and raw[21:] == bytes(3)
    raw = bs.pack_flow_key((1, "1.2.3.4", "5.6.7.8", 258, 2, 17, 9))
    assert raw[12:14] == b"\x02\x01" and raw[17] == 0 and raw[18:] == b"\x09\x00"
    assert bs.pack_port_info((1, 2, 3)) == bs.pack_port_info(bs.PortInfo(1, 2, 3, 0, 0, 0, 0))
    assert bs.pack_egress_info(9) == bs.pack_egress_info(bs.EgressInfo(9, 0, 0))
    # the AQM flag sits where C has it (the old pad), not after the counters
    assert bs.pack_egress_info(bs.EgressInfo(9, 0, 0, 1))[4:8] == b"\x01\0\0\0"


@pytest.mark.parametrize("action", [
    (bs.ACT_FORWARD, 0, 0, 1, tuple(range(1, 18)), (0,) * 17),   # 17 choices
    (bs.ACT_FORWARD, 0, 0, 1, (), ()),                            # none
    (bs.ACT_FORWARD, 0, 0, 1, (1, 2), (0,)),                      # push list too short
    (bs.ACT_FORWARD, 0, 0, 1, (0,), (0,)),                        # port 0
    (bs.ACT_FORWARD, 0, 0, 1, (1,), (4095,)),                     # label out of range
    (3, 0, 0, 1, (1,), (0,)),                                     # unknown kind
    (bs.ACT_FORWARD, 4, 0, 1, (1,), (0,)),                        # unknown mode
])
def test_bad_actions_are_refused(action):
    with pytest.raises(ValueError):
        bs.pack_fib_action(action)


def test_bad_keys_are_refused():
    with pytest.raises(ValueError):
        bs.pack_fib_key((1, 0, 4095, bs.KIND_ETH, bytes(6)))
    with pytest.raises(ValueError):
        bs.pack_fib_key((1, 0, 0, bs.KIND_ETH, bytes(4)))


def test_translation_tuples_pack_alike():
    from dataplanes.bpf.plan import FibAction, FibKey
    key = FibKey(7, 3, 0xFFFF, 1, bytes.fromhex("000000010203"))
    act = FibAction(1, 2, 1, 9, (3, 4, 5), (0, 17, 4094))
    assert bs.pack_fib_key(key) == bs.pack_fib_key(bs.FibKey(*key))
    assert bs.pack_fib_action(act) == bs.pack_fib_action(bs.FibAction(*act))
    assert bs.unpack_fib_action(bs.pack_fib_action(act)) == act      # tuple equality


def test_flow_record_decodes_addresses_and_ports():
    key = bs.FLOW_KEY.pack(4, socket.inet_aton("10.0.0.2"), socket.inet_aton("10.3.1.3"),
                           40000, 5201, 6, 3)
    val = bs.FLOW_STAT.pack(10, 15140, 0, 5)
    assert bs.unpack_flow(key, val) == {
        "sw": 4, "saddr": "10.0.0.2", "daddr": "10.3.1.3", "sport": 40000, "dport": 5201,
        "proto": 6, "out_port": 3, "packets": 10, "bytes": 15140, "in_label": 0,
        "out_label": 5}


def _tuples(n: int) -> list[tuple[str, str, int, int, int]]:
    rnd = random.Random(1)
    return [(f"10.{rnd.randrange(8)}.{rnd.randrange(4)}.{rnd.randrange(2, 6)}",
             f"10.{rnd.randrange(8)}.{rnd.randrange(4)}.{rnd.randrange(2, 6)}", 6,
             rnd.randrange(32768, 61000), 5201) for _ in range(n)]


def test_hash_spreads_flows_evenly():
    flows = _tuples(4000)
    for n in (2, 3, 4, 16):
        counts = [0] * n
        for t in flows:
            counts[bs.flow_hash(11, *t) % n] += 1
        assert max(counts) - min(counts) < 0.25 * len(flows) / n, (n, counts)


def test_switches_with_different_seeds_decide_independently():
    """No polarization: which of two uplinks a flow takes at one switch says nothing about
    its choice at the next (agreement ~ 1/2), while equal seeds always agree."""
    flows = _tuples(4000)
    for s1, s2 in ((1, 2), (7, 8), (0x1234, 0x1235)):
        same = sum(bs.flow_hash(s1, *t) % 2 == bs.flow_hash(s2, *t) % 2 for t in flows)
        assert 0.45 < same / len(flows) < 0.55, (s1, s2, same)
        # and, among flows that went "left" at the first switch, half go left again
        left = [t for t in flows if bs.flow_hash(s1, *t) % 2 == 0]
        again = sum(bs.flow_hash(s2, *t) % 2 == 0 for t in left)
        assert 0.44 < again / len(left) < 0.56
    assert all(bs.flow_hash(5, *t) == bs.flow_hash(5, *t) for t in flows[:50])


def test_hash_uses_every_tuple_field():
    base = ("10.0.0.1", "10.0.0.2", 6, 1000, 2000)
    h = bs.flow_hash(3, *base)
    for i, other in enumerate(("10.0.0.9", "10.0.0.9", 17, 1001, 2001)):
        t = list(base)
        t[i] = other
        assert bs.flow_hash(3, *t) != h
    assert bs.flow_hash(4, *base) != h
