"""Repetitions that only this machine's timing flagged are run again (#54 part 3): which
flags count as host timing, which repetitions repeat, and a real run through the CLI (the
model view, with a flag put on one repetition as the emulated backend's judge would)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from analysis.claims import repeatable
from analysis.fidelity import host_timing
from dcrepro import cli
from harness.backends import model as model_backend
from harness.common import repetitions
from store import read_csv

pytestmark = pytest.mark.fast

CPU = "CPU above 90 % in 40% of samples"
GAPS = "only 91.2% of 3,210 busy-link dequeue gaps within 10 % of the packet time"
LOSS = "the software switch lost 0.40% of packets outside the tail-drop queues"
STALL = "2 flow(s) stalled for 3.0 s or more"


@pytest.mark.parametrize("flag,host", [
    (f"run 1 tcp: {CPU}", True),
    (f"run 1 tcp: {CPU}; {GAPS}", True),
    (f"run 1 tcp: {LOSS}", False),       # OVS's usual floor: repeating cannot help
    (f"run 1 tcp: {CPU}; {LOSS}", False),
    (f"run 1 tcp: {CPU}; {STALL}", False),          # a stall is the run's own
    (f"run 1 tcp: {STALL}", False),
    ("run 1 tcp: only 3 of 8 subflows opened", False),  # 'only' that is not the gaps
    ("run 1 tcp: emulated aggregate is 0.80 of the model's", False),
    ("run 1 tcp:", False),
])
def test_only_the_host_s_timing_counts(flag, host):
    assert host_timing(flag) is host


def test_a_repetition_repeats_when_every_flag_naming_it_is_the_host_s():
    flags = [f"run 0 tcp: {CPU}", f"run 2 tcp: {GAPS}", f"run 2 mptcp: {STALL}",
             f"run 3 fattree tcp: {GAPS}", f"run 4 tcp: {LOSS}", "the run as a whole: x"]
    assert repeatable(flags) == [0, 3]
    outcast = [f"n02-run01: {CPU}", f"n06-run00: {CPU}"]
    assert repeatable(outcast, "n02-") == [1] and repeatable(outcast, "n06-") == [0]


class Folder:
    def __init__(self) -> None:
        self.config: dict[str, object] = {}
        self.log = SimpleNamespace(info=lambda *a: None)

    def flag(self, reason: str) -> None:
        self.config.setdefault("suspect", []).append(reason)  # type: ignore[union-attr]

    def write_config(self) -> None:
        pass


def test_repeats_come_after_the_runs_each_once_up_to_the_bound():
    folder = Folder()
    params = SimpleNamespace(runs=4, repeat_flagged=2)
    got = []
    for r in repetitions(params, folder):   # type: ignore[arg-type]
        got.append(r)
        if r in (0, 1, 3):                  # three flagged for host timing ...
            folder.flag(f"run {r} tcp: {CPU}")
        if r == 4:                          # ... and a repeat flagged again: not repeated
            folder.flag(f"run {r} tcp: {CPU}")
    assert got == [0, 1, 2, 3, 4, 5]        # two repeats: the bound
    assert folder.config["repeats"] == {"0": 4, "1": 5}
    none = Folder()
    assert list(repetitions(SimpleNamespace(runs=2, repeat_flagged=0), none)) == [0, 1]


def test_a_run_repeats_its_host_flagged_repetition_and_its_intervals_leave_it_out(
        tmp_path, monkeypatch, capsys):
    run = model_backend.ModelBackend.run

    def flagged_run(self, w, out):        # the emulated backend's judge, in the model view
        got = run(self, w, out)
        if w.rep == 1:
            self.folder.flag(f"run 1 tcp: {CPU}")
        return got
    monkeypatch.setattr(model_backend.ModelBackend, "run", flagged_run)
    assert cli.main(["run", "permutation", "--backend", "model", "--transport", "tcp",
                     "--runs", "3", "--out", str(tmp_path)]) == 0
    run_dir = next((tmp_path / "permutation").iterdir())
    config = json.loads((run_dir / "config.json").read_text())
    assert config["repeats"] == {"1": 3}
    assert sorted({r["run"] for r in read_csv(run_dir / "flows.csv")}) == ["0", "1", "2", "3"]
    out = capsys.readouterr().out
    assert "repeating run 1 as run 3" in out
    assert "judged on 3 repetitions and 1 repeat" in out
    assert "repeated (only this machine's timing flagged them): run 1 as run 3" in out
