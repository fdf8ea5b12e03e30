"""The papers' claims as data: one claim type, one verdict vocabulary, their evaluation over
run folders and their rendering, for every experiment.

A ``Claim`` is what a paper states, in words; where (the file under shared/papers and the
figure or section); the paper's value; how our value is computed from run folders
(``measure``, which reads the folders' files only: summary.csv, flows.csv, fidelity.json,
config.json ...); the criterion under which it holds; and the criterion's reason, written
down before any run was looked at.  Each experiment declares its claims in its own folder,
``experiments/<name>/claims.py`` (a list ``CLAIMS``), held to analysis' imports like its
figures.py, so that adding an experiment stays one folder and one registry line;
``store.registry.claims`` finds them by name.  Only the type, the vocabulary, evaluation and
rendering live here, so there is one of each.

A claim is judged on the runs chosen for it (``evaluate``): the newest complete run whose
parameters it accepts (``select``), or, for a claim that ``pools``, every such run of one
sweep, so that a claim that needs several runs (e.g. one run per N) can have them.  The
verdict is one of ``VERDICTS``:

* ``holds`` / ``does not hold``: the criterion met or not;
* ``not measured``: no complete run has what the claim needs (the reason is said);
* ``run not trusted``: measured, but the run's fidelity check flagged it (status.json's or
  config.json's ``suspect`` list, or, for runs from before that list, fidelity.json's
  reasons and per-row ``suspect`` columns); the measured value is still shown.
"""
from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from analysis import intervals
from analysis.fidelity import host_timing
from analysis.intervals import Band, Interval
from analysis.summaries import with_goodput
from model import jain_index
from store import cell, read_csv, write_csv
from store.views import View, view

HOLDS = intervals.HOLDS
FAILS = intervals.FAILS
INCONCLUSIVE = intervals.INCONCLUSIVE
NOT_REGIME = "not in the paper's regime"
NOT_MEASURED = "not measured"
NOT_TRUSTED = "run not trusted"
#: each verdict's colour, on the report page and in the headline figures alike
COLOURS = {HOLDS: "#1a7f37", FAILS: "#cf222e", INCONCLUSIVE: "#8250df",
           NOT_REGIME: "#0969da", NOT_MEASURED: "#6e7781", NOT_TRUSTED: "#9a6700"}
#: the verdict vocabulary, in the order tables count it
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_REGIME, NOT_MEASURED, NOT_TRUSTED)
#: the backends a claim can be judged on, in the order their views are shown, and their
#: names in a verdict's label
VIEW_ORDER = ("emulated", "sim", "model")
VIEW_NAMES = {"emulated": "emulated", "sim": "ns-3", "model": "flow model"}


class Missing(Exception):
    """A claim's input is absent from the runs: the claim is ``not measured`` (the message
    says what is missing)."""


@dataclass(frozen=True)
class Outcome:
    """What a claim's measure found: the measured value in words, whether the criterion
    holds (None: not measured, ``detail`` says why), supporting numbers, and the basis when
    the value is a model's rather than a measurement ('' = from the run's backend)."""
    measured: str
    holds: bool | None
    detail: str = ""
    basis: str = ""


Measure = Callable[[list["Run"], str], Outcome]


@dataclass(frozen=True)
class Samples:
    """A claim's statistic, one value per independent unit of the runs (``unit``: what one
    value is, e.g. 'repetition': its own random draw and its own traffic)."""
    values: tuple[float, ...]
    unit: str = "repetition"
    #: what the verdict should say about these units beside the interval (e.g. how many had
    #: a sender that never connected); every unit stays in the interval
    note: str = ""


Sampler = Callable[[list["Run"], str], Samples]


@dataclass(frozen=True)
class Cause:
    """Why a claim does not hold (or is inconclusive) in one view, in one sentence.  No typed
    numbers: a number goes stale when the runs change, so a cause quotes only what is read
    from folders, and its numbers live in the notebook entry of the ablation.  ``ablation``
    names the folder(s) under results/reference whose runs test the cause (one setting
    changed at a time); each folder's own fidelity check is read and printed beside the
    cause wherever it is shown (``cause_words``), so a cause resting on flagged runs says
    so.  '' when nothing has tested it ("not ablated"), or ``by_construction`` when the
    view cannot do otherwise (a flow model without queues)."""
    text: str
    ablation: str | tuple[str, ...] = ""
    by_construction: bool = False
    #: the verdicts it explains (a cause of "does not hold" does not explain a "holds")
    applies: tuple[str, ...] = ("does not hold",)

    @property
    def folders(self) -> tuple[str, ...]:
        """The ablation folders, relative to results/reference."""
        return (self.ablation,) if isinstance(self.ablation, str) and self.ablation \
            else tuple(self.ablation or ())


