"""``dcrepro report``: which of the papers' claims hold, on one page that can be copied.

Input: results roots (every run folder ``<root>/<experiment>/<run id>/``; a claim is judged
on the newest complete run it accepts), run folders and sweep folders (a sweep's complete
runs are one source, its ``.invalid`` runs come along flagged).  Output, in one folder
(default ``<results root>/report``): ``index.html`` (no script, no network: every figure is
copied under ``figures/<experiment>/<run id>/`` and linked relatively), ``report.md`` and
``verdicts.json``; the terminal gets one line per claim.  Every registry experiment has a
section, measured or not, so the table always says what was not reproduced.

An experiment's ablations (one setting changed at a time, to show why a claim does or does
not hold) live beside its runs as ``<root>/<experiment>-ablation*/`` with ``ablation.png``
and ``ablation.md`` (a table with the command that made it); the section shows each one
next to the claims, so a verdict's "because" can point at evidence on the same page.

When the runs hold more than one backend a claim accepts (emulated, ``--backend sim``,
``--backend model``), the claim gets one verdict per backend, side by side, and the section
lists where they disagree (one holds, another does not).

Only run folders' files are read; the claims, their evaluation and their rendering as lines
come from analysis.claims.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from store import papers, registry, wall_s

from .claims import (
    COLOURS,
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_REGIME,
    VERDICTS,
    VIEW_ORDER,
    Run,
    Verdict,
    count_words,
    counts,
    disagreements,
    evaluate_all,
    summary_line,
    terminal_line,
)
from .fidelity import steal_named
from .figures import HEADLINES, NOTES
from .paired import Paired, pair

#: what marks a folder as a report this command wrote (it may then be replaced)
MARKER = "verdicts.json"
#: the colours of the four verdicts (page and legend)
MEANING = {"holds": "the criterion is met (an interval claim: its 95 % interval lies inside "
                    "the band)",
           "does not hold": "measured, and the criterion is not met (an interval claim: its "
                            "interval lies outside the band)",
           "inconclusive": "the interval straddles the band's edge, or fewer repetitions than "
                           "the claim needs were measured",
           "not in the paper's regime": "measured, but the run is outside the regime that "
                                        "makes the paper's number meaningful",
           "not measured": "no complete run has what the claim needs",
           "run not trusted": "measured, but the run's fidelity check flagged it"}


@dataclass
class Section:
    """One experiment: its verdicts and the runs they used."""
    experiment: str
    paper: str
    verdicts: list[Verdict]
    runs: list[Run] = field(default_factory=list)     # used by some verdict, newest first
    others: list[Run] = field(default_factory=list)   # given but used by none
    ablations: list[Path] = field(default_factory=list)   # <root>/<experiment>-ablation*/

    @property
    def disagree(self) -> list[str]:
        """Where the views (emulated, ns-3, flow model) of one claim disagree."""
        return disagreements(self.verdicts)


@dataclass
class Report:
    root: Path                      # the results root (default output: root/report)
    sources: list[list[Run]]
    sections: list[Section]

    @functools.cached_property
    def headline_claims(self) -> list[tuple[papers.Paper, Verdict, dict[str, list[Verdict]]]]:
        """headlines(self), worked out once (every page, table and figure asks for it)."""
        return headlines(self)

    @property
    def skipped(self) -> list[str]:
        """What the report could not use, one line each: half-written folders under the
        results root, and tables of its runs that could not be read."""
        half = [f"{p}: half-written run folder (no "
                + " or ".join(n for n in ("status.json", "config.json")
                              if not (p / n).is_file()) + "); left out"
                for name in registry.EXPERIMENTS if (self.root / name).is_dir()
                for p in sorted((self.root / name).iterdir())
                if p.is_dir() and not _is_run(p) and p.name != "report"]
        bad = [f"{r.path / name}: {why}; read as empty" for src in self.sources for r in src
               for name, why in r.damaged.items()]
        return half + bad


# -- input ----------------------------------------------------------------------------------

def _is_run(path: Path) -> bool:
    return (path / "status.json").is_file() and (path / "config.json").is_file()


def sweep_runs(sweep_dir: Path) -> list[Run]:
    """A sweep folder's finished runs: complete ones, and invalid ones flagged as such."""
    out = []
    for path in sorted((sweep_dir / "runs").glob("*")) if (sweep_dir / "runs").is_dir() else []:
        if not path.is_dir() or not _is_run(path):
            continue
        if path.name.endswith(".invalid"):
            status = json.loads((path / "status.json").read_text())
            why = (status.get("suspect") or ["suspect"])[0]
            out.append(Run.open(path, invalid=str(why)))
        else:
            out.append(Run.open(path))
    return out


def root_runs(root: Path) -> list[Run]:
    """Every run folder ``root/<experiment>/<id>/`` of a registry experiment."""
    return [Run.open(p) for name in registry.EXPERIMENTS if (root / name).is_dir()
            for p in sorted((root / name).iterdir()) if p.is_dir() and _is_run(p)]


