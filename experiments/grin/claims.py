"""The claims of 003_aa7e1801a46c453f.txt (GRIN: servers' free ports wired to neighbours)
that the grin experiment judges at the lowest share of active servers, once per throughput
the run has: the emulation's, and the two models' on the same connections (independent
subflows; the paper's h1 optimum), so that a gap between them shows.  At the end, the three
sentences of section 5.1 that grin-hops judges (experiments/grin/hops.py, from hops.csv).

The criteria are the ones this experiment checked before the claims became data (moved here
unchanged from figures.py: same goals, same numbers).  Read from summary.csv of the newest
chosen run (figures.summarize writes it from flows.csv).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from analysis.claims import (
    Cause,
    Claim,
    Missing,
    Outcome,
    Run,
    Samples,
    claim_maker,
    need_rows,
    num,
)
from analysis.intervals import Band
from analysis.summaries import group_rows
from store import cell

from .figures import COLUMNS, PAPER_H2_SELDOM, hop_seeds, network_label, seed_words

PAPER = "003_aa7e1801a46c453f.txt"
#: the issue's goals at the lowest active share: GRIN1 >= 1.8x, GRIN2 >= 2.6x the original;
#: GRIN3 >= 3.4x continues them (0.2 below n + 1 per extra port), set with issue #28 part 5
GOALS = {"grin1": 1.8, "grin2": 2.6, "grin3": 3.4}
#: upstream MPTCP's in-kernel path manager opens at most this many subflows per connection
#: besides the first (``ip mptcp limits``): 9 in all, where a degree-d GRIN pair's full
#: mesh needs (1 + d)^2
KERNEL_SUBFLOW_LIMIT = 8
#: condition label -> summary column
BY_LABEL = {how: col for col, how in COLUMNS.items()}


def throughputs(runs: list[Run]) -> list[str]:
    """One condition per throughput column with values at the lowest active share."""
    at = _lowest(runs[0].table("summary.csv"))
    return [how for col, how in COLUMNS.items() if any(r.get(col, "") != "" for r in at)]


def _lowest(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    if not rows:
        return []
    low = min(cell(r["active_pct"]) for r in rows)
    return [r for r in rows if cell(r["active_pct"]) == low]


def _ratio(runs: list[Run], cond: str, a: str, b: str) -> tuple[float, float]:
    """Network a's over network b's mean per-connection throughput at the lowest active
    share, in the condition's column; and that share."""
    at = _lowest(need_rows(runs[:1], "summary.csv"))
    col = BY_LABEL[cond]
    by = {r["network"]: cell(r.get(col)) for r in at}
    low = cell(at[0]["active_pct"])
    for net in (a, b):
        if (x := by.get(net)) is None or x != x:        # absent, or no value in the column
            raise Missing(f"no {network_label(net)} network at {low:g} % active "
                          f"({'--multihomed 1' if net.startswith('mh') else '--degrees'})")
    if not by[b]:
        raise Missing(f"{network_label(b)} moved nothing")
    return by[a] / by[b], low


def _basis(cond: str) -> str:
    return "model" if cond != COLUMNS["mbps"] else ""


def over(a: str, b: str, test: Callable[[float], bool]) -> Callable[[list[Run], str], Outcome]:
    def measure(runs: list[Run], cond: str) -> Outcome:
        ratio, low = _ratio(runs, cond, a, b)
        note = _subflow_note(runs, a) if a.startswith("grin") and a != "grin0" else ""
        return Outcome(f"{ratio:.2f}x at {low:g} % active", test(ratio),
                       f"{network_label(a)} / {network_label(b)}, mean per-connection "
                       "throughput" + note, _basis(cond))
    return measure


def rep_ratios(a: str, b: str) -> Callable[[list[Run], str], Samples]:
    """Per repetition (run folder, run) at the lowest active share: network a's mean
    per-connection throughput over network b's, in the condition's column (flows.csv)."""
    def samples(runs: list[Run], cond: str) -> Samples:
        col = BY_LABEL[cond]
        rows = need_rows(runs, "flows.csv")
        low = min(cell(r["active_pct"]) for r in rows)
        by: dict[tuple[str, str], dict[str, list[float]]] = {}
        for r in rows:
            if cell(r["active_pct"]) == low and (x := cell(r.get(col))) == x:
                by.setdefault((r["_run"], r["run"]), {}).setdefault(r["network"], []).append(x)
        vals = [sum(v[a]) / len(v[a]) / (sum(v[b]) / len(v[b])) for v in by.values()
                if v.get(a) and v.get(b) and sum(v[b]) > 0]
        return Samples(tuple(vals))
    return samples


