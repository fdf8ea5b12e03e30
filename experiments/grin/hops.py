"""GRIN's hop-count study (003_aa7e1801a46c453f.txt, section 5.1 and its Fig. 5) as a run:
the flow model alone, no root, no network.

Six racks of twenty servers on one non-blocking switch, GRIN degree 1 to 6, four traffic
patterns (permutation, random, group, all-to-all) among 10, 30, 50 and 70 % active servers
(the paper does not say which shares it ran: these are the bench's, the grid of its Fig. 5).
Each instance (seed x degree x pattern x share) is solved three ways by HiGHS
(``model.grin.evaluate_instance``): the maximum total multi-commodity flow over every path
(the optimum), over h1 paths and over h2 paths; and by the paper's 16-path sampling
estimate.  Seed i draws the overlay, the active servers, the traffic and the sampled paths
(``model.grin.hop_instances``, the loop bench/bench_grin_model.py shares), so seeds
``--seed`` .. ``--seed + --seeds - 1`` are independent units.

Writes hops.csv, one row per instance: the totals and the gaps ``1 - h1 / optimum`` and
``1 - h2 / optimum``; figures.py's ``plot_grin_hops`` draws hops.png and summary.csv from it,
and claims.py judges the section's three sentences on it.
"""
from __future__ import annotations

from argparse import ArgumentParser
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from harness.common import add_backend, add_shared
from harness.params import Params, Quick
from harness.plan import Network, RunPlan
from harness.runfolder import RunFolder
from model.grin import GROUP_SIZE, PATTERNS, HopInstance, grin_topology, hop_instances
from store import Row, write_csv

NAME = "grin-hops"
HELP = ("GRIN section 5.1 on the flow model (no root): h1 and h2 routing against the maximum "
        "multi-commodity flow, GRIN degree 1-6, four traffic patterns")
#: the README's experiment table (`dcrepro list --markdown`): the paper's figure, what it shows
PAPER = ("`003_…` §5.1 (Fig. 5): 6 racks × 20 servers on one switch, GRIN degree 1–6, "
         "permutation, random, group and all-to-all traffic among 10–70 % active servers; "
         "the maximum multi-commodity flow over all paths, h1 and h2 paths (HiGHS) and the "
         "paper's 16-path sampling; h1's and h2's gap to the optimum per seed")
#: the only view: neither the emulation nor ns-3 computes an optimum
BACKENDS = ("model",)


@dataclass(frozen=True)
class GrinHopsParams(Params):
    """The parameters of one grin-hops run (their flags: add_arguments).  The defaults are
    the study of docs/notebook/2026-12-01-headlines.md: the paper's grid on seeds
    101-105."""

    racks: int = 6
    servers: int = 20
    degrees: str = "1,2,3,4,5,6"
    active: str = "10,30,50,70"
    patterns: str = ",".join(PATTERNS)
    seeds: int = 5
    seed: int = 101
    backend: str = "model"


PARAMS = GrinHopsParams
#: about 30 s on one core; seed 1 is one the bench has shown already (2026-11-24), so a
#: quick look spends none of the criterion's fresh seeds 101-105
QUICK: Quick = {"degrees": "1,2", "active": "10,50", "seeds": 1, "seed": 1}


def add_arguments(p: ArgumentParser) -> None:
    """Shared flags (--seed: the first seed) plus the network, the grid and --seeds."""
    add_shared(p, PARAMS, QUICK)
    add_backend(p, BACKENDS)
    for name, text in (("racks", "racks on the one switch"),
                       ("servers", "servers per rack")):
        p.add_argument(f"--{name}", type=int, default=None,
                       help=f"{text} (default: {getattr(PARAMS, name)})")
    p.add_argument("--degrees", default=None,
                   help="GRIN degrees, comma list or range, e.g. 1-6 (default: "
                        f"{PARAMS.degrees}; quick: {QUICK['degrees']})")
    p.add_argument("--active", default=None,
                   help="percentages of active servers, comma list (default: "
                        f"{PARAMS.active}; quick: {QUICK['active']})")
    p.add_argument("--patterns", default=None,
                   help=f"traffic patterns, comma list of {', '.join(PATTERNS)} (default: "
                        "all four)")
    p.add_argument("--seeds", type=int, default=None,
                   help="how many seeds, from --seed on, each its own overlay, active "
                        f"servers and traffic (default: {PARAMS.seeds}; quick: "
                        f"{QUICK['seeds']})")


T = TypeVar("T")


def _values(text: str, flag: str, cast: Callable[[str], T]) -> list[T]:
    """A comma list (ranges a-b of integers too) of distinct values, in the given order."""
    out: list[T] = []
    ranges = cast is int
    try:
        for part in (x.strip() for x in str(text).split(",")):
            if not part:
                continue
            if ranges and "-" in part[1:]:
                lo, hi = part.split("-", 1)
                out.extend(cast(str(v)) for v in range(int(lo), int(hi) + 1))
            else:
                out.append(cast(part))
    except ValueError:
        raise ValueError(f"--{flag} {text!r}: give a comma list of numbers") from None
    if not out or len(set(out)) != len(out):
        raise ValueError(f"--{flag} {text!r}: give a comma list of distinct values")
    return out


