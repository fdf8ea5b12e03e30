"""The one topology definition shared by the emulator, the controller and the model.

A Topology is pure data: named switches and hosts with structural identities (DPID, IP, MAC)
and links with explicit port numbers.  Mininet, the routing planner and the flow model all
read the same object, rebuilt from the same spec string, so the network is never defined
twice.  Port numbers follow Mininet's conventions (switch ports from 1, host ports from 0) so
that ``port(a, b)`` is the OpenFlow port number in the running switch.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import networkx as nx

# Primary host addresses keep their second octet below this, extra (MPTCP subflow) addresses
# use 10.(128+i).x.y, so both stay inside 10.0.0.0/8, on-link for every host.
EXTRA_ADDR_BASE = 128
MAX_EXTRA_ADDRS = 8

#: the run's link rate (Mb/s) when it names none (--bw): the one default of every view
DEFAULT_BW = 10.0


class TopologyError(ValueError):
    """The requested topology cannot be built; the message is meant for the user."""


@dataclass
class Node:
    """A switch or a host; ``attrs`` carries structure-specific facts (pod, layer, ...)."""

    name: str
    kind: str  # "switch" or "host"
    dpid: int | None = None
    ip: str | None = None
    mac: str | None = None
    index: int = 0  # position among nodes of its kind, in insertion order
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Link:
    """An undirected link; ``bw`` (Mb/s) overrides the run's link rate when set, ``scale``
    multiplies it (a ToR uplink worth three server links: ``scale=3``).  Its rate in a run is
    ``Topology.link_rates``'s."""

    a: str
    port_a: int
    b: str
    port_b: int
    bw: float | None = None
    scale: float | None = None

    def other(self, name: str) -> str:
        """The far end of the link as seen from ``name``."""
        return self.b if name == self.a else self.a