#: the regime of Fig. 7 ('all-to-all traffic, a pattern mimicking the shuffle phase') and
#: Fig. 6 (random traffic), and enough active servers at the judged share that a GRIN port
#: is not simply a second NIC: at least this many, so that each active server's flows
#: share its ports and the fabric with other active servers' (the paper's 120-server
#: simulation has 12 active at 10 %); written 2026-12-01 before the runs that judge it
MIN_ACTIVE = 4


def regime(pattern: str) -> Callable[[list[Run], str], str]:
    def check(runs: list[Run], _cond: str) -> str:
        why = []
        got = {str(r.params.get("pattern") or "permutation") for r in runs}
        if got != {pattern}:
            why.append(f"traffic {'/'.join(sorted(got))}, not the figure's {pattern}")
        rows = need_rows(runs, "flows.csv")
        low = min(cell(r["active_pct"]) for r in rows)
        active = min(int(cell(r["active"])) for r in rows if cell(r["active_pct"]) == low)
        if active < MIN_ACTIVE:
            why.append(f"{active} active servers at {low:g} % active (fewer than "
                       f"{MIN_ACTIVE}: an idle neighbour's port is simply a second NIC, and "
                       "the ratio is the port count by construction)")
        return "; ".join(why)
    return check


def run_shares(params: Mapping[str, object]) -> list[float]:
    """The active shares (%) a run's parameters name ('' or garbage: none)."""
    try:
        return [float(x) for x in str(params.get("active") or "").split(",") if x.strip()]
    except ValueError:
        return []


#: Fig. 6's first point: the lowest-share claim reads only runs that start there, so a
#: run of higher shares (the crossover's) never stands in for it (written 2026-12-02,
#: before run 16)
FIG6_LOWEST = 10.0
#: the share up to which 'GRIN2 and GRIN3 performance is better than multihoming', and
#: above which they 'match it' (Fig. 6)
CROSSOVER = 40.0
#: 'match': within 10 % either way, written before run 16 (the text gives no number)
MATCH = Band(0.9, 1.1)


def starts_at_fig6_lowest(params: Mapping[str, object]) -> bool:
    return min(run_shares(params), default=math.inf) <= FIG6_LOWEST


def spans_crossover(params: Mapping[str, object]) -> bool:
    """A share on each side of the crossover: only such a run says where the order turns."""
    got = run_shares(params)
    return any(a < CROSSOVER for a in got) and any(a > CROSSOVER for a in got)


def _side(below: bool) -> Callable[[float], bool]:
    return (lambda a: a < CROSSOVER) if below else (lambda a: a > CROSSOVER)


def side_ratios(a: str, b: str, below: bool) -> Callable[[list[Run], str], Samples]:
    """Per repetition: network a's mean per-connection throughput over network b's at each
    active share on one side of the crossover, averaged over those shares (flows.csv)."""
    on_side = _side(below)

    def samples(runs: list[Run], cond: str) -> Samples:
        col = BY_LABEL[cond]
        by: dict[tuple[str, str], dict[float, dict[str, list[float]]]] = {}
        for r in need_rows(runs, "flows.csv"):
            share = cell(r["active_pct"])
            if on_side(share) and (x := cell(r.get(col))) == x:
                by.setdefault((r["_run"], r["run"]), {}).setdefault(share, {}).setdefault(
                    r["network"], []).append(x)
        vals = []
        for shares in by.values():
            ratios = [sum(v[a]) / len(v[a]) / (sum(v[b]) / len(v[b]))
                      for v in shares.values() if v.get(a) and v.get(b) and sum(v[b]) > 0]
            if ratios:
                vals.append(sum(ratios) / len(ratios))
        return Samples(tuple(vals))
    return samples


