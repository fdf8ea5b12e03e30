"""The BPF switch's map layouts: sizes match switch.bpf.c, packing round-trips (no root)."""
import re
import socket
from pathlib import Path

import pytest

from dataplane import bpfswitch as bs
from dataplane.bpfplan import FibAction, FibKey

SOURCE = Path(bs.SOURCE).read_text()


@pytest.mark.parametrize("struct_name,packer", [
    ("port_info", bs.PORT_INFO), ("port_key", bs.PORT_KEY), ("egress_info", bs.EGRESS_INFO),
    ("fib_key", bs.FIB_KEY), ("fib_action", bs.FIB_ACTION), ("flow_key", bs.FLOW_KEY),
    ("flow_stat", bs.FLOW_STAT)])
def test_struct_sizes_match_the_c_source(struct_name, packer):
    body = re.search(r"struct %s \{(.*?)\};" % struct_name, SOURCE, re.S).group(1)
    sizes = {"__u8": 1, "__u16": 2, "__u32": 4, "__u64": 8}
    total = 0
    for typ, name in re.findall(r"(__u\d+) (\w+(?:\[\w+\])?);", body):
        count = 1
        m = re.search(r"\[(\w+)\]", name)
        if m:
            count = 16 if m.group(1) == "MAX_CHOICES" else int(m.group(1))
        total += sizes[typ] * count
    assert total == packer.size, (struct_name, total, packer.size)


def test_fib_round_trip_and_padding():
    key = FibKey(7, 3, 0xFFFF, 1, bytes.fromhex("000000010203"))
    assert bs.unpack_fib_key(bs.pack_fib_key(key)) == key
    act = FibAction(1, 2, 1, 9, (3, 4, 5), (0, 17, 4094))
    raw = bs.pack_fib_action(act)
    assert len(raw) == 72 and bs.unpack_fib_action(raw) == act
    with pytest.raises(ValueError):
        bs.pack_fib_action(FibAction(1, 0, 0, 1, tuple(range(17)), (0,) * 17))


def test_flow_record_decodes_addresses_and_ports():
    key = bs.FLOW_KEY.pack(4, socket.inet_aton("10.0.0.2"), socket.inet_aton("10.3.1.3"),
                           40000, 5201, 6, 0, 3)
    val = bs.FLOW_STAT.pack(10, 15140, 0, 5, 0)
    rec = bs.unpack_flow(key, val)
    assert rec == {"sw": 4, "saddr": "10.0.0.2", "daddr": "10.3.1.3", "sport": 40000,
                   "dport": 5201, "proto": 6, "out_port": 3, "packets": 10, "bytes": 15140,
                   "in_label": 0, "out_label": 5}