def gather(paths: list[Path]) -> tuple[Path, list[list[Run]]]:
    """(results root, sources) from absolute paths: results roots, experiment folders, run
    folders and sweep folders.  ValueError (one line) for anything else."""
    sources: list[list[Run]] = []
    root: Path | None = None
    for path in paths:
        if not path.is_dir():
            raise ValueError(f"{path}: no such folder")
        if _is_run(path):
            run = Run.open(path)
            if run.experiment not in registry.EXPERIMENTS:
                raise ValueError(f"{path}: unknown experiment {run.experiment!r}")
            sources.append([run])
            here = path.parent.parent
        elif (path / "manifest.jsonl").is_file():
            sources.append(sweep_runs(path))
            here = path.parent.parent                  # <root>/sweeps/<name>
        elif any((path / n).is_dir() for n in registry.EXPERIMENTS):
            runs = root_runs(path)
            if not runs:
                raise ValueError(f"{path}: no run folders of any experiment in it")
            sources += [[r] for r in runs]
            here = path
        elif path.name in registry.EXPERIMENTS and any(_is_run(p) for p in path.iterdir()):
            sources += [[Run.open(p)] for p in sorted(path.iterdir()) if _is_run(p)]
            here = path.parent
        else:
            raise ValueError(f"{path}: not a run folder, sweep folder or results folder "
                             "(results/<experiment>/<run id>/)")
        root = root or here
    if root is None:
        raise ValueError("nothing to report on")
    return root, sources


def ablations_of(root: Path, experiment: str) -> list[Path]:
    """The experiment's ablation folders under the results root: ``<experiment>-ablation``
    and ``<experiment>-ablation-<name>``, each with its ablation.png."""
    return sorted(p for p in root.glob(f"{experiment}-ablation*")
                  if p.is_dir() and (p.name == f"{experiment}-ablation" or
                                     p.name.startswith(f"{experiment}-ablation-"))
                  and (p / "ablation.png").is_file())


def build(root: Path, sources: list[list[Run]]) -> Report:
    """Every registry experiment's claims judged on the sources, with its ablations."""
    sections = []
    for name in registry.EXPERIMENTS:
        # headline claims first, everywhere (page, report.md, terminal), the rest after them
        verdicts = sorted(evaluate_all(registry.claims(name), sources),
                          key=lambda v: not v.headline)
        used = {rid for v in verdicts for rid in v.runs}
        mine = sorted((r for src in sources for r in src if r.experiment == name),
                      key=lambda r: r.started, reverse=True)
        sections.append(Section(name, getattr(registry.module(name), "PAPER", ""), verdicts,
                                [r for r in mine if r.run_id in used],
                                [r for r in mine if r.run_id not in used],
                                ablations_of(root, name)))
    return Report(root, sources, sections)


# -- facts about a run ----------------------------------------------------------------------

def _when(stamp: str) -> str:
    try:
        return dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return stamp or "unknown"


def provenance(run: Run) -> dict[str, str]:
    """Where a run comes from and how to make it again (every value a string)."""
    git = run.config.get("git") or {}
    env = run.config.get("environment") or {}
    fp = {**(run.config.get("machine") or {}), **(run.data("fingerprint.json") or {})}
    commit = str(git.get("commit") or "unknown")[:12] + ("-dirty" if git.get("dirty") else "")
    machine = ", ".join(x for x in (
        str(fp.get("host") or ""), str(fp.get("cpu_model") or ""),
        f"{env.get('cpus')} CPUs" if env.get("cpus") else "",
        f"kernel {(env.get('versions') or {}).get('kernel')}"
        if (env.get("versions") or {}).get("kernel") else "") if x) or "not recorded"
    emulated = run.backend == "emulated"
    return {"run id": run.run_id, "status": str(run.status.get("status")),
            "backend": run.backend,
            "dataplane": str(run.params.get("dataplane", "")) if emulated else "none (model)",
            "commit": commit, "machine": machine, "date": _when(run.started),
            "rerun": f"dcrepro rerun {run.path}", "folder": str(run.path)}


def fidelity(run: Run) -> tuple[str, list[str]]:
    """The run's fidelity verdict in words and the reasons behind it."""
    reasons = run.suspects()
    if run.backend == "model":
        return "model run: flow-model numbers, nothing emulated to check", reasons
    if not run.ok:
        return f"run is '{run.status.get('status')}': {run.status.get('error')}", reasons
    if reasons:
        return f"flagged: {len(reasons)} reason{'s' if len(reasons) > 1 else ''}", reasons
    return "not flagged: every check of the run passed", reasons


def figures_of(run: Run) -> list[Path]:
    """The run's figures (its PNG files): in the order they were drawn when figures.json
    says it, the others after by name."""
    drawn = list(figure_notes(run))
    found = sorted(p for p in run.path.glob("*.png") if p.is_file())
    return sorted(found, key=lambda p: (drawn.index(p.name) if p.name in drawn
                                        else len(drawn), p.name))


def figure_notes(run: Run) -> dict[str, str]:
    """How each figure was made (figures.json: name -> text, written by the figures code)."""
    got = run.data(NOTES)
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}


# -- writing --------------------------------------------------------------------------------

def check_out(out: Path) -> None:
    """The output folder may be written: new, empty, or a report this command wrote."""
    if out.exists() and (not out.is_dir() or
                         (any(out.iterdir()) and not (out / MARKER).is_file())):
        raise ValueError(f"--out {out}: exists and is not a dcrepro report folder")
    parent = out.parent
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: {parent} is not writable")