#: the committed reference folders that causes name (Cause.ablation)
REFERENCE = Path(__file__).resolve().parents[1] / "results" / "reference"


def ablation_trust(folder: Path) -> str:
    """'5 runs, none flagged' / '4 runs, 2 flagged: not yet evidence' / 'no run folder in
    it' for an ablation folder: every run folder under it, its own fidelity check read."""
    runs = []
    for status in sorted(folder.rglob("status.json")):
        try:
            runs.append(Run.open(status.parent))
        except ValueError:
            continue
    if not runs:
        return "no run folder in it"
    flagged = sum(1 for r in runs if r.suspects() or not r.ok)
    return (f"{len(runs)} run{'s' if len(runs) > 1 else ''}, "
            + ("none flagged" if not flagged else f"{flagged} flagged: not yet evidence"))


def cause_words(cause: Cause, root: Path = REFERENCE,
                link: Callable[[Path], str] | None = None) -> str:
    """The cause with what tested it: '<text> (ablation: <folder> (5 runs, none flagged))',
    '<text> (by construction)' or '<text> (not ablated)'.  ``link`` turns a folder into a
    markdown link target (the results pages); plain folder names otherwise."""
    if cause.by_construction:
        return f"{cause.text} (by construction)"
    if not cause.folders:
        return f"{cause.text} (not ablated)"
    tested = []
    for name in cause.folders:
        shown = f"[{name}]({link(root / name)})" if link else name
        tested.append(f"{shown} ({ablation_trust(root / name)})")
    return f"{cause.text} (ablation: {'; '.join(tested)})"


