"""Host networking: offloads, static ARP, IPv6 off, and MPTCP's extra addresses/endpoints."""
from __future__ import annotations

import subprocess
from typing import Any

from topos.base import Topology
from topos.grin import GrinTopology

from . import netns
from .mptcp_pm import HostPlan, UserspacePM
from .proc import RunError, check, in_ns


def offloads_off(where: dict[int | None, list[str]]) -> None:
    """One skb = one wire packet: offloads off, and at most one segment per skb, on the
    interfaces of each namespace (pid -> names; None: this process's).

    With GSO/TSO a host hands 64 kB super-packets to the link, which a pfifo counted in
    packets would then queue as one (and HTB would release as one); the OVS userspace
    datapath also stalls on them.  Turning the offloads off is not enough: TCP still builds
    multi-segment skbs and the stack splits them only after the qdisc (measured: 1,486 skbs
    through HTB for 41,965 segments at 100 Mb/s), hence ``gso_max_segs 1``.

    Set in this process by ioctl and rtnetlink (netns.offloads_off: what ``ethtool -K IF tx
    off tso off gso off gro off rx off`` and ``ip link set IF gso_max_segs 1`` do, without
    two programs per interface), and read back.
    """
    try:
        still = netns.offloads_off(where)
    except OSError as exc:
        raise RunError(f"could not turn offloads off: {exc}") from None
    if still:
        intf, names = next(iter(still.items()))
        raise RunError(f"offloads still on after turning them off: {intf}: {', '.join(names)}"
                       f"{f' (and {len(still) - 1} more interfaces)' if len(still) > 1 else ''}")


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


#: the priority of the rules that keep a server's path manager from opening subflows
GUARD_RULE_PRIORITY = 100


def mptcp_endpoints(topo: Topology, host_pids: dict[str, int], host_intf: dict[str, str],
                    subflows: int, guard: bool = True) -> dict[str, Any]:
    """Give every host ``subflows - 1`` extra addresses as MPTCP 'subflow' endpoints.

    Upstream MPTCP's in-kernel path manager opens one extra subflow per local endpoint to the
    peer's address, so a single-homed host gets N subflows from N-1 extra addresses; their
    different 5-tuples are hashed onto different paths by the fabric.

    Every host is the client of one connection and the server of another, so its endpoints
    serve both sides, and a server's path manager also opens subflows from them, toward
    the client's address and source port, where nothing listens.  Until the client refuses
    them (an RTT), they count against the server's limit of ``subflows - 1``, and the
    client's MP_JOINs that arrive meanwhile are refused at their last ACK; the path
    manager does not try those again (bench/bench_subflow_joins.py: 11 of 48 connections
    short of subflows at 3.5 s on a k=4 fat tree, every one with a refused join).
    ``guard``: a policy rule per extra address forbids TCP connections from it to a port
    in the local port range (where a client's source port lies, and no server listens),
    so a server's attempt fails at connect and frees its slot at once; the clients'
    joins go to the servers' listening ports and are not touched.  Returns the facts.
    """
    if not 1 <= subflows <= 8:
        raise RunError("--subflows must be 1..8 (upstream MPTCP allows at most 8 subflows)")
    extra = subflows - 1
    static_arp(topo, host_pids, host_intf, extra=extra)
    ports = ""
    if guard and extra:
        # every host is a namespace dcrepro made, with the kernel's default range: one look
        first = next(iter(host_pids.values()))
        lo, hi = check(in_ns(first, ["cat", "/proc/sys/net/ipv4/ip_local_port_range"])).split()
        ports = f"{lo}-{hi}"
    for h, pid in host_pids.items():
        intf = host_intf[h]
        lines = ["mptcp endpoint flush",
                 f"mptcp limits set subflow {extra} add_addr_accepted {extra}"]
        for ip in topo.extra_ips(h, extra):
            # without `dev` when guarded: a subflow bound to its device ignores a failed
            # route lookup (IPv4 then assumes the peer is on link), so the rule would not
            # hold; a single-homed host routes every subflow through its one interface anyway
            lines += [f"addr replace {ip}/8 dev {intf}",
                      f"mptcp endpoint add {ip} {'' if guard else f'dev {intf} '}subflow"]
            if guard:
                lines.append(f"rule add from {ip} ipproto tcp dport {ports} prohibit "
                             f"priority {GUARD_RULE_PRIORITY}")
        check(in_ns(pid, ["ip", "-batch", "-"]), input_text="\n".join(lines) + "\n")
    if not extra:
        return {"mptcp_server_subflows": "none (no extra endpoints)"}
    return {"mptcp_server_subflows": f"refused at connect (to ports {ports})" if guard
            else "allowed"}