def headline_pairs(report: Report,
                   reference: Report | None) -> list[tuple[Verdict, Paired]]:
    """same_draws over every emulated headline verdict ([] without a reference): what the
    page tables, and the screen's first line counts the shown ones of."""
    return same_draws(report, reference, [
        v for _, _, views in report.headline_claims for v in views.get("emulated", [])]) \
        if reference is not None else []


def write(report: Report, out: Path, reference: Report | None = None,
          same: list[tuple[Verdict, Paired]] | None = None) -> Path:
    """index.html, report.md, verdicts.json and figures/ in ``out`` (replaced whole, so no
    stale figure stays); returns the page.  ``reference``: the runs whose networks these
    drew are compared with them repetition by repetition (``same``: headline_pairs, when
    the caller has it already)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    if same is None:
        same = headline_pairs(report, reference)
    try:
        figs = _copy_figures(report, tmp)
        (tmp / "index.html").write_text(page(report, out, figs, tmp, same),
                                        encoding="utf-8")
        (tmp / "report.md").write_text(markdown(report, out, figs, same), encoding="utf-8")
        (tmp / MARKER).write_text(json.dumps(as_json(report), indent=1) + "\n")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out / "index.html"


def _copy_figures(report: Report, where: Path) -> dict[str, list[str]]:
    """Copy every used run's figures into where/figures/<experiment>/<run id>/; run id ->
    their paths relative to the report folder."""
    out: dict[str, list[str]] = {}
    for sec in report.sections:
        for run in sec.runs:
            rel = []
            for fig in figures_of(run):
                dest = where / "figures" / sec.experiment / run.run_id / fig.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(fig, dest)
                rel.append(dest.relative_to(where).as_posix())
            out[run.run_id] = rel
        for folder in sec.ablations:
            dest = where / "figures" / sec.experiment / folder.name / "ablation.png"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / "ablation.png", dest)
            out[str(folder)] = [dest.relative_to(where).as_posix()]
    return out


def as_json(report: Report) -> dict[str, Any]:
    """verdicts.json: every verdict, and per experiment its counts and runs."""
    return {"generated_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "results_root": str(report.root), "verdicts": list(VERDICTS),
            "experiments": [{
                "experiment": s.experiment, "paper": s.paper, "counts": counts(s.verdicts),
                "runs": [{**provenance(r), "fidelity": fidelity(r)[0],
                          "fidelity_reasons": fidelity(r)[1]} for r in s.runs],
                "verdicts": [v.as_dict() for v in s.verdicts]} for s in report.sections]}


def terminal(report: Report) -> list[str]:
    """One line per claim, then one per experiment: what `dcrepro report` prints."""
    width = max(len(s.experiment) for s in report.sections)
    lines = [terminal_line(v, width) for s in report.sections for v in s.verdicts]
    split = [f"views disagree  {s.experiment:<{width}} {d}" for s in report.sections
             for d in s.disagree]
    skipped = [f"skipped  {x}" for x in report.skipped]
    return lines + [""] + split + ([""] if split else []) + skipped + \
        ([""] if skipped else []) + [summary_line(s.experiment, s.verdicts)
                                     for s in report.sections]


#: the verdicts that decide a claim: a quick run that reads the other one than the
#: reference contradicts it; any other verdict of ours leaves it undecided here
DECIDED = ("holds", "does not hold")
#: how many characters of a claim's text the screen shows
SCREEN_TEXT = 50
#: beside a verdict decided here that the reference's runs leave inconclusive
OPEN_IN_REF = "decided here only:"


def _plain(v: Verdict) -> str:
    """'holds 1.26 [1.08, 1.45], n=5' (short_verdict without the markdown)."""
    return short_verdict(v).replace("**", "")


def _against(ours: Verdict, refs: list[Verdict]) -> str:
    """What the reference says beside our verdict, and whether ours agrees with it: only a
    reference verdict in the same condition is compared; another condition's is shown with
    it (the quick run is then not in the reference's set-up)."""
    same = [r for r in refs if _cond(r) == _cond(ours)]
    if not refs:
        return "no reference verdict"
    if not same:
        r = refs[0]
        return f"ref [{_cond(r) or 'its own set-up'}] {_plain(r)}"
    theirs = f"ref {_plain(same[0])}"
    if ours.verdict == same[0].verdict:
        return f"= {theirs}"
    if ours.verdict in DECIDED and same[0].verdict in DECIDED:
        return f"CONTRADICTS {theirs}"
    if ours.verdict in DECIDED and same[0].verdict == INCONCLUSIVE:
        # not the opposite, but not corroborated either: the reference's runs leave it open
        return f"{OPEN_IN_REF} {theirs}"
    return theirs


def _cond(v: Verdict) -> str:
    """A verdict's condition, '' for a view's name (GRIN's 'emulated' beside its models)."""
    return "" if v.condition in ("emulated", v.view) else v.condition


def _screen_view(views: dict[str, list[Verdict]]) -> tuple[str, list[Verdict]]:
    """The view a screen line shows, and its verdicts (one line each): the emulator's when
    it judged the claim, else the first (VIEW_ORDER) that did.  A claim not measured in any
    of its conditions gets one line (GRIN2's emulated run and two models: three lines said
    the same "not measured")."""
    view = next((v for v in VIEW_ORDER if views.get(v)), next(iter(views)))
    vs = views[view]
    if len(vs) > 1 and all(v.verdict == NOT_MEASURED for v in vs):
        vs = vs[:1]
    return view, vs


def screen(report: Report, reference: Report | None,
           same: list[tuple[Verdict, Paired]] | None = None) -> list[str]:
    """What `dcrepro report` prints (reproduce.sh's last screen): one line per headline
    claim, this run's verdict with its interval beside the committed reference's and whether
    they agree, then one line for every other claim (they are on the page, with causes).
    ``same``: headline_pairs, when the caller has it already (pairing reads every
    repetition of both folders)."""
    ref: dict[tuple[str, str, str], list[Verdict]] = {}
    for _, _, views in reference.headline_claims if reference else []:
        for view, vs in views.items():
            for v in vs:
                ref.setdefault((v.experiment, v.key, view), []).append(v)
    rows: list[tuple[str, Verdict, str, str]] = []
    for paper, _, views in report.headline_claims:
        view, vs = _screen_view(views)
        for v in vs:
            text = v.text + (f" [{v.condition}]" if len(vs) > 1 and v.condition else "")
            if len(text) > SCREEN_TEXT:
                text = text[:SCREEN_TEXT - 3] + "..."
            ours = short_value(v) or "-"
            ours += "" if view == "emulated" else f" ({view})"
            refs = ref.get((v.experiment, v.key, view), [])
            if _cond(v) and refs and all(_cond(r) != _cond(v) for r in refs):
                ours += f" [{_cond(v)}]"    # not the reference's set-up: say whose it is
            rows.append((paper.file[:3], v, text, f"{ours}; {_against(v, refs)}"))
    where = f" beside the reference ({reference.root})" if reference else ""
    shown = [v for _, v, _, _ in rows]
    pairs = headline_pairs(report, reference) if same is None else same
    words = same_draws_words([(v, p) for v, p in pairs if any(v is x for x in shown)])
    lines = [f"headline claims{where}{'; ' + words if words else ''}; the page has every "
             "claim with its cause:"]
    width = max((len(v.verdict) for _, v, _, _ in rows), default=0)
    lines += [f"{no} {v.verdict:<{width}} {text:<{SCREEN_TEXT}} {rest}"
              for no, v, text, rest in rows] or ["  (none: these runs judge no headline claim)"]
    lines += to_decide_lines(report, [v for _, v, _, _ in rows])
    keys = {(v.experiment, v.key) for v in shown}
    rest = [v for s in report.sections for v in s.verdicts
            if (v.experiment, v.key) not in keys]
    split = sum(len(s.disagree) for s in report.sections)
    disagree = f"views disagree on {split} claim(s): see the page" if split else ""
    if rest:
        lines.append(f"other claims: {len(rest)} ({count_words(rest)})"
                     + (f"; {disagree}" if disagree else ""))
    elif disagree:
        lines.append(disagree)
    # (each one named: what the report left out is never silent, issue #56)
    return lines + [f"skipped  {x}" for x in report.skipped]


def flagged_words(runs: list[Run]) -> str:
    """' (3 flagged, steal up to 13.3 % beside them)': how many repetitions of these runs
    the fidelity checks flagged, and the most hypervisor steal named beside them, so that
    an n short of a claim's repetitions is explained where it is read ('' when none)."""
    count, steal = 0, []
    for run in runs:
        reasons = run.suspects()
        if reasons:
            reps = run.flagged_reps()
            count += len(reps) if reps is not None else 1
            steal += [x for r in reasons if (x := steal_named(r)) is not None]
    if not count:
        return ""
    return f" ({count} flagged" + (f", steal up to {max(steal):g} % beside them"
                                   if steal else "") + ")"


def _runs_by_id(report: Report) -> dict[tuple[str, str], Run]:
    return {(s.experiment, r.run_id): r for s in report.sections for r in s.runs}


def same_draws(report: Report, reference: Report,
               shown: list[Verdict]) -> list[tuple[Verdict, Paired]]:
    """The shown emulated headline verdicts that rest on one run folder whose reference
    verdict (same claim and condition) rests on one folder of the same seed, so the two
    drew the same networks (docs/notebook/2026-12-04-quick-draws.md): the claim's
    statistic paired repetition by repetition (analysis/paired.py), ours as A and the
    reference's as B, where at least two repetitions pair."""
    ours, theirs = _runs_by_id(report), _runs_by_id(reference)
    refs = {(v.experiment, v.key, v.condition): v
            for _, _, views in reference.headline_claims for v in views.get("emulated", [])}
    out = []
    for v in shown:
        r = refs.get((v.experiment, v.key, v.condition))
        if r is None or len(v.runs) != 1 or len(r.runs) != 1 or v.view not in ("", "emulated"):
            continue
        a = ours.get((v.experiment, v.runs[0]))
        b = theirs.get((r.experiment, r.runs[0]))
        claim = next((c for c in registry.claims(v.experiment) if c.key == v.key), None)
        if a is None or b is None or claim is None or a.backend != "emulated" or \
                str(a.params.get("seed")) != str(b.params.get("seed")):
            continue
        if (got := pair(claim, a, b, v.condition)) is not None:
            out.append((v, got))
    return out


def same_draws_words(pairs: list[tuple[Verdict, Paired]]) -> str:
    """For the screen's first line: in how many of those headline lines the reference
    minus ours, on the same repetitions, has a 95 % interval that contains 0, and the first
    two that do not ('' when none pairs)."""
    if not pairs:
        return ""
    off = [(v, p) for v, p in pairs if not p.diff.lo <= 0 <= p.diff.hi]
    # one statistic judged by two headlines (permutation's) is named once, with both keys
    same: dict[tuple[str, float, float, float], list[str]] = {}
    for v, p in off:
        same.setdefault((v.experiment, p.diff.mean, p.diff.lo, p.diff.hi), []).append(v.key)
    named = ", ".join(f"{e} {'/'.join(keys)} {m:+.2g} [{lo:+.2g}, {hi:+.2g}]"
                      for (e, m, lo, hi), keys in list(same.items())[:2])
    more = f" and {len(same) - 2} more" if len(same) > 2 else ""
    # a quick run's flows are shorter than the reference's: say so where they differ
    windows = "" if all(p.same_window for _, p in off) else \
        "; its flows are longer: the window's, or this machine's"
    return (f"on its networks (its seeds), reference minus ours per repetition contains 0 "
            f"in {len(pairs) - len(off)} of {len(pairs)} lines"
            + (f" (not: {named}{more}{windows})" if off else ""))


#: the page's and report.md's words above the table of same_draws
SAME_DRAWS_TEXT = ("These runs drew the reference folders' networks (the same seeds), so "
                   "each headline statistic is compared repetition by repetition, over the "
                   "repetitions the fidelity check trusts in both: the reference minus ours, "
                   "with its 95 % interval (analysis/paired.py).  Where the flows' length or "
                   "trim differs (quick mode's are shorter), a difference that excludes 0 "
                   "may be the window's, not this machine's; a run with the reference's "
                   "--duration and --trim tells them apart.")
SAME_DRAWS_COLUMNS = ("claim", "pairs", "ours", "the reference, same repetitions",
                      "reference minus ours", "contains 0", "flows: ours / the reference's")
SAME_DRAWS_KEYS = ("claim", "pairs", "ours", "reference", "diff", "zero", "windows")


def same_draws_row(v: Verdict, p: Paired) -> dict[str, str]:
    """One row of the same-networks table (SAME_DRAWS_KEYS -> text)."""
    def iv(x: Any, sign: str = "") -> str:
        return f"{x.mean:{sign}.3g} [{x.lo:{sign}.3g}, {x.hi:{sign}.3g}]"
    return {"experiment": v.experiment,
            "claim": f"{v.experiment}: {v.text}" + (f" [{v.condition}]" if _cond(v) else ""),
            "pairs": f"{len(p.reps)} (repetitions {', '.join(p.reps)})", "ours": iv(p.a),
            "reference": iv(p.b), "diff": iv(p.diff, "+"),
            "zero": "yes" if p.diff.lo <= 0 <= p.diff.hi else "no",
            "windows": "the same" if p.same_window else f"{p.windows[0]} / {p.windows[1]}"}


def _wall_per_repetition(run: Run) -> float | None:
    """A finished run's wall time (config's start to its final status) per repetition, s."""
    try:
        reps = int(run.config["params"]["runs"])
    except (KeyError, TypeError, ValueError):
        return None
    wall = wall_s(run.config, run.status)
    return wall / reps if wall and wall > 0 and reps > 0 else None


def to_decide_lines(report: Report, shown: list[Verdict]) -> list[str]:
    """How many of the screen's headline verdicts are decided, and for the others what
    would decide them: more repetitions of an experiment (its sweep with ``--runs N``, and
    about how much longer, from these runs' own time per repetition), or other runs (not
    measured here, or outside the paper's regime: each claim's detail on the page names the
    run it needs)."""
    if not shown:
        return []
    decided = sum(v.verdict in DECIDED for v in shown)
    short: dict[str, tuple[int, int]] = {}     # experiment -> (fewest n, most needed)
    elsewhere = 0
    for v in shown:
        if v.verdict in (NOT_MEASURED, NOT_REGIME):
            elsewhere += 1
            continue
        claim = next((c for c in registry.claims(v.experiment) if c.key == v.key), None)
        needed = getattr(claim, "repetitions", 0)
        if v.verdict not in DECIDED and v.values and len(v.values) < needed:
            n, most = short.get(v.experiment, (len(v.values), needed))
            short[v.experiment] = (min(n, len(v.values)), max(most, needed))
    lines = [f"decided here: {decided} of {len(shown)} headline claims" + (
        f"; {elsewhere} not measured, or not in the paper's regime, in these runs (the page "
        "names the run each needs)" if elsewhere else "")]
    asked: list[int] = []       # the repetitions each line below asks its sweep for
    for name, (n, needed) in short.items():
        # every run folder of it here (outcast-fattree's sweep makes one per routing)
        runs = [r for s in report.sections if s.experiment == name for r in s.runs]
        pers = [_wall_per_repetition(r) for r in runs]
        more = f" (about {max(1, round(sum(x for x in pers if x) * (needed - n) / 60))} " \
               "min more)" if pers and all(pers) else ""
        # as many more as are missing: a flagged repetition that was run still counts as run
        made = max((int(r.config.get("params", {}).get("runs") or 0) for r in runs),
                   default=0)
        asked.append(max(needed, made + needed - n))
        lines.append(f"  {name}: {n} of {needed} repetitions{flagged_words(runs)}; "
                     f"{registry.sweep_command(name)} --quick --runs {asked[-1]}{more}")
    if asked:       # the whole reproduction again, every experiment at the most asked
        lines[0] += (f"; more repetitions decide more: ./scripts/reproduce.sh --runs "
                     f"{max(asked)} (its check says how long), or one experiment at a time:")
    return lines


#: how many characters of a claim's paper value, and of why it has no value, the run's
#: answer shows
ANSWER_PAPER, ANSWER_WHY = 24, 48


def run_answer(run: Run, verdicts: list[Verdict]) -> list[str]:
    """What `dcrepro run` prints when a run ends: its headline claims, each with this
    run's verdict, value or interval and the paper's; one line counting the other claims;
    whether the fidelity checks flagged the run; where every claim's cause is."""
    runs = run.config.get("params", {}).get("runs")
    repeats = run.config.get("repeats") or {}
    reps = f"{runs} repetition{'s' if runs != 1 else ''}" if runs else "its repetitions"
    if runs and repeats:
        reps += f" and {len(repeats)} repeat{'s' if len(repeats) != 1 else ''}"
    lines = [f"claims of this run, judged on {reps} (every one with its cause: "
             f"{run.path / 'claims.md'}):"]
    against = papers.scale(run.experiment, run.params)
    if against:
        lines.append(f"  set-up against the paper: {against}")
    heads = _answer_heads([v for v in verdicts if v.headline])
    width = max((len(v.verdict) for v in heads), default=0)
    for v in heads:
        text = v.text + (f" [{v.condition}]" if _cond(v) else "")
        text = text if len(text) <= SCREEN_TEXT else text[:SCREEN_TEXT - 3] + "..."
        paper = v.paper if len(v.paper) <= ANSWER_PAPER else v.paper[:ANSWER_PAPER - 3] + "..."
        # no value: the first clause of why not (e.g. the view it needs)
        why = v.detail.split(";")[0]
        value = short_value(v) or f"- ({why[:ANSWER_WHY]}{'...' if len(why) > ANSWER_WHY else ''})"
        lines.append(f"  {v.verdict:<{width}} {text:<{SCREEN_TEXT}} {value}; paper {paper}")
    if not verdicts:
        lines.append("  (this experiment has no claims)")
    elif not heads:
        lines.append("  (no headline claim in this run's set-up)")
    rest = [v for v in verdicts if not v.headline]
    if rest:
        lines.append(f"  other claims: {len(rest)} ({count_words(rest)})")
    flagged = run.suspects()
    lines.append("trust: no repetition flagged by the fidelity checks" if not flagged else
                 f"trust: flagged ({len(flagged)}: {flagged[0][:80]}"
                 f"{'...' if len(flagged[0]) > 80 else ''}); intervals leave its "
                 "flagged repetitions out, claims on the whole run read 'run not trusted'")
    if repeats:
        lines.append("repeated (only this machine's timing flagged them): " + ", ".join(
            f"run {old} as run {new}" for old, new in repeats.items()))
    return lines


def _answer_heads(heads: list[Verdict]) -> list[Verdict]:
    """Per headline claim, the verdict in the run's own view (GRIN's measured throughput,
    not its models beside it), or, where the claim has no such condition, every one of its
    conditions (each line then names its condition)."""
    out: list[Verdict] = []
    for key in dict.fromkeys(v.key for v in heads):
        mine = [v for v in heads if v.key == key]
        out += [v for v in mine if not _cond(v)] or mine
    return out


def _runs_text(sec: Section) -> str:
    return ", ".join(f"{r.run_id} ({r.backend})" for r in sec.runs) or "none"


def markdown_table(report: Report) -> str:
    """The verdict table (one row per experiment), as the README shows it for the
    committed reference runs: `dcrepro report --markdown-table results/reference`."""
    head = ["experiment", "runs", "claims", *VERDICTS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in report.sections:
        c = counts(s.verdicts)
        cells = [f"`{s.experiment}`", _runs_text(s), str(len(s.verdicts)),
                 *(str(c[k]) for k in VERDICTS)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def headlines(report: Report) -> list[tuple[papers.Paper, Verdict, dict[str, list[Verdict]]]]:
    """Per paper and headline claim (the 2-4 its abstract and main figures stand on): the
    verdicts of each view (emulated, ns-3, flow model), in the conditions that are the
    paper's regime, or, when none is, the first condition's (which says why not)."""
    out = []
    for paper in papers.PAPERS.values():
        by: dict[tuple[str, str], dict[str, list[Verdict]]] = {}
        for s in report.sections:
            if s.experiment not in paper.experiments:
                continue
            for v in s.verdicts:
                if v.headline:
                    view = v.view or _view_of(v)
                    by.setdefault((v.experiment, v.key), {}).setdefault(view, []).append(v)
        for views in by.values():
            kept = {view: ([v for v in vs if v.verdict != NOT_REGIME] or vs[:1])
                    for view, vs in views.items()}
            first = next(iter(kept.values()))[0]
            out.append((paper, first, kept))
    return out


def _view_of(v: Verdict) -> str:
    return {"sim": "sim", "model": "model"}.get(v.basis, "emulated")


def short_value(v: Verdict) -> str:
    """'1.26 [1.08, 1.45], n=5': the verdict's interval (or value), its words shortened."""
    return re.sub(r" 95 %, n=(\d+) \w+", r", n=\1", v.interval or v.measured or "")


def short_verdict(v: Verdict, with_condition: bool = False) -> str:
    """'**holds** 1.26 [1.08, 1.45], n=5' (the interval's words shortened)."""
    ours = short_value(v)
    cond = f"{v.condition}: " if with_condition and v.condition else ""
    return f"{cond}**{v.verdict}**" + (f" {ours}" if ours else "")


def headline_table(report: Report) -> str:
    """The README's table for the committed reference runs (`dcrepro report --headlines
    results/reference`): one row per headline claim, each view's verdict with its 95 %
    interval (per condition when the paper's regime has several)."""
    lines = ["| paper | headline claim | paper's value | emulated | ns-3 | flow model |",
             "|---|---|---|---|---|---|"]
    for paper, first, views in report.headline_claims:
        cond = first.condition if first.condition != "emulated" else ""
        text = first.text + (f" [{cond}]" if cond and len(views.get("emulated", [])) < 2
                             else "")
        cells = []
        for view in VIEW_ORDER:
            vs = views.get(view, [])
            cells.append("; ".join(short_verdict(v, len(vs) > 1) for v in vs) or "-")
        lines.append("| " + " | ".join(_md(x) for x in (
            f"[{paper.short}](docs/results/{paper.page})", text, first.paper, *cells)) + " |")
    return "\n".join(lines) + "\n"


def _md(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def markdown(report: Report, out: Path, figs: dict[str, list[str]],
             same: list[tuple[Verdict, Paired]] | None = None) -> str:
    """report.md: the table, the comparison on the reference's networks, then per
    experiment its verdicts, runs and figures."""
    lines = ["# Which of the papers' claims hold", "",
             f"Results: `{report.root}`.  Verdicts: "
             + "; ".join(f"**{k}**: {v}" for k, v in MEANING.items()) + ".", "",
             "## Headline claims", "", headline_table(report)]
    if same:
        rows = [same_draws_row(v, p) for v, p in same]
        lines += [f"{SAME_DRAWS_TEXT}", "", "| " + " | ".join(SAME_DRAWS_COLUMNS) + " |",
                  "|" + "---|" * len(SAME_DRAWS_COLUMNS),
                  *("| " + " | ".join(_md(r[c]) for c in SAME_DRAWS_KEYS) + " |"
                    for r in rows), ""]
    lines += ["## Every claim", "", markdown_table(report)]
    for s in report.sections:
        lines += [f"## {s.experiment}", "", f"Paper: {s.paper}", "",
                  "| claim | source | paper | measured | criterion | verdict | detail |",
                  "|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(_md(x) for x in (
            v.label, v.source, v.paper, v.measured, v.criterion,
            f"**{v.verdict}**" + (f", because {v.because}" if v.because else ""),
            v.detail)) + " |" for v in s.verdicts]
        if s.disagree:
            lines += ["", "Where the views disagree:", "", *(f"- {_md(d)}" for d in s.disagree)]
        for run in s.runs:
            p = provenance(run)
            verdict, reasons = fidelity(run)
            lines += ["", f"### run {run.run_id}", "",
                      f"- fidelity: {verdict}", *(f"  - {r}" for r in reasons),
                      *(f"- {k}: `{v}`" for k, v in p.items() if k != "run id"),
                      f"- run folder: [{run.run_id}]({_rel(run.path, out)})", ""]
            lines += [f"![{Path(f).name}]({f})" for f in figs.get(run.run_id, [])]
        for folder in s.ablations:
            lines += ["", f"### ablation {folder.name}", "",
                      f"Table and command: [{folder.name}/ablation.md]"
                      f"({_rel(folder / 'ablation.md', out)})", ""]
            lines += [f"![ablation {folder.name}]({f})" for f in figs.get(str(folder), [])]
        lines.append("")
    return "\n".join(lines) + "\n"


def _rel(path: Path, out: Path) -> str:
    """A link from the report folder to ``path`` (relative, so that a copied results
    folder keeps its links)."""
    return Path(os.path.relpath(path, out)).as_posix()


# -- the page -------------------------------------------------------------------------------

#: the page's template and stylesheet (analysis/templates/)
TEMPLATES = Path(__file__).parent / "templates"


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """Jinja2 over analysis/templates/, escaping every value it is given."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True)


def _paper_html(text: str) -> Markup:
    """The registry's PAPER text (markdown backticks) as HTML."""
    parts = str(escape(text)).split("`")
    return Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


def page(report: Report, out: Path, figs: dict[str, list[str]],
         files: Path | None = None,
         same: list[tuple[Verdict, Paired]] | None = None) -> str:
    """index.html (analysis/templates/report.html): the contents, the headline claims, the
    counts per experiment, then one section per experiment with its claims, its runs and
    its figures (``files``: where the page's files are while it is written, ``out`` until
    it is moved there)."""
    nruns = len({r.run_id for s in report.sections for r in s.runs})
    totals = [{"experiment": s.experiment, "claims": len(s.verdicts),
               "counts": [(k, counts(s.verdicts)[k]) for k in VERDICTS],
               "runs": _runs_text(s)} for s in report.sections]
    headlines = [{"experiment": first.experiment, "short": paper.short, "title": paper.title,
                  "venue": paper.venue, "text": first.text, "paper": first.paper,
                  "cells": [views.get(view, []) for view in VIEW_ORDER]}
                 for paper, first, views in report.headline_claims]
    return _environment().get_template("report.html").render(
        css=Markup((TEMPLATES / "report.css").read_text()), colours=COLOURS,
        verdicts=VERDICTS, meaning=list(MEANING.items()),
        now=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), nruns=nruns,
        root=report.root, headlines=headlines, totals=totals, skipped=report.skipped,
        same=[same_draws_row(v, p) for v, p in same or []], same_text=SAME_DRAWS_TEXT,
        same_columns=SAME_DRAWS_COLUMNS, same_keys=SAME_DRAWS_KEYS,
        sections=[_section(s, out, figs, files or out) for s in report.sections])


def _fig_id(run_id: str, name: str) -> str:
    """The anchor of one run's figure on the page (a claim row links to it)."""
    return "fig-" + re.sub(r"[^A-Za-z0-9_-]", "-", f"{run_id}-{name}")


#: a figure this wide or wider (pixels; the multi-panel ones, 1,100-1,980) is shown across
#: the page below the claims: in the figure column (about 480 px at a 1,280-px window) its
#: text was 2-5 px (docs/notebook/2026-12-03-figure-audit.md); the single panels are 770-1,045
WIDE_PX = 1100


def png_width(path: Path) -> int:
    """A PNG's width in pixels from its header (0 when it is not a readable PNG)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(24)
    except OSError:
        return 0
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return 0
    return int.from_bytes(head[16:20], "big")


def _section(s: Section, out: Path, figs: dict[str, list[str]], files: Path
             ) -> dict[str, Any]:
    """What the template shows of one experiment: its claims (headlines first, the others
    folded), where the views disagree, its runs' boxes and its figures."""
    drawn = {(run_id, Path(rel).name) for run_id, rels in figs.items() for rel in rels}
    scales = {r.run_id: papers.scale(r.experiment, r.params) for r in s.runs}
    rows: list[dict[str, Any]] = []
    supporting: list[dict[str, Any]] = []
    for v in s.verdicts:
        # a headline judged on an interval is drawn beside the paper's number (HEADLINES)
        fig = HEADLINES if v.headline and v.bounds is not None else v.figure
        judged_on = next(((r, fig) for r in v.runs if (r, fig) in drawn), None)
        (rows if v.headline else supporting).append({
            "v": v, "basis": v.basis if v.basis in ("model", "sim") and v.measured else "",
            "fig": fig if judged_on else "",
            "fig_id": _fig_id(*judged_on) if judged_on else "",
            "scale": next((scales[r] for r in v.runs if scales.get(r)), "")})
    figures: list[dict[str, Any]] = []
    for run in s.runs:
        notes = figure_notes(run)
        for rel in figs.get(run.run_id, []):
            name = Path(rel).name
            figures.append({"id": _fig_id(run.run_id, name), "src": rel,
                            "alt": f"{name} of run {run.run_id}",
                            "caption": f"{name}, run {run.run_id}", "link": "",
                            "note": notes.get(name, ""), "width": png_width(files / rel)})
    for folder in s.ablations:
        for rel in figs.get(str(folder), []):
            figures.append({"id": "", "src": rel, "alt": f"ablation {folder.name}",
                            "caption": f"ablation {folder.name}: one setting changed at a "
                                       "time", "link": _rel(folder / "ablation.md", out),
                            "note": "", "width": png_width(files / rel)})
    wide = [f for f in figures if int(f["width"]) >= WIDE_PX]
    return {"experiment": s.experiment, "paper": _paper_html(s.paper),
            "missing": all(v.verdict == NOT_MEASURED for v in s.verdicts) and not s.runs,
            "rows": rows, "supporting": supporting, "disagree": s.disagree,
            "boxes": [_run_box(r, out) for r in s.runs],
            "others": [{"folder": _rel(r.path, out), "run_id": r.run_id,
                        "status": r.status.get("status")} for r in s.others],
            "figures": [f for f in figures if f not in wide], "wide": wide}


def _run_box(run: Run, out: Path) -> dict[str, Any]:
    """One run's box: its fidelity verdict and reasons, provenance, rerun and parameters."""
    p = provenance(run)
    verdict, reasons = fidelity(run)
    return {"run_id": run.run_id, "folder": _rel(run.path, out), "verdict": verdict,
            "cls": "flag" if reasons or not run.ok else "ok", "reasons": reasons,
            "provenance": [(k, v) for k, v in p.items() if k not in ("rerun", "folder",
                                                                      "run id")],
            "rerun": p["rerun"], "params": ", ".join(f"{k}={v}" for k, v in run.params.items())}


def render(report: Report, out: Path, reference: Report | None = None,
           same: list[tuple[Verdict, Paired]] | None = None) -> tuple[Path, list[str]]:
    """Write the report folder; the page and the terminal lines."""
    return write(report, out, reference, same), terminal(report)
