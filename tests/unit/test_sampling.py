"""The one sampler (harness/sampling.py) with fake readers: interval and scheduled
sampling, a failing reader raised at stop, bounded waits, the CSV it writes."""
from __future__ import annotations

import csv
import time

import pytest

from emulator.proc import RunError
from harness.sampling import CpuLoad, Sampler, cpu_sampler


def test_interval_sampling_writes_time_and_columns(tmp_path):
    n = iter(range(1000))
    s = Sampler("count", lambda: next(n), 0.01, tmp_path / "c.csv",
                columns=lambda v: {"n": v})
    s.start()
    s.wait_first(2)
    time.sleep(0.1)
    got = s.stop()
    assert [v for _, v in got] == list(range(len(got))) and len(got) >= 3
    rows = list(csv.DictReader(open(tmp_path / "c.csv")))
    assert [int(r["n"]) for r in rows] == [v for _, v in got] and "time" in rows[0]


def test_schedule_waits_for_its_window_then_samples_at_those_times():
    ready: list[float] = []
    s = Sampler("window", time.time, schedule=lambda: ready or None)
    s.start()
    time.sleep(0.1)
    assert s.samples == []                      # window not known yet
    now = time.time()
    ready.extend([now + 0.05, now + 0.15])
    s.join(timeout=5)
    got = s.stop()
    assert len(got) == 2 and got[0][1] >= now + 0.05 and got[1][1] >= now + 0.15


def test_a_failing_reader_is_raised_at_stop_with_the_samplers_name():
    def read() -> int:
        raise OSError("counter file vanished")
    s = Sampler("port counter", read, 0.01)
    s.start()
    with pytest.raises(RunError, match="port counter sampler took no first sample"):
        s.wait_first(0.2)
    with pytest.raises(RunError, match="port counter sampler failed: OSError: counter file"):
        s.stop()
    s.stop_quietly()                            # a failing run keeps its own error


def test_a_schedule_that_never_opens_is_bounded():
    s = Sampler("window", time.time, schedule=lambda: None, schedule_timeout=0.1)
    s.start()
    s.join(timeout=5)
    with pytest.raises(RunError, match="not known within 0.1 s"):
        s.stop()


def test_interval_xor_schedule():
    with pytest.raises(ValueError):
        Sampler("x", time.time)
    with pytest.raises(ValueError):
        Sampler("x", time.time, 1.0, schedule=lambda: [])


def test_cpu_load_is_a_percentage(tmp_path):
    load = CpuLoad()
    sum(i * i for i in range(200_000))
    assert 0.0 <= load() <= 100.0
    s = cpu_sampler(tmp_path / "cpu.csv", interval=0.02)
    s.start()
    time.sleep(0.1)
    s.stop()
    assert open(tmp_path / "cpu.csv").readline().strip() == "time,cpu_percent"
