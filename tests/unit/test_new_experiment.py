"""Adding an experiment is one folder and one registry line: the toy experiment of
tests/toyflows/ (a folder outside experiments/), registered with one line (conftest's
toy_flows), is offered by `run`, `sweep`, `list` and `--help`, appears in the README table
the registry generates and in reproduce.sh's list, runs through the real CLI, is redrawn by
`plot`, and its paper claims, declared in its own folder (claims.py), are judged by
`report`.  It says its traffic once as a Workload and runs in every view with no backend
code of its own: the model and ns-3 here, the emulator in
tests/integration/test_new_experiment.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dcrepro import cli
from emulator.dataplane_registry import capabilities
from sim import ns3_version
from store import read_csv, registry

#: the long-flow toy (tests/toyflows/, registered by conftest's toy_flows)
TOYFLOWS = Path(__file__).resolve().parents[1] / "toyflows"

def test_a_new_experiment_is_one_folder_and_one_registry_line(toy_flows, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["list"]) == 0
    assert "toyflows " in capsys.readouterr().out
    assert "| `toyflows` | none (a test) | `.venv/bin/dcrepro run toyflows` | emulated " \
           "(`bpf`, `ovs`), model, sim (ns-3) |" in registry.markdown_table(capabilities())
    assert ".venv/bin/dcrepro run toyflows" in registry.sweep_commands()
    for command in ("run", "sweep"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        assert "toy long-flow experiment of the workload test" in capsys.readouterr().out

    model = ["--backend", "model"]
    assert cli.main(["run", "toyflows", *model, "--out", str(out)]) == 0
    run_dir = next((out / "toyflows").iterdir())
    assert (run_dir / "toyflows.png").stat().st_size > 5_000
    assert len(read_csv(run_dir / "flows.csv")) == 16
    capsys.readouterr()
    assert cli.main(["plot", str(run_dir)]) == 0
    assert cli.main(["run", "toyflows", *model, "--trim", "3", "--out", str(out)]) == 2
    assert "leaves no measurement window" in capsys.readouterr().err

    assert cli.main(["sweep", "toyflows", *model, "--grid", "seed=1/2/3",
                     "--out", str(out)]) == 0
    summary = read_csv(out / "sweeps" / "toyflows-seed=1_2_3" / "summary.csv")
    assert sorted(r["seed"] for r in summary) == ["1", "2", "3"]

    assert [r["verdict"] for r in read_csv(run_dir / "claims.csv")] == ["holds",
                                                                        "does not hold"]
    capsys.readouterr()
    assert cli.main(["report", "--all", str(out)]) == 0
    toy_lines = [x for x in capsys.readouterr().out.splitlines() if " toyflows " in x]
    assert [x.split("  ")[0].strip() for x in toy_lines] == ["holds", "does not hold"]
    data = json.loads((out / "report" / "verdicts.json").read_text())
    toy = next(e for e in data["experiments"] if e["experiment"] == "toyflows")
    assert toy["counts"] == {"holds": 1, "does not hold": 1, "inconclusive": 0,
                             "not in the paper's regime": 0, "not measured": 0,
                             "run not trusted": 0}


#: a test of the backend's name, in any form an experiment could write it
_BACKEND_TEST = re.compile(r"backend\s*(==|!=)|backend\s+(not\s+)?in\b|"
                           r"(==|!=)\s*[\"'](emulated|sim|model)[\"']")


def test_the_long_flow_toy_has_no_backend_code():
    """tests/toyflows/ says its traffic once and never names a view: no test of the
    backend, no emulator, simulator or model import."""
    for path in (TOYFLOWS / "experiment.py", TOYFLOWS / "claims.py", TOYFLOWS / "figures.py"):
        text = path.read_text()
        assert not _BACKEND_TEST.search(text), path
        assert not re.search(r"^from (emulator|sim|model|dataplanes)\b|^import (emulator|sim)",
                             text, re.M), path


def _run_toy_flows(out, backend: str, *flags: str) -> list[dict[str, str]]:
    assert cli.main(["run", "toyflows", "--backend", backend, "--out", str(out), *flags]) == 0
    run_dir = next((out / "toyflows").iterdir())
    assert (run_dir / "toyflows.png").stat().st_size > 5_000
    assert [r["verdict"] for r in read_csv(run_dir / "claims.csv")][0] == "holds"
    return read_csv(run_dir / "flows.csv")


#: the flows.csv columns every view writes (harness.workload.flow_rows)
COMMON = {"run", "transport", "src", "dst", "goodput_mbps", "norm_goodput", "model_mbps",
          "norm_model", "subflows"}


def test_a_new_long_flow_experiment_runs_in_the_model_view(toy_flows, tmp_path):
    rows = _run_toy_flows(tmp_path, "model")
    assert len(rows) == 16 and COMMON <= set(rows[0])
    assert all(r["goodput_mbps"] == r["model_mbps"] for r in rows)


@pytest.mark.slow
def test_a_new_long_flow_experiment_runs_in_the_sim_view(toy_flows, tmp_path):
    """The same folder, simulated in ns-3 (skipped where ns-3 is not installed)."""
    if ns3_version() is None:
        pytest.skip("ns-3 is not installed (./setup.sh --with-sim)")
    rows = _run_toy_flows(tmp_path, "sim", "--duration", "3", "--trim", "0.5")
    assert len(rows) == 16 and COMMON <= set(rows[0])
    assert 0 < sum(float(r["norm_goodput"]) for r in rows) / 16 <= 1
