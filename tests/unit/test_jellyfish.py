"""Unit tests of the Jellyfish topology (topos.jellyfish) and path_length_distribution."""

import os
import random
import subprocess
import sys

import networkx as nx
import pytest

import topos
from topos import TopologyError
from topos.jellyfish import Jellyfish, path_length_distribution

SIZES = [(20, 4, 16), (40, 6, 40), (98, 14, 686)]
SEEDS = range(50)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def link_list(topo):
    return [(l.a, l.port_a, l.b, l.port_b) for l in topo.links()]


def closed(topo, s):
    return set(topo.neighbors(s)) | {s}


def check_structure(topo, ports):
    """Degree budget, simple graph, connectivity, free_ports bookkeeping, the invariant."""
    pairs = [frozenset((l.a, l.b)) for l in topo.links()]
    assert all(len(p) == 2 for p in pairs), "self loop"
    assert len(pairs) == len(set(pairs)), "parallel link"
    for s in topo.switches():
        assert len(topo.ports(s)) <= ports
        assert topo.free_ports[s] == ports - len(topo.ports(s))
        assert all(1 <= p <= ports for p in topo.ports(s))
    assert nx.is_connected(topo.graph())
    # The guaranteed invariant (class docstring): no move can use the leftover ports.
    sw = topo.switches()
    fabric = [(l.a, l.b) for l in topo.links() if topo.is_switch(l.a) and topo.is_switch(l.b)]
    open_ = [s for s in sw if topo.free_ports[s] > 0]
    for a in open_:
        for b in open_:
            if a != b:
                assert b in topo.neighbors(a), f"{a} and {b} could still be linked"
        if topo.free_ports[a] >= 2:
            near = closed(topo, a)
            assert all(u in near or v in near for u, v in fabric), f"{a} could be spliced"
        for b in open_:
            if a != b:
                na, nb = closed(topo, a), closed(topo, b)
                assert not any(x not in na and y not in nb
                               for u, v in fabric for x, y in ((u, v), (v, u)))


@pytest.mark.parametrize("switches,ports,hosts", SIZES)
def test_structure_over_seeds(switches, ports, hosts):
    seeds = SEEDS if switches < 90 else range(20)  # keep the suite fast
    for seed in seeds:
        t = Jellyfish(switches, ports, hosts, seed)
        check_structure(t, ports)
        # In practice every port is used except one when the free total is odd.
        assert sum(t.free_ports.values()) == (switches * ports - hosts) % 2
        assert len(t.links()) == hosts + (switches * ports - hosts) // 2


def test_identities_and_round_robin_placement():
    t = Jellyfish(20, 4, 16, seed=5)
    assert t.switches() == [f"s{i}" for i in range(20)]
    for i, s in enumerate(t.switches()):
        assert t.node(s).dpid == i + 1 and t.node(s).attrs == {"layer": "tor"}
    # host j on switch j % 20: s0..s15 one host each, s16..s19 none
    assert t.hosts() == [f"h{i}_0" for i in range(16)]
    for i in range(20):
        assert t.hosts_of(f"s{i}") == ([f"h{i}_0"] if i < 16 else [])
    h = t.node("h7_0")
    assert (h.ip, h.mac, h.attrs) == ("10.0.7.2", "00:00:00:00:07:02", {"switch": 7})
    assert t.port("s7", "h7_0") == 1  # host links take the lowest switch ports
    assert t.switch_ports == 4

    t = Jellyfish(300, 6, 610, seed=1)  # >255 switches and several hosts per switch
    assert len(t.hosts()) == 610
    assert t.hosts_of("s9") == ["h9_0", "h9_1", "h9_2"]  # 9, 309, 609
    assert t.hosts_of("s299") == ["h299_0", "h299_1"]
    h = t.node("h299_1")
    assert (h.ip, h.mac) == ("10.1.43.3", "00:00:00:01:2b:03")
    check_structure(t, 6)


