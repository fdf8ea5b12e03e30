"""Summaries and the figure of the ``grin`` experiment (003_…, Figs. 6/7 style).

Reads flows.csv (one row per connection, degree, active share and run) and, for emulated
runs, each point's fidelity.json.  Writes summary.csv and throughput.png (the paper's
claims are in claims.py beside this file): per-server throughput vs % of active servers, one
colour per network (original, GRIN degrees, multihomed),
normalized to the original network's best result; emulated (solid), the independent-
subflow model on the same subflows (dotted) and the paper's h1 optimum (dashed).

For ``grin-hops`` (section 5.1, experiments/grin/hops.py): summary.csv and hops.png from
hops.csv, h1's and h2's gap to the optimum by GRIN degree (``plot_grin_hops``).
"""
from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from analysis.figures import (
    PAPER_COLOUR,
    caption,
    claims_footer,
    footer_height,
    free_x,
    judged,
    note,
    paper_claims,
    paper_line,
    paper_number,
    paper_source,
    save,
    save_judged,
    table,
)
from analysis.intervals import Interval, bars_words, error_bars, mean_interval
from store import cell, write_csv


def network_label(network: str) -> str:
    """How figures name a network (as experiment.label does, without importing the run code)."""
    if network == "grin0":
        return "original"
    return f"multihomed (+{network[2:]} NIC)" if network.startswith("mh") else network.upper()

COLUMNS = {"mbps": "emulated", "uncoupled_model_mbps": "model: independent subflows",
           "h1_optimum_mbps": "model: h1 optimum (paper)"}




def network_colour(network: str) -> str:
    """One colour per network whatever else a run has, so figures of different runs read
    alike: GRIN degree d is Cd (the original C0), multihomed +e NIC C(10 - e)."""
    n = int(network.lstrip("grinmh"))
    return f"C{10 - n}" if network.startswith("mh") else f"C{n % 10}"


def network_of(row: dict[str, str]) -> str:
    """grin<d> or mh<extra> (runs from before the multihomed baseline name only a degree)."""
    return row.get("network") or f"grin{int(row['degree'])}"


def _order(network: str) -> tuple[int, int]:
    return (network.startswith("mh"), int(network.lstrip("grinmh")))


