"""Figure helpers every experiment's figures.py shares: the title, the notes on how a figure
is made, the claims under it and the paper's values on it, the run folder's tables, each
repetition's mean and the interval bars over them, rank curves and plots, the fidelity plot.

A figure's own header stays short (what it shows, which run); the parameters, the run's
fidelity verdict and its reasons, and how the figure is made belong to the report page
(analysis/report.py), which reads the last from ``figures.json`` (``note``).

Importing this module selects matplotlib's Agg backend (files, no display) for every
figure module that draws with it."""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from analysis.intervals import Interval, error_bars, mean_interval
from store import plottable, read_csv, status_of

#: how each figure of a run folder is made: figure file name -> text, in drawing order
NOTES = "figures.json"


def caption(config: dict[str, Any], headline: str = "") -> str:
    """A figure's title: what it shows (``headline``, one short line) over which run it is
    and in what conditions (experiment, backend: cc, link rate, repetitions, flow length;
    the run id).  Other parameters and methods go to ``note``."""
    backend = config["params"].get("backend", "emulated")
    conds = conditions(config)
    run = f"{config['experiment']} [{backend}]" + (f": {conds}" if conds else "") + \
        f" · {config['run_id']}"
    return f"{headline}\n{run}" if headline else run


def note(path: Path, *text: str) -> Path:
    """Record how the figure at ``path`` is made (``figures.json`` beside it) for the report
    page, which shows it under the figure; returns ``path``."""
    where = Path(path).parent / NOTES
    try:
        notes = json.loads(where.read_text())
    except (OSError, ValueError):
        notes = {}
    notes[Path(path).name] = "\n".join(t.strip("\n") for t in text if t and t.strip())
    where.write_text(json.dumps(notes, indent=1) + "\n")
    return Path(path)


def save(fig: Any, path: Path, rect: tuple[float, float, float, float] | None = None) -> Path:
    """Lay ``fig`` out (within ``rect``, figure fractions, when a footer needs room), write it
    to ``path`` (PNG, 110 dpi: every run figure alike), free it."""
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def save_judged(fig: Any, path: Path, claims: list[tuple[Any, Any]]) -> Path:
    """save() with the claims judged on the figure (judged()) under it, one line each
    (claims_footer); the axes keep the rest of the height."""
    bottom = claims_footer(fig, claims)
    return save(fig, path, rect=(0, bottom, 1, 1) if bottom else None)


def panel_row(n: int, title: str, width: float = 6.0, height: float = 4.8
              ) -> tuple[Any, np.ndarray]:
    """A figure of ``n`` panels side by side (``width`` inches each, 7 at least in all)
    under a short title; the figure and its axes."""
    fig, axes = plt.subplots(1, n, figsize=(max(7.0, width * n), height), squeeze=False)
    fig.suptitle(title, fontsize=title_size(title, max(7.0, width * n)))
    return fig, axes[0]


def title_size(title: str, inches: float, most: float = 10.0) -> float:
    """A title's font size, at most ``most`` points, small enough that its longest line fits
    ``inches`` (a caption's run line, with Orca's conditions, ran past a 7-inch figure's
    edges at 10 pt): about 0.6 em a character, 5 % spare."""
    longest = max((len(line) for line in title.split("\n")), default=1)
    return min(most, 0.95 * 72 * inches / (0.6 * max(longest, 1)))


def headroom(ax: Any, tops: list[float], share: float = 0.22) -> None:
    """The y axis from 0 to ``share`` above the tallest of ``tops`` (NaN left out; 1 without
    any): room for the labels over the bars, inside the frame."""
    top = max([t for t in tops if t == t] or [1.0])
    ax.set_ylim(0, top * (1 + share))


# -- what a figure reads: the run folder's tables ------------------------------------------

def refuse_unplottable(run_dir: Path) -> None:
    """Raise ValueError unless the run folder's status lets it be plotted: a failed run is
    never plotted as data."""
    status = status_of(Path(run_dir))
    if not plottable(status):
        raise ValueError(f"{run_dir}: run is '{status['status']}' ({status.get('error')}); "
                         "a failed run is never plotted as data")


def table(run_dir: Path, name: str, what: str) -> list[dict[str, str]]:
    """The rows of the run folder's table ``name``; ValueError when it has none ('flows.csv
    has no flows', ``what`` naming its rows)."""
    rows = read_csv(Path(run_dir) / name)
    if not rows:
        raise ValueError(f"{run_dir}: {name} has no {what}")
    return rows