def test_deterministic_per_seed_and_seeds_differ():
    for seed in range(20):
        assert link_list(Jellyfish(40, 6, 40, seed)) == link_list(Jellyfish(40, 6, 40, seed))
    graphs = {tuple(link_list(Jellyfish(20, 4, 16, seed))) for seed in SEEDS}
    assert len(graphs) >= 45


def test_deterministic_across_processes():
    # Hash randomisation must not leak in: another interpreter with another hash seed.
    code = ("from topos.jellyfish import Jellyfish\n"
            "t = Jellyfish(40, 6, 40, seed=7, grow=3)\n"
            "print([(l.a, l.port_a, l.b, l.port_b) for l in t.links()])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, text=True,
                         capture_output=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == str(link_list(Jellyfish(40, 6, 40, seed=7, grow=3)))


@pytest.mark.parametrize("switches,ports,hosts", SIZES)
def test_expand_keeps_budget_and_connectivity(switches, ports, hosts):
    for seed in range(10):
        t = Jellyfish(switches, ports, hosts, seed)
        before_links, before_hosts = len(t.links()), t.hosts()
        new = t.expand(random.Random(seed), count=3)
        assert new == [f"s{switches + k}" for k in range(3)]
        assert t.switches() == [f"s{i}" for i in range(switches + 3)]
        assert t.node(new[-1]).dpid == switches + 3
        assert t.hosts() == before_hosts
        check_structure(t, ports)
        # each new switch is spliced into ports // 2 links: +1 link per splice
        assert len(t.links()) == before_links + 3 * (ports // 2)
        for s in new:
            assert len(t.neighbors(s)) == ports - ports % 2


def test_expand_with_hosts():
    t = Jellyfish(20, 4, 16, seed=2)
    (s,) = t.expand(random.Random(1), hosts_per_switch=2)
    assert s == "s20" and t.hosts_of("s20") == ["h20_0", "h20_1"]
    assert t.node("h20_1").ip == "10.0.20.3"
    check_structure(t, 4)


def test_grow_is_reproducible_and_spec_round_trips():
    t = topos.build("jellyfish,switches=20,ports=4,hosts=16,seed=3,grow=2")
    assert len(t.switches()) == 22 and len(t.hosts()) == 16
    check_structure(t, 4)
    assert link_list(topos.build(t.spec)) == link_list(t)
    base = topos.build("jellyfish,switches=20,ports=4,hosts=16,seed=3")
    assert link_list(base) != link_list(t)


def test_build_via_registry():
    t = topos.build("jellyfish,seed=3")
    assert t.spec == "jellyfish,switches=20,ports=4,hosts=16,seed=3,grow=0"
    assert (len(t.switches()), len(t.hosts())) == (20, 16)
    assert link_list(topos.build(t.spec)) == link_list(t)
    assert link_list(t) == link_list(Jellyfish(seed=3))
    assert link_list(topos.build("jellyfish,switches=20,ports=4,hosts=16,seed=3")) == link_list(t)


@pytest.mark.parametrize("kwargs,words", [
    (dict(switches=1, ports=4, hosts=2), "at least 2 switches"),
    (dict(switches=4, ports=0, hosts=2), "at least 1 port"),
    (dict(switches=20, ports=4, hosts=81), "do not fit"),
    # 61 hosts on 20 switches: s0 gets 4 = all its ports, so no fabric link
    (dict(switches=20, ports=4, hosts=61), "no fabric port"),
    (dict(switches=20, ports=4, hosts=80), "no fabric port"),
    # 15 free ports make at most 7 links, 9 are needed for 10 switches
    (dict(switches=10, ports=2, hosts=5), "fewer than the 9 needed"),
    (dict(switches=4, ports=1, hosts=0), "fewer than the 3 needed"),
    (dict(switches=3, ports=1, hosts=0, grow=1), "fewer than"),
    (dict(switches=2, ports=1, hosts=0, grow=1), "grow needs >= 2 ports"),
    (dict(switches=20, ports=4, hosts=-1), ">= 0"),
    (dict(switches=40000, ports=4, hosts=16), "at most 32768 switches"),
    (dict(switches=32760, ports=4, hosts=16, grow=9), "at most 32768 switches"),
    (dict(switches=2, ports=600, hosts=1000), "at most 253 hosts"),
    # 101 hosts on every switch: h10000_100 is 10 characters
    (dict(switches=10001, ports=103, hosts=10001 * 101), "h10000_100 would exceed 9"),
])
def test_errors_before_building(monkeypatch, kwargs, words, one_line_error):
    def refuse(*args, **kw):
        raise AssertionError("built something before rejecting the parameters")
    monkeypatch.setattr(Jellyfish, "add_switch", refuse)
    with one_line_error(words, TopologyError):
        Jellyfish(**kwargs)


@pytest.mark.parametrize("hosts", [0, 2])
def test_disconnected_seed_is_reported(hosts):
    # ports=2 leaves a union of random paths and cycles: often more than one component.
    messages = []
    for seed in range(20):
        try:
            Jellyfish(20, 2, hosts, seed)
        except TopologyError as e:
            messages.append((seed, str(e)))
    assert len(messages) >= 3, "expected several seeds to give a disconnected graph"
    seed, msg = messages[0]
    assert f"disconnected for seed {seed}; try another seed or more ports" in msg
    if hosts:
        with pytest.raises(TopologyError, match=f"disconnected for seed {seed}"):
            topos.build(f"jellyfish,switches=20,ports=2,hosts={hosts},seed={seed}")


def test_expand_errors():
    t = Jellyfish(20, 4, 16, seed=0)
    with pytest.raises(TopologyError, match=">= 2 free ports"):
        t.expand(random.Random(0), hosts_per_switch=3)
    with pytest.raises(TopologyError, match="cannot expand"):
        t.expand(random.Random(0), count=-1)
    assert len(t.switches()) == 20  # nothing was added


def test_odd_free_ports_leave_one_free():
    t = Jellyfish(21, 3, 0, seed=4)  # 63 free ports
    assert sum(t.free_ports.values()) == 1
    check_structure(t, 3)


def test_path_length_distribution_fattree_k4():
    # k=4 fat tree: 16 hosts, 240 ordered pairs.  From one host: 1 host on its edge switch
    # (h-e-h, 2 links), 2 hosts under the other edge switch of its pod (h-e-a-e-h, 4 links),
    # 12 hosts in the other 3 pods (h-e-a-c-a-e-h, 6 links); 1 + 2 + 12 = 15 per host.
    d = path_length_distribution(topos.build("fattree,k=4"))
    assert set(d) == set(range(1, 8))
    assert d[2] == 16 * 1 / 240 == 1 / 15
    assert d[4] == 16 * 2 / 240 == 2 / 15
    assert d[6] == 16 * 12 / 240 == 12 / 15
    assert d[1] == d[3] == d[5] == d[7] == 0
    short = path_length_distribution(topos.build("fattree,k=4"), max_hops=4)
    assert short == {1: 0, 2: 1 / 15, 3: 0, 4: 2 / 15, 5: 12 / 15}


def test_path_length_distribution_jellyfish():
    for seed in range(10):
        t = Jellyfish(20, 4, 16, seed)
        d = path_length_distribution(t)
        assert set(d) == set(range(1, 8))
        assert sum(d.values()) == pytest.approx(1)
        # one host per switch: no pair shares a switch, so every path has >= 3 links
        assert d[1] == d[2] == 0
        # cross-check against shortest paths on the full graph
        g, hosts = t.graph(), t.hosts()
        n = sum(1 for a in hosts for b in hosts
                if a != b and nx.shortest_path_length(g, a, b) == 4)
        assert d[4] == pytest.approx(n / (16 * 15))
    with pytest.raises(TopologyError):
        path_length_distribution(t, max_hops=0)