def side_over(a: str, b: str, below: bool,
              test: Callable[[float], bool]) -> Callable[[list[Run], str], Outcome]:
    """The ratio of side_ratios at each share of that side in summary.csv (all repetitions)."""
    on_side = _side(below)

    def measure(runs: list[Run], cond: str) -> Outcome:
        col = BY_LABEL[cond]
        at: dict[float, dict[str, float]] = {}
        for r in need_rows(runs[:1], "summary.csv"):
            if on_side(share := cell(r["active_pct"])):
                at.setdefault(share, {})[r["network"]] = cell(r.get(col))
        ratios = {share: by[a] / by[b] for share, by in sorted(at.items())
                  if by.get(a) == by.get(a) and by.get(b) and by.get(a) is not None}
        if not ratios:
            raise Missing(f"no {network_label(a)} and {network_label(b)} pair at a share "
                          f"{'below' if below else 'above'} {CROSSOVER:g} % active")
        mean = sum(ratios.values()) / len(ratios)
        shown = ", ".join(f"{x:.2f}x at {share:g} %" for share, x in ratios.items())
        return Outcome(shown, test(mean), f"{network_label(a)} / {network_label(b)}, mean "
                       f"per-connection throughput over the repetitions: {shown}",
                       _basis(cond))
    return measure


_claim = claim_maker(PAPER, experiment="grin", conditions=throughputs,
                     figure="throughput.png")
#: which runs judge a figure's claims: its own traffic pattern (Fig. 6 random, Fig. 7
#: all-to-all), so that a run of one figure never hides the other's newest run (written
#: 2026-12-01, before the first random-traffic run); the regime still checks the rest
FIG6 = {"pattern": ("random",)}
FIG7 = {"pattern": ("all-to-all",)}

_GOAL = ("The paper's words 'close to 100% per extra port' made a number by issue #20's "
         "goals for this experiment: GRIN1 at least 1.8x and GRIN2 at least 2.6x the "
         "original at the lowest active share (a little under 2x and 3x); GRIN3 at least "
         "3.4x by the same rule (issue #28, written before a GRIN3 verdict existed).")
#: the paper's value beside each degree's goal
_CLOSE_TO = {"grin1": "close to 2x", "grin2": "close to 3x", "grin3": "close to 4x"}
#: why a degree whose mesh exceeds the kernel's subflow limit falls short (issue #28 part 5).
#: Tested twice: by the model rows of the last run that judged GRIN3 on the star (the
#: independent-subflow model on the star's paths against the h1 optimum over every path),
#: and by the two path managers on the same draws (grin-pm-2, run 12 of docs/notebook/
#: 2026-12-01-headlines.md: only the subflow limit changed; its criteria of 2026-11-26 on
#: how far the mesh rises above the star failed on its fresh draws, and the text says how)
STAR_CAUSE = Cause(
    "each connection runs the star of 1 + 2d subflows, not the full mesh of (1 + d)^2 that "
    "the h1 optimum spreads over, since upstream MPTCP's in-kernel path manager opens at "
    f"most 1 + {KERNEL_SUBFLOW_LIMIT}.  Independent subflows on the star's paths fall short "
    "as the emulation does, draw by draw, while the h1 optimum over every path does not.  "
    "The full mesh, opened by a userspace path manager on the same draws, lifts GRIN3 above "
    "the star on every draw and near the paper's gain, but by less than the ablation's "
    "criterion asked where both active servers share a rack (the star then reaches more "
    "of the mesh's capacity)",
    ablation=("grin/20261127T040153Z-734227", "grin-pm-2/kernel", "grin-pm-2/userspace"))
#: why GRIN1 is level with multihoming where the paper has multihoming ahead: the judged
#: run's own h1 optimum shows the level at the lowest share, and the reference sweep over
#: the active share (permutation traffic) shows the order turning as the paper says
GRIN1_MULTIHOMED_CAUSE = Cause(
    "at the lowest active share an active server's GRIN1 neighbour is idle, so its second "
    "port doubles it exactly as a second NIC does, and the paper's own h1 optimum puts the "
    "two level there too.  Raising the active share is the ablation: once the neighbours "
    "are busy GRIN1 falls back towards the original and multihoming is ahead, as the paper "
    "says",
    ablation=("grin/20261201T190856Z-634d4d", "grin/20261127T040153Z-734227"))