def optional_table(path: Path) -> list[dict[str, str]]:
    """The rows of the table at ``path``; none when the folder does not hold it (a table
    only some views or versions write)."""
    return read_csv(path) if path.is_file() else []


# -- per repetition: the unit an interval is over ------------------------------------------

def per_run(rows: Iterable[Mapping[str, Any]], value: Callable[[Mapping[str, Any]], float]
            ) -> dict[str, list[float]]:
    """Each repetition's values (the rows' ``run`` column), in the order the repetitions
    first come; a NaN value is left out, and a repetition with none."""
    out: dict[str, list[float]] = {}
    for r in rows:
        if (x := value(r)) == x:
            out.setdefault(str(r.get("run", "")), []).append(x)
    return out


def run_means(rows: Iterable[Mapping[str, Any]], value: Callable[[Mapping[str, Any]], float]
              ) -> list[float]:
    """Per repetition, the mean of ``value`` over its rows (per_run): the samples a
    figure's interval is over, as the claims' are."""
    return [float(np.mean(v)) for v in per_run(rows, value).values()]


def interval_bars(ax: Any, x: Any, ivs: Sequence[Interval | None], width: float = 0.8,
                  **style: Any) -> list[float]:
    """Bars at the intervals' means (none for a missing one) with whiskers to their ends
    (error_bars); returns each bar's top with its whisker (NaN for a missing one), what the
    labels and limits above them must clear.  An interval of one repetition has no whisker
    (a zero-width cap would look like an interval)."""
    means = [iv.mean if iv else float("nan") for iv in ivs]
    spread = [iv if iv and iv.n > 1 else None for iv in ivs]
    err = error_bars(spread)
    ax.bar(x, means, width, yerr=err if any(spread) else None, **style)
    return [m + h for m, h in zip(means, err[1])]


# -- what a figure's claims say: the paper's value beside ours, on the figure itself -------

#: the most claim lines a figure's footer holds (headline and interval-judged first)
FOOTER_LINES = 5
#: the longest line of text a figure holds, characters (tests/unit/test_reference.py: the
#: committed figures' headers and texts): a longer claim line is cut, claims.md has it whole
TEXT_WIDTH = 110
#: what a judged figure's paper marks look like: the verdicts' red (analysis.claims.COLOURS)
PAPER_COLOUR = "#cf222e"


def judged(run_dir: Path, config: dict[str, Any], figure: str) -> list[tuple[Any, Any]]:
    """The claims judged on ``figure`` of this run (Claim.figure), each with its verdict on
    this run folder alone (analysis.claims.evaluate, the claims' own samples and Student-t
    interval): [(claim, verdict)], headline claims first, then those judged on an
    interval, then the rest; claims this run cannot measure are left out.  Empty when the
    experiment has no claims or they cannot be read yet (a figure never fails on them:
    it is drawn from whatever data there is)."""
    try:
        from store.registry import claims as claims_of

        from .claims import NOT_MEASURED, Run, evaluate
        found = [c for c in claims_of(config["experiment"]) if c.figure == figure]
        if not found:
            return []
        run = Run.open(Path(run_dir))
        out = [(c, v) for c in found for v in evaluate(c, [[run]], complete=False)
               if v.verdict != NOT_MEASURED]
    except (OSError, ValueError, KeyError) as exc:
        # a folder whose tables cannot be judged yet (half-written, damaged): the figure is
        # drawn without its claim lines, and says so in the log; a bug in a claim raises
        logging.getLogger("dcrepro").warning("%s: %s drawn without its claims' lines (%s: %s)",
                                             run_dir, figure, type(exc).__name__, exc)
        return []
    return sorted(out, key=lambda cv: (not cv[1].headline, cv[1].bounds is None))


def paper_values(config: dict[str, Any], figure: str) -> dict[str, float]:
    """claim key -> the paper's number (Claim.paper_value) for the claims judged on
    ``figure``: what a figure draws as 'paper: ...', never a number of its own."""
    return {c.key: float(c.paper_value) for c in paper_claims(config, figure)
            if c.paper_value is not None}