def summarize(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per (network, active %): mean per-connection Mb/s of each column over runs and
    connections, and each normalized to the original network's best (highest) mean."""
    keys = sorted({(network_of(r), float(r["active_pct"])) for r in rows},
                  key=lambda k: (_order(k[0]), k[1]))
    out = []
    for net, pct in keys:
        mine = [r for r in rows if network_of(r) == net and float(r["active_pct"]) == pct]
        row: dict[str, Any] = {"network": net, "active_pct": pct, "connections": len(mine),
                               "active_servers": mine[0]["active"]}
        for col in COLUMNS:
            vals = [cell(r.get(col)) for r in mine]
            vals = [v for v in vals if v == v]
            row[col] = round(mean(vals), 4) if vals else ""
        sub = [cell(r.get("subflows")) for r in mine]
        if all(s == s for s in sub):
            row["subflows_mean"] = round(mean(sub), 2)
            row["horizontal_subflows_mean"] = round(mean(cell(r["horizontal_subflows"])
                                                         for r in mine), 2)
        out.append(row)
    for col in COLUMNS:
        best = [r[col] for r in out if r["network"] == "grin0" and r[col] != ""]
        for r in out:
            r[f"{col}_norm"] = round(r[col] / max(best), 4) if best and r[col] != "" else ""
    return out


def _fidelity_line(run_dir: Path) -> str:
    reports = [json.loads(p.read_text()) for p in sorted(run_dir.glob("run*/*/fidelity.json"))]
    if not reports:
        return "backend=model: flow-model numbers, not measurements"
    ratios = [r["aggregate_ratio"] for r in reports if r.get("aggregate_ratio") is not None]
    gaps = [r["gaps_within_10pct"] for r in reports if r.get("gaps_within_10pct") is not None]
    cpu = [r["cpu_mean"] for r in reports if r.get("cpu_mean") is not None]
    miss = sum(r.get("subflows_missing", 0) for r in reports)
    want = sum(r.get("subflows_designed", 0) for r in reports)
    text = (f"fidelity: emulated/independent-subflow model {min(ratios):.2f}-{max(ratios):.2f}"
            if ratios else "fidelity: no model ratio")
    if gaps:
        text += f", busy-link dequeue gaps within 10 %: {min(gaps):.1%}-{max(gaps):.1%}"
    if cpu:
        text += f", CPU {min(cpu):.0f}-{max(cpu):.0f} %"
    return text + f", subflows opened {want - miss}/{want}"


def plot_grin(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """summary.csv and throughput.png."""
    run_dir = Path(run_dir)   # (analysis.plot has refused a run that is not ok)
    rows = table(run_dir, "flows.csv", "connections")
    summary = summarize(rows)
    write_csv(run_dir / "summary.csv", summary)
    p = config["params"]
    where = (f"k={p.get('k')} fat tree (ECMP), racks = edge switches"
             if p.get("base") == "fattree" else
             f"{p.get('racks')} racks x {p.get('servers')} servers on one switch")
    notes = (f"{where}, placement={p.get('placement')}, pattern={p.get('pattern')}, MPTCP "
             f"(upstream, uncoupled, default scheduler)\n{_fidelity_line(run_dir)}\n"
             "normalized to the original network's best; solid: emulated, dotted: the "
             "independent-subflow model on the same subflows, dashed: the paper's h1 optimum")
    claims = judged(run_dir, config, "throughput.png")
    paper = {c.key: c for c in paper_claims(config, "throughput.png")
             if c.paper_value is not None}
    fig, ax = plt.subplots(figsize=(8.6, 5.4 + footer_height(claims)))
    fig.suptitle(caption(config, "per-server throughput vs active servers (003 Figs. 6/7)"),
                 fontsize=10)
    networks = sorted({r["network"] for r in summary}, key=_order)
    shares = sorted({r["active_pct"] for r in summary})
    span = max(shares[-1] - shares[0], 20.0)
    # the networks' points side by side at each share (and each one's three kinds beside
    # each other), so that their intervals do not hide one another
    dodge = 0.012 * span
    reps = repetitions(rows, summary)
    # two legends beside the axes, not one entry per line over the data: colour says the
    # network, the line's style what it is (measured, or one of the two models)
    nets, kinds = [], set()
    for i, net in enumerate(networks):
        color = network_colour(net)
        for j, (col, style) in enumerate(STYLES.items()):
            pts = [(pct + (i - (len(networks) - 1) / 2) * dodge + (j - 1) * dodge / 4, iv)
                   for (n, pct, c), iv in sorted(reps.items()) if n == net and c == col]
            if not pts:
                continue
            xs = [x for x, _ in pts]
            # above the paper's lines (zorder 1.5): a model point at the paper's 2x sat
            # under its dotted line
            ax.plot(xs, [iv.mean for _, iv in pts], style, color=color, ms=4,
                    mfc=color if col == "mbps" else "white", zorder=3)
            if any(iv.n > 1 for _, iv in pts):
                ax.errorbar(xs, [iv.mean for _, iv in pts], yerr=error_bars([iv for _, iv in pts]),
                            fmt="none", ecolor=color, elinewidth=1, capsize=2.5,
                            alpha=1.0 if col == "mbps" else 0.6, zorder=2.5)
            kinds.add(col)
        nets.append(Line2D([], [], color=color, lw=6, label=network_label(net)))
    most = max((iv.n for iv in reps.values()), default=0)
    # with one active share no line is drawn: the legend shows the markers alone
    what = [Line2D([], [], color="0.3", marker=style.lstrip("-:"),
                   mfc="0.3" if col == "mbps" else "white",
                   ls=style.rstrip("os^") if len(shares) > 1 else "none", ms=4,
                   label="emulated" if col == "mbps" else COLUMNS[col])
            for col, style in STYLES.items() if col in kinds]
    if most > 1:
        what.append(Line2D([], [], color="0.3", marker="|", ls="none", ms=8,
                           label="95 % interval over repetitions"))
    ax.set_xlabel("active servers (%)")
    ax.set_xticks(shares)
    ax.set_xlim(shares[0] - 0.12 * span, shares[-1] + 0.12 * span)
    for net in networks:          # the paper's 'close to 2x' for GRIN1 ..., over no line
        claim = paper.get(f"{net}-original")
        if claim is not None:
            ax.set_ylim(ax.get_ylim()[0], max(ax.get_ylim()[1], 1.04 * claim.paper_value))
            text = f"paper, {paper_source(claim)}: {network_label(net)} {claim.paper}"
            paper_line(ax, claim.paper_value, text, network_colour(net),
                       x=free_x(ax, claim.paper_value, text))
    ax.set_ylabel("per-server throughput, normalized to the original network's best")
    ax.grid(alpha=0.3)
    first = ax.legend(handles=nets, title="network", fontsize=7, title_fontsize=7,
                      loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.add_artist(first)
    ax.legend(handles=what, title="line", fontsize=7, title_fontsize=7, loc="lower left",
              bbox_to_anchor=(1.01, 0.0))
    path = save_judged(fig, run_dir / "throughput.png", claims)
    bars = bars_words([iv.n for iv in reps.values()])
    if most > 1:
        bars += (" (each repetition's mean per connection, as the claims' samples; flagged "
                 "ones included), points of one share spread apart so the bars stay apart")
    return [note(path, notes + "\n" + bars +
                 ("\ndotted lines: the paper's factors (the claims' values, with where in "
                  "the paper); under the figure: the claims judged on it, the paper's value "
                  "beside ours with its 95 % interval" if claims else ""))]


#: how throughput.png draws each summary column: emulated (solid, filled dots), the
#: independent-subflow model (dotted, open squares), the paper's h1 optimum (dashed, open
#: triangles): markers, so a run of one active share still shows each
STYLES = {"mbps": "-o", "uncoupled_model_mbps": ":s", "h1_optimum_mbps": "--^"}


def repetitions(rows: list[dict[str, str]], summary: list[dict[str, Any]]
                ) -> dict[tuple[str, float, str], Interval]:
    """(network, active %, column) -> the mean over repetitions of each repetition's mean
    per-connection throughput, normalized to the original network's best as the summary
    (its ``<col>_norm``), with its Student-t 95 % interval (analysis.intervals, the claims'
    interval; one repetition: the value alone)."""
    out = {}
    for col in STYLES:
        best = [r[col] for r in summary if r["network"] == "grin0" and r[col] != ""]
        if not best or not max(best):
            continue
        per: dict[tuple[str, float], dict[str, list[float]]] = {}
        for r in rows:
            if (x := cell(r.get(col))) == x:
                per.setdefault((network_of(r), float(r["active_pct"])), {}).setdefault(
                    r["run"], []).append(x)
        for (net, pct), by_rep in per.items():
            out[(net, pct, col)] = mean_interval([mean(v) / max(best)
                                                  for v in by_rep.values()])
    return out


# -- grin-hops: the section 5.1 hop-count study (experiments/grin/hops.py) -------------------

#: the 1 % that h2 is 'seldom' more than below the optimum (section 5.1): the threshold of
#: claims.py's h2-seldom claim, which takes it from here (the summary counts by it too); the
#: figure's other paper numbers come from the claims (hop_paper)
PAPER_H2_SELDOM = 0.01
#: hops.csv's gap columns: (1 - h1 / optimum, 1 - h2 / optimum)
GAPS = ("h1_gap", "h2_gap")


def hop_seeds(rows: list[dict[str, str]]) -> list[int]:
    """The seeds of hops.csv's rows, ascending."""
    return sorted({int(r["seed"]) for r in rows})


def seed_words(seeds: list[int]) -> str:
    """'seed 1', 'seeds 101-105' or 'seeds 1, 3, 7'."""
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def summarize_hops(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per (pattern, degree), over its active shares and seeds: each gap's mean and worst,
    and the share of instances with h2 more than 1 % below the optimum; then one row over
    every instance (pattern 'all')."""
    def stats(pattern: str, degree: Any, mine: list[dict[str, str]]) -> dict[str, Any]:
        out: dict[str, Any] = {"pattern": pattern, "degree": degree, "instances": len(mine)}
        for col in GAPS:
            vals = [cell(r[col]) for r in mine]
            out[f"{col}_mean"] = round(mean(vals), 6)
            out[f"{col}_worst"] = round(max(vals), 6)
        out["h2_over_1pct_share"] = round(
            mean(1.0 if cell(r["h2_gap"]) > PAPER_H2_SELDOM else 0.0 for r in mine), 6)
        return out

    order = {p: i for i, p in enumerate(dict.fromkeys(r["pattern"] for r in rows))}
    keys = sorted({(r["pattern"], int(r["degree"])) for r in rows},
                  key=lambda k: (order[k[0]], k[1]))
    out = [stats(p, d, [r for r in rows if r["pattern"] == p and int(r["degree"]) == d])
           for p, d in keys]
    return out + [stats("all", "all", rows)]


#: hops.png's marker per traffic pattern (filled first, then hollow and smaller)
HOP_MARKERS = ("o", "s", "^", "v", "D")

PaperRef = tuple[str, float, float, str]    # 'line' or 'mark', GRIN degree, gap, label


def hop_paper(config: dict[str, Any]) -> dict[str, list[PaperRef]]:
    """The paper's section 5.1 numbers, per panel ('h1', 'h2'), as its claims hold them
    (claims.py: h1-mean's paper_value, the 32 % of h1-worst-grin6's paper text, and
    h2-seldom's threshold PAPER_H2_SELDOM), each labelled with the claim's paper text and
    its source in the paper: a dotted line, or a mark at the degree the paper names."""
    out: dict[str, list[PaperRef]] = {"h1": [], "h2": []}
    for c in paper_claims(config, "hops.png"):
        label = f"paper, {paper_source(c)}: {c.paper}"
        if c.key == "h1-mean" and c.paper_value is not None:
            out["h1"].append(("line", 0.0, float(c.paper_value),
                              f"paper, {paper_source(c)}: {c.paper} on average"))
        elif c.key == "h1-worst-grin6" and (worst := paper_number(c)) is not None:
            # the 32 % its paper text states (the claim judges where the worst case is)
            out["h1"].append(("mark", 6.0, worst / 100, label))
        elif c.key == "h2-seldom":
            out["h2"].append(("line", 0.0, PAPER_H2_SELDOM, label))
    return out


def plot_grin_hops(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """summary.csv and hops.png: h1's and h2's gap to the optimum by GRIN degree, one line
    per traffic pattern (mean over active shares and seeds; dashed: the worst instance),
    beside the paper's 7 % average and 32 % worst for h1 and its 1 % for h2 (hop_paper)."""
    run_dir = Path(run_dir)
    rows = table(run_dir, "hops.csv", "instances")
    summary = summarize_hops(rows)
    write_csv(run_dir / "summary.csv", summary)
    p = config["params"]
    seeds = hop_seeds(rows)
    shares = sorted({cell(r["active_pct"]) for r in rows})
    where = (f"{p.get('racks')} racks x {p.get('servers')} servers on one switch, "
             f"{seed_words(seeds)}, {'/'.join(f'{a:g}' for a in shares)} % active")
    claims = judged(run_dir, config, "hops.png")
    paper = hop_paper(config)
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 5.0 + footer_height(claims)
                                            + 0.16 * ((sum(map(len, paper.values())) + 1) // 2)))
    fig.suptitle(caption(config, "h1 and h2 below the maximum multi-commodity flow, by "
                                 "GRIN degree (003 section 5.1)"), fontsize=10)
    per = [r for r in summary if r["pattern"] != "all"]
    marks: list[Any] = []
    for ax, col, name in zip(axes, GAPS, ("h1", "h2")):
        for i, pattern in enumerate(dict.fromkeys(r["pattern"] for r in per)):
            mine = [r for r in per if r["pattern"] == pattern]
            xs = [r["degree"] for r in mine]
            # a marker of its own each: near 0 the patterns' points coincide, and one
            # colour's dot hid the others'
            ax.plot(xs, [100 * r[f"{col}_mean"] for r in mine], "-", color=f"C{i}",
                    marker=HOP_MARKERS[i % len(HOP_MARKERS)], ms=6 - i, mfc="white" if i else None,
                    label=f"{pattern} (mean)")
            ax.plot(xs, [100 * r[f"{col}_worst"] for r in mine], "--", color=f"C{i}",
                    lw=0.9, label=f"{pattern} (worst)")
        top = 0.0
        for kind, x, y, text in paper[name]:
            # labelled in the legend under the panels: a label on the axes covered curves
            top = max(top, 100 * y)
            marks.append(ax.axhline(100 * y, color=PAPER_COLOUR, lw=1, ls=":", zorder=1)
                         if kind == "line" else
                         ax.scatter([x], [100 * y], marker="D", s=36, color=PAPER_COLOUR,
                                    zorder=6))
            marks[-1].set_label(f"{name}: {text}")
        ax.set_xlabel("GRIN degree")
        ax.set_ylabel(f"1 - {name} / optimum (%)")
        # every degree from the first to the last drawn, the paper's GRIN6 mark too (a
        # quick run's degrees 1-2 left the mark at an unlabelled x)
        last = max([int(r["degree"]) for r in per] + [int(x) for k, x, _, _ in paper[name]
                                                       if k == "mark"])
        ax.set_xticks(range(min(int(r["degree"]) for r in per), last + 1))
        ax.set_ylim(0, max(ax.get_ylim()[1], 1.08 * top))
        ax.grid(alpha=0.3)
        ax.set_title(f"{name}: {where}"[:110], fontsize=7.5, loc="left")
    # under both panels, above the claims: inside, the legend covered the dashed worst cases
    bottom = claims_footer(fig, claims)
    inch = 1 / fig.get_size_inches()[1]
    if marks:       # the paper's numbers, a row of their own under the patterns'
        fig.legend(handles=marks, loc="lower center", bbox_to_anchor=(0.5, bottom),
                   ncol=2, fontsize=7, frameon=False, labelcolor=PAPER_COLOUR)
        bottom += (0.16 * ((len(marks) + 1) // 2) + 0.04) * inch
    handles, labels = axes[0].get_legend_handles_labels()
    handles, labels = zip(*[(h, lab) for h, lab in zip(handles, labels)
                            if h not in marks]) if handles else ((), ())
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, bottom), ncol=4,
               fontsize=7, frameon=False)
    path = save(fig, run_dir / "hops.png", rect=(0, bottom + 0.4 * inch, 1, 1))
    return [note(path, f"{where}, placement rack; flow model (HiGHS), no emulation.\n"
                       "Per traffic pattern and GRIN degree: solid, the mean over active "
                       "shares and seeds of 1 - h1 / optimum (left) and 1 - h2 / optimum "
                       "(right), the optimum being the maximum total multi-commodity flow "
                       "over every path; dashed, the worst instance.  In red, the paper's "
                       "numbers as the claims hold them, with where in the paper: h1 7 % on "
                       "average (dotted), its worst case, GRIN6 with permutation traffic at "
                       "32 % (diamond), and h2 seldom more than 1 % below (dotted).")]