def _subflow_note(runs: list[Run], net: str) -> str:
    """The connections' mean subflow count at the lowest active share, against the mesh."""
    at = _lowest(need_rows(runs[:1], "summary.csv"))
    got = [cell(r.get("subflows_mean")) for r in at if r["network"] == net]
    mesh = (1 + int(net[4:])) ** 2
    if not got or got[0] != got[0]:
        return ""
    design = ("a full mesh" if got[0] >= mesh else
              f"a star: the mesh needs {mesh}, above the kernel's 1 + {KERNEL_SUBFLOW_LIMIT}"
              if mesh > KERNEL_SUBFLOW_LIMIT + 1 else "fewer than the mesh")
    return f"; {got[0]:g} subflows per connection ({design})"


def _band(net: str) -> Band:
    """A degree's goal up to its port count (1 + d) plus 5 % for measurement noise."""
    return Band(GOALS[net], 1.05 * (1 + int(net[4:])))


_UPPER = ("  'Close to' is two-sided: up to the port count (no routing gives more) plus 5 % "
          "for measurement noise (issue #52, 2026-12-01, before the runs that judge it).")


def _over_original(net: str) -> Claim:
    """GRIN of one degree against the original network: at least its goal (GOALS)."""
    goal = GOALS[net]
    return _claim(key=f"{net}-original",
                  text=f"{net.upper()} vs original at the lowest active share",
                  where="Fig. 7 (section 6)", paper=_CLOSE_TO[net],
                  quote="every additional port used with GRIN brings close to 100% "
                        "performance improvement when few hosts are active",
                  criterion=f"per repetition at the lowest active share, {net.upper()}'s "
                            "mean per-connection throughput / the original's; the 95 % "
                            f"interval of its mean within {_band(net).text(2)}",
                  reason=_GOAL + _UPPER,
                  measure=over(net, "grin0", lambda x: x >= goal),
                  headline=net in ("grin1", "grin2"), samples=rep_ratios(net, "grin0"),
                  band=_band(net), regime=regime("all-to-all"), select=FIG7,
                  paper_value=float(1 + int(net[4:])),
                  causes={"emulated": STAR_CAUSE}
                  if (1 + int(net[4:])) ** 2 > KERNEL_SUBFLOW_LIMIT + 1 else {})


def _vs_multihomed(net: str, better: bool, where: str, paper: str, quote: str,
                   reason: str, causes: Mapping[str, Cause] | None = None,
                   **headline: object) -> Claim:
    """An ordering the paper states: GRIN of one degree at least as good as the multihomed
    baseline (+1 NIC) (``better``), or below it."""
    return _claim(key=f"{net}-multihomed",
                  text=f"{net.upper()} vs multihomed (+1 NIC) at the lowest active share",
                  where=where, paper=paper, quote=quote,
                  criterion=">= 1x" if better else "< 1x", reason=reason,
                  measure=over(net, "mh1", lambda x: (x >= 1.0) == better), causes=causes or {},
                  **headline)


_CROSS_QUOTE = ("GRIN2 and GRIN3 performance is better than multihoming until 40% of servers "
                "are active, and match it after that")
_CROSS_WHY = ("Written 2026-12-02 before run 16 (docs/notebook/2026-12-01-headlines.md, "
              "'Session 39 runs'): per repetition, GRIN2 / dual-homing's mean per-connection "
              "throughput at each of the run's shares on that side of 40 %, averaged over "
              "them; Fig. 6's random traffic; a run is judged only if it holds a share on "
              "each side.  GRIN3 is not judged here: its mesh exceeds the kernel's subflow "
              "limit (grin3-original's cause).")


