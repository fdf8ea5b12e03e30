"""Summaries of busy-link dequeue-gap histograms (pure)."""
from dataplane.qgap import BULK_BUCKET, FULL_FLAG, merge, summarize


def test_summary_of_a_perfect_and_a_jittery_link():
    perfect = {100: 1000, FULL_FLAG | 100: 800}
    s = summarize(perfect)
    assert s["samples"] == 1000 and s["within_10pct"] == 1.0 and s["median_ratio"] == 1.0
    assert s["full_size"]["samples"] == 800 and s["full_size"]["within_10pct"] == 1.0
    jitter = {50: 10, 95: 40, 100: 30, 111: 10, 300: 10, BULK_BUCKET: 7}
    s = summarize(jitter)
    assert s["samples"] == 100 and s["bulk_dequeues"] == 7
    assert s["within_10pct"] == 0.7 and s["median_ratio"] == 0.95  # 50th of 100 samples
    assert s["p1_ratio"] == 0.5 and s["p99_ratio"] == 3.0
    assert s["full_size"]["samples"] == 0 and s["full_size"]["within_10pct"] is None


def test_merge_adds_per_bucket():
    assert merge([{100: 1, 5: 2}, {100: 3}]) == {100: 4, 5: 2}
