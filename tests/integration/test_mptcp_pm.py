"""The userspace MPTCP path manager opens more subflows than the in-kernel one may (issue #28,
part 5): two plain namespaces joined by 4 veth pairs (4 addresses a side), one MPTCP
connection, and emulator/mptcp_pm.py asking for every one of the 4 x 4 address pairs.

Run alone with ``-s`` to see what the kernel did (subflows established, refusals with the
kernel's messages).
"""
from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
from collections.abc import Iterator

import pytest

from emulator.mptcp_pm import EV_SUB_ESTABLISHED, HostPlan, UserspacePM, wait_for
from emulator.netns import in_namespaces

pytestmark = pytest.mark.integration

IPPROTO_MPTCP, SOL_MPTCP, MPTCP_INFO = 262, 284, 1
NS = ("dcrpm-c", "dcrpm-s")
LINKS = 4
PORT = 5201


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, timeout=10)


@contextlib.contextmanager
def two_namespaces(pm: str) -> Iterator[tuple[list[str], list[str]]]:
    """Client and server namespaces, LINKS veth pairs, path manager ``pm`` in both; yields
    (client addresses, server addresses); removes the namespaces."""
    for ns in NS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    try:
        for ns in NS:
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                            f"net.mptcp.path_manager={pm}", "net.ipv4.conf.all.rp_filter=0",
                            "net.ipv4.conf.default.rp_filter=0"], check=True, timeout=10)
        caddr = [f"10.99.{i}.1" for i in range(LINKS)]
        saddr = [f"10.99.{i}.2" for i in range(LINKS)]
        for i in range(LINKS):
            _ip("link", "add", f"pmc{i}", "netns", NS[0], "type", "veth",
                "peer", "name", f"pms{i}", "netns", NS[1])
            for ns, dev, a in ((NS[0], f"pmc{i}", caddr[i]), (NS[1], f"pms{i}", saddr[i])):
                _ip("-n", ns, "addr", "add", f"{a}/24", "dev", dev)
                _ip("-n", ns, "link", "set", dev, "up")
        yield caddr, saddr
    finally:
        for ns in NS:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def extra_subflows(sock: socket.socket) -> int:
    """mptcp_info.mptcpi_subflows: the connection's subflows besides the initial one."""
    return struct.unpack_from("=B", sock.getsockopt(SOL_MPTCP, MPTCP_INFO, 64))[0]


def test_userspace_pm_opens_all_16_subflows_of_a_4x4_mesh() -> None:
    with two_namespaces("userspace") as (caddr, saddr):
        mesh = [(a, b) for a in caddr for b in saddr]
        ids = {a: i for i, a in enumerate(caddr)}     # the initial address keeps id 0
        paths = [f"/run/netns/{ns}" for ns in NS]
        where = {"client": (paths[0], HostPlan(ids, {saddr[0]: mesh})),
                 "server": (paths[1], HostPlan({}))}   # a listener: the server takes joins
        csock, lsock = in_namespaces(paths, lambda _p: socket.socket(
            socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP))
        with lsock, csock, UserspacePM(where) as pm:
            lsock.bind(("0.0.0.0", PORT))
            lsock.listen(64)
            csock.bind((caddr[0], 0))
            csock.connect((saddr[0], PORT))
            conn, _ = lsock.accept()
            with conn:
                # data both ways: the client is fully established (and the PM told) only
                # once the server has acknowledged at the MPTCP level
                csock.sendall(b"x" * 10000)
                conn.recv(65536)
                conn.sendall(b"y" * 1000)
                client = pm.served[0]
                wait_for(lambda: sum(e.kind == EV_SUB_ESTABLISHED for e in client.seen)
                         >= len(mesh) - 1 or client.refused, 10)
                wait_for(lambda: extra_subflows(conn) >= len(mesh) - 1, 3)
                got = {"client_extra": extra_subflows(csock),
                       "server_extra": extra_subflows(conn), **pm.summary()}
        print(f"\n4x4 mesh, userspace PM: {got}")
        assert not got["pm_error"], got
        assert got["pm_refusals"] == [], got
        assert got["client_extra"] == got["server_extra"] == len(mesh) - 1, got