def _crossover(below: bool) -> Claim:
    """GRIN2 against dual-homing on one side of Fig. 6's 40 %: better below, level above."""
    side = "below" if below else "above"
    band = Band(1.0) if below else MATCH
    return _claim(key=f"grin2-multihomed-{side}-40",
                  text=f"GRIN2 vs multihomed (+1 NIC) {side} {CROSSOVER:g} % active",
                  where="Fig. 6 (section 6)",
                  paper="GRIN2 better" if below else "GRIN2 matches",
                  quote=_CROSS_QUOTE,
                  criterion=f"per repetition, GRIN2 / multihomed at the shares {side} "
                            f"{CROSSOVER:g} %; the 95 % interval of its mean "
                            + ("at or above 1" if below else f"within {band.text(1)}"),
                  reason=_CROSS_WHY + ("" if below else "  'Match' has no number in the "
                                       "text: within 10 % either way, chosen before the "
                                       "run."),
                  measure=side_over("grin2", "mh1", below,
                                    (lambda x: x >= 1.0) if below
                                    else (lambda x: MATCH.lo <= x <= MATCH.hi)),
                  samples=side_ratios("grin2", "mh1", below), band=band,
                  regime=regime("random"), select=FIG6, admit=spans_crossover,
                  needs=f"random traffic at active shares on both sides of {CROSSOVER:g} % "
                        "(e.g. --active 30,60)")


CLAIMS = [
    *(_over_original(net) for net in GOALS),
    _vs_multihomed("grin2", True, "Fig. 6 (section 6)", "GRIN2 better",
                   "GRIN2 and GRIN3 performance is better than multihoming until 40% of "
                   "servers are active",
                   "An ordering in the text: GRIN2 at least as good as dual-homing; per "
                   "repetition at the lowest active share, the 95 % interval of the ratio's "
                   "mean at or above 1, on Fig. 6's random traffic.",
                   headline=True, samples=rep_ratios("grin2", "mh1"), band=Band(1.0),
                   regime=regime("random"), select=FIG6, admit=starts_at_fig6_lowest,
                   needs=f"a run whose lowest active share is {FIG6_LOWEST:g} % (Fig. 6's "
                         "first point)"),
    *(_crossover(below) for below in (True, False)),
    _vs_multihomed("grin1", False, "Fig. 7 (section 6)", "multihoming better",
                   "Multihoming is almost always dominated by GRIN2 and GRIN3, however it "
                   "outperforms GRIN1",
                   "An ordering in the text: dual-homing above GRIN1.",
                   causes={"emulated": GRIN1_MULTIHOMED_CAUSE},
                   regime=regime("all-to-all"), select=FIG7),
]


# -- grin-hops: section 5.1, the hop-count study (experiments/grin/hops.py) -------------------
#
# Criteria of docs/notebook/2026-12-01-headlines.md, "GRIN §5.1 as a judged headline",
# written 2026-12-02 04:25 UTC before any grin-hops run; read from hops.csv, one row per
# (seed, degree, pattern, active share).

#: the paper's grid: six racks of twenty servers, GRIN degree 1-6, its four patterns; the
#: active shares are the bench's (the paper names none), the grid of its Fig. 5
HOP_NETWORK = (6, 20)
HOP_DEGREES = (1, 2, 3, 4, 5, 6)
HOP_PATTERNS = ("permutation", "random", "group", "all-to-all")
HOP_SHARES = (10.0, 30.0, 50.0, 70.0)
#: the fresh seeds the criteria are judged on (the bench's 2026-11-24 numbers were seen)
HOP_SEEDS = (101, 102, 103, 104, 105)
HOP_SECTION = "docs/notebook/2026-12-01-headlines.md, 'GRIN §5.1 as a judged headline'"
_SEEN = ("The bench's numbers of 2026-11-24 (docs/notebook/003-grin.md: h1 about 6.5 % below "
         "the optimum over all 96 rows) were seen before this criterion, so the verdict is "
         "judged on fresh seeds, 101-105 (`dcrepro run grin-hops --seed 101 --seeds 5`, "
         "the defaults), that no run had used.")


def _hop_grid_words(cells: set[tuple[int, str, float]]) -> str:
    degrees = sorted({d for d, _, _ in cells})
    pats = list(dict.fromkeys(p for _, p, _ in sorted(cells, key=lambda c: (
        HOP_PATTERNS.index(c[1]) if c[1] in HOP_PATTERNS else 99, c[1]))))
    shares = sorted({a for _, _, a in cells})
    return (f"degree {','.join(map(str, degrees))} x {'/'.join(pats)} x "
            f"{'/'.join(f'{a:g}' for a in shares)} % active ({len(cells)} cells)")