def paper_claims(config: dict[str, Any], figure: str) -> list[Any]:
    """The claims judged on ``figure`` (Claim.figure), whatever this run's verdicts: the
    one place a figure takes the paper's values from (``paper_value``, ``paper``) and
    their source (``paper_source``); empty for an experiment without claims."""
    try:
        from store.registry import claims as claims_of
        return [c for c in claims_of(config["experiment"]) if c.figure == figure]
    except KeyError:        # a config without an experiment, or one not registered
        return []


def paper_source(claim: Any) -> str:
    """Where a claim's paper value is from, short: the paper's number and its figure
    ('003 Fig. 7'), or the place Claim.source names when it names no figure ('003
    section 5.1')."""
    paper, _, where = claim.source.partition(", ")
    fig = re.search(r"Figs?\. ?\d+(?:-\d+)?(?:\([a-z]\))?", where)
    place = fig.group(0) if fig else where.split(";")[0].split(", ")[0].split(" (")[0]
    return f"{paper.split('_')[0]} {place}".strip()


#: a number standing alone in a claim's paper text ('htsim 0.877', '(32 %)'; not the 6 of
#: 'GRIN6' nor the 1.53 of '1.53x')
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")


def paper_number(claim: Any) -> float | None:
    """The paper's number of a claim: its paper_value, else the one number its paper text
    states ('htsim 0.877' -> 0.877, 'GRIN6, permutation (32 %)' -> 32, as written: the
    caller knows the unit); None when it states none or several."""
    if claim.paper_value is not None:
        return float(claim.paper_value)
    found = _NUMBER.findall(claim.paper)
    return float(found[0]) if len(found) == 1 else None


def paper_mark(ax: Any, x: float, y: float, text: str, *, offset: tuple[float, float] = (6, 0),
               ha: str = "left", va: str = "center", legend: str | None = None) -> None:
    """The paper's value at (x, y) in data coordinates: a red diamond labelled ``text``
    ('paper 4.16x'), kept inside the axes; ``legend``: its entry in the axes' legend."""
    ax.scatter([x], [y], marker="D", s=36, color=PAPER_COLOUR, zorder=6, label=legend)
    ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", ha=ha, va=va,
                fontsize=7.5, color=PAPER_COLOUR, annotation_clip=True, zorder=6,
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                      "alpha": 0.85})


def paper_line(ax: Any, y: float, text: str, color: str = PAPER_COLOUR,
               x: float = 0.01, below: bool = False) -> None:
    """The paper's value as a dotted horizontal line, labelled ``text`` just above it (or
    just below it: ``below``) at ``x`` (axes fraction)."""
    ax.axhline(y, color=color, lw=1, ls=":", zorder=1)
    ax.annotate(text, (x, y), xycoords=("axes fraction", "data"),
                xytext=(0, -2 if below else 2), textcoords="offset points", fontsize=7,
                color=color, va="top" if below else "bottom",
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                      "alpha": 0.85})


def free_x(ax: Any, y: float, text: str, candidates: tuple[float, ...] = (0.62, 0.32, 0.01)
           ) -> float:
    """Where along the axes (a fraction) a paper_line label of ``text`` just above ``y``
    covers none of the lines drawn so far: the first of ``candidates`` that is free, else
    the one whose box the fewest line points fall in.  Call it after the data are drawn
    and the limits set."""
    fig = ax.figure
    width_pt = ax.get_window_extent().width * 72 / fig.dpi
    span = min(1.0, len(text) * 7 * 0.56 / max(width_pt, 1.0))    # 7-pt characters
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    height_pt = ax.get_window_extent().height * 72 / fig.dpi
    top = y + (y1 - y0) * 12 / max(height_pt, 1.0)      # the label's 7 pt line and its pad
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1
             and ln.get_transform() == ax.transData]     # not the paper lines (axhline)

    def hits(at: float) -> int:
        xs = np.linspace(x0 + at * (x1 - x0), x0 + min(1.0, at + span) * (x1 - x0), 40)
        n = 0
        for ln in lines:
            lx = np.asarray(ln.get_xdata(), dtype=float)
            ly = np.asarray(ln.get_ydata(), dtype=float)
            order = np.argsort(lx)
            lx, ly = lx[order], ly[order]
            inside = (xs >= lx[0]) & (xs <= lx[-1])
            ys = np.interp(xs[inside], lx, ly)
            # a line on the paper's value itself runs under the label's 2-pt gap
            n += int(np.sum((ys > y + (top - y) * 0.15) & (ys <= top)))
        return n

    counts = [(hits(c), i) for i, c in enumerate(candidates)]
    return candidates[min(counts)[1]]


