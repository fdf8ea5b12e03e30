"""Fat tree counts, structural identities and port layout (no root)."""
import ipaddress

import pytest

import topos
from topos.base import TopologyError
from topos.fattree import FatTree


@pytest.mark.parametrize("k", [4, 6, 8])
def test_counts(k):
    t = FatTree(k)
    assert len(t.hosts()) == k ** 3 // 4
    assert len(t.switches()) == 5 * k * k // 4
    assert len(t.core_switches) == (k // 2) ** 2
    # host links + edge-agg links + agg-core links, k^3/4 each
    assert len(t.links()) == 3 * k ** 3 // 4
    for s in t.switches():
        assert len(t.ports(s)) == k, s


@pytest.mark.parametrize("k", [4, 6, 8])
def test_identities_unique_and_structural(k):
    t = FatTree(k)
    hosts = [t.node(h) for h in t.hosts()]
    assert len({h.ip for h in hosts}) == len({h.mac for h in hosts}) == len(hosts)
    assert len({t.node(s).dpid for s in t.switches()}) == len(t.switches())
    for h in hosts:
        pod, sw, hid = map(int, h.name.split("_"))
        assert h.ip == f"10.{pod}.{sw}.{hid}"
        assert h.mac == f"00:00:00:{pod:02x}:{sw:02x}:{hid:02x}"
        assert t.access_switch(h.name) == f"{pod}_{sw}_1"
        ipaddress.ip_address(h.ip)
    assert t.node("0_0_1").dpid == 0x000001
    assert t.node(f"{k}_1_2").dpid == (k << 16) | (1 << 8) | 2


def test_port_layout_k4():
    t = FatTree(4)
    # edge: hosts on 1..2, aggregation uplinks on 3..4
    assert t.ports("0_0_1") == {1: ("0_0_2", 0), 2: ("0_0_3", 0), 3: ("0_2_1", 1),
                                4: ("0_3_1", 1)}
    # core port p+1 leads to pod p
    assert [peer for peer, _ in t.ports("4_1_1").values()] == ["0_2_1", "1_2_1", "2_2_1",
                                                                 "3_2_1"]
    assert t.node("0_0_2").attrs["pod"] == 0 and t.node("4_1_1").attrs["layer"] == "core"


def test_spec_round_trip():
    t = topos.build("fattree,4")
    assert t.spec == "fattree,k=4"
    assert [l for l in topos.build(t.spec).links()] == t.links()


@pytest.mark.parametrize("k", [0, 3, 5, -2, 66])
def test_bad_k(k):
    with pytest.raises((TopologyError, topos.SpecError)):
        topos.build(f"fattree,k={k}")


def test_extra_ips_in_reserved_range():
    t = FatTree(4)
    extra = t.extra_ips("0_0_2", 7)
    assert extra[0] == "10.128.0.1" and extra[-1] == "10.134.0.1"
    assert all(int(ip.split(".")[1]) >= 128 for ip in extra)
    with pytest.raises(TopologyError):
        t.extra_ips("0_0_2", 9)