def hop_grid(runs: list[Run], _cond: str) -> str:
    """The paper's regime of section 5.1: six racks of twenty servers, and for every seed
    exactly the grid of degree 1-6 x the four patterns x 10/30/50/70 % active (96 cells);
    '' when the runs have it, else why not.  'Across all experiments' is that grid: a
    smaller one (a quick run) or a larger one averages other rows."""
    why = []
    for r in runs:
        got = (r.params.get("racks"), r.params.get("servers"))
        if tuple(str(x) for x in got) != tuple(str(x) for x in HOP_NETWORK):
            why.append(f"{got[0]} racks x {got[1]} servers, not the paper's six racks of "
                       "twenty")
    full = {(d, p, a) for d in HOP_DEGREES for p in HOP_PATTERNS for a in HOP_SHARES}
    by: dict[tuple[str, str], set[tuple[int, str, float]]] = {}
    for row in need_rows(runs, "hops.csv"):
        by.setdefault((row["_run"], row["seed"]), set()).add(
            (int(row["degree"]), row["pattern"], cell(row["active_pct"])))
    for cells in by.values():
        if cells != full:
            why.append(f"a grid of {_hop_grid_words(cells)}, not the paper's degree 1-6 x "
                       "its four patterns x 10/30/50/70 % active (96 cells)")
    return "; ".join(dict.fromkeys(why))


def _hop_rows(runs: list[Run]) -> list[dict[str, str]]:
    return need_rows(runs, "hops.csv", "a grin-hops run")


def _per_seed(rows: list[dict[str, str]]) -> dict[tuple[str, str], list[dict[str, str]]]:
    """hops.csv's rows by unit: (run id, seed)."""
    return group_rows(rows, lambda r: (r["_run"], r["seed"]))


def _seeds_note(rows: list[dict[str, str]]) -> str:
    seeds = hop_seeds(rows)
    fresh = "" if tuple(seeds) == HOP_SEEDS else \
        " (not the criterion's fresh seeds 101-105)"
    return f"{seed_words(seeds)}{fresh}, {len(rows)} rows"


def _over_1pct(r: dict[str, str]) -> float:
    return float(num(r, "h2_gap") > PAPER_H2_SELDOM)


def _seed_stat(stat: Callable[[dict[str, str]], float]) -> Callable[[list[Run], str], Samples]:
    """Per seed (its own overlay, active servers and traffic): the mean of ``stat`` over
    its rows."""
    def samples(runs: list[Run], _cond: str) -> Samples:
        return Samples(tuple(sum(stat(r) for r in mine) / len(mine)
                             for mine in _per_seed(_hop_rows(runs)).values()), unit="seed")
    return samples


def _h1_gap(r: dict[str, str]) -> float:
    return num(r, "h1_gap")


def _pooled(stat: Callable[[dict[str, str]], float], band: Band, what: str
            ) -> Callable[[list[Run], str], Outcome]:
    """The statistic over every row of every seed, against the band (the interval over
    seeds decides; this is the number beside it)."""
    def measure(runs: list[Run], _cond: str) -> Outcome:
        rows = _hop_rows(runs)
        x = sum(stat(r) for r in rows) / len(rows)
        return Outcome(f"{x:.4f}", band.lo <= x <= band.hi,
                       f"{what} over {_seeds_note(rows)}", "model")
    return measure


def _worst_h1(runs: list[Run], cond: str) -> Outcome:
    """The instance with the largest 1 - h1 / optimum, every seed's rows pooled; holds when
    it (every instance tied with it) is GRIN6 with permutation traffic."""
    rows = _hop_rows(runs)
    seeds = hop_seeds(rows)
    # fewer seeds than the criterion pools: no verdict, unless the grid is off as well
    # (then the regime says so first, as for the interval claims)
    if len(seeds) < len(HOP_SEEDS) and not hop_grid(runs, cond):
        raise Missing(f"the criterion pools the rows of {len(HOP_SEEDS)} seeds; the run "
                      f"has {len(seeds)}")
    top = max(_h1_gap(r) for r in rows)
    tied = [r for r in rows if _h1_gap(r) == top]
    w = tied[0]
    holds = all(int(r["degree"]) == 6 and r["pattern"] == "permutation" for r in tied)
    also = f" (and {len(tied) - 1} tied)" if len(tied) > 1 else ""
    return Outcome(f"GRIN{w['degree']}, {w['pattern']}, {cell(w['active_pct']):g} % active, "
                   f"seed {w['seed']}: {100 * top:.1f} % below{also}", holds,
                   f"the largest 1 - h1 / optimum of {_seeds_note(rows)}", "model")


