"""Multicast trees (Orca): every member gets exactly one copy, nobody else any, no loops, and
both dataplane translations replicate exactly as the plan interpreter does."""
import pytest

import routing
import topos
from controller.ofplan import Packet, openflow_groups, openflow_rules
from controller.ofplan import simulate as of_simulate
from dataplanes.bpf import plan as bpfplan
from dataplanes.bpf.switch import PORT_IN_RULES
from emulator.dataplane_registry import check_plan, make
from routing.multicast import add_group, group_mac, tree_edges
from routing.walk import WalkError, first_choice, step, tree

FT4 = topos.build("fattree,k=4")
GROUP = "239.1.2.3"


def test_group_mac_follows_rfc_1112():
    assert group_mac("239.1.2.3") == "01:00:5e:01:02:03"
    assert group_mac("239.129.2.3") == "01:00:5e:01:02:03"   # only 23 bits are mapped
    assert group_mac("224.0.0.251") == "01:00:5e:00:00:fb"
    with pytest.raises(ValueError, match="not an IPv4 multicast"):
        group_mac("10.0.0.1")


@pytest.mark.parametrize("members", [["0_0_3"], ["0_1_2", "1_0_2"],
                                     ["0_0_3", "1_1_2", "2_0_3", "3_1_3"],
                                     [h for h in FT4.hosts() if h != "0_0_2"]])
def test_every_member_gets_one_copy_and_nobody_else(members):
    plan = routing.make_plan(FT4, "ecmp")
    add_group(FT4, plan, GROUP, "0_0_2", members)
    got = tree(FT4, plan, "0_0_2", group_mac(GROUP), first_choice)
    assert got == {m: 1 for m in members}
    assert "replicate" in plan.modes() or len(members) == 1
    for name in ("bpf", "ovs"):
        check_plan(make(name), plan)   # both dataplanes carry replication


def test_a_copy_entering_off_the_tree_is_dropped():
    plan = routing.make_plan(FT4, "ecmp")
    add_group(FT4, plan, GROUP, "0_0_2", ["3_1_3"])
    sw = "3_1_1"    # the member's edge switch: the tree enters it from above
    off_tree = FT4.port(sw, "3_1_2")
    with pytest.raises(WalkError, match="no entry"):
        step(plan, sw, "eth", group_mac(GROUP), 0, off_tree, first_choice)
    assert plan.switches[sw].lookup("eth", group_mac(GROUP), 0, off_tree) is None


def test_tree_is_a_tree_of_shortest_paths():
    kids = tree_edges(FT4, "0_0_2", ["3_1_3", "3_0_2"])
    down = [d for ds in kids.values() for d in ds]
    assert len(down) == len(set(down)), "a switch with two parents"
    # source edge, aggregation, core, the members' pod aggregation, the two member edges
    assert len(kids) == 6 and kids["3_1_1"] == kids["3_0_1"] == []
    depth, sw = 0, "3_1_1"
    parents = {d: u for u, ds in kids.items() for d in ds}
    while sw in parents:
        sw, depth = parents[sw], depth + 1
    assert sw == "0_0_1" and depth == 4     # a shortest inter-pod path: 5 switches


@pytest.mark.parametrize("src,members,msg", [
    ("0_0_2", [], "at least one member"),
    ("0_0_2", ["0_0_2"], "cannot be a member"),
    ("0_0_2", ["9_9_9"], "not hosts"),
])
def test_bad_groups_are_one_line_errors(src, members, msg):
    with pytest.raises(ValueError, match=msg):
        tree_edges(FT4, src, members)


def test_translations_replicate_like_the_interpreter():
    plan = routing.make_plan(FT4, "ecmp")
    members = ["0_0_3", "1_1_2", "2_0_3", "3_1_3"]
    add_group(FT4, plan, GROUP, "0_0_2", members)
    mac = group_mac(GROUP)
    rules = {name: openflow_rules(sp) for name, sp in plan.switches.items()}
    fib = bpfplan.fib_entries(plan)
    got: dict[str, int] = {}
    todo = [(FT4.access_switch("0_0_2"), FT4.port(FT4.access_switch("0_0_2"), "0_0_2"))]
    while todo:
        here, in_port = todo.pop()
        _, want = step(plan, here, "eth", mac, 0, in_port, first_choice)
        sp = plan.switches[here]
        key = bpfplan.fib_key(sp, "eth", mac, 0, in_port)
        got_bpf = bpfplan.simulate(fib, sp.sid, in_port, 0, key.kind, key.addr, lambda n: 0,
                                   bpfplan.in_port_rules(sp))
        got_of = of_simulate(rules[here], Packet(eth_dst=mac, in_port=in_port), lambda n: 0,
                             openflow_groups(sp))
        assert sorted(want) == sorted(got_bpf) == sorted(got_of), (here, want, got_bpf, got_of)
        for port, label in want:
            assert label == 0
            nxt, nxt_in = FT4.ports(here)[port]
            if FT4.is_switch(nxt):
                todo.append((nxt, nxt_in))
            else:
                got[nxt] = got.get(nxt, 0) + 1
    assert got == {m: 1 for m in members}


