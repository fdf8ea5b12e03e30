"""topos.traffic: every pattern's structure, its errors, and the seeded draws it must keep.

The expected values were produced by the functions these patterns replaced
(harness.common.derangement, model.grin.traffic, experiments.plts.pairing,
experiments.orca.group_of) before they were removed: the same seed must give the same pairs.
"""
import random
from collections import Counter

import pytest

from topos.traffic import (
    PATTERNS,
    all_to_all,
    group,
    make,
    many_to_one,
    multicast,
    pairing,
    permutation,
    random_peers,
)

HOSTS = [f"h{i}" for i in range(1, 9)]
ACT = [0, 2, 3, 5, 7, 8, 11, 13, 14, 17]
#: fat tree k=4 host names; a host's rack is its edge switch, "<pod>_<edge>"
FT_HOSTS = [f"{p}_{e}_{i}" for p in range(4) for e in range(2) for i in (2, 3)]


def ft_rack(h):
    return h[:3]


# -- the draws of the removed functions --------------------------------------------------

OLD_DERANGEMENT = {  # harness.common.derangement(HOSTS, Random(seed))
    0: {"h1": "h2", "h2": "h1", "h3": "h5", "h4": "h6", "h5": "h4", "h6": "h3", "h7": "h8",
        "h8": "h7"},
    1: {"h1": "h4", "h2": "h7", "h3": "h2", "h4": "h6", "h5": "h8", "h6": "h1", "h7": "h5",
        "h8": "h3"},
    2: {"h1": "h6", "h2": "h4", "h3": "h5", "h4": "h2", "h5": "h3", "h6": "h7", "h7": "h8",
        "h8": "h1"},
    3: {"h1": "h8", "h2": "h6", "h3": "h7", "h4": "h3", "h5": "h4", "h6": "h1", "h7": "h5",
        "h8": "h2"},
}
#: fairness: destinations by index, derangement(list(range(6)), Random(seed))
OLD_DERANGEMENT_INT = {0: [4, 2, 1, 0, 5, 3], 1: [5, 3, 4, 0, 1, 2], 2: [2, 3, 1, 4, 5, 0]}
#: model.grin.traffic(pattern, ACT, Random(seed), group_size=3, a2a_cap=2)
OLD_GRIN = {
    "random": {
        0: [(0, 11), (2, 11), (3, 0), (5, 7), (7, 14), (8, 13), (11, 17), (13, 7), (14, 13),
            (17, 8)],
        1: [(0, 3), (2, 17), (3, 7), (5, 2), (7, 13), (8, 13), (11, 13), (13, 11), (14, 5),
            (17, 2)]},
    "group": {
        0: [(13, 14), (2, 14), (8, 7), (5, 7), (0, 3), (17, 3)],
        1: [(14, 11), (17, 11), (8, 13), (5, 13), (0, 7), (2, 7)]},
    "all-to-all": {
        0: [(13, 14), (13, 2), (14, 2), (14, 8), (2, 8), (2, 5), (8, 5), (8, 7), (5, 7), (5, 3),
            (7, 3), (7, 0), (3, 0), (3, 17), (0, 17), (0, 11), (17, 11), (17, 13), (11, 13),
            (11, 14)],
        1: [(11, 14), (11, 17), (14, 17), (14, 13), (17, 13), (17, 8), (13, 8), (13, 5), (8, 5),
            (8, 0), (5, 0), (5, 7), (0, 7), (0, 2), (7, 2), (7, 3), (2, 3), (2, 11), (3, 11),
            (3, 14)]},
}
OLD_PAIRING = {  # experiments.plts.pairing(HOSTS + ["h9"], Random(seed))
    0: {"h8": "h5", "h6": "h3", "h2": "h1", "h4": "h9"},
    1: {"h6": "h4", "h7": "h1", "h8": "h9", "h5": "h2"},
    2: {"h4": "h8", "h7": "h3", "h5": "h9", "h6": "h2"},
}
OLD_GROUP_OF = {  # experiments.orca.group_of(fattree k=4, {seed, members: 3}, run=1)
    0: ("1_0_2", ["0_0_3", "2_1_3", "3_1_2"]),
    1: ("3_1_3", ["0_1_2", "1_0_3", "3_0_3"]),
    2: ("3_1_3", ["2_0_3", "2_1_2", "3_0_3"]),
}


