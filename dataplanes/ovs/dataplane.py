"""The OpenFlow dataplane: Open vSwitch bridges managed by the os-ken controller.

The controller (controller/app.py) translates the plan into OpenFlow 1.3 (controller/
ofplan.py) and reports ``READY <dpid>`` after each switch's barrier reply, ``FAIL ...`` on any
OpenFlow error; the runtime waits for every switch with a timeout.  Paths are traced with
``ovs-appctl ofproto/trace``, which runs a packet through a bridge's real tables including
the multipath hash.  OVS's kernel datapath is used where the kernel has the module, else
its userspace datapath (which forwards from one thread: see the README).
"""
from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.cleanup import delete_bridges
from emulator.dataplane import Dataplane, TraceError, follow
from emulator.proc import RunError, check, free_port, how_ended, pid_alive, run, stop_process
from emulator.sysinfo import ovs_datapath, ovsdb_pid, vswitchd_answers, vswitchd_pid

if TYPE_CHECKING:
    from emulator.emulation import Emulation

REPO = Path(__file__).resolve().parent.parent


class Controller:
    """The os-ken controller as a child process with a line protocol on its stdout."""

    def __init__(self, plan_path: Path, log_path: Path) -> None:
        self.port = free_port()
        self.events: queue.Queue[str] = queue.Queue()
        self.failed: str | None = None
        self.log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controller.launch", "--plan", str(plan_path),
             "--port", str(self.port), "--host", "127.0.0.1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True, cwd=str(REPO))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()
            if line.startswith("DCREPRO "):
                msg = line[8:].strip()
                if msg.startswith("FAIL"):
                    self.failed = msg
                self.events.put(msg)
        self.events.put("EXIT")

    def wait_for(self, want: Callable[[str], bool], deadline: float, what: str) -> str:
        """Block until a protocol line satisfies ``want``; raise on failure or timeout."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RunError(f"controller: timed out waiting for {what}")
            try:
                msg = self.events.get(timeout=remaining)
            except queue.Empty:
                continue
            if msg.startswith("FAIL") or msg == "EXIT":
                raise RunError(f"controller failed while waiting for {what}: {msg[:800]}")
            if want(msg):
                return msg

    def wait_listening(self, timeout: float) -> None:
        """Wait until the plan is loaded and the OpenFlow port accepts connections."""
        deadline = time.monotonic() + timeout
        self.wait_for(lambda m: m.startswith("LOADED"), deadline, "the plan to load")
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    raise RunError("controller exited before listening") from None
                if time.monotonic() > deadline:
                    raise RunError(f"controller not listening on port {self.port}") from None
                time.sleep(0.05)  # polling a port that is about to open, bounded by deadline

    def wait_ready(self, dpids: set[int], timeout: float) -> None:
        """Wait for a barrier-confirmed READY from every switch."""
        deadline = time.monotonic() + timeout
        missing = set(dpids)
        while missing:
            msg = self.wait_for(lambda m: m.startswith("READY"), deadline,
                                f"{len(missing)} switches to confirm their rules")
            missing.discard(int(msg.split()[1]))

    def tail(self, n: int) -> list[str]:
        """The last ``n`` lines of the controller's log."""
        try:
            return Path(self.log.name).read_text().strip().splitlines()[-n:]
        except OSError:
            return []

    def stop(self) -> None:
        """Terminate the controller and close its log."""
        stop_process(self.proc)
        self.reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.log.close()


_OUTPUT = re.compile(r"^\s+output:(\d+)\s*$", re.M)
_FINAL = re.compile(r"^Final flow: (.*)$", re.M)
_DROP_FIELDS = re.compile(r"^(reg\d+|in_port|tcp_flags|recirc_id|dp_hash|vlan_tci1)=")