def host_forwarding(topo: GrinTopology, host_pids: dict[str, int], host_intf: dict[str, str],
                    macs: dict[tuple[str, str], str]) -> None:
    """Servers that forward for their neighbours over horizontal (host-to-host) links.

    ``topo`` (topos/grin.py) gives ``horizontal_addresses()``: (t, s) -> the addresses of
    t's interface facing s, inside s's prefix, and ``owner(ip)``.  ``macs[(host, peer)]`` is
    the MAC of host's interface facing peer.  For every horizontal link t-s:

    * t holds the addresses on that interface, and traffic sourced from them leaves through
      it (policy rules and a table whose default route is s, on-link);
    * s routes the addresses to t over the link (s forwards: ip_forward on, rp_filter off);
    * every host's neighbour table maps the addresses to their prefix owner s (the fabric
      delivers by MAC, so this is the paper's "switches route by prefix").
    """
    links = topo.horizontal_addresses()
    entries = [(ip, topo.node(topo.owner(ip)).mac) for ips in links.values() for ip in ips]
    per_host: dict[str, list[str]] = {h: [] for h in host_pids}
    for h in host_pids:
        own = topo.node(h).mac
        per_host[h] += [f"neigh replace {ip} lladdr {mac} dev {host_intf[h]} nud permanent"
                        for ip, mac in entries if mac != own]
    for (t, s), ips in sorted(links.items()):
        t_if, s_if = f"{t}-eth{topo.port(t, s)}", f"{s}-eth{topo.port(s, t)}"
        gw, table = topo.node(s).ip, 100 + topo.port(t, s)
        per_host[t] += [f"route replace default via {gw} dev {t_if} onlink table {table}",
                        f"neigh replace {gw} lladdr {macs[(s, t)]} dev {t_if} nud permanent"]
        for i, ip in enumerate(ips):
            per_host[t] += [f"addr replace {ip}/32 dev {t_if}",
                            # iif lo: only what t sends itself; a packet t forwards
                            # keeps the main table even when its source is t's address
                            f"rule add from {ip} iif lo table {table} priority "
                            f"{1000 + 100 * i + topo.port(t, s)}"]
            per_host[s] += [f"route replace {ip}/32 dev {s_if}",
                            f"neigh replace {ip} lladdr {macs[(t, s)]} dev {s_if} nud permanent"]
    # accept_local: a packet from one of t's horizontal addresses to an address behind t
    # comes back through t (t -> s -> fabric -> t -> neighbour), with t's own source
    sysctls = ("net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 "
               "net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.all.send_redirects=0 "
               "net.ipv4.conf.all.accept_local=1")
    for h, pid in host_pids.items():
        ifs = " ".join(f"net.ipv4.conf.{h}-eth{p}.rp_filter=0" for p in topo.ports(h))
        check(in_ns(pid, ["sh", "-c", f"sysctl -qw {sysctls} {ifs}"]))
        check(in_ns(pid, ["ip", "-batch", "-"]), input_text="\n".join(per_host[h]) + "\n")


#: seconds before an unechoed ADD_ADDR is announced again (see grin_mptcp_endpoints)
ADD_ADDR_TIMEOUT = 1