#: the paper's regime: '' when the runs are in it, else why not, read from the runs' data
Regime = Callable[[list["Run"], str], str]


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and how a run judges it."""
    experiment: str           # registry name of the experiment that measures it
    key: str                  # short stable id, unique within the experiment
    text: str                 # the claim in words
    source: str               # paper file under shared/papers, figure or section
    paper: str                # the paper's value, short ("4.16x", "MPTCP above TCP")
    criterion: str            # when it holds, in words
    reason: str               # why that criterion (its source and reasoning)
    measure: Measure          # runs, condition -> Outcome; raises Missing when inputs lack
    #: run parameters a run must have to be used: name -> accepted values
    select: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    #: a further test of a run's parameters that ``select``'s values cannot say (e.g. which
    #: shares a comma list holds); ``needs`` says in words what it asks
    admit: Callable[[Mapping[str, Any]], bool] | None = None
    #: one verdict per condition the runs hold (e.g. plts' TCP loss recoveries), or one
    conditions: Callable[[list[Run]], list[str]] | None = None
    #: the one fixed condition of a claim that is one of several variants judged on
    #: different runs (e.g. 'cc=lia'), shown also when it is not measured
    condition: str = ""
    #: what makes a run that this claim can use (said when it is not measured)
    needs: str = ""
    #: the paper's own words for it
    quote: str = ""
    #: judged on every accepted run of the newest sweep (or the newest run alone when False)
    pools: bool = False
    #: one of the 2-4 claims the paper's abstract and main figures stand on (the others
    #: support them)
    headline: bool = False
    #: the statistic per unit, for a verdict on a 95 % interval (analysis/intervals.py);
    #: None: the claim is decided by ``measure``'s criterion alone
    samples: Sampler | None = None
    #: where the statistic's mean must lie for "holds" (with ``samples``)
    band: Band | None = None
    #: units a verdict needs, fixed with the criterion before the runs (emulation: >= 5)
    repetitions: int = 5
    #: the precondition that makes the paper's number meaningful, checked on the runs
    regime: Regime | None = None
    #: why it falls short here, by view ('emulated', 'sim', 'model'): one sentence with the
    #: folders that test it, shown beside the verdicts it applies to (claims.md, the report,
    #: the terminal, the paper's page), so a reader sees the cause next to the verdict
    causes: Mapping[str, Cause] = field(default_factory=dict)
    #: the figure of the run the claim is judged on (a file name in the run folder); the
    #: report links each claim row to it
    figure: str = ""
    #: the paper's number, where it gives one (drawn beside ours in headlines.png); None
    #: where it gives none ("about equal", "drops dramatically")
    paper_value: float | None = None

    def __post_init__(self) -> None:
        if (self.samples is None) != (self.band is None):
            raise ValueError(f"claim {self.key}: samples and band go together")

    def accepts(self, params: Mapping[str, Any]) -> bool:
        """True when a run with these parameters can judge the claim."""
        return all(str(params.get(k)) in {str(v) for v in vals}
                   for k, vals in self.select.items()) and (
                       self.admit is None or self.admit(params))


def claim_maker(paper: str, **common: Any) -> Callable[..., Claim]:
    """How a claims module makes its claims: ``common`` holds the fields all of them share
    (experiment, conditions, pools ...; a claim may override one), and ``where``, the figure
    or section, is cited as ``source`` = '<paper>, <where>'."""
    def make(**fields: Any) -> Claim:
        merged = {**common, **fields}
        merged["source"] = f"{paper}, {merged.pop('where')}"
        return Claim(**merged)
    return make


@dataclass(frozen=True)
class Verdict:
    """A claim judged on some runs: every field is text, ready for any rendering, except
    the interval's numbers (``values``, ``bounds``, ``band``) that its figure draws."""
    experiment: str
    key: str
    condition: str
    text: str
    source: str
    quote: str
    paper: str
    measured: str
    criterion: str
    reason: str
    verdict: str
    detail: str
    basis: str                # measured | sim | model
    runs: tuple[str, ...]     # run ids used
    #: the cause beside this verdict with what tested it (cause_words), or ''
    because: str = ""
    #: the backend whose runs gave this verdict, when the sources hold runs of more than one
    #: backend the claim accepts (one verdict per view, side by side); '' otherwise
    view: str = ""
    headline: bool = False
    #: the 95 % interval in words ('1.36 [1.22, 1.50], n=5 repetitions'); '' when the
    #: claim is decided without one
    interval: str = ""
    #: the figure of the judged run the claim is read from (Claim.figure)
    figure: str = ""
    #: an interval verdict's numbers: the statistic per unit, (mean, lo, hi) and the band
    values: tuple[float, ...] = ()
    bounds: tuple[float, float, float] | None = None
    band: tuple[float, float] | None = None

    @property
    def label(self) -> str:
        """The claim's words with its condition and view, e.g. 'RR % of ideal
        [recovery=modern]' or 'RR % of ideal [recovery=modern; ns-3]'."""
        tags = "; ".join(x for x in (self.condition, VIEW_NAMES.get(self.view, self.view))
                         if x)
        return self.text + (f" [{tags}]" if tags else "")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: an open band side (infinite) is null."""
        d = asdict(self)
        d["runs"] = list(self.runs)
        d["values"] = list(self.values)
        d["band"] = None if self.band is None else [
            None if math.isinf(x) else x for x in self.band]
        return d


# -- run folders ----------------------------------------------------------------------------

@dataclass
class Run:
    """One run folder, its files read when first asked for (what claims and reports read)."""
    path: Path
    config: dict[str, Any]
    status: dict[str, Any]
    #: a sweep's run kept as ``<id>.invalid``: the reason (a suspect run by the sweep's rule)
    invalid: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    #: repetitions (the tables' ``run`` column) left out of every table: the flagged ones
    drop: frozenset[str] = frozenset()
    #: tables that could not be read (file name -> why): read as empty, named by the report
    damaged: dict[str, str] = field(default_factory=dict, repr=False)
    #: every table as parsed, before ``drop``: shared with the copies ``without`` makes, so
    #: that judging repetition by repetition (analysis.paired) parses a file once
    _parsed: dict[str, list[dict[str, str]]] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: Path, invalid: str = "") -> Run:
        """Read config.json and status.json (ValueError, one line, if it is not a run)."""
        path = Path(path)
        try:
            status = json.loads((path / "status.json").read_text())
            config = json.loads((path / "config.json").read_text())
        except FileNotFoundError:
            raise ValueError(f"{path} is not a dcrepro run folder (no status.json or "
                             "config.json)") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: unreadable run folder ({type(exc).__name__})") from None
        if not isinstance(config, dict) or "experiment" not in config:
            raise ValueError(f"{path}/config.json names no experiment")
        return cls(path, config, status, invalid)

    @property
    def experiment(self) -> str:
        return str(self.config["experiment"])

    @property
    def run_id(self) -> str:
        return str(self.config.get("run_id") or self.path.name)

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.config.get("params") or {})

    @property
    def backend(self) -> str:
        return str(self.params.get("backend", "emulated"))

    @property
    def view(self) -> View:
        """What its backend can measure (store/views.py): a claim asks this, not the name."""
        return view(self.backend)

    @property
    def ok(self) -> bool:
        """A complete run: status ok (suspect or not)."""
        return self.status.get("status") == "ok"

    @property
    def started(self) -> str:
        """When it started (UTC, sortable): config's stamp, else the status time."""
        return str(self.config.get("started_utc") or self.status.get("time_utc") or "")

    def table(self, name: str) -> list[dict[str, str]]:
        """Rows of a CSV file of the run ([] when it has none); flows.csv with the goodput
        columns, an older folder's read from its backend's column (summaries.with_goodput)."""
        if name not in self._cache:
            if name not in self._parsed:
                self._parsed[name] = self._parse(name)
            got = self._parsed[name]
            self._cache[name] = [r for r in got if rep_id(r.get("run")) not in self.drop] \
                if self.drop else got
        return self._cache[name]

    def _parse(self, name: str) -> list[dict[str, str]]:
        path = self.path / name
        try:
            got = read_csv(path) if path.is_file() else []
        except (UnicodeDecodeError, csv.Error, OSError) as exc:
            # a damaged table is no table: the claims that need it are not measured
            self.damaged[name] = (f"not UTF-8 text ({exc.reason})"
                                  if isinstance(exc, UnicodeDecodeError)
                                  else f"unreadable ({type(exc).__name__}: {exc})")
            got = []
        return with_goodput(got, self.backend) if name == "flows.csv" else got

    def flagged_reps(self) -> set[str] | None:
        """The repetitions the fidelity check's reasons name ('run 3 mptcp: ...', 'n6-run3:
        ...'): set() when the run is not flagged, None when some reason names no single
        repetition (then the whole folder is in doubt)."""
        reps: set[str] = set()
        for reason in self.suspects():
            m = _REP.match(reason)
            if m is None:
                return None
            reps.add(str(int(m.group(1) or m.group(2))))     # 'run08' is repetition 8
        return reps

    def without(self, reps: set[str]) -> Run:
        """This run with the repetitions ``reps`` left out of every table it reads."""
        return Run(self.path, {**self.config, "suspect": []}, {**self.status, "suspect": []},
                   self.invalid, drop=frozenset(reps), damaged=self.damaged,
                   _parsed=self._parsed)

    def data(self, name: str) -> Any:
        """A JSON file of the run (None when it has none or it is unreadable)."""
        if name not in self._cache:
            try:
                self._cache[name] = json.loads((self.path / name).read_text())
            except (OSError, ValueError):
                self._cache[name] = None
        return self._cache[name]

    def suspects(self) -> list[str]:
        """Why the fidelity check doubts this run's numbers ([] when it does not)."""
        found = [str(s) for s in (self.status.get("suspect") or [])]
        found += [str(s) for s in (self.config.get("suspect") or [])]
        if not found:
            # runs from before the suspect list: their fidelity reports and row flags
            fid = self.data("fidelity.json")
            for rep in (fid.get("reports") or []) if isinstance(fid, dict) else []:
                tag = " ".join(str(rep[k]) for k in ("transport", "topology", "network")
                               if k in rep)
                found += [f"run {rep.get('run')} {tag}: {r}" for r in rep.get("reasons", [])]
            for name in ("summary.csv", "flows.csv"):
                flagged = [r for r in self.table(name)
                           if str(r.get("suspect", "")).lower() == "true"]
                if flagged:
                    found.append(f"{name}: {len(flagged)} row(s) marked suspect")
        if self.invalid and not found:
            found.append(f"kept as invalid by its sweep: {self.invalid}")
        return list(dict.fromkeys(found))


