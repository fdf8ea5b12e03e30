"""A multicast tree on both dataplanes (root only): one UDP send reaches every member once,
and a host that joined the group without being a member of the tree gets nothing."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import routing
import topos
from emulator.emulation import Emulation
from emulator.proc import in_ns
from emulator.shaping import LinkSpec
from routing.multicast import add_group

pytestmark = pytest.mark.integration
GROUP, PORT, COUNT = "239.1.2.3", 5400, 50

#: a listener counts what it receives until the sender has finished (the ``sent`` file
#: exists) and then 1.5 s passed without a packet: a member and a non-member listen exactly
#: as long, and neither stops on a clock that a busy host could outrun
RECEIVE = f"""
import os, socket, struct, sys, time
ip, ready, sent = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", {PORT}))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
             struct.pack("4s4s", socket.inet_aton("{GROUP}"), socket.inet_aton(ip)))
open(ready, "w").close()
s.settimeout(0.1)
n, last, end = 0, time.monotonic(), time.monotonic() + 60
while time.monotonic() < end:
    try:
        s.recv(2048)
        n += 1
        last = time.monotonic()
    except socket.timeout:
        if os.path.exists(sent):
            last = max(last, os.stat(sent).st_mtime - time.time() + time.monotonic())
            if time.monotonic() - last >= 1.5:
                break
print(n)
"""

SEND = f"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(sys.argv[1]))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 8)
for i in range({COUNT}):
    s.sendto(b"x" * 200, ("{GROUP}", {PORT}))
    time.sleep(0.005)
"""


@pytest.mark.parametrize("dataplane", ["bpf", "ovs"])
def test_one_send_reaches_every_member_once(dataplane: str, tmp_path: Path) -> None:
    topo = topos.build("fattree,k=4")
    plan = routing.make_plan(topo, "ecmp")
    members = ["0_0_3", "1_1_2", "3_1_3"]
    add_group(topo, plan, GROUP, "0_0_2", members)
    listeners = [*members, "2_0_2"]          # 2_0_2 joins but is not on the tree
    with Emulation(topo, plan, LinkSpec(10, 100), tmp_path, f"t-mc-{dataplane}",
                   dataplane=dataplane) as emu:
        procs = {}
        for h in listeners:
            ready = tmp_path / f"ready-{h}"
            # tracked by the emulation: stopped and reaped at teardown whatever happens
            procs[h] = emu.popen(emu.host(h), [sys.executable, "-c", RECEIVE,
                                               topo.node(h).ip, str(ready),
                                               str(tmp_path / "sent")],
                                 stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not all((tmp_path / f"ready-{h}").exists() for h in listeners):
            assert time.monotonic() < deadline, "receivers did not join in time"
            time.sleep(0.05)
        subprocess.run(in_ns(emu.host("0_0_2").pid, [sys.executable, "-c", SEND,
                                                     topo.node("0_0_2").ip]),
                       check=True, timeout=30)
        (tmp_path / "sent").touch()
        got = {h: int(p.communicate(timeout=30)[0].strip() or 0) for h, p in procs.items()}
    assert got == {"0_0_3": COUNT, "1_1_2": COUNT, "3_1_3": COUNT, "2_0_2": 0}, got
