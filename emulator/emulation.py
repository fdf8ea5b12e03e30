"""One emulated network for one run: Mininet hosts and links, shaping, a dataplane, and a
teardown that always runs.

``Emulation`` is a context manager.  Entering it brings the network up and returns only when
every switch has confirmed the plan (dataplane.install) and every qdisc reads back as
requested; leaving it (normally, on an exception, on SIGINT/SIGTERM) removes exactly what it
created.  What it created is also written to /run/dcrepro/<run id>.json as it goes
(emulator/registry.py), so ``dcrepro clean`` can remove a killed run's leftovers.
"""
from __future__ import annotations

import fcntl
import logging
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from routing.plan import Plan
from topos.base import Topology
from topos.grin import GrinTopology

from . import cc as ccs
from . import hostnet, netns, queuewatch, shaping
from .cgroup import CpuCap, find_hierarchy, rps_mask
from .cgroup import remove as remove_cgroup
from .cgroup import wrap as wrap_in_cgroup
from .cleanup import NOT_DONE, clean_all, clean_state, list_bridges
from .dataplane import Dataplane
from .dataplane_registry import check_needs, check_plan, make
from .proc import (
    RunError,
    check,
    in_ns,
    kill_namespace_strays,
    pid_alive,
    signals_deferred,
    stop_all,
)
from .registry import BPFFS_DIR, STATE_DIR, Registry
from .shaping import LinkSpec
from .sockdiag import SockInfo, dump, netns_sockets
from .sysinfo import read_sysctl

LOG = logging.getLogger("dcrepro")
#: how check_alive's warning begins (bench_faults finds the moment of detection by it)
BROKEN_FOUND = "stopping the run: "
DEFAULT_DATAPLANE = "bpf"
#: how often check_alive looks at every link without being told to (seconds).  A link
#: event (the kernel's RTNLGRP_LINK: a deleted or downed interface) triggers a look at the
#: next 0.2-s watch; this slower look is the safety net for a missed event
LINK_LOOK_S = 2.0


def restore_sysctls(saved: dict[str, str], set_to: dict[str, str],
                    read: Callable[[str], str] = read_sysctl,
                    write: Callable[[str, str], object] | None = None) -> list[str]:
    """Put each root-namespace sysctl the run set back to its value from before the run, and
    return one line for each that something else changed while the run held it: it is
    restored all the same (the run leaves the machine as it found it), but not silently."""
    write = write or (lambda n, v: subprocess.run(["sysctl", "-qw", f"{n}={v}"], check=False,
                                                  timeout=10))
    lines = []
    for name, old in saved.items():
        now = read(name)
        if name in set_to and now and now != set_to[name]:
            lines.append(f"{name} was {now} at teardown, not the {set_to[name]} this run set: "
                         f"something else changed it during the run; restored to {old}")
        write(name, old)
    return lines


@dataclass
class Facts:
    """What the runtime observed, recorded in the run folder."""

    dataplane: dict[str, Any] = field(default_factory=dict)
    cc_requested: str = ""
    cc_in_hosts: str = ""
    cc_restored_to: str = ""
    #: the BPF congestion control registered for the run (emulator/cc.py), or None
    cc_bpf: dict[str, Any] | None = None
    bringup_s: float = 0.0
    rules_s: float = 0.0
    teardown_s: float = 0.0
    qdisc: dict[str, Any] | None = None
    ipv6_disabled: bool = False
    #: what the CPUs did with nothing to run (IDLE_CPUS), and the busy loops started for it
    idle_cpus: str = "halt"
    #: the kernel's cpuidle driver ('none': an idle vCPU halts; see IDLE_CPUS)
    cpuidle_driver: str = ""
    idle_loops: int = 0
    #: the root namespace's softirq batch while the network was up (SOFTIRQ_BATCH): each
    #: sysctl's value for the run and the value it had before
    softirq_batch: dict[str, list[str]] = field(default_factory=dict)
    #: TCP hash buckets of each host's own namespace (HOST_TCP_EHASH; 0: the hosts shared
    #: the root namespace's table, on a kernel without net.ipv4.tcp_child_ehash_entries)
    host_tcp_ehash: int = 0


