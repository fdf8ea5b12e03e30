"""One emulated network for one point of an experiment, the same for every experiment.

``session`` brings the network up with the run's link rate, queue, congestion control and
dataplane, checks that every host reaches every other, takes the machine and network facts
and, after the experiment's traffic, checks that the queues are still as set; the network
is torn down on every way out.  ``judge`` prints a fidelity report's one-line headline and
flags the run when the report is suspect.  An experiment writes only its traffic and its
rows between the two.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.fidelity import cc_fault_note, headline, measurement_reasons
from emulator.emulation import Emulation
from emulator.proc import RunError
from emulator.shaping import LinkSpec
from routing.plan import Plan
from topos.base import Topology

from .params import FlowParams, NetworkParams, parse_buffers
from .runfolder import RunFolder

#: the local ports --rcvlowat watches: iperf3's servers listen from traffic.BASE_PORT on,
#: one port a flow (a unit test holds the two together)
RECEIVER_PORTS = (5201, 5201 + 4096)


def link_spec(params: NetworkParams) -> LinkSpec:
    """The run's link: rate (Mb/s), tail-drop queue (packets), HTB burst, switch AQM,
    shaper."""
    return LinkSpec(params.bw, params.queue, params.burst, params.aqm, params.shaper)


@dataclass
class Session:
    """A network that is up: its Emulation, the facts to record, what ran on it."""

    emu: Emulation
    label: str
    #: machine and network facts (Emulation.facts_dict), then ping_s, qdisc_after and the
    #: teardown's (teardown_s, cc_restored_to);
    #: the experiment adds its own and records them (RunFolder.record)
    facts: dict[str, Any]
    #: the flows the experiment ran, for the observers (set by the experiment)
    flows: list[Any] = field(default_factory=list)


Observer = Callable[[Emulation, str, list[Any]], None]
#: called as ``fn(emu, label, flows)`` at the end of every session whose body finished,
#: while its network is still up (tests trace the subflows through the switches with it)
_OBSERVERS: list[Observer] = []


@contextmanager
def observe(fn: Observer) -> Iterator[None]:
    """Run ``fn`` at the end of every session opened inside this block."""
    _OBSERVERS.append(fn)
    try:
        yield
    finally:
        _OBSERVERS.remove(fn)


@contextmanager
def session(topo: Topology, plan: Plan, params: NetworkParams, run_dir: Path,
            run_id: str, label: str = "") -> Iterator[Session]:
    """The network of one point, up and checked (see the module text).  ``label`` names the
    point in errors.  Raises RunError when a host pair is unreachable."""
    where = f"{label}: " if label else ""
    # a run without long flows (orca's NetworkParams) has FlowParams' defaults: cubic, the
    # root namespace's buffers, no rcvlowat
    tcp = params if isinstance(params, FlowParams) else FlowParams()
    with Emulation(topo, plan, link_spec(params), run_dir, run_id, cc=tcp.cc,
                   dataplane=params.dataplane, idle_cpus=params.idle_cpus,
                   softirq_batch=params.softirq_batch) as emu:
        t = time.monotonic()
        failed = emu.ping_all()
        if failed:
            raise RunError(f"{where}{len(failed)} host pairs unreachable, e.g. {failed[:3]}")
        s = Session(emu, label, emu.facts_dict())
        s.facts["ping_s"] = round(time.monotonic() - t, 2)
        for name, value in (("wmem", tcp.wmem), ("rmem", tcp.rmem)):
            s.facts[f"hosts_tcp_{name}"] = set_buffers(emu, name, value)
        with ExitStack() as stack:
            if tcp.rcvlowat:
                s.facts["receiver_lowat"] = stack.enter_context(emu.receiver_lowat(
                    tcp.rcvlowat, RECEIVER_PORTS))
            yield s
        for fn in list(_OBSERVERS):
            fn(emu, label, s.flows)
        s.facts["qdisc_after"] = emu.verify_qdiscs()
    # what the Emulation learnt leaving (the facts above were read while it was up)
    s.facts.update(teardown_s=emu.facts.teardown_s, cc_restored_to=emu.facts.cc_restored_to)
    if emu.facts.cc_bpf is not None:   # a BPF control's counters are read at its unregistering
        s.facts["cc_bpf"] = emu.facts.cc_bpf
        note = cc_fault_note(emu.facts.cc_bpf)
        if note:
            print(f"note{f' {label}' if label else ''}: {note}", flush=True)


def set_buffers(emu: Emulation, name: str, value: str) -> str:
    """Set net.ipv4.tcp_<name> (``name`` wmem or rmem; 'MIN,DEFAULT,MAX', per namespace) in
    every host when ``value`` is given; return the hosts' value as read back in one of them
    (recorded either way: a send buffer can hold a flow back, tcp_limits.csv's
    sndbuf_limited, and a receive buffer bounds what an MPTCP connection keeps out of
    order)."""
    hosts = emu.topo.hosts()
    key = f"net.ipv4.tcp_{name}"
    want = " ".join(str(v) for v in parse_buffers(name, value)) if value else ""
    if want:
        emu.hosts_cmd(hosts, ["sysctl", "-qw", f"{key}={want}"])
    got = " ".join(emu.hosts_cmd(hosts[:1], ["sysctl", "-n", key])[hosts[0]].split())
    if want and got != want:
        raise RunError(f"host {hosts[0]} has {key} {got!r} after setting {want!r}")
    return got


def judge(folder: RunFolder, fid: Mapping[str, Any], where: str, extra: str = "") -> None:
    """Print the fidelity headline of the point ``where`` (with ``extra`` after it) and
    flag the run with the report's reasons when it is suspect."""
    print(f"fidelity {where}: {headline(dict(fid))}{extra}", flush=True)
    if fid["suspect"]:
        folder.flag(f"{where}: {'; '.join(fid['reasons'])}")


def judge_measurement(folder: RunFolder, meas: Mapping[str, Any], where: str) -> None:
    """Flag the run with every reason a point's measurement facts (run_iperf's) give to
    distrust it (analysis.fidelity.measurement_reasons), for experiments whose fidelity
    report is not a comparison with the flow model."""
    for why in measurement_reasons(dict(meas)):
        folder.flag(f"{where}: {why}")
