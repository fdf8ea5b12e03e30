"""Host networking: offloads, static ARP, IPv6 off, and MPTCP's extra addresses/endpoints."""
from __future__ import annotations

import subprocess

from topos.base import Topology

from .proc import RunError, check, in_ns


def offloads_off(pid: int | None, ifs: list[str]) -> None:
    """One skb = one wire packet: offloads off, and at most one segment per skb.

    With GSO/TSO a host hands 64 kB super-packets to the link, which a pfifo counted in
    packets would then queue as one (and HTB would release as one); the OVS userspace
    datapath also stalls on them.  Turning the offloads off is not enough: TCP still builds
    multi-segment skbs and the stack splits them only after the qdisc (measured: 1,486 skbs
    through HTB for 41,965 segments at 100 Mb/s), hence ``gso_max_segs 1``.
    """
    script = "".join(f"ethtool -K {i} tx off tso off gso off gro off rx off 2>/dev/null "
                      f"&& ip link set dev {i} gso_max_segs 1 || echo FAIL {i}; " for i in ifs)
    argv = ["sh", "-c", script]
    out = check(in_ns(pid, argv) if pid else argv, timeout=60)
    if "FAIL" in out:
        raise RunError(f"could not turn offloads off: {out.strip()[:300]}")


def static_arp(topo: Topology, host_pids: dict[str, int], host_intf: dict[str, str],
               extra: int = 0) -> None:
    """Every host knows every other host's MAC for its primary and ``extra`` addresses."""
    entries = []
    for h in topo.hosts():
        node = topo.node(h)
        for ip in [node.ip, *topo.extra_ips(h, extra)]:
            entries.append((ip, node.mac))
    for h, pid in host_pids.items():
        own = topo.node(h).mac
        lines = [f"neigh replace {ip} lladdr {mac} dev {host_intf[h]} nud permanent"
                 for ip, mac in entries if mac != own]
        check(in_ns(pid, ["ip", "-batch", "-"]), input_text="\n".join(lines) + "\n")


def disable_ipv6(host_pids: dict[str, int], root_intfs: list[str]) -> bool:
    """IPv6 off in every host and on the switch ports in the root namespace: otherwise each
    end sends its own router solicitations and listener reports into the fabric, where no
    entry matches them and they would count as losses of the switch."""
    ok = True
    for intf in root_intfs:
        try:
            with open(f"/proc/sys/net/ipv6/conf/{intf}/disable_ipv6", "w", encoding="ascii") as fh:
                fh.write("1")
        except OSError:
            ok = False
    for pid in host_pids.values():
        p = subprocess.run(in_ns(pid, ["sh", "-c",
                                       "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6"]),
                           capture_output=True, check=False, timeout=10)
        ok = ok and p.returncode == 0
    return ok


def mptcp_endpoints(topo: Topology, host_pids: dict[str, int], host_intf: dict[str, str],
                    subflows: int) -> None:
    """Give every host ``subflows - 1`` extra addresses as MPTCP 'subflow' endpoints.

    Upstream MPTCP's in-kernel path manager opens one extra subflow per local endpoint to the
    peer's address, so a single-homed host gets N subflows from N-1 extra addresses; their
    different 5-tuples are hashed onto different paths by the fabric.
    """
    if not 1 <= subflows <= 8:
        raise RunError("--subflows must be 1..8 (upstream MPTCP allows at most 8 subflows)")
    extra = subflows - 1
    static_arp(topo, host_pids, host_intf, extra=extra)
    for h, pid in host_pids.items():
        intf = host_intf[h]
        lines = ["mptcp endpoint flush",
                 f"mptcp limits set subflow {extra} add_addr_accepted {extra}"]
        for ip in topo.extra_ips(h, extra):
            lines += [f"addr replace {ip}/8 dev {intf}",
                      f"mptcp endpoint add {ip} dev {intf} subflow"]
        check(in_ns(pid, ["ip", "-batch", "-"]), input_text="\n".join(lines) + "\n")