def _footer_line(v: Any, width: int) -> str:
    """'holds | paper 4.16x | ours 3.83 [3.80, 3.86] 95 %, n=5 | <claim [condition]>', cut
    at ``width`` characters from the claim's words (the numbers come first)."""
    paper = v.paper if v.paper not in ("", "-") else "states none (a precondition)"
    line = f"{v.verdict} | paper {paper} | ours {v.interval or v.measured} | {v.label}"
    return line if len(line) <= width else line[:width - 3] + "..."


def claims_footer(fig: Any, pairs: list[tuple[Any, Any]], lines: int = FOOTER_LINES) -> float:
    """Under the figure, one line per claim judged on it (judged()): its verdict, the
    paper's value and ours with its 95 % interval, in the verdict's colour.  Returns the
    fraction of the figure's height the lines take (save's ``rect`` bottom); 0 without
    claims."""
    if not pairs:
        return 0.0
    from .claims import COLOURS
    shown = pairs[:lines]
    more = len(pairs) - len(shown)
    w, h = fig.get_size_inches()
    # characters of 7 pt text across the figure, at most a figure text's width
    width = min(int(w * 16.5), TEXT_WIDTH)
    step = 0.15 / h                              # one 7 pt line, as a figure fraction
    y = 0.012
    if more:
        fig.text(0.01, y, f"... and {more} more claim(s) judged on this figure: claims.md",
                 fontsize=7, color="#59636e", va="bottom")
        y += step
    for _, v in reversed(shown):
        fig.text(0.01, y, _footer_line(v, width), fontsize=7, va="bottom",
                 color=COLOURS.get(v.verdict, "black"))
        y += step
    return y + 0.01


LOG_SUBS = (1.0, 2.0, 5.0)


def seconds_text(s: float) -> str:
    """A time in the unit that reads best, at most 3 significant digits: '850 µs', '4.1 ms',
    '115 ms', '2.5 s'."""
    if s != s:
        return "n/a"
    a = abs(s)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if a >= scale or unit == "µs":
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def time_axis(ax: Any, axis: str = "x", per_second: float = 1.0) -> None:
    """A log axis of times labelled '10 ms', '20 ms', '50 ms' (1-2-5 ticks over a short
    range, 1-3 or decades over a longer one; no minor labels: matplotlib labels minor
    ticks of a short log range, and they overlap);
    ``per_second``: the data's units in a second (1e6 for µs)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    which = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = (ax.get_xlim() if axis == "x" else ax.get_ylim())
    decades = np.log10(max(hi, 1e-300)) - np.log10(max(lo, 1e-300))
    # about 6 labels at most: 1-2-5 over two decades, 1-3 up to about three (1-2-5 over
    # 2.4 decades ran '50 µs100 µs200 µs' together on Orca's wait_cdf), else decades
    subs = LOG_SUBS if decades <= 2 else (1.0, 3.0) if decades <= 3.2 else (1.0,)
    which.set_major_locator(LogLocator(base=10, subs=subs))
    which.set_minor_locator(LogLocator(base=10, subs=tuple(range(1, 10))))
    which.set_minor_formatter(NullFormatter())
    which.set_major_formatter(FuncFormatter(lambda v, _: seconds_text(v / per_second)))


def rank_curves(rows: list[dict[str, str]], metric: str) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """Per rank: the mean over runs of the sorted per-run values of ``metric`` and its 95 %
    interval (Student's t; with one run the interval is the value itself); empty when no
    row has a value (a meter that covered no flow leaves its column blank)."""
    runs: dict[str, list[float]] = {}
    for r in rows:
        if r[metric] != "":
            runs.setdefault(r["run"], []).append(float(r[metric]))
    if not runs:
        return np.array([]), np.array([]), np.array([])
    n = min(len(v) for v in runs.values())
    mat = np.array([sorted(v)[:n] for v in runs.values()])
    ivs = [mean_interval(mat[:, i].tolist()) for i in range(n)]
    return (mat.mean(axis=0), np.array([iv.lo for iv in ivs]),
            np.array([iv.hi for iv in ivs]))


def rank_line(ax: Any, curves: tuple[np.ndarray, np.ndarray, np.ndarray], label: str,
              ls: str = "-", marker: str | None = "o", alpha: float = 0.2) -> Any:
    """A rank curve (rank_curves: the mean over runs at each rank, 1 first) with its 95 %
    interval shaded in the line's colour; its line."""
    mean, lo, hi = curves
    x = np.arange(1, len(mean) + 1)
    line, = ax.plot(x, mean, ls=ls, marker=marker, ms=3, label=label)
    ax.fill_between(x, lo, hi, alpha=alpha, color=line.get_color(), lw=0)
    return line


Series = tuple[str, list[dict[str, str]], str]  # label, flow rows, metric column


def footer_height(pairs: list[tuple[Any, Any]]) -> float:
    """Inches a claims_footer of ``pairs`` adds to a figure's height."""
    if not pairs:
        return 0.0
    return 0.15 * (min(len(pairs), FOOTER_LINES) + (len(pairs) > FOOTER_LINES)) + 0.1


def rank_plot(path: Path, series: list[Series], title: str,
              ylabel: str = "throughput, normalized to the link rate",
              claims: list[tuple[Any, Any]] | None = None,
              decorate: Callable[[Any, dict[str, tuple[float, str]]], None] | None = None
              ) -> Path:
    """Value vs rank of flow, one line per series (mean over runs), its 95 % interval
    shaded; the
    legend under the axes (a rank curve fills its frame: inside, it would cover data).
    ``claims``: the claims judged on this figure (judged()), each under it with the
    paper's value and ours (claims_footer).  ``decorate(ax, {label: (mean, colour)})``
    draws more on the axes before the legend (the paper's values)."""
    claims = claims or []
    fig, ax = plt.subplots(figsize=(7, 4.2 + 0.2 * len(series) + footer_height(claims)))
    means: dict[str, tuple[float, str]] = {}
    for label, rows, metric in series:
        if not rows:
            continue
        mean, lo, hi = rank_curves(rows, metric)
        if not len(mean):   # said in the legend, not drawn: the run says why it is blank
            ax.plot([], [], label=f"{label} (no values)")
            continue
        line = rank_line(ax, (mean, lo, hi), f"{label} (mean {mean.mean():.2f})")
        means[label] = (float(mean.mean()), matplotlib.colors.to_hex(line.get_color()))
    ax.set_xlabel("rank of flow")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.1)
    ax.grid(alpha=0.3)
    if decorate is not None:
        decorate(ax, means)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8, frameon=False)
    ax.set_title(title, fontsize=8.5)      # (9 pt ran past a 7-inch frame at 100 characters)
    return save_judged(fig, path, claims)


