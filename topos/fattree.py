"""The k-ary fat tree (Al-Fares et al.), with RipL-style structural identities.

Node ``pod_sw_id``: edge switches ``p_s_1`` (s < k/2), aggregation ``p_s_1`` (s >= k/2),
cores ``k_j_i`` (j, i in 1..k/2), hosts ``p_s_h`` (h in 2..k/2+1).  DPID, IP ``10.p.s.h``
and MAC ``00:00:00:p:s:h`` all follow from the id, so any process rebuilds the same network.
"""
from __future__ import annotations

from collections.abc import Callable

from .base import Topology, TopologyError, mac_from_octets


def node_id_dpid(pod: int, sw: int, idx: int) -> int:
    """DPID of switch (pod, sw, idx): the three ids packed as bytes."""
    return (pod << 16) | (sw << 8) | idx


HostMaker = Callable[[int, int, int], str]


def wire_fattree(topo: Topology, k: int, add_host: HostMaker
                 ) -> tuple[list[str], list[str], list[str]]:
    """Add a k-ary fat tree's switches, hosts and links to ``topo``; ``add_host(pod, sw, h)``
    adds host ``h`` of edge switch ``(pod, sw)`` and returns its name (the fat tree's own
    addressing, or an overlay's).  Returns the edge, aggregation and core switches."""
    if k < 2 or k % 2 or k > 64:
        raise TopologyError(f"fattree: k={k} must be an even number between 2 and 64")
    half = k // 2
    edges, aggs, hosts = [], [], {}
    for pod in range(k):
        for sw in range(half):
            edges.append(topo.add_switch(f"{pod}_{sw}_1", node_id_dpid(pod, sw, 1),
                                         layer="edge", pod=pod))
            for h in range(2, half + 2):
                hosts[(pod, sw, h)] = add_host(pod, sw, h)
        for sw in range(half, k):
            aggs.append(topo.add_switch(f"{pod}_{sw}_1", node_id_dpid(pod, sw, 1),
                                        layer="agg", pod=pod))
    cores = [topo.add_switch(f"{k}_{j}_{i}", node_id_dpid(k, j, i), layer="core")
             for j in range(1, half + 1) for i in range(1, half + 1)]
    # Links in a fixed order so ports are structural: an edge switch's hosts take ports
    # 1..k/2, its uplinks k/2+1..k; an aggregation switch's downlinks come first as well.
    for pod in range(k):
        for sw in range(half):
            e = f"{pod}_{sw}_1"
            for h in range(2, half + 2):
                topo.add_link(e, hosts[(pod, sw, h)])
        for sw in range(half):
            for a in range(half, k):
                topo.add_link(f"{pod}_{sw}_1", f"{pod}_{a}_1")
    for pod in range(k):
        for a_i, a in enumerate(range(half, k)):
            for i in range(1, half + 1):
                topo.add_link(f"{pod}_{a}_1", f"{k}_{a_i + 1}_{i}")
    return edges, aggs, cores


class FatTree(Topology):
    """k-ary fat tree: k pods of k/2 edge + k/2 aggregation switches, (k/2)^2 cores, k^3/4 hosts."""

    def __init__(self, k: int = 4) -> None:
        super().__init__()
        self.k = k
        self.spec = f"fattree,k={k}"
        self.edge_switches, self.agg_switches, self.core_switches = wire_fattree(
            self, k, lambda pod, sw, h: self.add_host(
                f"{pod}_{sw}_{h}", f"10.{pod}.{sw}.{h}", mac_from_octets(pod, sw, h),
                pod=pod))
