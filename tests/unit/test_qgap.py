"""The dequeue-gap probe's pure parts: histogram summaries, merging, map layouts."""
import re

import pytest

from emulator.qgap import (
    DIAG,
    MAX_INDEX,
    NBUCKETS,
    SOURCE,
    STATS,
    GapHist,
    LinkGaps,
    fast_path,
    merge,
    netns_path,
    summarize,
    summarize_hist,
    unpack_stats,
)


def hist(counts: dict[int, int], within: int | None = None) -> GapHist:
    """A histogram with ``counts`` (bucket -> n); gap sums as if every sample sat on its
    bucket's ratio and the packet time were 1000 ns."""
    h = GapHist()
    for b, n in counts.items():
        h.buckets[b] += n
    h.samples = sum(counts.values())
    h.within10 = sum(n for b, n in counts.items() if 90 <= b <= 110) if within is None else within
    h.sum_ideal_ns = 1000 * h.samples
    h.sum_gap_ns = sum(10 * b * n for b, n in counts.items())
    return h


def test_a_perfect_link():
    s = summarize_hist(hist({100: 1000}))
    assert s == {"samples": 1000, "within_10pct": 1.0, "median_ratio": 1.0, "p1_ratio": 1.0,
                 "p99_ratio": 1.0, "busy_rate_ratio": 1.0}


def test_quantiles_and_share_of_a_jittery_link():
    s = summarize_hist(hist({0: 1, 50: 9, 95: 40, 100: 30, 111: 10, 300: 10}))
    assert s["samples"] == 100 and s["within_10pct"] == 0.7
    assert s["median_ratio"] == 0.95          # the 50th of 100 sorted samples
    assert s["p1_ratio"] == 0.0 and s["p99_ratio"] == 3.0   # 3.0: the overflow bucket
    # the share comes from the exact in-kernel count, not from the 1 % buckets
    assert summarize_hist(hist({100: 10}, within=7))["within_10pct"] == 0.7


def test_quantile_boundaries():
    h = hist({90: 50, 110: 50})
    s = summarize_hist(h)
    assert s["median_ratio"] == 0.9 and s["p99_ratio"] == 1.1 and s["p1_ratio"] == 0.9
    assert summarize_hist(hist({90: 49, 110: 51}))["median_ratio"] == 1.1


def test_an_empty_histogram():
    s = summarize_hist(GapHist())
    assert s["samples"] == 0 and s["within_10pct"] is None and s["median_ratio"] is None
    assert s["busy_rate_ratio"] is None


def test_busy_rate_ratio_is_time_weighted():
    # gaps twice the packet time: the busy link ran at half its rate
    assert summarize_hist(hist({200: 10}))["busy_rate_ratio"] == 0.5


def test_link_summary_has_full_size_part_and_counters():
    g = LinkGaps(hist({100: 10, 40: 10}), hist({100: 8}))
    g.diag["releases"] = 21
    s = summarize(g)
    assert s["samples"] == 20 and s["within_10pct"] == 0.5
    assert s["full_size"]["samples"] == 8 and s["full_size"]["within_10pct"] == 1.0
    assert s["diag"]["releases"] == 21 and set(s["diag"]) == set(DIAG)
    assert summarize(g.all) == summarize_hist(g.all)


def test_merge_adds_everything():
    a = LinkGaps(hist({100: 1, 5: 2}), hist({100: 1}))
    b = LinkGaps(hist({100: 3}), GapHist())
    a.diag["untraced"], b.diag["untraced"] = 2, 3
    m = merge([a, b])
    assert m.all.buckets[100] == 4 and m.all.buckets[5] == 2 and m.all.samples == 6
    assert m.all.within10 == 4 and m.full.samples == 1 and m.diag["untraced"] == 5
    assert m.all.sum_ideal_ns == 6000
    assert merge([]).all.samples == 0


