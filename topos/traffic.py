"""Traffic patterns as data: who sends to whom, in the spirit of htsim's connection matrices.

Every pattern is a pure function of a list of distinct hashable hosts (names or server
indices) and an explicit ``random.Random``; it returns (source, destination) pairs, or for
``multicast`` a (sender, receivers) tuple.  The draws are part of each experiment's seeded
results, so the RNG calls of a pattern must not change: a reordering gives other pairs for
the same seed.  ``make`` picks a pattern by name (the ``PATTERNS`` table).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Sequence
from random import Random
from typing import Any, TypeVar

__all__ = ["PATTERNS", "GROUP_SIZE", "all_to_all", "group", "make", "many_to_one",
           "multicast", "pairing", "permutation", "random_peers"]

H = TypeVar("H", bound=Hashable)
Pairs = list[tuple[H, H]]
#: what ``make`` returns: pairs, or a multicast (sender, receivers)
Traffic = list[tuple[Any, Any]] | tuple[Any, list[Any]]

GROUP_SIZE = 4  # GRIN's groups (paper 003, section 5.1)


def _distinct(hosts: Sequence[H], need: int, what: str) -> list[H]:
    """``hosts`` as a list, checked: a repeated host would send to itself or twice."""
    out = list(hosts)
    if len(set(out)) != len(out):
        raise ValueError(f"{what} needs distinct hosts, got a repeated one")
    if len(out) < need:
        raise ValueError(f"{what} needs at least {need} hosts, got {len(out)}")
    return out


def permutation(hosts: Sequence[H], rng: Random) -> Pairs[H]:
    """A derangement: every host sends to one other and receives from one.

    Rejection on a fresh copy of ``hosts`` shuffled each try: uniform over derangements,
    and the draw the permutation and fairness experiments have always made.
    """
    src = _distinct(hosts, 2, "permutation")
    while True:
        dst = src[:]
        rng.shuffle(dst)
        if all(a != b for a, b in zip(src, dst)):
            return list(zip(src, dst))


def random_peers(hosts: Sequence[H], rng: Random) -> Pairs[H]:
    """Every host sends to a uniformly random other host (receivers may repeat)."""
    act = _distinct(hosts, 2, "random")
    pairs = []
    for s in act:
        # one draw among n - 1 hosts; the sender's own slot maps to the last host,
        # so the draw is uniform over the others without a rejection loop
        t = rng.choice(act[:-1])
        pairs.append((s, act[-1] if t == s else t))
    return pairs


def group(hosts: Sequence[H], rng: Random, size: int = GROUP_SIZE) -> Pairs[H]:
    """Random groups of ``size`` hosts; in each, one random member receives from the others.

    Hosts left over after the last whole group stay idle.
    """
    act = _distinct(hosts, 2, "group")
    if size < 2:
        raise ValueError(f"group size must be >= 2, got {size}")
    order = act[:]
    rng.shuffle(order)
    pairs: list[tuple[H, H]] = []
    for g in range(len(order) // size):
        members = order[g * size:(g + 1) * size]
        dst = rng.choice(members)
        pairs.extend((m, dst) for m in members if m != dst)
    return pairs


def all_to_all(hosts: Sequence[H], rng: Random, cap: int | None = None) -> Pairs[H]:
    """Every host sends to every other, at most ``cap`` sent and received per host.

    Capped, each host sends to the next ``cap`` hosts of one random cyclic order, so every
    host also receives exactly ``cap``; ``None`` means no cap (n - 1).
    """
    act = _distinct(hosts, 2, "all-to-all")
    if cap is not None and cap < 1:
        raise ValueError(f"all-to-all cap must be >= 1, got {cap}")
    order = act[:]
    rng.shuffle(order)    # drawn even uncapped, so a cap >= n - 1 gives the same pairs
    n = len(order)
    fan = n - 1 if cap is None else min(cap, n - 1)
    return [(order[i], order[(i + j) % n]) for i in range(n) for j in range(1, fan + 1)]


def pairing(hosts: Sequence[H], rng: Random) -> Pairs[H]:
    """Half the hosts send to the other half: every host is one sender or one receiver.

    An odd host out stays idle.
    """
    order = _distinct(hosts, 2, "pairing")
    rng.shuffle(order)
    half = len(order) // 2
    return list(zip(order[:half], order[half:2 * half]))


def multicast(hosts: Sequence[H], rng: Random, members: int,
              rack: Callable[[H], Hashable] | None = None) -> tuple[H, list[H]]:
    """A random sender and ``members`` receivers, sorted, drawn from the other racks.

    ``rack`` maps a host to its rack (e.g. ``topo.access_switch``) so that the group's
    traffic crosses the fabric; without it, or when every host shares the sender's rack,
    receivers come from every other host.  Fewer hosts than ``members`` give them all.
    """
    act = _distinct(hosts, 2, "multicast")
    if members < 1:
        raise ValueError(f"multicast needs at least one member, got {members}")
    src = rng.choice(act)
    others = [h for h in act if rack(h) != rack(src)] if rack is not None else []
    others = others or [h for h in act if h != src]
    return src, sorted(rng.sample(others, min(members, len(others))))  # type: ignore[type-var]


def many_to_one(hosts: Sequence[H], rng: Random | None = None,
                receiver: H | None = None) -> Pairs[H]:
    """Every host sends to one receiver (incast; Outcast's senders and their sink).

    ``receiver`` may be one of ``hosts`` (it then does not send) or another host; without
    it one of ``hosts`` is drawn with ``rng``.
    """
    act = _distinct(hosts, 1 if receiver is not None else 2, "many-to-one")
    if receiver is None:
        if rng is None:
            raise ValueError("many-to-one needs a receiver or an rng to draw one")
        receiver = rng.choice(act)
    pairs = [(s, receiver) for s in act if s != receiver]
    if not pairs:
        raise ValueError(f"many-to-one: no sender besides the receiver {receiver!r}")
    return pairs


#: pattern name -> function(hosts, rng, **options)
PATTERNS: dict[str, Callable[..., Any]] = {
    "permutation": permutation,
    "random": random_peers,
    "group": group,
    "all-to-all": all_to_all,
    "pairing": pairing,
    "multicast": multicast,
    "many-to-one": many_to_one,
}


def make(name: str, hosts: Sequence[H], rng: Random, **options: Any) -> Traffic:
    """The pattern ``name`` over ``hosts`` drawn with ``rng``; one-line ValueError if the
    name is unknown or an option is unknown or missing."""
    fn = PATTERNS.get(name)
    if fn is None:
        raise ValueError(f"unknown traffic pattern {name!r}; expected one of "
                         f"{', '.join(PATTERNS)}")
    # checked against the signature so a typo is not reported as a TypeError from inside
    params = list(inspect.signature(fn).parameters.values())[2:]
    allowed = [p.name for p in params]
    if bad := sorted(set(options) - set(allowed)):
        raise ValueError(f"traffic pattern {name!r} takes no option {', '.join(bad)} "
                         f"(options: {', '.join(allowed) or 'none'})")
    if missing := [p.name for p in params if p.default is p.empty and p.name not in options]:
        raise ValueError(f"traffic pattern {name!r} needs option {', '.join(missing)}")
    return fn(hosts, rng, **options)
