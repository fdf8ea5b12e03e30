"""Flags shared by every experiment (one name everywhere), their per-experiment defaults and
their --help groups."""
from __future__ import annotations

import argparse
import random
import weakref
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import routing
import topos
from emulator import dataplane_registry

from .params import Params, typed

if TYPE_CHECKING:
    from .runfolder import RunFolder

BACKENDS = ("emulated", "model", "sim")


def _buffers_help(name: str, what: str, mib: int, whose: str = "") -> str:
    """--wmem's or --rmem's help (one sentence for both, as FlowParams.check and
    parse_buffers treat them alike), with an example that gives every socket ``mib`` MiB."""
    n = mib << 20
    return (f"net.ipv4.tcp_{name} in every host namespace, MIN,DEFAULT,MAX bytes (e.g. "
            f"{n},{n},{n}: every socket{whose} starts with a {mib} MiB {what} buffer); "
            "empty: as the root namespace has it (emulated only)")


SHARED = {
    "topo": (str, "topology spec: " + topos.help_text()),
    "routing": (str, "routing spec: " + routing.help_text()),
    "bw": (float, "link rate, Mb/s"),
    "queue": (int, "tail-drop queue per port, packets"),
    "burst": (str, "HTB bucket of every link: default (tc's own; 1600 bytes at 10 Mb/s "
                   "here), bytes, 15k (x1024; Mininet TCLink's) or 10p (full 1514-byte "
                   "frames)"),
    "aqm": (str, "what every switch port does before its tail-drop queue: droptail, "
                 "ecn[,k=20] (mark CE at >= k packets) or red[,min=,max=,p=,w=] (classic RED "
                 "on an EWMA; ECT marked, others dropped early); bpf dataplane only"),
    "shaper": (str, "root qdisc that shapes every link end above its tail-drop pfifo: htb "
                    "(one class) or tbf (bench/bench_cpu_cuts.py compares them)"),
    "idle_cpus": (str, "what a CPU does with nothing to run while the network is up: halt "
                       "(the machine's own idle), spin (one lowest-priority busy loop per "
                       "CPU, so that no vCPU of a VM halts and wakes late: late wake-ups "
                       "delay the links' timers; docs/notebook/001-orca.md), or auto: spin "
                       "where the kernel has no cpuidle driver (these VMs), else halt; "
                       "spin is for emulated runs only"),
    "softirq_batch": (int, "net.core.dev_weight and netdev_budget while the emulated "
                           "network is up (restored after): packets per NET_RX softirq run, "
                           "so that an HTB link's timer does not wait behind a long one "
                           "(docs/fidelity.md); 0: leave the kernel's own"),
    "duration": (float, "traffic time per flow, seconds"),
    "trim": (float, "seconds dropped at the start and end of every flow"),
    "runs": (int, "repetitions, each with its own seed-derived traffic"),
    "seed": (int, "root seed of the run"),
    "repeat_flagged": (int, "repetitions that only this machine's timing flagged (CPU above "
                            "90 %%, late dequeue gaps, bwm-ng behind) are run again, each "
                            "once, with a fresh draw, up "
                            "to this many; the flagged ones stay in the folder and out of "
                            "the intervals; a stall, a lost subflow or a fault is never "
                            "repeated; 0: none"),
    "transport": (str, "tcp, mptcp, or a comma list of both"),
    "subflows": (int, "MPTCP subflows per connection (1..8)"),
    "cc": (str, "TCP congestion control, set for the run and restored afterwards"),
    "wmem": (str, _buffers_help("wmem", "send", 4)),
    "rmem": (str, _buffers_help("rmem", "receive", 16, ", an MPTCP connection's included,")),
    "rcvlowat": (int, "wake each TCP flow's receiving process once per this many bytes "
                      "(SO_RCVLOWAT, set by a BPF sockops program once a connection has "
                      "received 256 KiB) instead of once per segment: less CPU per packet "
                      "(docs/measured.md), byte counts that lag the wire by up to this much; "
                      "0: off; TCP flows and --backend emulated only"),
    "delay_us": (float, "propagation delay of every link, microseconds (--backend sim only)"),
    "jitter": (float, "each flow starts at a seeded uniform time in [0, jitter] s "
                      "(--backend sim only)"),
    "pkt_jitter_us": (float, "every packet on every link takes a uniform random extra delay "
                             "in [0, this] microseconds, to break a deterministic "
                             "simulation's phase locking (--backend sim only)"),
    "dataplane": (str, "how the emulated switches forward: bpf (tc-BPF programs in the "
                       "kernel) or ovs (Open vSwitch + the os-ken OpenFlow controller); auto = "
                       "bpf where this machine can build and load it, else ovs"),
}