def test_unpack_stats_reads_the_map_value_layout():
    diag = list(range(1, len(DIAG) + 1))
    all_b, full_b = [0] * NBUCKETS, [0] * NBUCKETS
    all_b[100], all_b[NBUCKETS - 1], full_b[99] = 7, 1, 5
    raw = STATS.pack(123, 1514, 1, 0, 0, 99, *diag, 8, 7, 8800, 8000, *all_b,
                     5, 5, 4950, 5000, *full_b)
    g = unpack_stats(raw)
    assert g.diag == dict(zip(DIAG, diag))
    assert g.all.samples == 8 and g.all.within10 == 7 and g.all.buckets[100] == 7
    assert g.all.buckets[NBUCKETS - 1] == 1 and g.all.sum_gap_ns == 8800
    assert g.full.buckets[99] == 5 and g.full.sum_ideal_ns == 5000


def test_layout_matches_the_bpf_source():
    """DIAG and NBUCKETS mirror qgap.bpf.c; struct link_stats is what STATS unpacks."""
    src = SOURCE.read_text()
    enum = re.search(r"enum diag \{(.*?)NDIAG,", src, re.S).group(1)
    names = re.findall(r"^\s*D_([A-Z_]+),", enum, re.M)
    assert len(names) == len(DIAG)
    assert int(re.search(r"#define NBUCKETS (\d+)", src).group(1)) == NBUCKETS
    # last_ts, 4 x u32, last_pkts, diag[], 2 x (4 counters + buckets)
    assert STATS.size == 8 + 16 + 8 + 8 * len(DIAG) + 2 * 8 * (4 + NBUCKETS)
    assert int(re.search(r"#define MAX_INDEX (\d+)", src).group(1)) == MAX_INDEX


def test_fast_path_keeps_indexes_one_watched_device_owns():
    """The array fast path holds an ifindex only when one watched device has it: the
    same index in two namespaces, or one past the array, is left to the hash."""
    where = {"s1-eth1": (5, 100), ("h1", "h1-eth0"): (2, 200), ("h2", "h2-eth0"): (2, 300),
             "s9-eth1": (MAX_INDEX, 100)}
    values = {ref: str(ref).encode() for ref in where}
    assert fast_path(where, values) == {5: b"s1-eth1"}


@pytest.mark.parametrize("ns,path", [(None, "/proc/self/ns/net"), (42, "/proc/42/ns/net"),
                                     ("h1", "/run/netns/h1"), ("/x/ns", "/x/ns")])
def test_namespace_paths(ns, path):
    assert netns_path(ns) == path


def test_dequeue_gaps_attaches_the_probe_once_and_closes_it(monkeypatch, tmp_path):
    """Emulation.dequeue_gaps entered its probe and then entered it again with ``with``:
    a second load and attach whose fd replaced the first, which stayed attached until the
    process ended (a k=6 plts run of 25 networks ended with 25 probes on every dequeue)."""
    import topos
    from emulator import bpfobj, emulation, qgap
    from emulator.shaping import LinkSpec

    events: list[str] = []

    class Probe:
        def __init__(self, links, pin, shaper):
            self.links, self.shaper = links, shaper

        def __enter__(self):
            events.append("enter")
            return self

        def __exit__(self, *_):
            self.close()

        def read(self):
            return {}

        def close(self):
            events.append("close")

    monkeypatch.setattr(bpfobj, "bpf_unavailable", lambda: "")
    monkeypatch.setattr(qgap, "QueueGapProbe", Probe)
    emu = emulation.Emulation.__new__(emulation.Emulation)
    emu.topo, emu.link, emu.run_id = topos.build("fattree,k=4"), LinkSpec(), "test"

    class Registry:
        def add(self, kind, items):
            pass
    emu.registry = Registry()
    for _ in range(2):
        with emu.dequeue_gaps():
            assert events[-1] == "enter"
    assert events == ["enter", "close"] * 2
