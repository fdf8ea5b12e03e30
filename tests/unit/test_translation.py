"""Both dataplane translations behave exactly like the plan interpreter (Faucet-style checks).

For every strategy and many host pairs, a packet is walked hop by hop three ways with the
same choice at every select: through the plan (routing/walk.py), through the OpenFlow rules
Open vSwitch would hold (controller/ofplan.simulate) and through the BPF switch's map
entries (dataplane/bpfplan.simulate).  Same output port and label at every hop, same path.
"""
import itertools
import random

import pytest

import routing
import topos
from controller.ofplan import Packet as OFPacket
from controller.ofplan import UnsupportedAction, openflow_groups, openflow_rules
from controller.ofplan import simulate as of_simulate
from dataplanes.bpf import plan as bpfplan
from routing.plan import Action, Choice, Match, Plan, SwitchPlan
from routing.walk import step

FT4 = topos.build("fattree,k=4")
JF = topos.build("jellyfish,switches=8,ports=4,hosts=6,seed=1")
CASES = [(FT4, "st"), (FT4, "ecmp"), (FT4, "hashed"), (JF, "ksp,k=3"), (JF, "ecmp")]


def _three_way(topo, plan, rules, fib, src, dst, arp, rng):
    d = topo.node(dst)
    kind, key = ("arp", d.ip) if arp else ("eth", d.mac)
    here = topo.access_switch(src)
    in_port, label, hops = topo.port(here, src), 0, 0
    while topo.is_switch(here):
        n_seen = []

        def choose(n):
            n_seen.append(n)
            return pick[0] % n
        pick = [rng.randrange(16)]
        _, want = step(plan, here, kind, key, label, in_port, lambda _s, n: choose(n))
        pkt = OFPacket(eth_dst="ff:ff:ff:ff:ff:ff" if arp else d.mac, in_port=in_port,
                       eth_type=0x0806 if arp else 0x0800, arp_tpa=d.ip if arp else None,
                       vlan=label)
        got_of = of_simulate(rules[here], pkt, choose)
        sp = plan.switches[here]
        bkey = bpfplan.fib_key(sp, kind, key, label, in_port)
        got_bpf = bpfplan.simulate(fib, sp.sid, in_port, label, bkey.kind, bkey.addr, choose,
                                   bpfplan.in_port_rules(sp))
        assert got_of == want == got_bpf, (here, want, got_of, got_bpf)
        assert len(set(n_seen)) <= 1, "the three saw different choice counts"
        (port, label), = want
        here, in_port = topo.ports(here)[port]
        hops += 1
        assert hops < 20
    assert here == dst and label == 0


@pytest.mark.parametrize("topo,spec", CASES, ids=[f"{t.spec}-{s}" for t, s in CASES])
def test_openflow_and_bpf_translations_agree_with_the_interpreter(topo, spec):
    plan = routing.make_plan(topo, spec)
    rng = random.Random(7)
    rules = {name: openflow_rules(sp) for name, sp in plan.switches.items()}
    fib = bpfplan.fib_entries(plan)
    pairs = list(itertools.permutations(topo.hosts(), 2))
    for src, dst in rng.sample(pairs, min(60, len(pairs))):
        for _ in range(3):
            _three_way(topo, plan, rules, fib, src, dst, arp=False, rng=rng)
        _three_way(topo, plan, rules, fib, src, dst, arp=True, rng=rng)


def _one_switch_plan(action, match):
    sp = SwitchPlan("s1", 1, 1, 99)
    sp.add(match, action)
    return Plan("x", "y", {"s1": sp}), sp


def test_in_port_and_any_label_fallbacks_agree():
    sp = SwitchPlan("s1", 1, 1, 5)
    mac = "00:00:00:00:00:09"
    sp.add(Match(mac), Action.forward(1))
    sp.add(Match(mac, in_port=3), Action.forward(2))
    sp.add(Match(mac, label=7), Action.forward(4))
    sp.add(Match(mac, label=0xFFFF), Action.forward(5, pop=True))
    plan = Plan("x", "y", {"s1": sp})
    fib = bpfplan.fib_entries(plan)
    rules = openflow_rules(sp)
    for in_port, label, want in [(1, 0, (1, 0)), (3, 0, (2, 0)), (3, 7, (4, 7)),
                                 (1, 9, (5, 0)), (3, 9, (5, 0))]:
        _, got = step(plan, "s1", "eth", mac, label, in_port, lambda _s, n: 0)
        of = of_simulate(rules, OFPacket(eth_dst=mac, in_port=in_port, vlan=label), lambda n: 0)
        key = bpfplan.fib_key(sp, "eth", mac, label, in_port)
        bpf = bpfplan.simulate(fib, 1, in_port, label, key.kind, key.addr, lambda n: 0,
                               bpfplan.in_port_rules(sp))
        assert got == of == bpf == [want], (in_port, label)


def test_replicate_agrees_and_pushes_per_copy():
    act = Action.replicate([Choice(1), Choice(2, push=5), Choice(3)])
    plan, sp = _one_switch_plan(act, Match("01:00:5e:01:02:03"))
    want = [(1, 0), (2, 5), (3, 0)]
    _, got = step(plan, "s1", "eth", "01:00:5e:01:02:03", 0, 9, lambda _s, n: 0)
    of = of_simulate(openflow_rules(sp), OFPacket(eth_dst="01:00:5e:01:02:03", in_port=9),
                     lambda n: 0, openflow_groups(sp))
    # one group of type ALL, one bucket a copy, the label pushed in its own bucket only
    (group,) = openflow_groups(sp)
    assert group.buckets == ((("output", 1),), (("push_vlan", 5), ("output", 2)),
                             (("output", 3),))
    assert [a for r in openflow_rules(sp) for a in r.actions] == [("group", 1)]
    key = bpfplan.fib_key(sp, "eth", "01:00:5e:01:02:03", 0, 9)
    bpf = bpfplan.simulate(bpfplan.fib_entries(plan), 1, 9, 0, key.kind, key.addr, lambda n: 0,
                           bpfplan.in_port_rules(sp))
    assert got == of == bpf == want


@pytest.mark.parametrize("mode", ["rnd", "rr", "cnt"])
def test_openflow_refuses_per_packet_modes_bpf_carries_them(mode):
    act = Action.select([Choice(1), Choice(2)], mode)
    plan, sp = _one_switch_plan(act, Match("00:00:00:00:00:01"))
    with pytest.raises(UnsupportedAction, match="--dataplane bpf"):
        openflow_rules(sp)
    (entry,) = bpfplan.fib_entries(plan).values()
    assert entry.mode == bpfplan.MODES[mode] and entry.ports == (1, 2)


def test_bpf_groups_are_per_choice_set_and_seeds_per_switch():
    plan = routing.make_plan(FT4, "ecmp")
    fib = bpfplan.fib_entries(plan)
    for sp in plan.switches.values():
        sets = {a.choices for a in sp.table.values()}
        groups = {v.group for k, v in fib.items() if k.sw == sp.sid}
        assert len(groups) == len(sets)
    assert len({sp.seed for sp in plan.switches.values()}) == len(plan.switches)
    assert sorted(sp.sid for sp in plan.switches.values()) == list(range(1, 21))
