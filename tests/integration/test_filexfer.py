"""The Orca file-transfer app through an emulated network (root only): a multicast round
through the network's tree reaches every receiver, a lost datagram is repaired, and the
sender's link carries each file byte about once; a unicast transfer carries it once per
receiver."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import routing
import topos
from emulator.emulation import Emulation
from emulator.proc import first_line
from emulator.shaping import LinkSpec
from harness.traffic import port_counters
from routing.multicast import add_group

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
GROUP, PORT = "239.1.2.3", 6000
SIZES = [300_000, 150_000]


def _app(emu: Emulation, host: str, *args: str) -> subprocess.Popen:
    """The app in a host, tracked by the emulation (stopped and reaped at teardown)."""
    return emu.popen(emu.host(host), [sys.executable, "-m", "apps.filexfer", *args],
                     cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _transfer(emu: Emulation, topo: topos.Topology, mode: str, tmp: Path) -> dict:
    recvs = {}
    for i, r in enumerate(topo.receivers, start=1):
        ip = topo.node(r).ip
        args = ["recv", "--listen", f"0.0.0.0:{PORT}" if mode == "multicast" else f"{ip}:{PORT}",
                "--id", str(i), "--report", str(tmp / f"{mode}-{r}.json"), "--timeout", "40"]
        if mode == "multicast":
            args += ["--group", GROUP, "--iface", ip]
        if r == "r1":
            args += ["--drop-every", "25"]     # r1 loses every 25th datagram: repaired
        recvs[r] = _app(emu, r, *args)
    deadline = time.monotonic() + 20
    for r, p in recvs.items():              # readiness: each prints 'listening ...'
        line = first_line(p, deadline - time.monotonic())
        assert line.startswith("listening"), (r, line)
    before = port_counters(emu)
    dest = ",".join(f"{topo.node(r).ip}:{PORT}" for r in topo.receivers)
    args = ["send", "--receivers", dest, "--mode", mode, "--sizes",
            ",".join(map(str, SIZES)), "--rate-mbps", "8", "--timeout", "20",
            "--report", str(tmp / f"{mode}-sender.json"), "--mcast-if", topo.node("snd").ip]
    if mode == "multicast":
        args += ["--group", f"{GROUP}:{PORT}", "--ttl", "8"]
    sender = _app(emu, "snd", *args)
    out, err = sender.communicate(timeout=120)
    assert sender.returncode == 0, err
    for p in recvs.values():
        p.communicate(timeout=60)
    after = port_counters(emu)
    port = topo.port("agg", "snd")
    return {"uplink_bytes": after[("agg", port)].rx_bytes - before[("agg", port)].rx_bytes,
            "receivers": {r: json.loads((tmp / f"{mode}-{r}.json").read_text())
                          for r in topo.receivers}}


@pytest.mark.parametrize("dataplane,mode", [("bpf", "multicast"), ("ovs", "multicast"),
                                            ("bpf", "unicast")])
def test_rounds_complete_through_the_network(dataplane, mode, tmp_path):
    topo = topos.build("orca,receivers=4,racks=2")
    plan = routing.make_plan(topo, "ecmp")
    add_group(topo, plan, GROUP, "snd", topo.receivers)
    with Emulation(topo, plan, LinkSpec(10, 100), tmp_path, f"t-fx-{dataplane}",
                   dataplane=dataplane) as emu:
        got = _transfer(emu, topo, mode, tmp_path)
    for r, rep in got["receivers"].items():
        assert rep["ok"], (r, rep.get("error"))
        assert [x["bytes_received"] for x in rep["rounds"]] == SIZES, r
        assert all(x["complete"] for x in rep["rounds"]), r
    assert sum(x["repaired"] for x in got["receivers"]["r1"]["rounds"]) > 0
    # the sender's link: each file byte once (multicast) or once per receiver (unicast),
    # plus headers (1478 B on the wire a 1400-B chunk: 1.056), ends, acks and repairs
    per_copy = got["uplink_bytes"] / sum(SIZES)
    copies = 1 if mode == "multicast" else len(topo.receivers)
    print(f"{dataplane} {mode}: sender link bytes / file bytes = {per_copy:.3f}")
    assert copies * 1.0 < per_copy < copies * 1.15, per_copy