#: an experiment's --help, after its own flags: title -> (what the group is, its members:
#: SHARED names, and the dests of --quick, --out and --backend), in the order shown.  Every
#: SHARED name is in exactly one group (check_groups; add_shared refuses to build a parser
#: otherwise, so that a new shared flag cannot fall out of --help unnoticed)
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "network": ("the topology, its routing, the links and what the switches do",
                ("topo", "routing", "bw", "queue", "aqm", "dataplane")),
    "traffic": ("what the hosts send, for how long, and their TCP",
                ("transport", "subflows", "cc", "duration", "trim", "wmem", "rmem")),
    "repetitions and output": ("how many runs, their seeds, and where the run folder goes",
                               ("runs", "seed", "repeat_flagged", "quick", "out")),
    "backend": ("what carries the traffic", ("backend",)),
    "ns-3": ("the ns-3 simulation's own settings: --backend sim only (the others refuse them)",
             ("delay_us", "jitter", "pkt_jitter_us")),
    "emulator tuning": ("how the emulation uses this machine's kernel and CPUs; the defaults "
                        "are what the reference runs use",
                        ("burst", "shaper", "idle_cpus", "softirq_batch", "rcvlowat")),
}
#: the group members that are no SHARED name: flags add_shared and add_backend add themselves
_OWN_MEMBERS = ("quick", "out", "backend")

#: each parser's group per member dest, from add_shared: add_backend comes after the
#: experiment's own flags and must still find the backend group (weak: parsers come and go
#: with their CLI, e.g. one per test)
_PARSER_GROUPS: weakref.WeakKeyDictionary[argparse.ArgumentParser, dict[str, Any]] = \
    weakref.WeakKeyDictionary()


def check_groups() -> None:
    """ValueError (one line) unless every SHARED name is in exactly one of GROUPS and
    every member of GROUPS is a SHARED name or one of --quick, --out, --backend."""
    seen: dict[str, str] = {}
    for title, (_, members) in GROUPS.items():
        for name in members:
            if name in seen:
                raise ValueError(f"--{name.replace('_', '-')} is in two --help groups of "
                                 f"harness.common.GROUPS: {seen[name]!r} and {title!r}")
            if name not in SHARED and name not in _OWN_MEMBERS:
                raise ValueError(f"harness.common.GROUPS[{title!r}] names {name!r}, which is "
                                 "no shared flag (harness.common.SHARED)")
            seen[name] = title
    for name in SHARED:
        if name not in seen:
            raise ValueError(f"shared flag --{name.replace('_', '-')} is in no --help group: "
                             "add it to one in harness.common.GROUPS")


def add_shared(p: argparse.ArgumentParser, params: type[Params],
               quick: Mapping[str, Any]) -> None:
    """Add the shared flags an experiment's parameters (``PARAMS``) have, showing their
    default and quick values, each in its --help group (GROUPS, shown after the flags the
    experiment adds itself, which stay in argparse's own group)."""
    check_groups()
    defaults = params.defaults()
    present = {n for n in defaults if n in SHARED or n == "backend"} | {"quick", "out"}
    where: dict[str, Any] = {}
    # every group is made here, in GROUPS' order, whatever is added later: argparse shows
    # groups in the order they were made (an empty one would show its title, hence `present`)
    for title, (text, members) in GROUPS.items():
        if present.intersection(members):
            group = p.add_argument_group(title, text)
            where.update((name, group) for name in members)
    _PARSER_GROUPS[p] = where
    for name in (n for _, members in GROUPS.values() for n in members):
        if name not in SHARED or name not in defaults:
            continue
        typ, text = SHARED[name]
        q = f"; quick: {quick[name]}" if name in quick else ""
        where[name].add_argument(f"--{name.replace('_', '-')}", dest=name, type=typ,
                                 default=None, help=f"{text} (default: {defaults[name]}{q})")
    where["quick"].add_argument("--quick", action="store_true",
                                help="short version for a first look: " +
                                ", ".join(f"{k}={v}" for k, v in quick.items()))
    where["out"].add_argument("--out", default="results",
                              help="results root folder (default: results)")


