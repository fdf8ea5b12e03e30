"""Adding an experiment is one folder and one registry line: a toy experiment written into a
temporary folder, registered with one line, is offered by `run`, `sweep`, `list` and
`--help`, appears in the README table the registry generates and in reproduce.sh's list,
runs through the real CLI (model backend: no root, no network), is redrawn by `plot`, and
its paper claims, declared in its own folder (claims.py), are judged by `report`.  A long-flow
experiment (tests/toyflows/) says its traffic once as a Workload and runs in every view with
no backend code of its own: the model and ns-3 here, the emulator in
tests/integration/test_new_experiment.py."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from dcrepro import cli
from emulator.dataplane_registry import capabilities
from sim import ns3_version
from store import read_csv, registry

#: the long-flow toy (tests/toyflows/, registered by conftest's toy_flows)
TOYFLOWS = Path(__file__).resolve().parents[1] / "toyflows"

EXPERIMENT = '''
"""Toy: a seeded permutation on a fat tree, each flow's max-min rate on its first path."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import topos
from harness.common import add_backend, add_shared
from harness.params import Params
from harness.runfolder import RunFolder
from model.network import capacities
from model.flowmodel import maxmin_rates
from store import write_csv
from topos.traffic import permutation

NAME = "toy"
HELP = "toy experiment of the registry test"
PAPER = "none (a test)"
@dataclass(frozen=True)
class ToyParams(Params):
    topo: str = "fattree,k=4"
    bw: float = 10.0
    seed: int = 1
    backend: str = "model"


PARAMS = ToyParams
QUICK: dict[str, Any] = {"seed": 2}


def add_arguments(p: Any) -> None:
    add_shared(p, PARAMS, QUICK)
    add_backend(p)


def validate(params: ToyParams) -> None:
    if params.backend != "model":
        raise ValueError("toy has only a model backend")


def run(params: ToyParams, folder: RunFolder) -> None:
    import networkx as nx
    topo = topos.build(params.topo)
    pairs = permutation(topo.hosts(), random.Random(params.seed))
    paths = {s: nx.shortest_path(topo.graph(), s, d) for s, d in pairs}
    caps = capacities(topo, params.bw)
    rates = maxmin_rates(caps, [list(zip(p, p[1:])) for p in paths.values()])
    rows = [{"src": s, "dst": d, "mbps": round(r, 4)} for (s, d), r in zip(pairs, rates)]
    write_csv(folder.path / "flows.csv", rows)
    write_csv(folder.path / "summary.csv",
              [{"metric": "mean_mbps", "value": sum(rates) / len(rates)}])
'''

FIGURES = '''
"""Toy figures: from flows.csv alone."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from analysis.figures import caption  # noqa: E402
from store import read_csv  # noqa: E402


def plot_toy(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    rates = sorted(float(r["mbps"]) for r in read_csv(run_dir / "flows.csv"))
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(range(len(rates)), rates, "o-")
    fig.suptitle(caption(config), fontsize=6)
    out = run_dir / "toy.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return [out]
'''

CLAIMS = '''
"""Toy claims: from summary.csv alone."""
from analysis.claims import Claim, Outcome, need_rows, num


def mean_rate(runs, _cond):
    (row,) = [r for r in need_rows(runs, "summary.csv") if r["metric"] == "mean_mbps"]
    return Outcome(f"{num(row, 'value'):.2f} Mb/s", num(row, "value") > 0)


def _never(runs, _cond):
    return Outcome(f"{len(runs)} run", False)


CLAIMS = [
    Claim(experiment="toy", key="moves", text="flows move data", source="000_toy.txt, Fig. 1",
          paper="> 0", criterion="mean > 0", reason="a test", measure=mean_rate),
    Claim(experiment="toy", key="never", text="a claim that fails", source="000_toy.txt",
          paper="-", criterion="never", reason="a test", measure=_never),
]
'''


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    pkg = tmp_path / "code" / "toyexp"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "experiment.py").write_text(EXPERIMENT)
    (pkg / "figures.py").write_text(FIGURES)
    (pkg / "claims.py").write_text(CLAIMS)
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    # the one registry line
    monkeypatch.setitem(registry.EXPERIMENTS, "toy",
                        ("toyexp.experiment", "toyexp.figures:plot_toy"))
    yield tmp_path / "out"
    for name in [m for m in sys.modules if m.startswith("toyexp")]:
        del sys.modules[name]


def test_a_new_experiment_is_one_folder_and_one_registry_line(toy, capsys):
    out = toy
    assert cli.main(["list"]) == 0
    assert "toy " in capsys.readouterr().out
    assert "| `toy` | none (a test) | `.venv/bin/dcrepro run toy` | emulated (`bpf`, `ovs`), " \
           "model |" in registry.markdown_table(capabilities())
    assert ".venv/bin/dcrepro run toy" in registry.sweep_commands()
    for command in ("run", "sweep"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        assert "toy experiment of the registry test" in capsys.readouterr().out

    assert cli.main(["run", "toy", "--out", str(out)]) == 0
    run_dir = next((out / "toy").iterdir())
    assert (run_dir / "toy.png").stat().st_size > 5_000
    assert len(read_csv(run_dir / "flows.csv")) == 16
    capsys.readouterr()
    assert cli.main(["plot", str(run_dir)]) == 0
    assert cli.main(["run", "toy", "--backend", "emulated", "--out", str(out)]) == 2
    assert "toy has only a model backend" in capsys.readouterr().err

    assert cli.main(["sweep", "toy", "--grid", "seed=1/2/3", "--out", str(out)]) == 0
    summary = read_csv(out / "sweeps" / "toy-seed=1_2_3" / "summary.csv")
    assert sorted(r["seed"] for r in summary) == ["1", "2", "3"]

    assert [r["verdict"] for r in read_csv(run_dir / "claims.csv")] == ["holds",
                                                                        "does not hold"]
    capsys.readouterr()
    assert cli.main(["report", "--all", str(out)]) == 0
    toy_lines = [x for x in capsys.readouterr().out.splitlines() if " toy " in x]
    assert [x.split("  ")[0].strip() for x in toy_lines] == ["holds", "does not hold"]
    data = json.loads((out / "report" / "verdicts.json").read_text())
    toy = next(e for e in data["experiments"] if e["experiment"] == "toy")
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
    assert [r["verdict"] for r in read_csv(run_dir / "claims.csv")] == ["holds"]
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