def fidelity_plot(path: Path, series: list[Series], title: str) -> Path:
    """Emulated vs model normalized throughput per flow; the diagonal is a perfect emulator."""
    fig, ax = plt.subplots(figsize=(7, 5.6))     # 5.5 in cut the title's run line
    for label, rows, metric in series:
        pts = [(float(r["norm_model"]), float(r[metric])) for r in rows
               if r.get(metric) not in (None, "") and r.get("norm_model") not in (None, "")]
        if pts:
            xs, ys = zip(*pts)
            ax.scatter(xs, ys, s=14, alpha=0.7, label=label)
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="perfect emulator")
    ax.set_xlabel("model (max-min on traced paths), normalized to the link rate")
    ax.set_ylabel("emulated (iperf3 goodput), normalized to the link rate")
    ax.set_xlim(0, 1.05)
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title, fontsize=8.5)
    return save(fig, path)


#: the figure every run with interval-judged headline claims gets (analysis.plot)
HEADLINES = "headlines.png"
#: run parameters named in the figure's conditions line, in this order, with their units
CONDITIONS = (("cc", "cc {}"), ("bw", "{:g} Mb/s links"), ("runs", "{} repetitions"),
              ("duration", "{:g} s each"), ("pace", "pace {:g}"))


def conditions(config: dict[str, Any]) -> str:
    """'cc lia, 5 Mb/s links, 10 repetitions, 20 s each': the conditions a headline figure
    states, from the run's parameters."""
    params = config.get("params") or {}
    out = []
    for key, fmt in CONDITIONS:
        value = params.get(key)
        if value not in (None, ""):
            try:
                out.append(fmt.format(value) if key != "runs" or int(value) != 1
                           else "1 repetition")
            except (ValueError, TypeError):
                out.append(f"{key} {value}")
    # a file-transfer workload (Orca's): its base size as the run resolved it (the
    # multiples of it are on the figure's axis)
    sizes = (config.get("runtime") or {}).get("workload_bytes") or {}
    try:
        base = min(int(b) / int(w) for w, b in sizes.items()) if sizes else None
    except (ValueError, TypeError, ZeroDivisionError):
        base = None
    if base is not None:
        out.append(f"base {base / 1e6:.3g} MB")
    return ", ".join(out)


