"""Shared test helpers: the tiers (fast, integration, slow) and the root/OVS skips, the
golden-file switch, the one-line-error check, and the reference runs redrawn once for the
session."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "golden"


TIERS = ("fast", "integration", "slow")
#: a fast test that takes longer than this is named at the end of the run (it belongs in
#: slow); the slowest fast tests took 1.1-1.8 s on 2 cores (model runs in-process)
FAST_LIMIT_S = 2.0


def _ovs_down() -> str | None:
    """Why Open vSwitch cannot be used here, or None when its switch daemon answers."""
    from emulator.sysinfo import vswitchd_answers
    if not shutil.which("ovs-vsctl"):
        return "Open vSwitch is not installed (./setup.sh installs it)"
    # the switch daemon itself: the database server answers `ovs-vsctl show` alone
    if not vswitchd_answers():
        return "Open vSwitch's switch daemon is not running (./setup.sh starts it)"
    return None


def _needs_ovs(item: pytest.Item) -> bool:
    """Marked ovs, or parametrized with the ovs dataplane (a parameter "ovs" or "ovs,...")."""
    if item.get_closest_marker("ovs"):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(isinstance(v, str) and (v == "ovs" or v.startswith("ovs,"))
               for v in params.values())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test its tier (unmarked means fast: ``-m fast`` selects it), refuse a test
    in two tiers, and skip, with the reason, what this machine cannot run: integration tests
    without root, and only those that need Open vSwitch when it is down (the bpf dataplane
    does not need it)."""
    for item in items:
        tiers = [t for t in TIERS if item.get_closest_marker(t)]
        if len(tiers) > 1:
            raise pytest.UsageError(f"{item.nodeid}: in two tiers ({', '.join(tiers)})")
        if not tiers:
            item.add_marker(pytest.mark.fast)
    root = os.geteuid() == 0
    ovs: str | None = None
    if root and any(_needs_ovs(i) for i in items if "integration" in i.keywords):
        ovs = _ovs_down()
    for item in items:
        needs_root = "integration" in item.keywords or (
            "slow" in item.keywords and item.get_closest_marker("root"))
        if needs_root and not root:
            item.add_marker(pytest.mark.skip(
                reason="integration tests need root (sudo ./scripts/test.sh)"))
        elif ovs and _needs_ovs(item):
            item.add_marker(pytest.mark.skip(reason=ovs))


