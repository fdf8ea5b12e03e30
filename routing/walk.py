"""A pure interpreter of plans: follows one packet through the switch tables, hop by hop.

It executes exactly the plan vocabulary (routing/plan.py), so tests can check reachability,
loop freedom and path choice without a switch, the flow model can route flows the way the
plan would, and both dataplane translations are checked against it.  ``select(switch, n)``
stands in for the switch's choice among ``n`` (hash, random, round robin or counter): it
returns the index taken at ``switch``.
"""
from __future__ import annotations

from collections.abc import Callable

from topos.base import Topology

from .plan import Action, Plan

Select = Callable[[str, int], int]
ETH_TYPE_IP, ETH_TYPE_ARP = 0x0800, 0x0806


class WalkError(RuntimeError):
    """The packet was dropped, looped, or left the network at the wrong host."""


def step(plan: Plan, switch: str, kind: str, dst: str, label: int, in_port: int,
         select: Select) -> tuple[Action, list[tuple[int, int]]]:
    """One switch's decision: its action and the (out port, label after) of every copy."""
    act = plan.switches[switch].lookup(kind, dst, label, in_port)
    if act is None:
        raise WalkError(f"dropped at {switch} (no entry for {kind} {dst}, label {label}, "
                        f"in_port {in_port})")
    base = 0 if act.pop else label
    if act.op == "replicate":
        picked = list(act.choices)
    elif act.op == "forward":
        picked = [act.choices[0]]
    else:
        i = select(switch, len(act.choices))
        if not 0 <= i < len(act.choices):
            raise WalkError(f"select returned {i} for {len(act.choices)} choices")
        picked = [act.choices[i]]
    return act, [(c.port, c.push or base) for c in picked]


def walk(topo: Topology, plan: Plan, src: str, dst: str, select: Select,
         eth_type: int = ETH_TYPE_IP) -> list[str]:
    """Switches a unicast packet from host ``src`` to host ``dst`` crosses; raises WalkError."""
    kind, key = ("arp", topo.ip(dst)) if eth_type == ETH_TYPE_ARP else ("eth", topo.mac(dst))
    here, in_port, label = topo.access_switch(src), topo.port(topo.access_switch(src), src), 0
    path: list[str] = []
    while True:
        if here in path:
            raise WalkError(f"loop {src}->{dst}: {path + [here]}")
        path.append(here)
        try:
            _, outs = step(plan, here, kind, key, label, in_port, select)
        except WalkError as exc:
            raise WalkError(f"{src}->{dst} {exc}") from None
        if len(outs) != 1:
            raise WalkError(f"{src}->{dst}: {here} replicates a unicast packet")
        port, label = outs[0]
        nxt, in_port = topo.ports(here)[port]
        if not topo.is_switch(nxt):
            if nxt != dst:
                raise WalkError(f"{src}->{dst} delivered to {nxt}")
            if label:
                raise WalkError(f"{src}->{dst} delivered with label {label} still on")
            return path
        here = nxt


def tree(topo: Topology, plan: Plan, src: str, dst_mac: str, select: Select,
         max_hops: int = 64) -> dict[str, int]:
    """Hosts a (multicast) frame to ``dst_mac`` from ``src`` reaches, with copies per host.

    Follows every copy; raises WalkError on a loop (a switch seen twice on one copy's way)
    or a copy delivered with a label still on.
    """
    got: dict[str, int] = {}
    sw = topo.access_switch(src)
    stack: list[tuple[str, int, int, tuple[str, ...]]] = [(sw, topo.port(sw, src), 0, (sw,))]
    while stack:
        here, in_port, label, seen = stack.pop()
        if len(seen) > max_hops:
            raise WalkError(f"tree from {src}: more than {max_hops} hops")
        _, outs = step(plan, here, "eth", dst_mac, label, in_port, select)
        for port, new_label in outs:
            nxt, nxt_in = topo.ports(here)[port]
            if not topo.is_switch(nxt):
                if new_label:
                    raise WalkError(f"tree from {src}: {nxt} gets label {new_label}")
                got[nxt] = got.get(nxt, 0) + 1
                continue
            if nxt in seen:
                raise WalkError(f"tree from {src} loops: {list(seen) + [nxt]}")
            stack.append((nxt, nxt_in, new_label, seen + (nxt,)))
    return got


def first_choice(_switch: str, _n: int) -> int:
    """A select() that always takes the first choice."""
    return 0


def _scripted(script: list[int]) -> tuple[Select, list[tuple[int, int]]]:
    """A select() that replays ``script`` and then takes choice 0, recording in the returned
    list every (choice point, n) it decided beyond the script."""
    pos = [0]
    branch: list[tuple[int, int]] = []

    def select(_s: str, n: int) -> int:
        i = pos[0]
        pos[0] += 1
        if i < len(script):
            return script[i]
        branch.append((i, n))
        return 0
    return select, branch


def all_paths(topo: Topology, plan: Plan, src: str, dst: str,
              limit: int = 4096) -> set[tuple[str, ...]]:
    """Every switch path the plan can give src->dst over all choice outcomes (enumerated)."""
    found: set[tuple[str, ...]] = set()
    stack: list[list[int]] = [[]]
    while stack and len(found) < limit:
        script = stack.pop()
        select, branch = _scripted(script)
        found.add(tuple(walk(topo, plan, src, dst, select)))
        # every undecided choice point beyond the script spawns its alternatives
        for i, n in branch:
            for alt in range(1, n):
                stack.append(script + [0] * (i - len(script)) + [alt])
    return found


def split(topo: Topology, plan: Plan, src: str, dst: str) -> dict[tuple[str, ...], float]:
    """How a per-packet sprayed flow divides over its paths: path -> share of its packets.

    Every choice point splits evenly (what random, round-robin and least-sent spraying give
    on average); per-flow hash choices split the same way in expectation over many flows.
    """
    shares: dict[tuple[str, ...], float] = {}
    stack: list[tuple[list[int], float]] = [([], 1.0)]
    while stack:
        script, weight = stack.pop()
        select, branch = _scripted(script)
        path = tuple(walk(topo, plan, src, dst, select))
        if not branch:
            shares[path] = shares.get(path, 0.0) + weight
            continue
        i, n = branch[0]  # expand the first undecided choice evenly, then walk again
        for alt in range(n):
            stack.append((script + [0] * (i - len(script)) + [alt], weight / n))
    return shares
