"""Pure translation of plan rules into OpenFlow 1.3 messages (no I/O, testable offline)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from os_ken.ofproto import nicira_ext

from controller.ofplan import Group, Rule

# OVS's nx_hash_fields value for "symmetric_l3l4+udp": IP addresses, protocol and TCP/UDP
# ports (os-ken names only the older values, so the number is spelled out here).
NX_HASH_FIELDS_SYMMETRIC_L3L4_UDP = 3


def to_actions(parser: Any, actions: Iterable[tuple[Any, ...]]) -> list[Any]:
    """OpenFlow action objects for OpenFlow-plan actions (the vocabulary: controller/ofplan.py)."""
    out: list[Any] = []
    for act in actions:
        op = act[0]
        if op == "output":
            out.append(parser.OFPActionOutput(act[1], 0))
        elif op == "push_vlan":
            out.append(parser.OFPActionPushVlan(0x8100))
            out.append(parser.OFPActionSetField(vlan_vid=0x1000 | act[1]))
        elif op == "pop_vlan":
            out.append(parser.OFPActionPopVlan())
        elif op == "set_reg":
            out.append(parser.OFPActionSetField(**{f"reg{act[1]}": act[2]}))
        elif op == "multipath":
            _, basis, n, reg = act
            out.append(parser.NXActionMultipath(
                fields=NX_HASH_FIELDS_SYMMETRIC_L3L4_UDP, basis=basis,
                algorithm=nicira_ext.NX_MP_ALG_MODULO_N, max_link=n - 1, arg=0,
                ofs_nbits=nicira_ext.ofs_nbits(0, 31), dst=f"reg{reg}"))
        elif op == "resubmit":
            out.append(parser.NXActionResubmitTable(table_id=act[1]))
        elif op == "group":
            out.append(parser.OFPActionGroup(act[1]))
        else:
            raise ValueError(f"unknown plan action {act!r}")
    return out


def to_match(parser: Any, match: Iterable[tuple[str, Any]]) -> Any:
    """OFPMatch for a plan match; (value, mask) pairs become masked fields."""
    return parser.OFPMatch(**{k: tuple(v) if isinstance(v, (list, tuple)) else v
                              for k, v in match})


def install_messages(datapath: Any, rules: Iterable[Rule],
                     groups: Iterable[Group] = ()) -> list[Any]:
    """Messages that make the switch hold exactly ``rules`` and ``groups``: wipe every table
    and group, add the groups (type ALL), then the flows that refer to them."""
    ofp, parser = datapath.ofproto, datapath.ofproto_parser
    msgs = [parser.OFPFlowMod(datapath, table_id=ofp.OFPTT_ALL, command=ofp.OFPFC_DELETE,
                              out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                              match=parser.OFPMatch()),
            parser.OFPGroupMod(datapath, command=ofp.OFPGC_DELETE, group_id=ofp.OFPG_ALL)]
    for g in groups:
        buckets = [parser.OFPBucket(actions=to_actions(parser, b)) for b in g.buckets]
        msgs.append(parser.OFPGroupMod(datapath, command=ofp.OFPGC_ADD, type_=ofp.OFPGT_ALL,
                                       group_id=g.group_id, buckets=buckets))
    for rule in rules:
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS,
                                             to_actions(parser, rule.actions))]
        # no idle or hard timeout: a rule lives exactly as long as the run
        msgs.append(parser.OFPFlowMod(datapath, table_id=rule.table, command=ofp.OFPFC_ADD,
                                      idle_timeout=0, hard_timeout=0, priority=rule.priority,
                                      match=to_match(parser, rule.match), instructions=inst))
    return msgs
