"""``dcrepro check`` (dcrepro/check.py): the verdict and the estimate on hand-made numbers,
the reference table against the registry, and the door (bad input, no root).  The real
check on a real network: tests/integration/test_check.py."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from analysis.fidelity import BESIDE_NOTED, SUSPECT_RATIO
from dcrepro import check, cli
from dcrepro.check import Found, estimate, lines, verdict
from store import registry

REPO = Path(__file__).resolve().parents[2]
TOTAL = sum(check.REFERENCE_QUICK_S.values())
MED, LO, HI = check.REFERENCE_BRINGUP_S

#: a quiet 2-core machine like the reference
QUIET = Found(cpus=2, others_share=0.003, nice_share=0.0, steal_share=0.0, load1=0.2,
              dataplane="bpf", unavailable={}, utilisation=0.956, payload_ceiling=0.957,
              cpu_mean=12.0, gaps=0.992, reasons=(), bringups=(MED, MED, MED))


def test_a_quiet_machine_is_fine():
    word, why = verdict(QUIET)
    assert word == "fine" and "trust checks" in why


@pytest.mark.parametrize("field,what", [("steal_share", "steal 8.0%"),
                                        ("nice_share", "niced work 8.0%"),
                                        ("others_share", "other work before the network")])
def test_work_beside_from_the_trust_checks_share_makes_it_busy(field, what):
    word, why = verdict(dataclasses.replace(QUIET, **{field: 0.08}))
    assert word == "busy" and what in why and "inconclusive" in why
    # just below the share the trust checks name (analysis/fidelity.BESIDE_NOTED): fine
    below = dataclasses.replace(QUIET, **{field: BESIDE_NOTED * 0.9})
    assert verdict(below)[0] == "fine"


def test_one_flow_flagged_or_short_or_too_few_cpus_is_slow():
    flagged = dataclasses.replace(QUIET, gaps=0.9, reasons=(
        "only 90.0% of 2,400 busy-link dequeue gaps within 10 % of the packet time",))
    word, why = verdict(flagged)
    assert word == "slow" and "dequeue gaps" in why and "reference" in why
    short = dataclasses.replace(QUIET, utilisation=0.8 * 0.957)
    word, why = verdict(short)
    assert word == "slow" and f"below {SUSPECT_RATIO}" in why
    assert verdict(dataclasses.replace(QUIET, cpus=1))[0] == "slow"
    # slow wins over busy, and says both
    word, why = verdict(dataclasses.replace(flagged, steal_share=0.05))
    assert word == "slow" and "steal 5.0%" in why


def test_the_estimate_is_the_references_within_its_bringup_range():
    names = list(registry.EXPERIMENTS)
    assert estimate(MED, "bpf", names)[:2] == (TOTAL, TOTAL)
    assert estimate(HI, "bpf", names)[:2] == (TOTAL, TOTAL)
    assert estimate(None, "bpf", names)[:2] == (TOTAL, TOTAL)


def test_a_slower_bringup_scales_the_computing_part_only():
    """Between the reference's time (all of it real-time traffic) and r times it (all of it
    computing)."""
    low, high, why = estimate(2 * MED, "bpf", registry.EXPERIMENTS)
    assert (low, high) == (TOTAL, pytest.approx(2 * TOTAL)) and "2.00x" in why
    low, high, _ = estimate(MED / 2, "bpf", registry.EXPERIMENTS)
    assert (low, high) == (pytest.approx(TOTAL / 2), TOTAL)


def test_another_dataplane_gets_the_references_time_unscaled():
    low, high, why = estimate(3 * MED, "ovs", registry.EXPERIMENTS)
    assert (low, high) == (TOTAL, TOTAL) and "not scaled" in why


def test_an_experiment_without_a_reference_time_is_named():
    low, _, why = estimate(MED, "bpf", [*registry.EXPERIMENTS, "newcomer"])
    assert low == TOTAL and "no time measured for newcomer" in why


def test_the_reference_table_has_every_experiment_of_the_registry():
    assert list(check.REFERENCE_QUICK_S) == list(registry.EXPERIMENTS)
    assert TOTAL == 855          # as docs/measured.md and docs/usage.md say
    assert LO <= MED <= HI


def test_the_lines_are_few_and_say_the_numbers(tmp_path):
    out = lines(QUIET, tmp_path / "calibration.json", registry.EXPERIMENTS)
    assert len(out) == 4 and all(x.startswith("check: ") for x in out)
    assert "reaches 0.956 of the link" in out[1] and str(tmp_path) in out[1]
    assert out[2].startswith("check: fine: ")
    assert "about 14 min here" in out[3] and f"{TOTAL} s on the reference" in out[3]


def test_a_fine_machine_with_more_cpus_is_told_what_more_fits(tmp_path):
    big = dataclasses.replace(QUIET, cpus=8)
    out = lines(big, tmp_path / "c.json", registry.EXPERIMENTS)
    assert len(out) == 5 and "--full" in out[4] and "--runs" in out[4] and "4x" in out[4]
    busy = dataclasses.replace(big, steal_share=0.05)
    assert len(lines(busy, tmp_path / "c.json", registry.EXPERIMENTS)) == 4


def test_the_check_flows_network_is_the_one_the_quick_runs_look_up():
    """permutation and fairness show the calibration in their fidelity line; their sweep
    scripts run the k=4 fat tree at --bw 5."""
    from experiments.fairness.experiment import FairnessParams
    from experiments.permutation.experiment import PermutationParams
    assert PermutationParams.topo == FairnessParams.fattree == check.CHECK_TOPO
    for script in ("permutation-sweep.sh", "jellyfish-sweep.sh"):
        assert re.search(rf"--bw {check.CHECK_BW:g}\b", (REPO / "scripts" / script).read_text())


def test_reproduce_runs_the_check_before_the_first_sweep_and_goes_on_without_it():
    text = (REPO / "scripts" / "reproduce.sh").read_text()
    at = text.index("dcrepro check")
    assert at < text.index('for sweep in "${sweeps[@]}"') and at < text.index("stamp=$(mktemp)")


def test_bad_out_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert cli.main(["check", "--out", str(tmp_path / "file" / "below")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dcrepro: error: --out")


def test_without_root_it_says_so_and_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert cli.main(["check", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == \
        "dcrepro: error: check needs root (it brings up an emulated network)"


def test_runs_scales_each_experiments_time_by_its_quick_count():
    """reproduce.sh --runs N: the estimate counts N repetitions of every experiment that has
    repetitions (plts' one becomes five, permutation's five stay five), grin-hops' model
    grid as it is."""
    base, _, _ = estimate(None, "bpf", ["permutation", "plts", "grin-hops"])
    more, _, _ = estimate(None, "bpf", ["permutation", "plts", "grin-hops"], runs=5)
    ref = check.REFERENCE_QUICK_S
    assert check.quick_runs("plts") == 1 and check.quick_runs("permutation") == 5
    assert more - base == pytest.approx(4 * ref["plts"])
    assert "with 5 repetitions each" in lines(QUIET, Path("c.json"), registry.EXPERIMENTS,
                                               5)[3]


def test_check_runs_takes_a_whole_number_of_at_least_one(capsys):
    for bad in ("0", "x", "-2"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["check", "--runs", bad])
        assert exc.value.code == 2
        assert "--runs" in capsys.readouterr().err.strip().splitlines()[-1]