@pytest.mark.parametrize("seed", sorted(OLD_DERANGEMENT))
def test_permutation_keeps_the_permutation_experiments_pairs(seed):
    assert dict(permutation(HOSTS, random.Random(seed))) == OLD_DERANGEMENT[seed]
    assert list(OLD_DERANGEMENT[seed]) == [s for s, _ in permutation(HOSTS, random.Random(seed))]


@pytest.mark.parametrize("seed", sorted(OLD_DERANGEMENT_INT))
def test_permutation_keeps_the_fairness_experiments_pairs(seed):
    assert [d for _, d in permutation(range(6), random.Random(seed))] == OLD_DERANGEMENT_INT[seed]


@pytest.mark.parametrize("name", sorted(OLD_GRIN))
@pytest.mark.parametrize("seed", [0, 1])
def test_grin_patterns_keep_their_pairs(name, seed):
    opts = {"group": {"size": 3}, "all-to-all": {"cap": 2}}.get(name, {})
    assert make(name, ACT, random.Random(seed), **opts) == OLD_GRIN[name][seed]


@pytest.mark.parametrize("seed", sorted(OLD_PAIRING))
def test_pairing_keeps_the_plts_pairs(seed):
    pairs = pairing(HOSTS + ["h9"], random.Random(seed))
    assert pairs == list(OLD_PAIRING[seed].items())


@pytest.mark.parametrize("seed", sorted(OLD_GROUP_OF))
def test_multicast_keeps_the_orca_groups(seed):
    rng = random.Random(seed * 1_000_003 + 1)   # harness.common.run_rng(seed, 1)
    assert multicast(FT_HOSTS, rng, 3, rack=ft_rack) == OLD_GROUP_OF[seed]


# -- structure ----------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 8, 51])
@pytest.mark.parametrize("seed", range(5))
def test_permutation_is_a_derangement(n, seed):
    hosts = list(range(100, 100 + n))
    pairs = permutation(hosts, random.Random(seed))
    assert [s for s, _ in pairs] == hosts
    assert sorted(d for _, d in pairs) == hosts
    assert all(s != d for s, d in pairs)


def test_random_peers_send_once_to_another_host():
    for seed in range(20):
        pairs = random_peers(ACT, random.Random(seed))
        assert [s for s, _ in pairs] == ACT
        assert all(s != d and d in ACT for s, d in pairs)
    # every other host is reachable: the last host's slot is not lost
    assert {d for seed in range(200) for s, d in random_peers([1, 2, 3], random.Random(seed))
            if s == 1} == {2, 3}


def test_group_structure():
    hosts = list(range(14))
    pairs = group(hosts, random.Random(4), size=4)
    assert len(pairs) == 9                          # 3 groups of 4, 2 hosts idle
    assert sorted(Counter(d for _, d in pairs).values()) == [3, 3, 3]
    assert len({s for s, _ in pairs} | {d for _, d in pairs}) == 12
    assert all(s != d for s, d in pairs)
    assert group(hosts[:3], random.Random(0), size=4) == []   # no whole group


@pytest.mark.parametrize("n,cap,fan", [(30, 20, 20), (10, 20, 9), (10, None, 9), (5, 1, 1)])
def test_all_to_all_cap(n, cap, fan):
    hosts = list(range(0, 2 * n, 2))
    pairs = all_to_all(hosts, random.Random(5), cap)
    assert len(pairs) == len(set(pairs)) == n * fan
    assert all(s != d for s, d in pairs)
    assert set(Counter(s for s, _ in pairs).values()) == {fan}
    assert set(Counter(d for _, d in pairs).values()) == {fan}