def test_in_kernel_limit_is_8_extra_subflows() -> None:
    """The in-kernel path manager's limit, as the kernel states it."""
    with two_namespaces("kernel"):
        ok = subprocess.run(["ip", "-n", NS[0], "mptcp", "limits", "set", "subflow", "8"],
                            capture_output=True, text=True, check=False)
        refused = subprocess.run(["ip", "-n", NS[0], "mptcp", "limits", "set", "subflow", "9"],
                                 capture_output=True, text=True, check=False)
    print(f"\nsubflow 8: rc {ok.returncode}; subflow 9: rc {refused.returncode} "
          f"{refused.stderr.strip()}")
    assert ok.returncode == 0 and refused.returncode != 0


_CONNECT = """
import errno, socket, sys
s = socket.socket()
s.bind((sys.argv[1], 0))
s.settimeout(2)
try:
    s.connect((sys.argv[2], int(sys.argv[3])))
    print("connected")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
"""


@pytest.mark.parametrize("guard", [True, False])
def test_guard_keeps_a_server_from_opening_subflows(guard, tmp_path):
    """hostnet.mptcp_endpoints's guard: every host has 'subflow' endpoints, so a server's
    in-kernel path manager also opens subflows from them toward the client's source port,
    which the client refuses, and meanwhile they fill the server's limit (the joins bench:
    26 of 28 connections short of subflows had a join refused so).  With the guard, a TCP
    connect from an extra address to a port of the local port range fails at once (EACCES),
    while one to a server's port is not touched; without it, it reaches the peer.  With
    the guard the client gets its subflows and no join is refused.  Without it no transfer
    is asserted: whether a server's own attempts crowd out the client's joins is a race
    (the joins bench: 12 of 48 connections short without the guard), and in CI it once
    broke iperf3's control connection."""
    import sys

    import routing
    import topos
    from emulator.emulation import Emulation
    from emulator.shaping import LinkSpec
    from harness.traffic import BASE_PORT, Flow, run_iperf

    topo = topos.build("fattree,k=2")
    client, server = "0_0_2", "1_0_2"
    with Emulation(topo, routing.make_plan(topo, "st"), LinkSpec(10, 100), tmp_path,
                   "t-mptcp-guard") as emu:
        facts = emu.configure_mptcp(4, guard=guard)
        extra = topo.extra_ips(server, 3)[0]
        peer = topo.ip(client)
        to_client = emu.host_cmd(emu.host(server), [sys.executable, "-c", _CONNECT, extra,
                                                    peer, "40000"]).strip()
        to_server_port = emu.host_cmd(emu.host(server), [sys.executable, "-c", _CONNECT,
                                                         extra, peer, str(BASE_PORT)]).strip()
        flows = [Flow(client, server)]
        if guard:
            run_iperf(emu, flows, "mptcp", duration=3, trim=1, out=tmp_path / "mptcp",
                      subflows=4)
        rejected = emu.hosts_cmd([server], ["nstat", "-a", "-s", "-z",
                                            "MPTcpExtMPJoinRejected"])[server].split()
    print(json.dumps({"guard": guard, "facts": facts, "to_client": to_client,
                      "to_server_port": to_server_port, "rejected": rejected,
                      "subflows": len(flows[0].subflows) if guard else None}))
    assert to_server_port == "ECONNREFUSED"       # nothing listens there now; not refused
    if guard:
        assert len(flows[0].subflows) == 4, flows[0]
        assert facts["mptcp_server_subflows"].startswith("refused at connect"), facts
        assert to_client == "EACCES"
        assert rejected[rejected.index("MPTcpExtMPJoinRejected") + 1] == "0", rejected
    else:
        assert facts["mptcp_server_subflows"] == "allowed", facts
        assert to_client == "ECONNREFUSED"
