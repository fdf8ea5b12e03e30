"""The progress line of `dcrepro run` (dcrepro/progress.py) and the estimate it counts
(dcrepro/estimate.network_shares), without a terminal."""
from __future__ import annotations

import io
import sys
from types import SimpleNamespace

import pytest

from dcrepro import estimate, progress
from harness.plan import Network, RunPlan

pytestmark = pytest.mark.fast


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_bar_follows_the_clock_inside_a_network_and_jumps_when_it_ends(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    line = progress.ProgressLine([10.0, 20.0], 40.0, io.StringIO())
    try:
        assert line.position() == 0.0
        clock.t += 4
        assert line.position() == 4.0
        clock.t += 100                 # a slow network holds the bar short of its end
        assert line.position() == pytest.approx(progress.CLOCK_SHARE * 10)
        line.network_done("run 0")
        assert line.position() == 10.0 and line._what() == "network 2/2"
        clock.t += 5
        assert line.position() == 15.0
        line.network_done("run 1")     # then the run's own part: tables, figures
        clock.t += 3
        assert line.position() == 33.0
        line.network_done("again")     # a backend's extra step never runs past the end
        clock.t += 1000
        assert line.position() <= 40.0
    finally:
        line.close()


def test_off_the_terminal_there_is_no_line_and_the_output_is_untouched(monkeypatch):
    monkeypatch.setattr(sys, "stdout", io.StringIO())      # a pipe, a file, CI
    folder = SimpleNamespace(on_network=None)
    out, err = sys.stdout, sys.stderr
    with progress.progress_line([1.0], 2.0, folder) as line:
        assert line is None and sys.stdout is out and sys.stderr is err
    with progress.progress_line(None, 2.0, folder) as line:
        assert line is None


def test_lines_printed_meanwhile_go_out_whole():
    got: list[str] = []
    real = io.StringIO()
    s = progress._Lines(lambda text, to: got.append(text), real)
    s.write("fidelity run 0: ")
    assert got == []
    s.write("ok\nnext ")
    s.write("line\n")
    s.write("tail")
    s.flush()
    assert got == ["fidelity run 0: ok", "next line", "tail"]


def test_the_estimate_splits_over_the_networks_in_order_and_leaves_the_run_its_part():
    nets = tuple(Network("fattree,k=4", 16, 20, 2, 24.0, 16, 16, 5.0) for _ in range(3))
    plan = RunPlan(3, nets)
    for backend in ("emulated", "model", "sim"):
        est = estimate.estimate(plan, backend)
        shares = estimate.network_shares(plan, backend, est)
        assert len(shares) == 3 and len(set(shares)) == 1
        assert 0 < sum(shares) < est.seconds
    emulated = estimate.network_shares(plan, "emulated", estimate.estimate(plan, "emulated"))
    assert emulated[0] > 24.0, "an emulated network's share holds its traffic"
