"""The claims of 003_aa7e1801a46c453f.txt (GRIN: servers' free ports wired to neighbours)
that the grin experiment judges at the lowest share of active servers, once per throughput
the run has: the emulation's, and the two models' on the same connections (independent
subflows; the paper's h1 optimum), so that a gap between them shows.

The criteria are the ones this experiment checked before the claims became data (moved here
unchanged from figures.py: same goals, same numbers).  Read from summary.csv of the newest
chosen run (figures.summarize writes it from flows.csv).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from analysis.claims import (
    Cause,
    Claim,
    Missing,
    Outcome,
    Run,
    Samples,
    claim_maker,
    need_rows,
)
from analysis.intervals import Band
from store import cell

from .figures import COLUMNS, network_label

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
#: and by the two path managers on the same draws (grin-pm: only the subflow limit changed)
STAR_CAUSE = Cause(
    "each connection runs the star of 1 + 2d subflows, not the full mesh of (1 + d)^2 that "
    "the h1 optimum spreads over, since upstream MPTCP's in-kernel path manager opens at "
    f"most 1 + {KERNEL_SUBFLOW_LIMIT}.  Independent subflows on the star's paths fall short "
    "as the emulation does while the h1 optimum over every path does not, and the full "
    "mesh opened by a userspace path manager on the same draws brings GRIN3 far above the "
    "star, near the paper's gain",
    ablation=("grin/20261127T040153Z-734227", "grin-pm/kernel", "grin-pm/userspace"))
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
                   **headline: Any) -> Claim:
    """An ordering the paper states: GRIN of one degree at least as good as the multihomed
    baseline (+1 NIC) (``better``), or below it."""
    return _claim(key=f"{net}-multihomed",
                  text=f"{net.upper()} vs multihomed (+1 NIC) at the lowest active share",
                  where=where, paper=paper, quote=quote,
                  criterion=">= 1x" if better else "< 1x", reason=reason,
                  measure=over(net, "mh1", lambda x: (x >= 1.0) == better), causes=causes or {},
                  **headline)


CLAIMS = [
    *(_over_original(net) for net in GOALS),
    _vs_multihomed("grin2", True, "Fig. 6 (section 6)", "GRIN2 better",
                   "GRIN2 and GRIN3 performance is better than multihoming until 40% of "
                   "servers are active",
                   "An ordering in the text: GRIN2 at least as good as dual-homing; per "
                   "repetition at the lowest active share, the 95 % interval of the ratio's "
                   "mean at or above 1, on Fig. 6's random traffic.",
                   headline=True, samples=rep_ratios("grin2", "mh1"), band=Band(1.0),
                   regime=regime("random"), select=FIG6),
    _vs_multihomed("grin1", False, "Fig. 7 (section 6)", "multihoming better",
                   "Multihoming is almost always dominated by GRIN2 and GRIN3, however it "
                   "outperforms GRIN1",
                   "An ordering in the text: dual-homing above GRIN1.",
                   causes={"emulated": GRIN1_MULTIHOMED_CAUSE},
                   regime=regime("all-to-all"), select=FIG7),
]