def statistic_words(criterion: str) -> str:
    """What a headline's x axis measures, from its criterion's first clause: 'per repetition
    MPTCP mean / TCP mean; the 95 % interval ...' -> 'MPTCP mean / TCP mean' (per seed
    likewise, and after a leading condition: 'under hashed routing, per repetition ...');
    '' when its first clause has no such statistic."""
    first = criterion.split(";")[0].split(", the 95 %")[0]
    for lead in ("per repetition", "per seed"):
        # also after a condition ('under hashed routing, per repetition local / remote')
        at = first.find(lead)
        if at == 0 or (at > 0 and first[at - 2:at] == ", "):
            return first[at + len(lead):].lstrip(" ,").removeprefix("the ")
    return ""


def headline_plot(path: Path, config: dict[str, Any], verdicts: list[Any],
                  paper_values: dict[str, float | None]) -> Path:
    """One row per headline verdict judged on an interval: the criterion's band (shaded),
    our statistic per repetition (grey dots), their mean with its 95 % interval (black), and
    the paper's value (red diamond) where it gives one; the verdict in the row's title.
    ``paper_values``: claim key -> the paper's number or None."""
    from .claims import COLOURS  # the page's verdict colours (claims imports the model: late)
    rows = [v for v in verdicts if v.bounds is not None]
    fig, axes = plt.subplots(len(rows), 1, figsize=(8, 0.55 + 1.3 * len(rows)),
                             squeeze=False)
    for ax, v in zip(axes[:, 0], rows):
        mean, lo, hi = v.bounds
        paper = paper_values.get(v.key)
        xs = [mean, lo, hi, *v.values, *([paper] if paper is not None else [])]
        finite = [b for b in (v.band or ()) if not np.isinf(b)]
        left, right = min(xs + finite), max(xs + finite)
        pad = 0.15 * (right - left or abs(right) or 1.0)
        left, right = left - pad, right + pad
        if v.band is not None:
            b_lo, b_hi = (max(v.band[0], left), min(v.band[1], right))
            ax.axvspan(b_lo, b_hi, color="#1a7f37", alpha=0.12, lw=0)
        jitter = np.linspace(-0.18, 0.18, len(v.values)) if len(v.values) > 1 else [0.0]
        ax.scatter(v.values, jitter[:len(v.values)], s=12, color="#8c959f", zorder=2)
        ax.errorbar([mean], [0], xerr=[[mean - lo], [hi - mean]], fmt="o", color="black",
                    capsize=4, zorder=3)
        if paper is not None:
            # hollow: where ours equals the paper's, our dot shows inside it
            ax.scatter([paper], [0], marker="D", s=70, facecolors="none",
                       edgecolors=PAPER_COLOUR, linewidths=1.4, zorder=4)
            ax.annotate(f"paper {paper:.3g}", (paper, 0), xytext=(0, 9),
                        textcoords="offset points", ha="center", fontsize=7.5,
                        color="#cf222e")
        ax.set_xlim(left, right)
        ax.set_ylim(-0.5, 0.5)
        ax.set_yticks([])
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel(statistic_words(v.criterion), fontsize=7.5)
        tags = v.label[len(v.text):]        # ' [condition; view]': kept whole
        room = 104 - len(tags) - len(v.verdict)     # a header line stays within 110
        label = (v.text if len(v.text) <= room else v.text[:room - 3] + "...") + tags
        ax.set_title(f"{label}: {v.verdict}", fontsize=8.5, loc="left",
                     color=COLOURS.get(v.verdict, "black"))
    fig.suptitle(caption(config, "headline claims: ours (mean, 95 % interval) against the "
                                 "paper's band and value"), fontsize=9)
    save(fig, path)       # (the conditions are in the title's run line: caption)
    return note(path, "Each row is one headline claim judged on this run: the shaded span "
                      "is the criterion's band (written before the run), the grey dots the "
                      "statistic of each repetition, the black dot and bar their mean and "
                      "Student-t 95 % interval, the red (hollow) diamond the paper's own number "
                      "where it gives one.  Flagged repetitions are left out, as the "
                      "verdict leaves them out.")
