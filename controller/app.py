"""os-ken app: install the plan named by $DCREPRO_PLAN on each switch as it connects.

It is a shim: all decisions are in the plan.  It reports on stdout, one line each,
``DCREPRO READY <dpid> <rules>`` once a switch has confirmed its rules with a barrier, and
``DCREPRO FAIL <reason>`` before exiting non-zero on anything unexpected (unknown switch,
an OpenFlow error, an exception), so a run never continues on a half-installed network.
"""
from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3

from controller.ofmsg import install_messages
from controller.ofplan import openflow_groups, openflow_rules
from routing.plan import Plan


def report(line: str) -> None:
    """One protocol line to the runtime, flushed at once."""
    sys.stdout.write(f"DCREPRO {line}\n")
    sys.stdout.flush()


def fail(reason: str) -> NoReturn:
    """Make the run invalid: report and exit the whole controller process."""
    report(f"FAIL {reason}")
    os._exit(3)


def loud(handler: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """Turn any exception in a handler into a failed run instead of a log line."""
    def wrapper(self: Any, ev: Any) -> None:
        try:
            handler(self, ev)
        except Exception:
            fail(traceback.format_exc().replace("\n", " | "))
    wrapper.__name__ = handler.__name__
    return wrapper


class PlanInstaller(app_manager.OSKenApp):
    """Proactively installs the routing plan; no packet-in handling at all."""

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        path = os.environ.get("DCREPRO_PLAN")
        if not path:
            fail("DCREPRO_PLAN is not set")
        with open(path, encoding="utf-8") as fh:
            self.plan = Plan.loads(fh.read()).by_dpid()
        self.pending: dict[int, tuple[int, int]] = {}
        report(f"LOADED {len(self.plan)}")

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    @loud
    def on_features(self, ev: Any) -> None:
        dp = ev.msg.datapath
        sp = self.plan.get(dp.id)
        if sp is None:
            fail(f"switch with unknown dpid {dp.id:#x} connected")
        rules = openflow_rules(sp)
        for msg in install_messages(dp, rules, openflow_groups(sp)):
            dp.send_msg(msg)
        barrier = dp.ofproto_parser.OFPBarrierRequest(dp)
        dp.set_xid(barrier)
        self.pending[barrier.xid] = (dp.id, len(rules))
        dp.send_msg(barrier)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    @loud
    def on_barrier(self, ev: Any) -> None:
        entry = self.pending.pop(ev.msg.xid, None)
        if entry is not None:
            report(f"READY {entry[0]} {entry[1]}")

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    @loud
    def on_error(self, ev: Any) -> None:
        msg = ev.msg
        fail(f"OpenFlow error from dpid {msg.datapath.id:#x}: type={msg.type} code={msg.code}")
