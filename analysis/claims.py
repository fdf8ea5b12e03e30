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

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from model import jain_index
from store import cell, read_csv, write_csv

HOLDS = "holds"
FAILS = "does not hold"
NOT_MEASURED = "not measured"
NOT_TRUSTED = "run not trusted"
#: the verdict vocabulary, in the order tables count it
VERDICTS = (HOLDS, FAILS, NOT_MEASURED, NOT_TRUSTED)
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
    #: why it does not hold here, as an ablation measured it (what changed the outcome, and
    #: where the evidence is); shown only beside a "does not hold" verdict, so that a
    #: reader sees the cause next to the verdict and not only on a docs page
    because: str = ""
    #: why it does not hold in another view, by backend ('sim', 'model'): what that view
    #: lacks or adds (by construction, or as measured there), with where the evidence is;
    #: shown beside that view's "does not hold" only, as ``because`` is beside the emulation's
    because_views: Mapping[str, str] = field(default_factory=dict)

    def accepts(self, params: Mapping[str, Any]) -> bool:
        """True when a run with these parameters can judge the claim."""
        return all(str(params.get(k)) in {str(v) for v in vals}
                   for k, vals in self.select.items())


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
    """A claim judged on some runs: every field is text, ready for any rendering."""
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
    because: str = ""         # the ablation's explanation, set for "does not hold" only
    #: the backend whose runs gave this verdict, when the sources hold runs of more than one
    #: backend the claim accepts (one verdict per view, side by side); '' otherwise
    view: str = ""

    @property
    def label(self) -> str:
        """The claim's words with its condition and view, e.g. 'RR % of ideal
        [recovery=modern]' or 'RR % of ideal [recovery=modern; ns-3]'."""
        tags = "; ".join(x for x in (self.condition, VIEW_NAMES.get(self.view, self.view))
                         if x)
        return self.text + (f" [{tags}]" if tags else "")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["runs"] = list(self.runs)
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
    def ok(self) -> bool:
        """A complete run: status ok (suspect or not)."""
        return self.status.get("status") == "ok"

    @property
    def started(self) -> str:
        """When it started (UTC, sortable): config's stamp, else the status time."""
        return str(self.config.get("started_utc") or self.status.get("time_utc") or "")

    def table(self, name: str) -> list[dict[str, str]]:
        """Rows of a CSV file of the run ([] when it has none)."""
        if name not in self._cache:
            path = self.path / name
            self._cache[name] = read_csv(path) if path.is_file() else []
        return self._cache[name]

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


def rows(runs: list[Run], name: str) -> list[dict[str, str]]:
    """The rows of one CSV file of every run, each with ``_run`` (its run id)."""
    return [{**r, "_run": run.run_id} for run in runs for r in run.table(name)]


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


def grouped(rows: Iterable[Mapping[str, Any]], col: str,
            key: Callable[[Mapping[str, Any]], Any]) -> dict[Any, list[float]]:
    """The present values of ``col`` by ``key(row)``, in first-seen order (rows whose key
    is None are left out): e.g. per repetition, ``(row["_run"], row["run"])``."""
    out: dict[Any, list[float]] = {}
    for r in rows:
        if (k := key(r)) is not None and (x := cell(r.get(col))) == x:
            out.setdefault(k, []).append(x)
    return out


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


def _because(claim: Claim, runs: list[Run]) -> str:
    """The explanation that belongs to the view these runs give: ``because`` names an
    ablation of the emulation, and beside a simulated or modelled verdict it would explain
    a result it was not measured on; those views have their own (``because_views``)."""
    backends = {r.backend for r in runs}
    if backends == {"emulated"}:
        return claim.because
    return claim.because_views.get(backends.pop(), "") if len(backends) == 1 else ""


def _evaluate(claim: Claim, sources: list[list[Run]], complete: bool) -> list[Verdict]:
    runs = choose(claim, sources, complete)

    def verdict(cond: str, outcome: Outcome, verdict_: str) -> Verdict:
        basis = outcome.basis or ("model" if any(r.backend == "model" for r in runs)
                                  else "sim" if any(r.backend == "sim" for r in runs)
                                  else "measured")
        return Verdict(claim.experiment, claim.key, cond, claim.text, claim.source,
                       claim.quote, claim.paper, outcome.measured, claim.criterion, claim.reason,
                       verdict_, outcome.detail, basis if runs else "",
                       tuple(r.run_id for r in runs),
                       _because(claim, runs) if verdict_ == FAILS else "")

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
        elif flagged:      # the reasons themselves are listed once, with the run
            note = (f"the fidelity check flagged the run ({len(flagged)} reason"
                    f"{'s' if len(flagged) > 1 else ''})")
            out.append(verdict(cond, Outcome(got.measured, got.holds,
                                             "; ".join(x for x in (got.detail, note) if x),
                                             got.basis), NOT_TRUSTED))
        else:
            out.append(verdict(cond, got, HOLDS if got.holds else FAILS))
    return out


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


def write_run_claims(run_dir: Path, claims: list[Claim]) -> list[Verdict]:
    """claims.csv and claims.md of one run folder, judged on that run alone (called once
    its tables are written, before its final status)."""
    run = Run.open(run_dir)
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
    c = counts(verdicts)
    flagged = run.suspects()
    lines = [f"# {run.experiment} {run.run_id}: the paper's claims against this run", "",
             f"backend={run.backend}: {how}.  "
             + ", ".join(f"{n} {k}" for k, n in c.items()) + ".", ""]
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
    c = counts(verdicts)
    return f"{experiment}: {len(verdicts)} claims: " + ", ".join(f"{c[k]} {k}"
                                                                  for k in VERDICTS)