def test_uncapped_all_to_all_is_the_cap_at_n_minus_one():
    assert all_to_all(ACT, random.Random(1)) == all_to_all(ACT, random.Random(1), len(ACT))


@pytest.mark.parametrize("n", [2, 5, 54])
def test_pairing_senders_and_receivers_are_disjoint(n):
    hosts = [f"h{i}" for i in range(n)]
    pairs = pairing(hosts, random.Random(3))
    senders, receivers = {s for s, _ in pairs}, {d for _, d in pairs}
    assert len(pairs) == len(senders) == len(receivers) == n // 2
    assert not senders & receivers
    assert len(senders | receivers) == n - n % 2   # an odd host out stays idle


def test_multicast_prefers_other_racks():
    for seed in range(30):
        src, members = multicast(FT_HOSTS, random.Random(seed), 5, rack=ft_rack)
        assert src not in members and len(members) == len(set(members)) == 5
        assert members == sorted(members)
        assert all(ft_rack(m) != ft_rack(src) for m in members)
    # one rack only: the sender's rack mates; no rack function: any other host
    src, members = multicast(["a", "b", "c"], random.Random(1), 2, rack=lambda h: 0)
    assert sorted([src, *members]) == ["a", "b", "c"]
    src, members = multicast(["a", "b", "c"], random.Random(1), 5)
    assert len(members) == 2 and src not in members   # capped at the hosts there are


def test_many_to_one():
    assert many_to_one(["a", "b", "c"], receiver="c") == [("a", "c"), ("b", "c")]
    assert many_to_one(["a", "b"], receiver="sink") == [("a", "sink"), ("b", "sink")]
    pairs = many_to_one(HOSTS, random.Random(2))
    (dst,) = {d for _, d in pairs}
    assert sorted([dst, *(s for s, _ in pairs)]) == sorted(HOSTS)
    assert make("many-to-one", ["a", "b"], random.Random(0), receiver="r") == \
        [("a", "r"), ("b", "r")]


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_is_deterministic_per_seed(name):
    opts = {"multicast": {"members": 3}}.get(name, {})
    once, again = (make(name, HOSTS, random.Random(7), **opts) for _ in range(2))
    assert once == again
    draws = {repr(make(name, HOSTS, random.Random(s), **opts)) for s in range(10)}
    assert len(draws) > 1    # and the seed matters


# -- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("call,msg", [
    (lambda: make("incast", HOSTS, random.Random(0)), "unknown traffic pattern 'incast'"),
    (lambda: make("group", HOSTS, random.Random(0), sise=3), "takes no option sise"),
    (lambda: make("permutation", HOSTS, random.Random(0), cap=2), "options: none"),
    (lambda: make("multicast", HOSTS, random.Random(0)), "needs option members"),
    (lambda: permutation(["a"], random.Random(0)), "at least 2 hosts"),
    (lambda: permutation(["a", "b", "a"], random.Random(0)), "distinct hosts"),
    (lambda: random_peers([], random.Random(0)), "at least 2 hosts"),
    (lambda: group(HOSTS, random.Random(0), size=1), "group size must be >= 2"),
    (lambda: all_to_all(HOSTS, random.Random(0), cap=0), "cap must be >= 1"),
    (lambda: pairing(["a"], random.Random(0)), "at least 2 hosts"),
    (lambda: multicast(HOSTS, random.Random(0), 0), "at least one member"),
    (lambda: many_to_one(["a"], receiver="a"), "no sender besides"),
    (lambda: many_to_one(["a", "b"]), "needs a receiver or an rng"),
])
def test_bad_inputs_are_one_line_value_errors(call, msg, one_line_error):
    with one_line_error(msg):
        call()