_slow_fast: list[tuple[float, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note a fast test whose call took over FAST_LIMIT_S (named in the summary, not failed:
    how long a test takes is the host's business, its tier is the code's)."""
    if report.when == "call" and "fast" in report.keywords and report.duration > FAST_LIMIT_S:
        _slow_fast.append((report.duration, report.nodeid))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _slow_fast:
        terminalreporter.write_line(
            f"fast tests over {FAST_LIMIT_S:.0f} s (mark them slow, or make them fast): "
            + ", ".join(f"{n} ({d:.1f} s)" for d, n in sorted(_slow_fast, reverse=True)))


@pytest.fixture
def golden():  # type: ignore[no-untyped-def]
    """compare(name, text): equal to tests/golden/name, or rewrite it with UPDATE_GOLDEN=1."""
    def compare(name: str, text: str) -> None:
        path = GOLDEN / name
        if os.environ.get("UPDATE_GOLDEN") == "1":
            path.write_text(text)
        assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
        assert text == path.read_text(), f"{name} differs from its golden file"
    return compare


@pytest.fixture
def one_line_error():  # type: ignore[no-untyped-def]
    """raises(match, kind=ValueError): pytest.raises, and the message is one line (every bad
    input gets a one-line error); yields pytest's ExceptionInfo."""
    @contextlib.contextmanager
    def raises(match: str | None = None, kind: Any = ValueError) -> Iterator[Any]:
        with pytest.raises(kind, match=match) as exc:
            yield exc
        assert "\n" not in str(exc.value)
    return raises


@pytest.fixture
def run_folder(tmp_path):  # type: ignore[no-untyped-def]
    """make(experiment, tables, params=..., ...): a run folder of CSV tables (lists of dict
    rows by file name) with config.json and status.json, as experiments write them; the
    run id sorts by ``started`` (so that the newest is the last made unless given)."""
    import itertools
    import json

    from store import write_csv
    made = itertools.count()

    def make(experiment: str, tables: dict, params: dict | None = None, status: str = "ok",
             suspect: list | None = None, started: str | None = None, root=None,
             data: dict | None = None) -> Path:
        n = next(made)
        started = started or f"20300101T0000{n:02d}Z"
        path = (root or tmp_path / "results") / experiment / f"{started}-{n:06x}"
        path.mkdir(parents=True)
        for name, rows in tables.items():
            write_csv(path / name, rows)
        for name, body in (data or {}).items():
            (path / name).write_text(json.dumps(body))
        config = {"experiment": experiment, "run_id": path.name, "started_utc": started,
                  "params": params or {}, "git": {"commit": "0" * 40, "dirty": False},
                  "environment": {"cpus": 2, "versions": {"kernel": "test"}}}
        if suspect:
            config["suspect"] = suspect
        (path / "config.json").write_text(json.dumps(config))
        (path / "status.json").write_text(json.dumps(
            {"status": status, "error": None if status == "ok" else "test failure",
             **({"suspect": suspect} if suspect and status == "ok" else {})}))
        return path
    return make


@pytest.fixture
def judge():  # type: ignore[no-untyped-def]
    """judge(experiment, *run_dirs) -> {claim label: Verdict}: the registry's claims of the
    experiment, judged on those run folders (each its own source)."""
    from analysis.claims import Run, evaluate_all
    from store import registry

    def run(experiment: str, *dirs: Path) -> dict:
        found = evaluate_all(registry.claims(experiment), [[Run.open(d)] for d in dirs])
        return {v.label: v for v in found}
    return run


REFERENCE = Path(__file__).resolve().parents[1] / "results" / "reference"


@pytest.fixture(scope="session")
def reference_report():  # type: ignore[no-untyped-def]
    """The report judged on the committed reference folders, built once per test run (it
    reads every folder: seconds)."""
    from analysis import report
    return report.build(*report.gather([REFERENCE]))


@pytest.fixture
def verdict_table(reference_report):  # type: ignore[no-untyped-def]
    """check(text, root=results/reference): ``text`` (e.g. the README) holds the headline
    table that `dcrepro report --headlines ROOT` prints for those runs."""
    from analysis import report

    def check(text: str, root: Path = REFERENCE) -> None:
        judged = (reference_report if Path(root).resolve() == REFERENCE
                  else report.build(*report.gather([Path(root).resolve()])))
        table = report.headline_table(judged)
        assert table in text, ("the headline table is not the one the runs give: run "
                               f"`dcrepro report --headlines {root}`")
    return check


@pytest.fixture
def labelled_ablation(tmp_path):  # type: ignore[no-untyped-def]
    """run(module, fill, labels): folders a and b filled by ``fill(folder, index)``, given
    to ``module.main`` as LABEL=FOLDER (the ablations' command line); checks it succeeds and
    writes its table, CSV (``rows`` rows) and figure; returns ablation.md's text."""
    from store import read_csv

    def run(module: Any, fill: Any, labels: tuple[str, str], rows: int) -> str:
        folders = [tmp_path / "a", tmp_path / "b"]
        for i, d in enumerate(folders):
            d.mkdir()
            fill(d, i)
        out = tmp_path / "out"
        assert module.main([str(out), *(f"{lb}={d}" for lb, d in zip(labels, folders))]) == 0
        assert len(read_csv(out / "ablation.csv")) == rows
        assert (out / "ablation.png").stat().st_size > 0
        return (out / "ablation.md").read_text()
    return run


REFERENCE = Path(__file__).resolve().parents[1] / "results" / "reference"
#: every committed reference run folder
REFERENCE_RUNS = sorted(p.parent for p in REFERENCE.glob("*/*/status.json"))


@dataclasses.dataclass
class Redrawn:
    """One reference run folder redrawn: its copy, the figures ``analysis.plot`` wrote (none
    when it raised ``error``) and every text above or beside their axes."""

    copy: Path
    figures: list[Path]
    headers: list[str]
    error: BaseException | None = None


def _redraw(folders: list[Path], root: Path) -> dict[Path, Redrawn]:
    """Remove the figures of each folder's copy under ``root`` and draw them again, recording
    every header text the figures carry."""
    import matplotlib.figure

    import analysis
    headers: list[str] = []
    save = matplotlib.figure.Figure.savefig

    def record(fig: Any, *args: Any, **kwargs: Any) -> Any:
        texts = [fig._suptitle] if fig._suptitle is not None else []
        texts += list(fig.texts) + [t for ax in fig.axes
                                    for t in (ax.title, ax._left_title, ax._right_title)]
        headers.extend(t.get_text() for t in texts if t.get_text())
        return save(fig, *args, **kwargs)

    out: dict[Path, Redrawn] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", record)
        for folder in folders:
            copy = root / folder.relative_to(REFERENCE)
            for png in copy.glob("*.png"):
                png.unlink()
            headers = []
            try:
                out[folder] = Redrawn(copy, analysis.plot(copy), headers)
            except Exception as exc:  # that folder's test reports it; the others go on
                out[folder] = Redrawn(copy, [], headers, exc)
    return out


#: how long the forked half of the redraw may take (it takes about 20 s on 2 cores)
REDRAW_TIMEOUT_S = 600


@pytest.fixture(scope="session")
def redrawn_reference(
        tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Path, Redrawn]]:
    """A copy of results/reference in which every run folder's figures were removed and
    drawn again by this code, once for the session: (the copy's root, {committed run
    folder: Redrawn}).  test_reference checks each folder; test_report_browser opens the
    copy's report page.  Every other folder is drawn in a forked child, beside this
    process's half (35 s in one process on 2 cores, 2026-12-01); a child's error comes back
    as a RuntimeError with its traceback."""
    import multiprocessing
    import traceback
    root = tmp_path_factory.mktemp("reference") / "results"
    shutil.copytree(REFERENCE, root)
    theirs = REFERENCE_RUNS[1::2]
    ctx = multiprocessing.get_context("fork")   # nothing to pickle but the results
    receive, send = ctx.Pipe(duplex=False)

    def child() -> None:
        done = _redraw(theirs, root)
        send.send({f: (r.figures, r.headers, None if r.error is None else "".join(
            traceback.format_exception(r.error))) for f, r in done.items()})

    p = ctx.Process(target=child, daemon=True)
    p.start()
    try:
        out = _redraw(REFERENCE_RUNS[0::2], root)
        assert receive.poll(REDRAW_TIMEOUT_S), \
            f"the forked half of the redraw sent nothing in {REDRAW_TIMEOUT_S} s"
        for folder, (figures, headers, error) in receive.recv().items():
            out[folder] = Redrawn(root / folder.relative_to(REFERENCE), figures, headers,
                                  None if error is None else RuntimeError(error))
    finally:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    return root, out


@pytest.fixture()
def toy_flows(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The long-flow toy experiment of tests/toyflows/ (a folder outside experiments/ with no
    backend code) registered with its one registry line, for as long as the test runs."""
    import sys

    from store import registry
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    monkeypatch.setitem(registry.EXPERIMENTS, "toyflows",
                        ("toyflows.experiment", "toyflows.figures:plot_toyflows"))
    yield "toyflows"
    for name in [m for m in sys.modules if m.startswith("toyflows")]:
        del sys.modules[name]
