"""The kernel dataplane: one tc-BPF program on every switch port's ingress, tables in maps.

Switches are not processes here.  A switch is the set of its ports (veths in the root
namespace); each port's clsact ingress runs dataplanes/bpf/switch.bpf.c, which looks up the
plan's entry in the ``fib`` map and hands the packet to the egress port with
``bpf_redirect`` - so the egress HTB + pfifo of every link still shapes and queues it,
exactly as with Open vSwitch.  One program instance serves every port of the network; it
learns its switch and port from the ingress ifindex (``ports`` map).

Readiness is a protocol, not a sleep: every map entry is written, then read back and compared
with the plan, and only then are the programs attached (in one ``tc -batch``), so no packet
ever meets a half-filled table.  Maps are pinned on a private bpffs mount under
/run/dcrepro/bpffs/<run id> (recorded in the run registry; ``dcrepro clean`` unmounts it after
a crash).  Tracing reads the program's own ``flows`` map: for every 5-tuple and switch, which
port its packets left by and how many (per-packet spraying shows up as several ports).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.bpfobj import bpf_unavailable
from emulator.dataplane import Dataplane, TraceError, follow
from emulator.proc import RunError, check
from emulator.registry import BPFFS_DIR

from . import plan as bpfplan

if TYPE_CHECKING:
    from emulator.emulation import Emulation

BUILD_DIR = Path("/var/cache/dcrepro/bpf")
#: how often check_alive asks the kernel where the program is attached (seconds)
ATTACH_LOOK_S = 1.0


def _ifindex(name: str) -> int:
    try:
        return int(Path(f"/sys/class/net/{name}/ifindex").read_text())
    except OSError:
        raise RunError(f"interface {name} does not exist") from None


class BpfDataplane(Dataplane):
    """tc cls_bpf switches (see the module text)."""

    name = "bpf"
    carries = frozenset({"forward", "hash", "rnd", "rr", "cnt", "replicate"})
    capabilities = frozenset({"latency_sampling", "spread", "aqm"})
    # socket=keep: packets keep their sender's socket through the fabric, so TCP Small
    # Queues caps every flow at about two packets in flight (the kernel's own behaviour
    # across veths; kept only to show its effect, see switch.bpf.c)
    # flows=sampled: the flow records that path tracing reads count SYN/FIN/RST and one
    # TCP segment in 64 where the 5-tuple fixes the port, not every packet (a per-packet
    # hash lookup fewer; sprayed packets still all counted; see switch.bpf.c)
    # cnt=packets: the cnt spray picks the port that sent the fewest packets, not bytes (an
    # ablation: PLTS's "local port counters" do not say which they count)
    options = {"socket": ("release", "keep"), "flows": ("all", "sampled"),
               "cnt": ("bytes", "packets")}

    @classmethod
    def unavailable(cls) -> str:
        """Why tc-BPF programs cannot run here ('' if they can)."""
        return bpf_unavailable()

    def __init__(self, socket: str = "release", flows: str = "all",
                 cnt: str = "bytes") -> None:
        #: packets keep their sender's socket through the fabric (``bpf,socket=keep``): the
        #: kernel's own behaviour, which caps TCP by TCP Small Queues; for ablations only
        self.keep_socket = socket == "keep"
        #: flow records sampled where the path is fixed (``bpf,flows=sampled``)
        self.flows_sampled = flows == "sampled"
        #: the cnt spray balances packets (``bpf,cnt=packets``), not bytes
        self.cnt_packets = cnt == "packets"
        self.runtime: Any = None  # bpfswitch.SwitchRuntime once prepared
        self._next_attach_look = 0.0
        self.obj: Path | None = None
        self.entries = 0
        self.install_s = 0.0
        self._flows: dict[tuple[int, str, str, int, int, int], list[tuple[int, int, int]]] = {}
        self.qlen: Any = None  # aqm.QueueLengths when an AQM other than droptail runs
        self.aqm_ports: dict[int, str] = {}   # ifindex -> switch port with an AQM
        self.aqm = "droptail"

    def prepare(self, emu: Emulation) -> None:
        """Build (cached) and load the program, pinned on the run's private bpffs."""
        from . import switch as bpfswitch
        why = bpf_unavailable()
        if why:
            raise RunError(f"the bpf dataplane cannot run here: {why}; use --dataplane ovs")
        self.obj = bpfswitch.build_program(BUILD_DIR)
        pin_dir = BPFFS_DIR / emu.run_id
        assert emu.registry is not None
        emu.registry.add("bpffs", [str(pin_dir)])
        self.runtime = bpfswitch.SwitchRuntime(pin_dir, self.obj)

    def switch_class(self) -> Any:
        from mininet.node import Switch  # here, so model-only runs never import Mininet

        class BpfSwitch(Switch):
            """A Mininet switch that is only its ports: the ports' BPF program forwards."""

            def start(self, _controllers: Any) -> None:
                """Nothing to start: install() attaches the program once the maps hold the plan."""

            def stop(self, deleteIntfs: bool = True) -> None:
                """Nothing to stop: the emulation removes every link in one batch."""
        return BpfSwitch

    def install(self, emu: Emulation) -> None:
        """Fill the maps from the plan, read them back, then attach to every switch port."""
        from . import switch as bpfswitch
        assert self.runtime is not None
        t0 = time.monotonic()
        intfs = emu.switch_intfs()
        check(["ip", "-batch", "-"], input_text="".join(f"link set dev {i} up\n" for i in intfs))
        ports, egress = bpfplan.port_entries(emu.plan, emu.topo, _ifindex)
        fib = bpfplan.fib_entries(emu.plan)
        self.runtime.fill(ports, egress, fib)
        self.runtime.keep_socket(self.keep_socket)
        self.runtime.sample_flows(self.flows_sampled)
        self.runtime.count_packets(self.cnt_packets)
        bad = self.runtime.verify(ports, egress, fib) or self._set_aqm(emu)
        flags = self.runtime.read_conf().flags
        want = ((bpfswitch.CONF_KEEP_SOCKET if self.keep_socket else 0) |
                (bpfswitch.CONF_FLOWS_SAMPLED if self.flows_sampled else 0) |
                (bpfswitch.CONF_CNT_PACKETS if self.cnt_packets else 0))
        if not bad and flags != want:
            bad = f"conf: flags read back as {flags:#x}, written {want:#x}"
        if bad:
            raise RunError(f"BPF maps do not hold the plan: {bad}")
        self.runtime.attach(intfs)
        self.entries = len(fib)
        self.install_s = round(time.monotonic() - t0, 3)

    def _set_aqm(self, emu: Emulation) -> str:
        """Give every switch port the run's AQM and start keeping their queue lengths
        (nothing at all for droptail); '' or what did not read back."""
        from emulator.shaping import link_ends

        from . import aqm
        spec = emu.link.aqm_spec
        self.aqm = spec.describe()
        if not spec.active:
            return ""
        rates = {f"{n}-eth{p}": emu.rates[(n, peer)]
                 for n, p, peer in link_ends(emu.topo) if emu.topo.is_switch(n)}
        self.aqm_ports = {_ifindex(name): name for name in rates}
        entries = aqm.aqm_entries(spec, {i: rates[n] for i, n in self.aqm_ports.items()},
                                  aqm.netns_inode())
        bad = self.runtime.set_aqm(entries)
        if not bad:
            self.qlen = aqm.QueueLengths(aqm.build_object(BUILD_DIR), self.runtime.pin_dir,
                                         self.runtime.pin_dir / "maps" / "aqm")
        return bad

    def aqm_counters(self) -> dict[str, tuple[int, int]]:
        """Per switch port with an AQM: (packets marked CE, packets dropped early) so far
        (empty for droptail)."""
        if self.runtime is None or not self.aqm_ports:
            return {}
        return {self.aqm_ports[i]: (v.marks, v.drops)
                for i, v in self.runtime.read_aqm().items() if i in self.aqm_ports}

    def aqm_state(self) -> dict[str, Any]:
        """Per switch port with an AQM: its whole entry (queue length, RED average, ...)."""
        if self.runtime is None or not self.aqm_ports:
            return {}
        return {self.aqm_ports[i]: v._asdict() for i, v in self.runtime.read_aqm().items()
                if i in self.aqm_ports}

    def check_alive(self) -> None:
        """The program and its maps must still be pinned (a crashed clean could remove them),
        and, looked at every ATTACH_LOOK_S (one bpftool call), still attached to every port."""
        if self.runtime is None:
            return
        if not self.runtime.alive():
            raise RunError("the BPF switch program or its maps disappeared during the run")
        now = time.monotonic()
        if self.runtime.attached and now >= self._next_attach_look:
            self._next_attach_look = now + ATTACH_LOOK_S
            gone = sorted(set(self.runtime.attached) - set(self.runtime.attached_to()))
            if gone:
                raise RunError(f"the BPF switch program is no longer attached to switch port"
                               f"{'s' if len(gone) > 1 else ''} {', '.join(gone[:4])}"
                               f"{' ...' if len(gone) > 4 else ''}: packets arriving there "
                               "are no longer forwarded")

    def _flow_ports(self, sw: int, ft: dict[str, Any], proto: int) -> list[tuple[int, int, int]]:
        key = (sw, ft["src_ip"], ft["dst_ip"], int(ft["src_port"]), int(ft["dst_port"]), proto)
        if key not in self._flows:
            assert self.runtime is not None
            self._flows = {}
            for rec in self.runtime.read_flows():
                k = (rec["sw"], rec["saddr"], rec["daddr"], rec["sport"], rec["dport"],
                     rec["proto"])
                self._flows.setdefault(k, []).append((rec["out_port"], rec["packets"],
                                                      rec["out_label"]))
        return self._flows.get(key, [])

    def spread(self, emu: Emulation, src: str, dst: str, five_tuple: dict[str, Any],
               proto: str = "tcp") -> dict[str, dict[int, int]]:
        """Packets of one flow per output port at every switch that forwarded it."""
        num = 6 if proto == "tcp" else 17
        # reloads the snapshot only if the flow is not in it yet (as trace does)
        self._flow_ports(emu.plan.switches[emu.topo.access_switch(src)].sid, five_tuple, num)
        out: dict[str, dict[int, int]] = {}
        for name, sp in emu.plan.switches.items():
            recs = self._flows.get((sp.sid, five_tuple["src_ip"], five_tuple["dst_ip"],
                                    int(five_tuple["src_port"]), int(five_tuple["dst_port"]),
                                    num), [])
            if recs:
                out[name] = {port: pk for port, pk, _ in recs}
        return out

    def trace(self, emu: Emulation, src: str, dst: str, five_tuple: dict[str, Any],
              proto: str = "tcp") -> list[str]:
        """The path the flow's packets took, from the switches' own records (the port most of
        its packets left by, hop by hop; per-packet spraying: see ``spread``)."""
        num = 6 if proto == "tcp" else 17

        def out_port(sw: str, _in_port: int) -> int:
            recs = self._flow_ports(emu.plan.switches[sw].sid, five_tuple, num)
            if not recs:
                raise TraceError(f"trace {src}->{dst}: {sw} has no record of "
                                 f"{five_tuple['src_ip']}:{five_tuple['src_port']} -> "
                                 f"{five_tuple['dst_ip']}:{five_tuple['dst_port']}")
            return int(max(recs, key=lambda r: r[1])[0])
        return follow(emu.topo, src, dst, out_port)

    def sample_latency(self, every: int) -> None:
        """Sample about one TCP data segment in ``every`` for one-way fabric latency (first
        switch's ingress to last switch's ingress, in the datapath; 0 = off)."""
        assert self.runtime is not None
        self.runtime.sample_latency(every)

    def latency_samples(self) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """Every measured segment (saddr, daddr, sport, dport, seq, at_ns, latency_ns;
        at_ns on CLOCK_MONOTONIC, as time.monotonic_ns) and the sampling counters."""
        assert self.runtime is not None
        conf = self.runtime.read_conf()
        rows = [{**k._asdict(), **v._asdict()} for k, v in self.runtime.read_latency().items()]
        return rows, {"sample_every": conf.sample_every, "stamped": conf.stamped,
                      "measured": conf.measured, "lost": conf.lost}

    def counters(self) -> dict[str, Any]:
        """Program counters: packets received, and dropped for want of an entry."""
        assert self.runtime is not None
        return self.runtime.counters()

    def stop(self, emu: Emulation) -> None:
        """Detach (the ports are mostly gone already), unmount the bpffs."""
        if self.qlen is not None:
            self.qlen.close()
            self.qlen = None
        if self.runtime is not None:
            self.runtime.close()

    def facts(self) -> dict[str, Any]:
        return {"dataplane": self.name, "object": str(self.obj),
                "fib_entries": self.entries, "install_s": self.install_s, "aqm": self.aqm,
                "sender_socket": "kept through the fabric (ablation: TCP Small Queues "
                                 "counts every hop)" if self.keep_socket else
                                 "released at the first switch, as a NIC would",
                "flow_records": "SYN/FIN/RST and 1 in 64 TCP segments where the 5-tuple "
                                "fixes the port; every packet elsewhere"
                                if self.flows_sampled else "every packet",
                "cnt_balances": "packets (ablation)" if self.cnt_packets else "bytes"}