#: ``net.core.dev_weight`` and ``net.core.netdev_budget`` while a network is up.  Every veth
#: hop of the fabric is a packet of the CPU's input backlog, processed in NET_RX softirq
#: runs of up to netdev_budget (300) packets; an HTB link's timer only raises the NET_TX
#: softirq, which waits until such a run ends, so the link's next frame leaves late (and,
#: HTB's tokens making up for it, the one after early).  Runs of at most 16 packets let the
#: pending NET_TX (the lower softirq bit) go first.  Measured on the k=6 TCP permutation at
#: 10 Mb/s, 3 seeds (docs/measured.md, "Shorter softirq runs?"): busy-link gaps within 10 %
#: 0.945 -> 0.976, higher in every seed, CPU and emulated/model unchanged.  The default of
#: ``--softirq-batch``; 0 leaves the kernel's values alone.
SOFTIRQ_BATCH = 16
SOFTIRQ_SYSCTLS = ("net.core.dev_weight", "net.core.netdev_budget")
#: TCP hash buckets of each host's own network namespace (``net.ipv4.tcp_child_ehash_entries``
#: while the hosts are created; Linux 6.1+).  By default every namespace shares the root
#: one's table (262,144 buckets on this machine), and a sock_diag dump walks all of it,
#: whichever namespace asks: 0.37 ms a dump on an idle machine against 0.013 ms with a
#: table of its own (bench/archive/bench_sockdiag.py, docs/measured.md).  The run's tcp_info sampler
#: dumps every sender every half second (k=6: 54 dumps, about 20 ms of kernel time a round),
#: and so does every look at the subflows.  A host holds a few dozen sockets at most.
HOST_TCP_EHASH = 1024


def _deferred_up_intf() -> type:
    from mininet.link import Intf

    class DeferredUpIntf(Intf):
        """A Mininet interface that leaves ``up`` to Emulation._up, which brings every
        interface up in one netlink pass (k=6: 0.7 s of 369 shell round trips saved)."""

        def config(self, up: bool | None = None, **params: Any) -> dict[str, Any]:
            return super().config(up=None, **params)
    return DeferredUpIntf


#: ``idle_cpus``: what a CPU does while the emulation has nothing for it.  "halt" is the
#: machine's own idle.  On a VM without a cpuidle driver (these machines), an idle vCPU
#: halts and wakes only when the hypervisor schedules it again, so a timer that falls due
#: then (an HTB link's next frame, a CPU cap's next period) fires late; measured on Orca
#: with CPU-capped senders: 0.79 of busy-link gaps within 10 % halted, 0.99 spinning
#: (docs/notebook/001-orca.md).  "spin" runs one busy loop per CPU at the lowest priority
#: (SCHED_IDLE, nice 19) while the network is up: it runs only when nothing else can, so no
#: vCPU halts; the CPU figures count it as niced work, not as load.  "auto" (the flags'
#: default) is resolved once per run (resolve_idle_cpus): spin where the machine has no
#: cpuidle driver, halt where it has one (a driver picks shallow idle states whose wake-up
#: is cheap, and there is no measurement of late timers there).
IDLE_CPUS = ("auto", "halt", "spin")
SPIN = "while :; do :; done"
CPUIDLE_DRIVER = Path("/sys/devices/system/cpu/cpuidle/current_driver")


def check_idle_cpus(mode: str) -> None:
    """One-line ValueError unless ``mode`` is one of IDLE_CPUS."""
    if mode not in IDLE_CPUS:
        raise ValueError(f"--idle-cpus must be one of {', '.join(IDLE_CPUS)}, got {mode!r}")


def cpuidle_driver(path: Path = CPUIDLE_DRIVER) -> str:
    """The kernel's cpuidle driver ('none' on these VMs, also when the file is absent)."""
    try:
        return path.read_text().strip() or "none"
    except OSError:
        return "none"


def resolve_idle_cpus(mode: str, backend: str = "emulated", path: Path = CPUIDLE_DRIVER) -> str:
    """'auto' -> 'spin' for an emulation on a machine without a cpuidle driver, else 'halt'
    (a model or simulation run has no emulated links to keep on time); other modes as
    given."""
    check_idle_cpus(mode)
    if mode != "auto":
        return mode
    return "spin" if backend == "emulated" and cpuidle_driver(path) == "none" else "halt"