#: a fidelity reason that names one repetition: 'run 3 ...' or outcast's 'n6-run3: ...'
_REP = re.compile(r"^(?:run (\d+)\b|(?:n\d+-)?run(\d+):)")


def repeatable(reasons: Iterable[str], prefix: str = "") -> list[int]:
    """The repetitions (ascending) that only host timing flagged (fidelity.host_timing):
    every flag naming one of them is the host's, and at least one does.  ``prefix``: only
    the flags whose place starts so (outcast's 'n06-'); a flag naming no repetition names
    none here."""
    by: dict[int, bool] = {}
    for reason in reasons:
        if not reason.startswith(prefix):
            continue
        m = _REP.match(reason[len(prefix):] if prefix else reason)
        if m is None:
            continue
        rep = int(m.group(1) or m.group(2))
        by[rep] = by.get(rep, True) and host_timing(reason)
    return sorted(r for r, only_host in by.items() if only_host)


def rep_id(value: Any) -> str:
    """A table's ``run`` cell as a repetition id ('08' and '8' alike; 'all' stays)."""
    text = str(value)
    return str(int(text)) if text.isdigit() else text


def rows(runs: list[Run], name: str) -> list[dict[str, str]]:
    """The rows of one CSV file of every run, each with ``_run`` (its run id)."""
    return [{**r, "_run": run.run_id} for run in runs for r in run.table(name)]