def test_only_switches_with_in_port_entries_look_the_input_port_up():
    """PORT_IN_RULES (the program's first, in_port lookup) is set on every port of the
    switches a group's tree matches by input port, and on no port of a unicast plan."""
    plan = routing.make_plan(FT4, "ecmp")
    index = {f"{sw}-eth{p}": n for n, (sw, p) in enumerate(
        (sw, p) for sw in FT4.switches() for p in FT4.ports(sw))}
    ports, _ = bpfplan.port_entries(plan, FT4, index.__getitem__)
    assert not any(flags & PORT_IN_RULES for *_, flags in ports.values())
    add_group(FT4, plan, GROUP, "0_0_2", ["0_0_3", "1_1_2"])
    ports, _ = bpfplan.port_entries(plan, FT4, index.__getitem__)
    flagged = {sid for sid, _, _, flags in ports.values() if flags & PORT_IN_RULES}
    want = {sp.sid for sp in plan.switches.values() if any(m.in_port for m in sp.table)}
    assert flagged == want and want
    assert all(flags & PORT_IN_RULES for sid, _, _, flags in ports.values() if sid in want)


def test_unicast_walks_are_unchanged_by_a_group():
    from routing.walk import walk
    plan = routing.make_plan(FT4, "ecmp")
    before = {k: dict(sp.table) for k, sp in plan.switches.items()}
    path = walk(FT4, plan, "0_0_2", "3_1_3", first_choice)
    add_group(FT4, plan, GROUP, "0_0_2", ["3_1_3"])
    for name, sp in plan.switches.items():
        for match, act in before[name].items():
            assert sp.table[match] == act
    assert walk(FT4, plan, "0_0_2", "3_1_3", first_choice) == path


def test_orca_testbed_shape_and_tree():
    t = topos.build("orca,receivers=4,racks=2")
    assert t.hosts() == ["snd", "r1", "r2", "r3", "r4"]
    assert [t.access_switch(r) for r in t.receivers] == ["tor1", "tor1", "tor2", "tor2"]
    assert t.access_switch("snd") == "agg"
    plan = routing.make_plan(t, "ecmp")
    add_group(t, plan, GROUP, "snd", t.receivers)
    assert tree(t, plan, "snd", group_mac(GROUP), first_choice) == {r: 1 for r in t.receivers}


@pytest.mark.parametrize("spec,msg", [("orca,receivers=4,racks=3", "must divide"),
                                      ("orca,receivers=2,racks=4", "must divide"),
                                      ("orca,receivers=0", "> 0")])
def test_orca_testbed_refuses_impossible_shapes(spec, msg):
    with pytest.raises(ValueError, match=msg):
        topos.build(spec)


def test_openflow_messages_define_groups_before_the_flows_that_use_them():
    """The os-ken messages (built and serialized offline): delete all, groups of type ALL,
    then flows whose only action is the group."""
    from os_ken.ofproto import ofproto_v1_3 as ofp
    from os_ken.ofproto import ofproto_v1_3_parser as parser

    from controller.ofmsg import install_messages

    class Datapath:               # what os-ken's message classes read from a datapath
        ofproto, ofproto_parser, id = ofp, parser, 1

    plan = routing.make_plan(FT4, "ecmp")
    add_group(FT4, plan, GROUP, "0_0_2", ["0_0_3", "1_1_2", "3_1_3"])
    sp = plan.switches[FT4.access_switch("0_0_2")]
    groups = openflow_groups(sp)
    assert len(groups) == 1 and len(groups[0].buckets) == 2   # 0_0_3 and the uplink
    msgs = install_messages(Datapath(), openflow_rules(sp), groups)
    kinds = [type(m).__name__ for m in msgs]
    assert kinds[:3] == ["OFPFlowMod", "OFPGroupMod", "OFPGroupMod"]
    assert msgs[1].command == ofp.OFPGC_DELETE and msgs[1].group_id == ofp.OFPG_ALL
    assert msgs[2].command == ofp.OFPGC_ADD and msgs[2].type == ofp.OFPGT_ALL
    assert sorted(b.actions[0].port for b in msgs[2].buckets) == sorted(
        a[1] for b in groups[0].buckets for a in b if a[0] == "output")
    for m in msgs:
        m.serialize()             # every message encodes
    uses = [m for m in msgs[3:] if any(type(a).__name__ == "OFPActionGroup"
                                       for i in m.instructions for a in i.actions)]
    assert len(uses) == 1