class OvsDataplane(Dataplane):
    """Open vSwitch bridges + the os-ken controller (OpenFlow 1.3)."""

    name = "ovs"
    carries = frozenset({"forward", "hash", "replicate"})

    def __init__(self) -> None:
        self.controller: Controller | None = None
        self.datapath = ""
        self.vswitchd: int | None = None
        self.ovsdb: int | None = None

    def prepare(self, emu: Emulation) -> None:
        """Check the switch daemon, start the controller on the run's plan, wait for it."""
        # the database first: without it Mininet's own check exits the process
        self.ovsdb = ovsdb_pid()
        if self.ovsdb is None or run(["ovs-vsctl", "--timeout=3", "show"], timeout=10,
                                     ok=True).returncode != 0:
            raise RunError("Open vSwitch's database server (ovsdb-server) is not running or "
                           "not answering; ./setup.sh restarts it")
        if not vswitchd_answers():
            raise RunError("Open vSwitch's switch daemon (ovs-vswitchd) is not answering; "
                           "./setup.sh restarts it")
        self.vswitchd = vswitchd_pid()
        self.controller = Controller(emu.run_dir / "plan.json", emu.run_dir / "controller.log")
        assert emu.registry is not None
        emu.registry.add("pids", [self.controller.proc.pid])
        self.controller.wait_listening(timeout=30)
        self.datapath = ovs_datapath()

    def switch_class(self) -> Any:
        from mininet.node import OVSSwitch
        return partial(OVSSwitch, protocols="OpenFlow13", failMode="secure",
                       datapath=self.datapath, batch=True)

    def mn_controller(self) -> Any:
        from mininet.node import RemoteController

        class _External(RemoteController):
            """The os-ken process dcrepro started and already saw listening.

            Mininet's own check pipes the OpenFlow port through telnet and then fails to
            decode the binary HELLO it gets back; dcrepro's readiness signal is READY lines.
            """

            def checkListening(self) -> None:
                return None
        assert self.controller is not None
        return _External("c0", ip="127.0.0.1", port=self.controller.port)

    def install(self, emu: Emulation) -> None:
        """Tag the bridges with the run id, then wait for every switch's barrier."""
        assert emu.registry is not None and self.controller is not None
        names = [s.name for s in emu.net.switches]
        emu.registry.add("bridges", names)
        tag = [a for n in names
               for a in ("--", "set", "bridge", n, f"external_ids:dcrepro-run={emu.run_id}")]
        check(["ovs-vsctl", "--timeout=20", *tag])
        self.controller.wait_ready({emu.topo.node(s).dpid or 0 for s in emu.topo.switches()},
                                   timeout=emu.ready_timeout)

    def check_alive(self) -> None:
        """Raise if the switch daemon or the controller died (cheap: called every 0.2 s)."""
        if self.vswitchd is not None and not pid_alive(self.vswitchd):
            raise RunError(f"Open vSwitch's switch daemon ovs-vswitchd (pid {self.vswitchd}) "
                           "died during the run; ./setup.sh restarts it")
        if self.ovsdb is not None and not pid_alive(self.ovsdb):
            raise RunError(f"Open vSwitch's database server ovsdb-server (pid {self.ovsdb}) "
                           "died during the run; ./setup.sh restarts it")
        c = self.controller
        if c is not None and (c.failed or c.proc.poll() is not None):
            if c.failed:
                why = c.failed
            else:
                why = f"pid {c.proc.pid} ended with {how_ended(c.proc)}"
            tail = " | ".join(c.tail(3))
            raise RunError(f"the os-ken controller failed during the run: {why}"
                           + (f"; last log lines: {tail}" if tail else ""))

    def trace(self, emu: Emulation, src: str, dst: str, five_tuple: dict[str, Any],
              proto: str = "tcp") -> list[str]:
        """Follow ofproto/trace hop by hop, carrying the packet as each bridge modified it."""
        topo = emu.topo
        fields = [proto, f"dl_src={topo.node(src).mac}", f"dl_dst={topo.node(dst).mac}",
                  f"nw_src={five_tuple['src_ip']}", f"nw_dst={five_tuple['dst_ip']}",
                  f"tp_src={five_tuple['src_port']}", f"tp_dst={five_tuple['dst_port']}"]

        def out_port(sw: str, in_port: int) -> int:
            nonlocal fields
            flow = ",".join([fields[0], f"in_port={in_port}", *fields[1:]])
            out = check(["ovs-appctl", "ofproto/trace", sw, flow], timeout=15)
            ports = _OUTPUT.findall(out)
            if len(ports) != 1:
                raise TraceError(f"trace {src}->{dst} at {sw}: {len(ports)} outputs "
                                 f"({out.strip().splitlines()[-1]})")
            final = _FINAL.search(out)
            if final and final.group(1).strip() != "unchanged":
                items = final.group(1).split(",")
                fields = [items[0], *(f for f in items[1:] if not _DROP_FIELDS.match(f))]
            return int(ports[0])
        return follow(topo, src, dst, out_port)

    def stop(self, emu: Emulation) -> None:
        """Delete the run's bridges in one OVS transaction, then stop the controller."""
        bridges = [s.name for s in emu.net.switches] if emu.net is not None else []
        try:
            failed = [x for x in delete_bridges(bridges) if not x.startswith("deleted")]
            if failed:
                raise RunError("; ".join(failed[:3]))
        finally:
            if self.controller is not None:
                self.controller.stop()

    def facts(self) -> dict[str, Any]:
        return {"dataplane": self.name, "datapath": self.datapath}