def degrees(params: GrinHopsParams) -> list[int]:
    """The GRIN degrees of the grid."""
    return _values(params.degrees, "degrees", int)


def actives(params: GrinHopsParams) -> list[float]:
    """The active shares (%) of the grid."""
    return _values(params.active, "active", float)


def patterns(params: GrinHopsParams) -> list[str]:
    """The traffic patterns of the grid."""
    return _values(params.patterns, "patterns", str)


def seeds(params: GrinHopsParams) -> list[int]:
    """The seeds: --seeds of them from --seed on."""
    return list(range(params.seed, params.seed + params.seeds))


def validate(params: GrinHopsParams) -> None:
    """One-line ValueError for a grid this model cannot solve, before any LP."""
    if params.racks < 1 or params.servers < 1 or params.racks * params.servers < 2:
        raise ValueError(f"--racks {params.racks} x --servers {params.servers}: need at "
                         "least two servers")
    if params.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {params.seeds}")
    if params.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {params.seed}")
    bad = [p for p in patterns(params) if p not in PATTERNS]
    if bad:
        raise ValueError(f"--patterns: unknown {', '.join(bad)}; use {', '.join(PATTERNS)}")
    for d in degrees(params):
        if d < 1:
            raise ValueError(f"--degrees: GRIN degree {d}; the study runs degree 1 and up")
        grin_topology(params.racks, params.servers, d, seed=params.seed)   # wiring fits?
    n = params.racks * params.servers
    for pct in actives(params):
        if not 0 < pct <= 100:
            raise ValueError(f"--active {pct:g}: a percentage in (0, 100]")
        act = max(2, round(n * pct / 100))
        if "group" in patterns(params) and act < GROUP_SIZE:
            raise ValueError(f"--active {pct:g} gives {act} active servers of {n}; group "
                             f"traffic needs at least {GROUP_SIZE}")


def row(x: HopInstance) -> Row:
    """hops.csv's row of one instance: flows in units of one server link."""
    r = x.result

    def gap(attr: str) -> float:
        return round(1 - r.ratio(attr), 6) + 0.0      # + 0.0: no '-0.0' from rounding

    return {"seed": x.seed, "degree": x.degree, "pattern": x.pattern,
            "active_pct": x.active_pct, "active": x.active, "connections": r.connections,
            "optimum": round(r.opt, 6), "h1": round(r.h1, 6), "h2": round(r.h2, 6),
            "h1_gap": gap("h1"), "h2_gap": gap("h2"),
            "sampled_h1": round(r.sampled_h1, 6), "sampled_h2": round(r.sampled_h2, 6),
            "sampled_h1_gap": gap("sampled_h1"), "sampled_h2_gap": gap("sampled_h2"),
            "seconds": round(r.seconds, 3)}


def run(params: GrinHopsParams, folder: RunFolder) -> None:
    """Every seed x degree x pattern x active share, hops.csv rewritten after each."""
    grid = (degrees(params), patterns(params), actives(params), seeds(params))
    total = len(grid[0]) * len(grid[1]) * len(grid[2]) * len(grid[3])
    folder.record("model", {"network": f"{params.racks} racks x {params.servers} servers on "
                                       "one non-blocking switch, rack placement",
                            "lp": "HiGHS (scipy.optimize.linprog)", "instances": total,
                            "seeds": grid[3]})
    rows: list[Row] = []
    spent = 0.0
    for x in hop_instances(params.racks, params.servers, *grid):
        rows.append(row(x))
        spent += round(x.result.seconds, 3)   # as the row has it
        folder.log.info("%d/%d: seed %d, GRIN%d, %s, %g %% active: h1 gap %.4f, h2 gap "
                        "%.4f (%.1f s)", len(rows), total, x.seed, x.degree, x.pattern,
                        x.active_pct, rows[-1]["h1_gap"], rows[-1]["h2_gap"],
                        x.result.seconds)
        write_csv(folder.path / "hops.csv", rows)
    folder.record("seconds", round(spent, 1))


def plan(params: GrinHopsParams) -> RunPlan:
    """What a run does (harness/plan.py): no network is brought up; one overlay per seed
    and degree, each pattern x active share an instance (three LPs) on it."""
    per = len(patterns(params)) * len(actives(params))
    nets = tuple(Network(f"grin,racks={params.racks},servers={params.servers},degree={d}",
                         params.racks * params.servers, 1, per, 0.0)
                 for _ in seeds(params) for d in degrees(params))
    return RunPlan(params.seeds, nets, f"{per} instances per seed and degree")
