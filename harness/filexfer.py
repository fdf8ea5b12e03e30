"""The file transfer of apps/filexfer in the emulated network (orca, 001_…): the real app's
receivers and sender in the hosts' namespaces, one transfer after another on one network.

Per transfer: the sender's and every receiver's JSON report, the bytes on the sender's link
(its first switch port's counters), the machine's CPU, the busy links' dequeue gaps, and
with a CPU cap the sender's cgroup counters.  A round that ends with bytes missing, a failed
receiver or a bounded wait that expires fails the run (RunError)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from emulator import cgroup
from emulator.emulation import Emulation
from emulator.proc import RunError, first_line, how_ended
from harness.runfolder import RunFolder
from harness.sampling import cpu_sampler
from harness.session import judge_measurement
from harness.traffic import port_counters
from harness.transfer import ETH_HEADER, Transfer, TransferResult, Transfers, transfer_limit


def _app(emu: Emulation, host: str, args: list[str], log: Path,
         cap: cgroup.CpuCap | None = None, pin: int | None = None) -> subprocess.Popen[str]:
    """Start the file-transfer app in ``host``.  Its working folder is its log's folder (an
    absolute path, like every path in ``args``), so neither where dcrepro was started nor
    where this module sits matters; the app is found as an installed package."""
    fh = open(log, "w")  # noqa: SIM115 - the child holds it; closed when we return
    try:
        return emu.popen(emu.host(host), [sys.executable, "-m", "apps.filexfer", *args],
                         cwd=str(log.resolve().parent), cgroup=cap, pin=pin,
                         stdout=subprocess.PIPE, stderr=fh, text=True)
    finally:
        fh.close()


def _tail(path: Path) -> str:
    text = path.read_text(errors="replace").strip() if path.exists() else ""
    return text.splitlines()[-1][:300] if text else "no message"


def transfer(emu: Emulation, net: Transfers, t: Transfer, rate_mbps: float, expected_s: float,
             out: Path, cap: cgroup.CpuCap | None = None,
             pin: int | None = None) -> TransferResult:
    """Run the app once (every round) and check that every round delivered every byte.  With
    ``cap``, the sender (every one of its processes) runs in that cgroup, whose limit the
    caller has set; its throttling counters are read around the transfer."""
    out = out.resolve()   # the apps run in other folders: hand them absolute paths only
    out.mkdir(parents=True, exist_ok=True)
    topo, mode, port, sizes = emu.topo, t.mode, t.port, list(t.sizes)
    recv_timeout = 30 + 2 * max(1.0, expected_s / len(sizes))  # silence a receiver accepts
    recvs = {}
    for i, r in enumerate(net.members, start=1):
        ip = topo.ip(r)
        args = ["recv", "--listen", f"0.0.0.0:{port}" if mode == "multicast" else f"{ip}:{port}",
                "--id", str(i), "--report", str(out / f"recv-{r}.json"),
                "--timeout", f"{recv_timeout:.0f}"]
        if mode == "multicast":
            args += ["--group", net.group, "--iface", ip]
        recvs[r] = _app(emu, r, args, out / f"recv-{r}.log")
    deadline = time.monotonic() + 30
    for r, p in recvs.items():               # readiness: each prints 'listening ...'
        line = first_line(p, deadline - time.monotonic())
        if not line.startswith("listening"):
            raise RunError(f"receiver {r} not ready in 30 s: {_tail(out / f'recv-{r}.log')}")
    dest = ",".join(f"{topo.ip(r)}:{port}" for r in net.members)
    args = ["send", "--receivers", dest, "--mode", mode, "--procs", str(t.procs),
            "--sizes", ",".join(map(str, sizes)), "--payload", str(net.payload),
            "--rate-mbps", f"{rate_mbps:.4f}", "--timeout", "20",
            "--report", str(out / "sender.json"), "--mcast-if", topo.ip(net.src)]
    if mode == "multicast":
        args += ["--group", f"{net.group}:{port}", "--ttl", "8"]
    before = port_counters(emu)
    access = topo.access_switch(net.src)
    cpu = cpu_sampler(out / "cpu.csv", interval=0.25)   # transfers can be under a second
    cpu.start()
    limit = transfer_limit(expected_s, len(sizes))
    throttle0 = cap.stat() if cap is not None else None
    with emu.dequeue_gaps() as gaps:
        sender = _app(emu, net.src, args, out / "sender.log", cap, pin)
        end = time.monotonic() + limit
        while sender.poll() is None:
            if time.monotonic() > end:
                raise RunError(f"{mode} x{t.procs}: the sender did not finish in {limit:.0f} s")
            emu.check_alive()
            for r, p in recvs.items():
                if p.poll() not in (None, 0):
                    raise RunError(f"receiver {r} ended with {how_ended(p)}: "
                                   f"{_tail(out / f'recv-{r}.log')}")
            try:
                sender.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
    samples = cpu.stop()
    throttle: dict[str, Any] | None = None
    if cap is not None and throttle0 is not None:
        end_stat = cap.stat()
        throttle = {k: round(end_stat[k] - throttle0[k], 4) for k in end_stat}
        throttle["limit"] = cap.read_limit()
    if sender.returncode != 0:
        raise RunError(f"{mode} x{t.procs}: sender ended with {how_ended(sender)}: "
                       f"{_tail(out / 'sender.log')}")
    for r, p in recvs.items():
        try:
            p.wait(timeout=recv_timeout + 10)
        except subprocess.TimeoutExpired:
            raise RunError(f"receiver {r} did not end after the sender's BYE") from None
    after = port_counters(emu)
    key = (access, topo.port(access, net.src))
    sender_rep = json.loads((out / "sender.json").read_text())
    receivers = {r: json.loads((out / f"recv-{r}.json").read_text()) for r in net.members}
    for r, rep in receivers.items():
        got = [x["bytes_received"] for x in rep["rounds"]]
        if not rep["ok"] or got != sizes or not all(x["complete"] for x in rep["rounds"]):
            raise RunError(f"{mode} x{t.procs}: receiver {r} did not get every byte "
                           f"({rep.get('error') or 'rounds incomplete'})")
    window = [u for _, u in samples]
    return TransferResult(
        t, sender_rep, receivers, after[key].rx_bytes - before[key].rx_bytes, gaps, throttle,
        round(sum(window) / len(window), 1) if window else None,
        round(sum(u > 90 for u in window) / len(window), 3) if window else None)


def transfers(emu: Emulation, net: Transfers, out: Path,
              folder: RunFolder) -> Iterator[TransferResult]:
    """Every transfer of ``net`` in order on the emulated network, each judged on its
    measurement (analysis.fidelity, as every iperf3 experiment is).  A capped sender runs in
    one cgroup whose limit is set per transfer (its cores times its processes); with
    ``sender_net`` away its first switch's receive work is steered off its pinned CPU."""
    cap = emu.cpu_cap("sender") if any(t.cpu for t in net.transfers) else None
    access = net.topo.access_switch(net.src)
    sender_port = f"{access}-eth{net.topo.port(access, net.src)}"
    if cap is not None:
        folder.record(f"{net.key}_sender_cgroup",
                      {"path": str(cap.path), "cgroup_version": cap.hier.version})
    rate = net.rate_mbps(ETH_HEADER)
    for t in net.transfers:
        folder.log.info("%s", t.where)
        away = bool(t.cpu) and net.sender_net == "away"
        if cap is not None:
            if t.cpu:
                cap.set(t.cpu * t.nproc)
            # the first switch and what follows on other CPUs, or back in the sender's
            # softirq (the kernel's default, and every uncapped transfer's)
            rps = emu.steer_rx(sender_port, [k for k in range(os.cpu_count() or 1)
                                             if k != net.pin] if away else [])
            folder.log.info("sender port %s rps_cpus %s", sender_port, rps)
        # a capped sender may take far longer than the link: its bounded waits grow
        expected = t.expected_s * (max(1.0, 0.5 / t.cpu) if t.cpu else 1)
        res = transfer(emu, net, t, rate, expected, out / t.folder, cap if t.cpu else None,
                       net.pin if away else None)
        judge_measurement(folder, {"dequeue_gaps": res.dequeue_gaps,
                                   "cpu_saturated_share": res.cpu_saturated_share}, t.where)
        yield res