class Topology:
    """Switches, hosts and port-numbered links; subclasses fill it in their constructor."""

    #: the spec string that rebuilds exactly this topology (set by subclasses)
    spec: str = ""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._links: list[Link] = []
        self._ports: dict[str, dict[int, tuple[str, int]]] = {}
        self._port_of: dict[tuple[str, str], int] = {}
        self._dpids: set[int] = set()
        self._ips: set[str] = set()
        #: link_rates' resolutions by the run's link rate (dropped when a link changes)
        self._rates: dict[float, dict[tuple[str, str], float]] = {}

    # -- building -------------------------------------------------------------------------
    def add_switch(self, name: str, dpid: int, **attrs: Any) -> str:
        """Add a switch with an explicit, unique DPID."""
        self._check_new(name)
        if dpid in self._dpids or not 0 < dpid < 2**64:
            raise TopologyError(f"switch {name}: DPID {dpid} is duplicate or out of range")
        self._dpids.add(dpid)
        index = sum(1 for n in self._nodes.values() if n.kind == "switch")
        self._nodes[name] = Node(name, "switch", dpid=dpid, index=index, attrs=attrs)
        self._ports[name] = {}
        return name

    def add_host(self, name: str, ip: str, mac: str, **attrs: Any) -> str:
        """Add a host with a unique primary IP (10.x.y.z, x < 128) and MAC."""
        self._check_new(name)
        octets = [int(o) for o in ip.split(".")]
        if len(octets) != 4 or octets[0] != 10 or not 0 <= octets[1] < EXTRA_ADDR_BASE:
            raise TopologyError(f"host {name}: IP {ip} must be 10.x.y.z with x < 128")
        if ip in self._ips:
            raise TopologyError(f"host {name}: IP {ip} already used")
        self._ips.add(ip)
        index = sum(1 for n in self._nodes.values() if n.kind == "host")
        self._nodes[name] = Node(name, "host", ip=ip, mac=mac, index=index, attrs=attrs)
        self._ports[name] = {}
        return name

    def add_link(self, a: str, b: str, bw: float | None = None,
                 scale: float | None = None) -> Link:
        """Link two existing nodes on their next free ports (no parallel links)."""
        for n in (a, b):
            if n not in self._nodes:
                raise TopologyError(f"link {a}-{b}: unknown node {n}")
        if a == b or (a, b) in self._port_of:
            raise TopologyError(f"link {a}-{b}: self-loop or parallel link")
        if scale is not None and not scale > 0:
            raise TopologyError(f"link {a}-{b}: scale {scale} must be > 0")
        link = Link(a, self._next_port(a), b, self._next_port(b), bw, scale)
        self._attach(link)
        return link

    def remove_link(self, a: str, b: str) -> Link:
        """Remove the link between a and b; its ports become free for reuse."""
        port_a = self._port_of.pop((a, b), None)
        if port_a is None:
            raise TopologyError(f"no link {a}-{b} to remove")
        port_b = self._port_of.pop((b, a))
        del self._ports[a][port_a], self._ports[b][port_b]
        link = next(l for l in self._links if {l.a, l.b} == {a, b})
        self._links.remove(link)
        self._rates.clear()
        return link

    def _attach(self, link: Link) -> None:
        self._links.append(link)
        self._rates.clear()
        self._ports[link.a][link.port_a] = (link.b, link.port_b)
        self._ports[link.b][link.port_b] = (link.a, link.port_a)
        self._port_of[(link.a, link.b)] = link.port_a
        self._port_of[(link.b, link.a)] = link.port_b

    def _next_port(self, name: str) -> int:
        # lowest free port, so that a removed link's port is reused like a freed socket
        port = 0 if self._nodes[name].kind == "host" else 1
        while port in self._ports[name]:
            port += 1
        return port

    def _check_new(self, name: str) -> None:
        if name in self._nodes:
            raise TopologyError(f"node {name} defined twice")
        # Mininet names interfaces NAME-ethN and Linux allows 15 characters
        if not name or len(name) > 9 or not all(c.isalnum() or c == "_" for c in name):
            raise TopologyError(f"node name {name!r} must be 1-9 characters [A-Za-z0-9_]")

    # -- queries --------------------------------------------------------------------------
    def node(self, name: str) -> Node:
        """The node called ``name``."""
        try:
            return self._nodes[name]
        except KeyError:
            raise TopologyError(f"unknown node {name}") from None

    def ip(self, host: str) -> str:
        """The primary address of ``host`` (TopologyError for a switch or unknown name)."""
        ip = self.node(host).ip
        if ip is None:
            raise TopologyError(f"{host} is a switch: it has no address")
        return ip

    def mac(self, host: str) -> str:
        """The MAC address of ``host`` (TopologyError for a switch or unknown name)."""
        mac = self.node(host).mac
        if mac is None:
            raise TopologyError(f"{host} is a switch: it has no MAC address")
        return mac

    def hosts(self) -> list[str]:
        """Host names in insertion order."""
        return [n.name for n in self._nodes.values() if n.kind == "host"]

    def switches(self) -> list[str]:
        """Switch names in insertion order."""
        return [n.name for n in self._nodes.values() if n.kind == "switch"]

    def links(self) -> list[Link]:
        """All links in insertion order."""
        return list(self._links)

    def is_switch(self, name: str) -> bool:
        """True for switches, False for hosts."""
        return self.node(name).kind == "switch"

    def port(self, a: str, b: str) -> int:
        """The port of ``a`` that faces ``b``."""
        try:
            return self._port_of[(a, b)]
        except KeyError:
            raise TopologyError(f"no link {a}-{b}") from None

    def ports(self, name: str) -> dict[int, tuple[str, int]]:
        """Port number -> (peer, peer port) for every connected port of ``name``."""
        return dict(sorted(self._ports[name].items()))

    def neighbors(self, name: str) -> list[str]:
        """Peers of ``name`` ordered by local port number."""
        return [peer for _, (peer, _) in sorted(self._ports[name].items())]

    def access_switch(self, host: str) -> str:
        """The switch the host's lowest-numbered interface attaches to."""
        for peer in self.neighbors(host):
            if self.is_switch(peer):
                return peer
        raise TopologyError(f"host {host} has no switch link")

    def hosts_of(self, switch: str) -> list[str]:
        """Hosts whose access switch is ``switch``, in port order."""
        return [p for p in self.neighbors(switch)
                if not self.is_switch(p) and self.access_switch(p) == switch]

    def link_rates(self, bw: float) -> Mapping[tuple[str, str], float]:
        """Every link's rate in Mb/s when the run's link rate is ``bw``, by (node, peer) both
        ways: the link's own ``bw`` if it has one, else the run's times its ``scale``.  The
        one place a link's rate is resolved: once per run rate, then kept (read-only)."""
        rates = self._rates.get(bw)
        if rates is None:
            rates = self._rates[bw] = {}
            for l in self._links:
                rate = l.bw if l.bw is not None else bw * l.scale if l.scale is not None else bw
                rates[(l.a, l.b)] = rates[(l.b, l.a)] = rate
        return MappingProxyType(rates)

    def switch_graph(self) -> nx.Graph:
        """Undirected graph of switches only (what routing computes paths on)."""
        g = nx.Graph()
        g.add_nodes_from(self.switches())
        g.add_edges_from((l.a, l.b) for l in self._links
                         if self.is_switch(l.a) and self.is_switch(l.b))
        return g

    def graph(self) -> nx.Graph:
        """Undirected graph of every node and link."""
        g = nx.Graph()
        g.add_nodes_from(self._nodes)
        g.add_edges_from((l.a, l.b) for l in self._links)
        return g

    def extra_ips(self, host: str, count: int) -> list[str]:
        """``count`` extra addresses of a host (for MPTCP subflows), derived from its index."""
        if not 0 <= count <= MAX_EXTRA_ADDRS:
            raise TopologyError(f"at most {MAX_EXTRA_ADDRS} extra addresses per host")
        idx = self.node(host).index + 1  # +1: no x.y.0.0 addresses
        if idx >= 2**16:
            raise TopologyError("too many hosts for extra addresses")
        return [f"10.{EXTRA_ADDR_BASE + i}.{idx >> 8}.{idx & 0xFF}" for i in range(count)]

    def validate(self) -> None:
        """Raise TopologyError unless every host reaches every other host."""
        if len(self.hosts()) < 2:
            raise TopologyError(f"{self.spec or type(self).__name__}: a topology needs at least "
                                "two hosts")
        if not nx.is_connected(self.graph()):
            raise TopologyError(f"{self.spec or type(self).__name__}: network is disconnected")

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes.values())

    def summary(self) -> dict[str, Any]:
        """Counts for config.json and logs."""
        return {"spec": self.spec, "switches": len(self.switches()),
                "hosts": len(self.hosts()), "links": len(self._links)}


def mac_from_octets(*octets: int) -> str:
    """MAC 00:00:00:a:b:c from structural ids (RipL style), each 0..255."""
    padded = [0] * (6 - len(octets)) + list(octets)
    if any(not 0 <= o <= 255 for o in padded):
        raise TopologyError(f"MAC octets out of range: {octets}")
    return ":".join(f"{o:02x}" for o in padded)