_hops = claim_maker(PAPER, experiment="grin-hops", regime=hop_grid, figure="hops.png",
                    needs="`dcrepro run grin-hops` runs the paper's grid on seeds 101-105")
#: why the regime, not ``select``, keeps a smaller grid from judging these claims: as for
#: grin's active servers (MIN_ACTIVE), outcast's tail drop and plts' TCP recovery, a run
#: whose set-up is not the paper's is still measured and shown, with the verdict "not in
#: the paper's regime" and why (read from its hops.csv); ``select`` is what this code uses
#: to route the runs of different figures to their claims (FIG6/FIG7 above), and would
#: leave a quick run "not measured" without saying what it found
H1_MEAN_BAND = Band(0.0595, 0.0805, digits=4)
H2_SELDOM_BAND = Band(hi=0.10)

CLAIMS += [
    _hops(key="h1-mean", text="h1 is within 7 % of the optimum on average",
          where="section 5.1", paper="7 %",
          quote="On average, across all experiments, the difference between h 1 and "
                "optimal is just 7%.",
          criterion="per seed, the mean over the grid's 96 rows (degree 1-6 x active "
                    "10/30/50/70 % x the four patterns) of 1 - h1 / optimum; the 95 % "
                    f"interval of its mean over 5 seeds within {H1_MEAN_BAND.text()}",
          reason="The paper's point value made two-sided, 15 % either way as the other "
                 "point values are (0.07 x 0.85 to x 1.15), written 2026-12-02 before its "
                 f"runs ({HOP_SECTION}). " + _SEEN + "  The paper names no active shares; "
                 "the grid's are the bench's, that of its Fig. 5, and a run with another "
                 "grid is not the paper's 'across all experiments' (the regime).",
          measure=_pooled(_h1_gap, H1_MEAN_BAND, "mean 1 - h1 / optimum"),
          headline=True, samples=_seed_stat(_h1_gap), band=H1_MEAN_BAND, repetitions=5,
          paper_value=0.07),
    _hops(key="h2-seldom", text="h2 is seldom more than 1 % below the optimum",
          where="section 5.1", paper="seldom more than 1 %",
          quote="Also, the difference between the optimal solution and h 2 is seldom more "
                "than 1%.",
          criterion="per seed, the share of the grid's 96 rows with 1 - h2 / optimum "
                    "above 0.01; the 95 % interval of its mean over 5 seeds "
                    f"{H2_SELDOM_BAND.text()}",
          reason="'Seldom' read as at most one row in ten, written 2026-12-02 before its "
                 f"runs ({HOP_SECTION}). " + _SEEN,
          measure=_pooled(_over_1pct, H2_SELDOM_BAND,
                          "share of rows with h2 more than 1 % below the optimum"),
          samples=_seed_stat(_over_1pct), band=H2_SELDOM_BAND, repetitions=5),
    _hops(key="h1-worst-grin6", text="the worst h1 gap is GRIN6 with permutation traffic",
          where="section 5.1 (Fig. 5)", paper="GRIN6, permutation (32 %)",
          quote="the difference between h 1 and the optimal solution is at most 32% for "
                "GRIN6 and permutation traffic",
          criterion="the row with the largest 1 - h1 / optimum over all 5 seeds' rows "
                    "(pooled) is degree 6 with permutation traffic",
          reason="Where the paper puts its worst h1 gap, without a number: its 32 % is its "
                 "own draw of servers and traffic.  Written 2026-12-02 before its runs "
                 f"({HOP_SECTION}). " + _SEEN,
          measure=_worst_h1),
]