def same_view(runs: list[Run]) -> list[Run]:
    """The runs of the newest run's view only: rates of different views are not pooled."""
    return [r for r in runs if r.view == runs[0].view]


def need_rows(runs: list[Run], name: str, what: str = "") -> list[dict[str, str]]:
    """rows(), or Missing when no run has any."""
    got = rows(runs, name)
    if not got:
        raise Missing(f"no {name} rows{f' ({what})' if what else ''}")
    return got


def num(row: Mapping[str, Any], col: str) -> float:
    """A number of a row; Missing when the column is absent, empty or not a number."""
    x = cell(row.get(col))
    if x != x:
        raise Missing(f"no value in column {col}")
    return x


#: a unit of a grouping (grouped, per_unit): e.g. a repetition, (run id, run)
U = TypeVar("U")


def grouped(rows: Iterable[Mapping[str, Any]], col: str,
            key: Callable[[Mapping[str, Any]], U | None]) -> dict[U, list[float]]:
    """The present values of ``col`` by ``key(row)``, in first-seen order (rows whose key
    is None are left out): e.g. per repetition, ``(row["_run"], row["run"])``."""
    out: dict[U, list[float]] = {}
    for r in rows:
        if (k := key(r)) is not None and (x := cell(r.get(col))) == x:
            out.setdefault(k, []).append(x)
    return out


def per_unit(a: Mapping[U, list[float]], b: Mapping[U, list[float]],
             stat: Callable[[list[float], list[float]], float]) -> tuple[float, ...]:
    """``stat(a[k], b[k])`` for every unit ``k`` (e.g. a repetition: (run id, run)) that
    both groupings hold, in ``a``'s order; a unit where ``stat`` is not a number (a mean
    of nothing, a ratio over 0) gives no value."""
    vals = []
    for k, xs in a.items():
        if k in b and xs and b[k]:
            v = stat(xs, b[k])
            if v == v and not math.isinf(v):
                vals.append(float(v))
    return tuple(vals)