def grin_mptcp_endpoints(topo: GrinTopology, host_pids: dict[str, int],
                         pm: str = "kernel") -> dict[str, Any]:
    """MPTCP over horizontal links: secondary addresses are announced ('signal'), outgoing
    ones open subflows ('subflow'); see topos/grin.py for why they are two.

    Star (``topo.full_mesh()`` false): the client's in-kernel path manager opens one subflow
    from each of its outgoing addresses to the server's primary address and, for each
    secondary address the server announces (ADD_ADDR), one from its primary address:
    1 + d(client) + d(server) subflows, the paper's "one per horizontal link plus the
    direct one".  Full mesh (when (1 + d)^2 fits upstream's limit of 9): the outgoing
    addresses and the primary one are 'fullmesh' subflow endpoints, so every local address
    opens a subflow to every address the server has (measured on a GRIN1 pair, 10 Mb/s
    links: star 14.5 Mb/s over 3 subflows, mesh 18.7 Mb/s over 4, of 19.1 possible).

    ``pm="userspace"``: no endpoints; every host runs the kernel's userspace path manager,
    and grin_userspace_pm opens the full mesh for every degree (no limit of 8 there).
    """
    if pm == "userspace":
        for pid in host_pids.values():
            check(in_ns(pid, ["sysctl", "-qw", "net.mptcp.path_manager=userspace"]))
        return {"path_manager": "userspace", "subflow_limit": None,
                "subflow_design": "full mesh"}
    mesh = topo.full_mesh()
    limit = 8 if mesh else min(8, 2 * max(len(topo.faces(h)) for h in host_pids))
    flags = "subflow fullmesh" if mesh else "subflow"
    for h, pid in host_pids.items():
        # A client's path manager takes one ADD_ADDR at a time: one arriving while it still
        # handles the previous is dropped unechoed (MIB AddAddrDrop), and the server
        # announces it again only after add_addr_timeout (120 s by default).
        check(in_ns(pid, ["sysctl", "-qw", f"net.mptcp.add_addr_timeout={ADD_ADDR_TIMEOUT}"]))
        lines = ["mptcp endpoint flush",
                 f"mptcp limits set subflow {limit} add_addr_accepted {limit}"]
        if mesh and topo.faces(h):
            # the primary address too, so that it opens subflows to announced addresses.
            # Not bound to the uplink (no "dev"): the kernel binds an endpoint's subflows
            # to its device, and the subflow to a neighbour's secondary address, which is
            # in h's own prefix, is routed over the horizontal link (topo.subflow_path);
            # bound to eth0 it found no neighbour entry there, sat in SYN-SENT and died
            # 3 s later (session 46: 2 of 4 subflows of a GRIN1 pair, every time)
            lines.append(f"mptcp endpoint add {topo.node(h).ip} {flags}")
        for s in topo.faces(h):
            dev = f"{h}-eth{topo.port(h, s)}"
            lines += [f"mptcp endpoint add {topo.secondary[(h, s)]} dev {dev} signal",
                      f"mptcp endpoint add {topo.outgoing[(h, s)]} dev {dev} {flags}"]
        check(in_ns(pid, ["ip", "-batch", "-"]), input_text="\n".join(lines) + "\n")
    return {"path_manager": "kernel", "subflow_limit": limit,
            "add_addr_timeout_s": ADD_ADDR_TIMEOUT,
            "subflow_design": "full mesh" if mesh else "star"}


def userspace_pm_available() -> bool:
    """Whether this kernel has the userspace MPTCP path manager."""
    try:
        with open("/proc/sys/net/mptcp/available_path_managers", encoding="ascii") as fh:
            return "userspace" in fh.read().split()
    except OSError:
        return False


def grin_userspace_pm(topo: GrinTopology, host_pids: dict[str, int],
                      pairs: list[tuple[str, str]]) -> UserspacePM:
    """The path manager of every host (not started): a connection src -> dst opens the full
    mesh of (src's primary and outgoing addresses) x (dst's primary and secondary ones).
    Every host gets a listener, since a host that only accepts takes joins only then."""
    where: dict[str, tuple[Any, HostPlan]] = {}
    for h, pid in host_pids.items():
        if h not in topo.servers:
            continue
        ids = {a: i for i, a in enumerate([topo.ip(h)] + topo.outgoing_addresses(h))}
        mesh = {topo.ip(t): topo.designed_subflows(h, t, mesh=True) for s, t in pairs if s == h}
        where[h] = (pid, HostPlan(ids, mesh))
    try:
        return UserspacePM(where)
    except OSError as exc:
        raise RunError(f"userspace MPTCP path manager: {exc}") from None