class Emulation:
    """Context manager: the whole emulated network of one run."""

    def __init__(self, topo: Topology, plan: Plan, link: LinkSpec, run_dir: Path,
                 run_id: str, cc: str = "cubic", ready_timeout: float = 60.0,
                 dataplane: str | Dataplane = DEFAULT_DATAPLANE,
                 idle_cpus: str = "halt", softirq_batch: int = SOFTIRQ_BATCH) -> None:
        self.idle_cpus = resolve_idle_cpus(idle_cpus)
        self.softirq_batch = softirq_batch
        self.topo, self.plan, self.link = topo, plan, link
        self.run_dir, self.run_id, self.cc = run_dir, run_id, cc
        self.ready_timeout = ready_timeout
        self.dataplane = make(dataplane) if isinstance(dataplane, str) else dataplane
        check_plan(self.dataplane, plan)
        if link.aqm_spec.active:
            check_needs(self.dataplane, f"--aqm {link.aqm}", {"aqm"})
        self.facts = Facts(cc_requested=cc, idle_cpus=self.idle_cpus,
                           cpuidle_driver=cpuidle_driver())
        self.net: Any = None
        self.registry: Registry | None = None
        self.procs: list[subprocess.Popen[Any]] = []
        self.host_pids: dict[str, int] = {}
        self.host_intf: dict[str, str] = {}
        self._lock_fh: Any = None
        self._next_link_look = 0.0
        self._link_names: dict[str, str] = {}
        #: the kernel's link, qdisc and class events (queuewatch.event_socket; closed at teardown)
        self._events: socket.socket | None = None
        #: the shaped switch ports whose queues the event socket watches, by ifindex
        self._queue_ports: dict[int, queuewatch.Port] = {}
        #: one sock_diag socket per host looked at by ``sockets`` (closed at teardown)
        self._diag: dict[str, socket.socket] = {}
        #: root-namespace sysctls the run changed -> their old values (_set_sysctl)
        self._saved_sysctls: dict[str, str] = {}
        self._set_sysctls: dict[str, str] = {}   # what this run set them to
        self._cc_reg: ccs.Registration | None = None
        self.link_group = 4096 + secrets.randbelow(2**30)

    @property
    def rates(self) -> Mapping[tuple[str, str], float]:
        """Every link's rate (Mb/s) by (node, peer), as the topology resolved it once for
        this run's link rate: what shaping, AQM, probes and the traffic's shares all read."""
        return self.topo.link_rates(self.link.bw)

    # ---- bring-up ----
    def __enter__(self) -> Emulation:
        try:
            self._up()
        except SystemExit as exc:
            # Mininet gives up with exit() (e.g. when Open vSwitch does not answer): a
            # failure of this run like any other, not the end of the process
            self._down()
            raise RunError(f"Mininet gave up bringing the network up (exit({exc.code})); "
                           "its own message is above") from None
        except BaseException:
            self._down()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self._down()

    def _lock(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        # "a+": opening must not truncate what the holder wrote (its run id and pid)
        self._lock_fh = open(STATE_DIR / "lock", "a+")  # noqa: SIM115 - released in _down
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_fh.seek(0)
            holder = self._lock_fh.read().strip() or "a run that did not say which"
            self._lock_fh.close()
            self._lock_fh = None
            raise RunError(f"another dcrepro emulation is running on this machine ({holder}); "
                           "one at a time: they would share the CPU and distort each "
                           "other") from None
        self._lock_fh.seek(0)
        self._lock_fh.truncate()
        self._lock_fh.write(f"run {self.run_id}, pid {os.getpid()}\n")
        self._lock_fh.flush()

    def _set_cc(self) -> None:
        # Congestion control is per namespace and a host cannot set its own here: set it in
        # the root namespace before Mininet creates the hosts, which inherit it.  A BPF one
        # (lia, dctcp) is registered first, through a link this process holds.
        assert self.registry is not None
        if ccs.needs_registration(self.cc):
            reg = self.registry
            self._cc_reg = ccs.Registration(
                self.cc, record=lambda entry: reg.add("struct_ops", [entry]))
            self._cc_reg.open()
            self.facts.cc_bpf = self._cc_reg.facts()
        available = read_sysctl("net.ipv4.tcp_available_congestion_control").split()
        if self.cc not in available:
            subprocess.run(["modprobe", "-q", f"tcp_{self.cc}"], check=False, timeout=10)
            available = read_sysctl("net.ipv4.tcp_available_congestion_control").split()
        if self.cc not in available:
            raise RunError(f"congestion control '{self.cc}' is not available here "
                           f"(available: {' '.join(available)})")
        self._set_sysctl("net.ipv4.tcp_congestion_control", self.cc)

    def _set_sysctl(self, name: str, value: object) -> str:
        """Set a root-namespace sysctl for the network's life; its old value ('' if the
        kernel has none: then nothing is set) is recorded first, in the run's ledger (the
        registry restores it after a crash) and for teardown, which restores it."""
        assert self.registry is not None
        old = read_sysctl(name)
        if old:
            self.registry.state["sysctl"][name] = old
            self.registry.save()
            self._saved_sysctls[name] = old
            self._set_sysctls[name] = str(value)
            check(["sysctl", "-qw", f"{name}={value}"])
        return old

    def _set_softirq_batch(self) -> None:
        """The softirq batch (SOFTIRQ_BATCH by default, 0: none) for the network's life."""
        for name in SOFTIRQ_SYSCTLS if self.softirq_batch > 0 else ():
            old = self._set_sysctl(name, self.softirq_batch)
            if old:
                self.facts.softirq_batch[name] = [str(self.softirq_batch), old]

    def _up(self) -> None:
        from mininet.link import Link
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        from topos.mn import MnTopo

        if os.geteuid() != 0:
            raise RunError("emulated runs need root (try: sudo .venv/bin/dcrepro ...)")
        self._lock()
        # A killed run (SIGKILL, power loss) leaves its recorded resources behind; their names
        # would collide with ours. Only runs whose process is dead are touched.
        for line in clean_all(force=False):
            if line.startswith(NOT_DONE):     # e.g. OVS's database is down: nothing cleaned
                LOG.warning("cleaning up before the run: %s", line)
            elif not line.startswith("skipped"):
                LOG.warning("cleaned leftover of a dead run: %s", line)
        self.registry = Registry(self.run_id)
        t0 = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "plan.json").write_text(self.plan.dumps())
        self._set_cc()
        self._set_softirq_batch()
        if self._set_sysctl("net.ipv4.tcp_child_ehash_entries", HOST_TCP_EHASH):
            self.facts.host_tcp_ehash = HOST_TCP_EHASH
        self.dataplane.prepare(self)

        setLogLevel("warning")
        self.net = Mininet(topo=MnTopo(self.topo), switch=self.dataplane.switch_class(),
                           link=Link, intf=_deferred_up_intf(), controller=None,
                           autoSetMacs=False, build=False,
                           waitConnected=False, cleanup=False)
        ctl = self.dataplane.mn_controller()
        if ctl is not None:
            self.net.addController(ctl)
        self.net.build()
        # every interface of every namespace (None: the switches', here), for the passes
        # below that set them all in this process (Mininet would ask each node's shell)
        intfs: dict[int | None, list[str]] = {}
        for n in (*self.net.hosts, *self.net.switches):
            intfs.setdefault(n.pid if n.inNamespace else None, []).extend(
                i.name for i in n.intfList() if i.name != "lo")
        netns.links_up(intfs)
        self.registry.add("pids", [n.pid for n in (*self.net.hosts, *self.net.switches,
                                                   *self.net.controllers)])
        self.registry.add("intfs", self.switch_intfs())
        # one link group for all of the run's interfaces: teardown deletes them with one
        # netlink request, which the kernel unregisters as a batch (k=4: 0.03 s instead of
        # 1.1 s for 64 single deletions, each waiting for its own RCU grace period)
        self.registry.state["link_group"] = self.link_group
        self.registry.save()
        check(["ip", "-batch", "-"], input_text="".join(
            f"link set dev {i} group {self.link_group}\n" for i in self.switch_intfs()))
        self.net.start()
        self.host_pids = {h.name: h.pid for h in self.net.hosts}
        self.host_intf = {h.name: h.intfList()[0].name for h in self.net.hosts}
        hostnet.offloads_off(intfs)
        shaping.shape(self.topo, self.link, self.host_pids)
        hostnet.static_arp(self.topo, self.host_pids, self.host_intf)
        if isinstance(self.topo, GrinTopology):   # servers forwarding for neighbours
            macs = {(h.name, intf.link.intf2.node.name if intf.link.intf1 is intf else
                     intf.link.intf1.node.name): intf.MAC()
                    for h in self.net.hosts for intf in h.intfList() if intf.link}
            hostnet.host_forwarding(self.topo, self.host_pids, self.host_intf, macs)
        self.facts.ipv6_disabled = hostnet.disable_ipv6(self.host_pids, self.switch_intfs())
        t1 = time.monotonic()
        self.dataplane.install(self)
        self.facts.rules_s = round(time.monotonic() - t1, 3)
        self.facts.bringup_s = round(time.monotonic() - t0, 3)
        # from here on a deleted or downed port, and a change of a port's queue, is reported
        # by the kernel (check_alive); opened after the last tc change of bring-up, so none
        # of the run's own changes is on it (emulator/queuewatch.py)
        self._events = queuewatch.event_socket()
        self._arm_queue_watch()
        self.facts.qdisc = self.verify_qdiscs()
        self.facts.cc_in_hosts = self.host_cmd(
            self.net.hosts[0], ["cat", "/proc/sys/net/ipv4/tcp_congestion_control"]).strip()
        if self.facts.cc_in_hosts != self.cc:
            raise RunError(f"hosts use '{self.facts.cc_in_hosts}', not the requested '{self.cc}'")
        if self.idle_cpus == "spin":
            self._spin()

    def _spin(self) -> None:
        """One lowest-priority busy loop per CPU this process may use (IDLE_CPUS), tracked
        like every process of the run: stopped at teardown, and by `dcrepro clean` after a
        crash."""
        for cpu in sorted(os.sched_getaffinity(0)):
            self.popen(None, ["taskset", "-c", str(cpu), "nice", "-n", "19", "chrt", "-i", "0",
                              "sh", "-c", SPIN], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
            self.facts.idle_loops += 1

    def switch_intfs(self) -> list[str]:
        """Every switch-side interface (root namespace)."""
        return [i.name for s in self.net.switches for i in s.intfList() if i.name != "lo"]

    # ---- checks ----
    def verify_qdiscs(self) -> dict[str, Any]:
        """Refuse the run unless every link end is the asked shaper (HTB or TBF) + pfifo leaf
        of the asked limit (shaping.verify)."""
        return shaping.verify(self.topo, self.link, self.host_pids)

    def set_static_arp(self, extra: int) -> None:
        """Static ARP for primary and ``extra`` addresses of every host."""
        hostnet.static_arp(self.topo, self.host_pids, self.host_intf, extra)

    def configure_mptcp(self, subflows: int, guard: bool = True) -> dict[str, Any]:
        """MPTCP endpoints for ``subflows`` subflows per connection on every host (``guard``:
        servers open none of their own, hostnet.mptcp_endpoints); returns the facts."""
        return hostnet.mptcp_endpoints(self.topo, self.host_pids, self.host_intf, subflows,
                                       guard)

    def ping_all(self, timeout: float = 2.0) -> list[tuple[str, str]]:
        """All-pairs reachability: one ICMP echo from every host to every other through the
        emulated network (netns.reach_all, from raw sockets in the hosts' namespaces: k=6's
        2,862 pairs in ~0.1 s instead of 2.7 s of ping processes); returns the (src, dst)
        pairs with no reply within ``timeout`` s."""
        return netns.reach_all({h.name: (h.pid, self.topo.ip(h.name))
                                for h in self.net.hosts}, timeout)

    @contextmanager
    def dequeue_gaps(self) -> Iterator[dict[str, Any]]:
        """Watch every switch port's dequeue gaps while the body runs (Mininet-HiFi's link
        check, emulator/qgap.py); the yielded dict is filled with the summary on exit."""
        from .bpfobj import bpf_unavailable
        result: dict[str, Any] = {}
        why = bpf_unavailable()
        if why:
            result["skipped"] = why
            yield result
            return
        from .qgap import LinkRef, QueueGapProbe, merge, summarize
        pin = BPFFS_DIR / f"{self.run_id}+qgap"
        assert self.registry is not None
        self.registry.add("bpffs", [str(pin)])
        links: dict[LinkRef, float] = {f"{n}-eth{p}": self.rates[(n, peer)]
                 for n, p, peer in shaping.link_ends(self.topo) if self.topo.is_switch(n)}
        probe = QueueGapProbe(links, pin, shaper=self.link.shaper)
        try:
            probe.__enter__()
        except RunError as exc:
            # a diagnostic that cannot load must not void the measurement: say so instead
            LOG.warning("dequeue-gap probe not loaded: %s", str(exc).splitlines()[0][:300])
            result["skipped"] = str(exc).splitlines()[0][:300]
            yield result
            return
        # entered above already: a second ``with probe`` loaded and attached it again and
        # overwrote the first attachment's fd, which then stayed attached (and cost CPU on
        # every dequeue of the machine) until the process ended: one more per network
        try:
            yield result
            hists = probe.read()
        finally:
            probe.close()
        result.update(summarize(merge(list(hists.values()))))
        # the links that fare worst, judged on full-size frames (ACK-only links are noise)
        per_link = {name: summarize(h)["full_size"] for name, h in hists.items()}
        busy = {n: s for n, s in per_link.items() if s["samples"] >= 100}
        result["links_with_100_full_size_samples"] = len(busy)
        result["worst_links"] = sorted(({"link": n, **s} for n, s in busy.items()),
                                       key=lambda r: r["within_10pct"])[:3]

    @contextmanager
    def receiver_lowat(self, lowat: int, ports: tuple[int, int]) -> Iterator[dict[str, Any]]:
        """Receivers of passive TCP connections on local ports [lo, hi) of every host woken
        once per ``lowat`` bytes while the body runs (emulator/rcvlowat.py: the user asked
        for it, so a failure to load is the run's error).  The yielded dict gets the mark,
        the ports and the program's counters on exit."""
        from .rcvlowat import AFTER, ReceiverLowat
        pin = BPFFS_DIR / f"{self.run_id}+rcvlowat"
        assert self.registry is not None
        self.registry.add("bpffs", [str(pin)])
        result: dict[str, Any] = {"bytes": lowat, "after_bytes": AFTER, "ports": list(ports)}
        marks = ReceiverLowat(self.host_pids.values(), ports, lowat, pin)
        marks.__enter__()
        try:       # entered above: a ``with`` here would load and attach it a second time
            yield result
            result.update(marks.counters())
        finally:
            marks.close()

    def trace(self, src: str, dst: str, five_tuple: dict[str, Any],
              proto: str = "tcp") -> list[str]:
        """The switch path of a 5-tuple, as the datapath forwards it."""
        return self.dataplane.trace(self, src, dst, five_tuple, proto)

    def check_alive(self) -> None:
        """Raise RunError naming what broke: a link (its veth deleted, or down), a switch
        port's queue (a qdisc or class deleted, changed or replaced), or the dataplane
        (controller, switch daemon, database, BPF program or its attachment).  Called every
        0.2 s while traffic runs; the link look (one sysfs read per switch port, about 25 us
        each) is taken when the kernel reported a link change, and every LINK_LOOK_S in any
        case; a queue is judged from the kernel's own message about it."""
        try:
            self._check_alive()
        except RunError as exc:
            # logged when found (log.txt has its time), since the run's end comes only
            # after the teardown: bench_faults reads fault_to_detect_s from this line
            LOG.warning("%s%s", BROKEN_FOUND, exc)
            raise

    def _check_alive(self) -> None:
        now = time.monotonic()
        if self.net is not None:
            events = queuewatch.read_events(self._events)
            if events.links or now >= self._next_link_look:
                self._next_link_look = now + LINK_LOOK_S
                self._check_links()    # first: a gone link is the more precise cause
            self._check_queues(events)
        try:
            self.dataplane.check_alive()
        except RunError:
            # a port whose program is gone may be a port that is gone (its link event not
            # read yet): name the link then, the more precise cause
            if self.net is not None:
                self._check_links()
            raise

    def _check_links(self) -> None:
        if not self._link_names:
            self._link_names = {f"{n}-eth{p}": f"{n} port {p} (to {peer})"
                                for n, p, peer in shaping.link_ends(self.topo)
                                if self.topo.is_switch(n)}
        for intf, what in self._link_names.items():
            try:
                state = Path(f"/sys/class/net/{intf}/operstate").read_text().strip()
            except OSError:
                raise RunError(f"link {what} is gone: its interface {intf} was deleted "
                               "during the run") from None
            if state not in ("up", "unknown"):
                raise RunError(f"link {what} is {state}: interface {intf} (or its peer) "
                               "went down during the run")

    def _arm_queue_watch(self) -> None:
        """The shaped switch ports by ifindex, as bring-up left them (one if_nameindex call:
        a deleted port's name cannot be looked up from its index any more)."""
        index = {name: i for i, name in socket.if_nameindex()}
        self._queue_ports = {
            index[f"{n}-eth{p}"]: queuewatch.Port(f"{n}-eth{p}", f"{n} port {p} (to {peer})",
                                                  self.rates[(n, peer)])
            for n, p, peer in shaping.link_ends(self.topo)
            if self.topo.is_switch(n) and f"{n}-eth{p}" in index}

    def _check_queues(self, events: queuewatch.Events) -> None:
        """RunError if a message changed a watched queue; after an overflow (messages lost)
        every port's qdiscs are read back and compared with bring-up's."""
        why = queuewatch.queue_fault(events.queues, self._queue_ports, self.link.queue)
        if why is None and events.lost and self._queue_ports:
            try:
                dump = queuewatch.qdisc_dump()
            except OSError as exc:
                raise RunError(f"could not read the switch ports' queues back after the "
                               f"kernel's events overflowed: {exc}") from None
            why = queuewatch.full_look(dump, self._queue_ports, self.link.shaper,
                                       self.link.queue)
        if why is not None:
            raise RunError(why)

    # ---- processes ----
    def host(self, name: str) -> Any:
        """The Mininet host object called ``name``."""
        return self.net.get(name)

    def host_cmd(self, host: Any, argv: list[str], timeout: float = 30) -> str:
        """Run argv in a host's namespace and return stdout (raises RunError on failure)."""
        return check(in_ns(host.pid, argv), timeout=timeout)

    def sockets(self, names: list[str]) -> dict[str, list[SockInfo]]:
        """The established TCP sockets of every named host (with tcp_info and, for MPTCP
        subflows, their tokens), read in this process over sock_diag: no process per host
        and look, which under a saturated CPU made a look at 16 hosts by `ss` take 3-6 s
        (fairness, 2026-11-26).  One socket per host, made at its first look unless
        open_sockets made it before."""
        self.open_sockets(names)
        return {n: dump(self._diag[n]) for n in names}

    def open_sockets(self, names: list[str]) -> None:
        """The sock_diag socket of every named host that has none yet (sockets' looks use
        them), all made on one thread that enters each namespace in turn."""
        new = [n for n in names if n not in self._diag]
        if new:
            self._diag.update(zip(new, netns_sockets([self.host(n).pid for n in new])))

    def hosts_cmd(self, names: list[str], argv: list[str],
                  timeout: float = 30) -> dict[str, str]:
        """Run argv in every named host at once; stdout per host (at once because under a
        loaded CPU one `mnexec ...` can take seconds).  RunError names a host that failed."""
        with signals_deferred():
            procs = {n: subprocess.Popen(in_ns(self.host(n).pid, argv),
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
                     for n in names}
        deadline = time.monotonic() + timeout
        out, failed = {}, ""
        try:
            for n, p in procs.items():
                try:
                    o, e = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    failed = failed or f"{' '.join(argv)} in {n} did not finish in {timeout} s"
                    continue
                if p.returncode != 0:
                    failed = failed or f"{' '.join(argv)} in {n} failed: {e.strip()[:200]}"
                out[n] = o
        finally:
            stop_all([p for p in procs.values() if p.poll() is None])
        if failed:
            raise RunError(failed)
        return out

    def cpu_cap(self, use: str) -> CpuCap:
        """A cgroup of this run (``<run>+<use>``, no limit yet) for CPU-capped processes
        (``popen(..., cgroup=)``), recorded at once and removed at teardown.  RunError in
        one line when this machine has no writable cpu controller."""
        assert self.registry is not None
        hier = find_hierarchy()
        if hier is None:
            raise RunError("CPU caps need a cgroup hierarchy with the cpu controller (v2 "
                           "cpu.max or v1 cpu); this machine mounts neither")
        cap = CpuCap(hier, f"{self.run_id}+{use}")
        with signals_deferred():   # created and recorded together
            try:
                cap.create()
            except OSError as e:
                raise RunError(f"cannot create cgroup {cap.path}: {e.strerror}") from None
            self.registry.add("cgroups", [str(cap.path)])
        return cap

    def steer_rx(self, intf: str, cpus: list[int]) -> str:
        """Receive Packet Steering on one switch port: what the port receives is processed
        (switch program, queues, every later hop) on ``cpus``, not in the softirq of the
        sender that put it on the wire (no CPUs: RPS off again).  Returns the mask as the
        kernel reads it back.  The port is the run's own, deleted at teardown, so nothing is
        restored."""
        if intf not in self.switch_intfs():
            raise RunError(f"RPS: {intf} is not a switch port of this run")
        rx = sorted(Path(f"/sys/class/net/{intf}/queues").glob("rx-*"))
        mask = rps_mask(cpus)
        for q in rx:
            (q / "rps_cpus").write_text(mask)
        return ",".join((q / "rps_cpus").read_text().strip() for q in rx)

    def popen(self, host: Any | None, argv: list[str], cgroup: CpuCap | None = None,
              pin: int | None = None, **kw: Any) -> subprocess.Popen[Any]:
        """Start a tracked process (in a host namespace, or the root one if host is None),
        inside ``cgroup`` from its first instruction when one is given (and pinned to CPU
        ``pin``)."""
        full = in_ns(host.pid, argv) if host is not None else argv
        if cgroup is not None:
            full = wrap_in_cgroup(full, cgroup.procs_file, pin)
        assert self.registry is not None
        # a Ctrl-C inside Popen would leave a live child that nobody recorded
        with signals_deferred():
            proc = subprocess.Popen(full, start_new_session=True, **kw)
            self.procs.append(proc)
            self.registry.add("pids", [proc.pid])
        return proc

    # ---- teardown ----
    def _down(self) -> None:
        # A Ctrl-C during cleanup must not leave it half-done, nor be lost: it is raised
        # once everything is removed.
        with signals_deferred("dcrepro: cleanup is finishing; it stops by itself in a few "
                              "seconds"):
            self._teardown()

    def _teardown(self) -> None:
        t0 = time.monotonic()
        keep_record = False
        if self._events is not None:
            self._events.close()
            self._events = None
        for diag in self._diag.values():
            diag.close()
        self._diag = {}
        try:
            stop_all(self.procs)
            if self.registry is not None:
                # CPU caps: their processes are gone now; what fails is left to the sweep
                for path in self.registry.state.get("cgroups", []):
                    remove_cgroup(path)
            if self.net is not None:
                stray = self._stop_strays()
                if stray:
                    LOG.warning("teardown: stopped %d unrecorded process(es) in host "
                                "namespaces: %s", len(stray), "; ".join(stray[:5]))
            if self.net is not None:
                try:
                    self._stop_links()
                except Exception as exc:
                    LOG.warning("link teardown: %s", exc)
            try:
                self.dataplane.stop(self)
            except Exception as exc:
                LOG.warning("dataplane teardown: %s", exc)
            if self.net is not None:
                self._stop_shells()
            if self.registry is not None:
                # whatever the fast path missed (or an early failure left) goes one by one
                st = self.registry.state
                existing = list_bridges() if st["bridges"] else []
                links = set(os.listdir("/sys/class/net"))
                for line in clean_state({
                        # "could not ask" is not "none left": then try every recorded one
                        "bridges": [b for b in st["bridges"]
                                    if existing is None or b in existing],
                        "intfs": [i for i in st["intfs"] if i in links],
                        "pids": [p for p in st["pids"] if pid_alive(p)],
                        "bpffs": [d for d in st["bpffs"] if os.path.exists(d)],
                        "cgroups": [c for c in st.get("cgroups", []) if os.path.exists(c)]}):
                    LOG.warning("teardown sweep: %s", line)
                    keep_record = keep_record or line.startswith(NOT_DONE)
            for line in restore_sysctls(self._saved_sysctls, self._set_sysctls):
                LOG.warning("teardown: %s", line)
            self.facts.cc_restored_to = self._saved_sysctls.get(
                "net.ipv4.tcp_congestion_control", self.facts.cc_restored_to)
            self._saved_sysctls, self._set_sysctls = {}, {}
            if self._cc_reg is not None and self.facts.cc_bpf is not None:
                try:
                    self.facts.cc_bpf["stats"] = self._cc_reg.stats()
                except Exception as exc:
                    LOG.warning("could not read %s's counters: %s", self.cc, exc)
            if self.registry is not None and not keep_record:
                self.registry.remove()
            elif self.registry is not None:
                LOG.warning("teardown: some of the run's resources are left (above); their "
                            "record stays in %s for `dcrepro clean`", STATE_DIR)
        finally:
            if self._cc_reg is not None:
                # after the default went back (above): unregister the BPF control
                self._cc_reg.close()
                self._cc_reg = None
            if self._lock_fh is not None:
                self._lock_fh.close()
                self._lock_fh = None
            self.facts.teardown_s = round(time.monotonic() - t0, 3)

    def _stop_strays(self) -> list[str]:
        """SIGKILL every process in a host's network namespace other than its Mininet shell
        (proc.kill_namespace_strays); returns "pid command" of each one stopped."""
        shells = {h.shell.pid for h in self.net.hosts if h.shell is not None}
        stopped: list[str] = []
        # at least two looks, and more while a look still finds some (at most four): a
        # process caught between two states (mid-exec, entering the namespace) can slip
        # past one look (seen once in the full suite: a stray `mnexec -a` left running)
        for look in range(4):
            found = kill_namespace_strays([h.pid for h in self.net.hosts], shells)
            stopped += found
            if look >= 1 and not found:
                break
        return stopped

    def _stop_links(self) -> None:
        """Every link at once: the run's link group (deleting one veth end removes its peer).

        Mininet's own stop() deletes links one command at a time (3+ s for a k=4 fat tree);
        interfaces that missed the group (an early failure) go one by one.
        """
        subprocess.run(["ip", "link", "del", "group", str(self.link_group)],
                       capture_output=True, check=False, timeout=60)
        left = [i for i in self.switch_intfs() if os.path.exists(f"/sys/class/net/{i}")]
        if left:
            subprocess.run(["ip", "-force", "-batch", "-"], input="".join(
                f"link del {i}\n" for i in left), text=True, capture_output=True,
                check=False, timeout=60)

    def _stop_shells(self) -> None:
        # every Mininet node (hosts, switches, the controller stub) owns a bash shell
        nodes = [*self.net.hosts, *self.net.switches, *self.net.controllers]
        for n in nodes:
            if n.shell is not None and n.shell.poll() is None:
                os.killpg(n.shell.pid, signal.SIGKILL)
        for n in nodes:
            if n.shell is not None:
                n.shell.wait(timeout=10)
                n.shell = None
            # Mininet never closes a node's pty pair (its own terminate() leaks it too):
            # two descriptors per node and run, over 1,024 after a few dozen networks
            if getattr(n, "stdin", None) is not None:
                n.outToNode.pop(n.stdin.fileno(), None)
                n.inToNode.pop(n.stdin.fileno(), None)
                n.stdin.close()          # the master side (stdout is the same file)
                n.stdin = n.stdout = None
            if getattr(n, "slave", None) is not None:
                os.close(n.slave)
                n.slave = None

    def facts_dict(self) -> dict[str, Any]:
        """Observed facts as a plain dict."""
        self.facts.dataplane = self.dataplane.facts()
        return asdict(self.facts)