def mean_of(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def ratio_of_means(xs: list[float], ys: list[float]) -> float:
    """mean(xs) / mean(ys); NaN when ys' mean is 0."""
    den = mean_of(ys)
    return mean_of(xs) / den if den > 0 else float("nan")


def jain_gap(xs: list[float], ys: list[float]) -> float:
    """Jain's index of xs minus that of ys (NaN when either moved nothing)."""
    return float(jain_index(xs)) - float(jain_index(ys))


def mean_jain(groups: Iterable[list[float]]) -> float:
    """Mean over groups (each one repetition: its flows shared the network) of Jain's
    index; Missing when every flow of every group moved nothing."""
    vals = [j for g in groups if g and (j := float(jain_index(g))) == j]   # NaN: all zero
    if not vals:
        raise Missing("every flow moved nothing")
    return sum(vals) / len(vals)


def fmt(x: float, digits: int = 2) -> str:
    """A number for people: rounded, 'inf' kept."""
    return "inf" if math.isinf(x) else f"{x:.{digits}f}"


# -- evaluation -----------------------------------------------------------------------------

def choose(claim: Claim, sources: list[list[Run]], complete: bool = True) -> list[Run]:
    """The runs a claim is judged on: of the newest source (a run folder, or a sweep's runs)
    with a complete run the claim accepts, every such run, newest first, when the claim
    pools runs, else the newest alone ([] if none).
    ``complete=False`` takes runs whatever their status (a run judged while it is plotted)."""
    def newest(src: list[Run]) -> str:
        return max((r.started for r in src), default="")
    for src in sorted(sources, key=newest, reverse=True):
        got = [r for r in src if (r.ok or not complete) and r.experiment == claim.experiment
               and claim.accepts(r.params)]
        if got:
            return sorted(got, key=lambda r: r.started, reverse=True)[:None if claim.pools
                                                                      else 1]
    return []


def _unmeasured(claim: Claim, sources: list[list[Run]]) -> str:
    mine = [r for src in sources for r in src if r.experiment == claim.experiment]
    # None in a select means "a run from before the parameter existed": not worth saying
    want = ", ".join(f"{k}={'/'.join(str(x) for x in v if x is not None)}"
                     for k, v in claim.select.items())
    text = f"no complete {claim.experiment} run" + (f" with {want}" if want else "")
    bad = [r for r in mine if not r.ok]
    if bad:
        text += "; " + "; ".join(f"run {r.run_id} is '{r.status.get('status')}'"
                                 + (f" ({r.status.get('error')})" if r.status.get('error')
                                    else "") for r in bad[:2])
    return text + (f"; {claim.needs}" if claim.needs else "")


def views(claim: Claim, sources: list[list[Run]], complete: bool = True) -> list[str]:
    """The backends (VIEW_ORDER) of the runs the claim could be judged on, when there is
    more than one and the claim does not name its backend; else []."""
    if "backend" in claim.select:
        return []
    got = {r.backend for src in sources for r in src
           if (r.ok or not complete) and r.experiment == claim.experiment
           and claim.accepts(r.params)}
    order = {b: i for i, b in enumerate(VIEW_ORDER)}
    return sorted(got, key=lambda b: (order.get(b, len(order)), b)) if len(got) > 1 else []


def evaluate(claim: Claim, sources: list[list[Run]], complete: bool = True) -> list[Verdict]:
    """The claim's verdicts (one per condition) on the runs ``choose`` picks; when the
    sources hold accepted runs of several backends that measure it, one set per backend
    (``Verdict.view``), each condition's views next to each other (emulated, ns-3, flow
    model)."""
    backends = views(claim, sources, complete)
    per = {b: _evaluate(claim, [[r for r in src if r.backend == b] for src in sources],
                        complete) for b in backends}
    # a backend that cannot measure the claim at all (ns-3 has no MPTCP) adds no view
    per = {b: vs for b, vs in per.items() if any(v.verdict != NOT_MEASURED for v in vs)}
    if len(per) < 2:
        return next(iter(per.values())) if per else _evaluate(claim, sources, complete)
    out = [replace(v, view=b) for b, vs in per.items() for v in vs]
    first = {c: i for i, c in enumerate(dict.fromkeys(v.condition for v in out))}
    return sorted(out, key=lambda v: first[v.condition])


def disagreements(verdicts: Iterable[Verdict]) -> list[str]:
    """One line per claim and condition whose views disagree (one holds, another does not
    hold), with each view's measurement: where the emulator, the packet simulation and the
    flow model part ways is what a reader should look at first."""
    groups: dict[tuple[str, str, str], list[Verdict]] = {}
    for v in verdicts:
        if v.view:
            groups.setdefault((v.experiment, v.key, v.condition), []).append(v)
    out = []
    for vs in groups.values():
        if {HOLDS, FAILS} <= {v.verdict for v in vs}:
            head = vs[0].text + (f" [{vs[0].condition}]" if vs[0].condition else "")
            out.append(f"{head}: " + "; ".join(
                f"{VIEW_NAMES.get(v.view, v.view)} {v.verdict}"
                + (f" ({v.measured})" if v.measured else "") for v in vs))
    return out


def _because(claim: Claim, runs: list[Run], verdict: str) -> str:
    """The cause that belongs to the view these runs give and to this verdict, with what
    tested it (``cause_words``): a view's cause explains a result measured in that view
    only, and a cause of "does not hold" never stands beside a "holds"."""
    backends = {r.backend for r in runs}
    if len(backends) != 1:
        return ""
    view = backends.pop()
    cause = claim.causes.get(view)
    return cause_words(cause) if cause is not None and verdict in cause.applies else ""


def _evaluate(claim: Claim, sources: list[list[Run]], complete: bool) -> list[Verdict]:
    runs = choose(claim, sources, complete)

    def verdict(cond: str, outcome: Outcome, verdict_: str, interval: str = "",
                numbers: Interval | None = None, values: tuple[float, ...] = ()) -> Verdict:
        basis = outcome.basis or ("model" if any(r.backend == "model" for r in runs)
                                  else "sim" if any(r.backend == "sim" for r in runs)
                                  else "measured")
        return Verdict(claim.experiment, claim.key, cond, claim.text, claim.source,
                       claim.quote, claim.paper, outcome.measured, claim.criterion, claim.reason,
                       verdict_, outcome.detail, basis if runs else "",
                       tuple(r.run_id for r in runs),
                       _because(claim, runs, verdict_),
                       headline=claim.headline, interval=interval, figure=claim.figure,
                       values=values,
                       bounds=None if numbers is None else (numbers.mean, numbers.lo,
                                                            numbers.hi),
                       band=None if claim.band is None or numbers is None
                       else (claim.band.lo, claim.band.hi))

    if not runs:
        return [verdict(claim.condition, Outcome("", None, _unmeasured(claim, sources)),
                        NOT_MEASURED)]
    conds = claim.conditions(runs) if claim.conditions else [claim.condition]
    flagged = list(dict.fromkeys(s for r in runs for s in r.suspects()))
    out = []
    for cond in conds or [""]:
        try:
            got = claim.measure(runs, cond)
        except Missing as exc:
            got = Outcome("", None, str(exc))
        if got.holds is None:
            out.append(verdict(cond, Outcome("", None, got.detail or "inputs missing",
                                             got.basis), NOT_MEASURED))
        elif claim.samples is not None:
            out.append(_on_interval(claim, runs, cond, got, verdict))
        elif off := regime_of(claim, runs, cond):
            out.append(verdict(cond, Outcome(got.measured, got.holds, "; ".join(
                x for x in (got.detail, off) if x), got.basis), NOT_REGIME))
        elif flagged:      # the reasons themselves are listed once, with the run
            note = (f"the fidelity check flagged the run ({len(flagged)} reason"
                    f"{'s' if len(flagged) > 1 else ''})")
            out.append(verdict(cond, Outcome(got.measured, got.holds,
                                             "; ".join(x for x in (got.detail, note) if x),
                                             got.basis), NOT_TRUSTED))
        else:
            out.append(verdict(cond, got, HOLDS if got.holds else FAILS))
    return out


def regime_of(claim: Claim, runs: list[Run], cond: str) -> str:
    """Why the runs are outside the paper's regime ('' when inside, or when the claim
    states none); a regime the runs' data cannot establish is not the paper's either."""
    if claim.regime is None:
        return ""
    try:
        return claim.regime(runs, cond)
    except Missing as exc:
        return f"the paper's regime cannot be checked on this run: {exc}"


def deterministic(runs: list[Run], values: tuple[float, ...]) -> bool:
    """Whether the values are one sample: a flow-model or ns-3 view whose units all gave
    the same value (the same input: repeating it adds nothing).  Units of such a view that
    differ differ by their random draw (seed, jitter) and are samples of it."""
    return (all(r.backend in ("model", "sim") for r in runs)
            and len({round(v, 12) for v in values}) == 1)


def _on_interval(claim: Claim, runs: list[Run], cond: str, got: Outcome,
                 verdict: Callable[..., Verdict]) -> Verdict:
    """An interval claim's verdict: its statistic per unit of the runs the fidelity check
    trusts, the mean's 95 % interval against the band, the paper's regime checked on the
    same runs.  Flagged runs are left out, as the check (written before the runs) says."""
    assert claim.samples is not None and claim.band is not None
    trusted, left_out, reps_out = [], 0, 0
    for r in runs:
        reps = r.flagged_reps()
        if reps is None:            # a reason about the whole folder
            left_out += 1
        elif reps:                  # the flagged repetitions only
            trusted.append(r.without(reps))
            reps_out += len(reps)
        else:
            trusted.append(r)
    notes = [got.detail] if got.detail else []
    if left_out:
        notes.append(f"{left_out} of {len(runs)} run folder(s) left out: the fidelity "
                     "check flagged them")
    if reps_out:
        repeated = sum(len(r.config.get("repeats") or {}) for r in runs)
        notes.append(f"{reps_out} repetition(s) left out: the fidelity check flagged them"
                     + (f" ({repeated} run again: only this machine's timing flagged them)"
                        if repeated else ""))
    if not trusted:
        return verdict(cond, Outcome(got.measured, got.holds, "; ".join(notes), got.basis),
                       NOT_TRUSTED)
    try:
        smp = claim.samples(trusted, cond)
        if not smp.values:
            raise Missing("no unit of the runs gives the statistic")
    except Missing as exc:
        if reps_out:               # what is left after the flagged repetitions: nothing
            return verdict(cond, Outcome(got.measured, got.holds, "; ".join(notes),
                                         got.basis), NOT_TRUSTED)
        return verdict(cond, Outcome("", None, "; ".join([*notes, str(exc)]), got.basis),
                       NOT_MEASURED)
    if smp.note:
        notes.append(smp.note)
    iv = intervals.mean_interval(smp.values, deterministic(trusted, smp.values))
    word, why = intervals.decide(iv, claim.band, claim.repetitions)
    if word == INCONCLUSIVE and not iv.deterministic and iv.n >= claim.repetitions:
        # straddling: how many units would decide it, if their spread stayed this one
        more = intervals.to_decide(iv, claim.band)
        why += (f" (at this spread about {more} {smp.unit}s would decide it)" if more else
                f" (at this spread more than {intervals.DECIDE_MAX} {smp.unit}s would be "
                "needed)")
    off = regime_of(claim, trusted, cond)
    if off:
        word, why = NOT_REGIME, off
    text = interval_text(iv, smp.unit)
    notes.append(f"criterion {claim.band.text()}: {why}")
    return verdict(cond, Outcome(text, word == HOLDS, "; ".join(notes), got.basis), word,
                   text, iv, tuple(float(x) for x in smp.values))


def interval_text(iv: Interval, unit: str) -> str:
    """'1.36 [1.22, 1.50], 95 %, n=5 repetitions', or the one sample of a deterministic
    view."""
    def g(x: float) -> str:
        return f"{x:.1f}" if abs(x) >= 100 else f"{x:.3g}"
    if iv.deterministic:
        return f"{g(iv.mean)} (deterministic: one sample)"
    if iv.n < 2:
        return f"{g(iv.mean)} (one {unit}: no interval)"
    return f"{g(iv.mean)} [{g(iv.lo)}, {g(iv.hi)}] 95 %, n={iv.n} {unit}s"


def evaluate_all(claims: Iterable[Claim], sources: list[list[Run]],
                 complete: bool = True) -> list[Verdict]:
    """Every claim's verdicts, in declaration order."""
    return [v for c in claims for v in evaluate(c, sources, complete)]


def counts(verdicts: Iterable[Verdict]) -> dict[str, int]:
    """How many verdicts of each kind (every kind present, in VERDICTS order)."""
    got = {v: 0 for v in VERDICTS}
    for v in verdicts:
        got[v.verdict] += 1
    return got


# -- rendering ------------------------------------------------------------------------------

COLUMNS = ("condition", "text", "paper", "measured", "criterion", "verdict", "detail",
           "basis", "source", "because")


def write_run_claims(run_dir: Path, claims: list[Claim],
                     found: list[Verdict] | None = None) -> list[Verdict]:
    """claims.csv and claims.md of one run folder, judged on that run alone (called once
    its tables are written, before its final status); ``found``: its verdicts, when the
    caller has judged them already."""
    run = Run.open(run_dir)
    if found is None:
        found = evaluate_all(claims, [[run]], complete=False)
    write_csv(run_dir / "claims.csv", [{"claim": v.text, **{k: getattr(v, k) for k in COLUMNS
                                                             if k != "text"}}
                                       for v in found])
    (run_dir / "claims.md").write_text(run_markdown(run, found))
    return found


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def run_markdown(run: Run, verdicts: list[Verdict]) -> str:
    """claims.md: the verdicts of one run as a markdown table."""
    how = {"model": "flow-model numbers, not measurements",
           "sim": "measured in the ns-3 packet simulation, not the emulator"}.get(
        run.backend, "measured")
    flagged = run.suspects()
    lines = [f"# {run.experiment} {run.run_id}: the paper's claims against this run", "",
             f"backend={run.backend}: {how}.  {count_words(verdicts)}.", ""]
    if flagged:
        lines += ["The run's fidelity check flagged it:", "", *(f"- {s}" for s in flagged), ""]
    lines += ["| claim | paper | measured | criterion | verdict | detail | source |",
              "|---|---|---|---|---|---|---|"]
    for v in verdicts:
        lines.append("| " + " | ".join(_md(x) for x in (
            v.label, v.paper, v.measured, v.criterion, verdict_words(v), v.detail, v.source))
            + " |")
    return "\n".join(lines) + "\n"


def verdict_words(v: Verdict) -> str:
    """The verdict, with the ablation's explanation when it does not hold and one exists."""
    return f"{v.verdict}, because {v.because}" if v.because else v.verdict


def terminal_line(v: Verdict, width: int = 16) -> str:
    """One line per claim: verdict, experiment, claim, measured vs paper."""
    measured = f"measured {v.measured}" if v.measured else v.detail
    model = f" ({v.basis})" if v.basis in ("model", "sim") else ""
    because = f" (because {v.because})" if v.because else ""
    return (f"{v.verdict:<15}  {v.experiment:<{width}} {v.label}: {measured}{model}; "
            f"paper {v.paper}{because}")


def summary_line(experiment: str, verdicts: list[Verdict]) -> str:
    """One line per experiment: how many claims of each verdict."""
    return f"{experiment}: {len(verdicts)} claims: {count_words(verdicts)}"


def count_words(verdicts: list[Verdict]) -> str:
    """'3 holds, 1 inconclusive': the verdicts present, in VERDICTS order."""
    c = counts(verdicts)
    return ", ".join(f"{c[k]} {k}" for k in VERDICTS if c[k]) or "no claims"