BACKEND_HELP = {
    "emulated": "Mininet with the --dataplane's switches (root)",
    "model": "flow-level model on the same routing plan, no root, any size",
    "sim": "packet-level ns-3 simulation of the same topology, plan and flows, no root "
           "(setup.sh --with-sim; docs/sim.md)",
}


def add_backend(p: argparse.ArgumentParser,
                choices: tuple[str, ...] = ("emulated", "model")) -> None:
    """The --backend flag, offering the backends an experiment has (its default: emulated
    where it has it, else its only one), in the backend group add_shared made for ``p``
    (without one, among ``p``'s own flags)."""
    default = "emulated" if "emulated" in choices else choices[0]
    target = _PARSER_GROUPS.get(p, {}).get("backend", p)
    target.add_argument("--backend", default=None, choices=list(choices),
                        help="; ".join(f"{b}: {BACKEND_HELP[b]}" for b in choices) +
                             f" (default: {default})")


def resolve(args: argparse.Namespace, defaults: Mapping[str, Any],
            quick: Mapping[str, Any]) -> dict[str, Any]:
    """The flags' values: explicit flag > quick value (with --quick) > default, and
    ``--dataplane auto`` replaced by this machine's dataplane (once, here).  Not yet typed
    or checked: ``checked`` does both."""
    params = dict(defaults)
    if args.quick:
        params.update(quick)
    for key in defaults:
        value = getattr(args, key, None)
        if value is not None:
            params[key] = value
    params["quick"] = bool(args.quick)
    if "dataplane" in params:   # 'auto' becomes a name here, once, for the whole run
        params["dataplane"] = dataplane_registry.resolve(params["dataplane"])
    if params.get("idle_cpus") == "auto":   # likewise: config.json records halt or spin
        from emulator.emulation import resolve_idle_cpus
        params["idle_cpus"] = resolve_idle_cpus("auto", str(params.get("backend") or
                                                            "emulated"))
    return params


def checked(mod: ModuleType, values: Mapping[str, Any]) -> Params:
    """The one door of every run (flags, a sweep's points and manifest lines, a rerun):
    ``values`` typed into the experiment's parameters (harness.params.typed), then checked
    by the parameters themselves (Params.check) and the experiment; ValueError (one line)
    on anything wrong, before anything is built."""
    params = typed(mod, values)
    offered = getattr(mod, "BACKENDS", ("emulated", "model"))
    if params.backend_name() not in offered:
        raise ValueError(f"--backend must be one of {', '.join(offered)} for {mod.NAME}, got "
                         f"'{params.backend_name()}'")
    params.check()
    if hasattr(mod, "validate"):
        mod.validate(params)
    return params


def run_rng(seed: int, run: int) -> random.Random:
    """The explicit RNG of repetition ``run`` of a run seeded with ``seed``."""
    return random.Random(seed * 1_000_003 + run)


def repetitions(params: Any, folder: RunFolder, prefix: str = "") -> Iterator[int]:
    """The repetitions a run makes: 0 .. runs-1, then, once they are done, a fresh one (the
    next index: its own seed-derived draw) for each that only this machine's timing
    flagged (analysis.claims.repeatable), up to ``params.repeat_flagged``; a repeat is not
    repeated again.  The flagged repetitions stay in the folder, their flags naming them (so
    the intervals leave them out); config.json's ``repeats`` says which ran again as which.
    ``prefix``: the flags of this loop only (outcast's 'n06-', one loop per N)."""
    from analysis.claims import repeatable
    runs = int(params.runs)
    yield from range(runs)
    again = repeatable(folder.config.get("suspect", []), prefix)[:int(params.repeat_flagged)]
    if not again:
        return
    repeats = folder.config.setdefault("repeats", {})
    for i, r in enumerate(again):
        new = runs + i
        repeats[f"{prefix}{r}"] = new
        folder.write_config()
        print(f"repeating {prefix}run {r} as run {new}: only this machine's timing flagged it",
              flush=True)
        folder.log.info("repetition %s%d flagged for host timing only: run again as %d",
                        prefix, r, new)
        yield new
