"""Flow-level model of a perfect network, to compare emulated throughput against.

Everything here works on plain data so it can be used without Mininet:

* a *link* is any hashable id; by convention a tuple ``(a, b)`` for the
  DIRECTED link a->b;
* ``capacities`` maps link id -> capacity (payload goodput, e.g. Mb/s; see
  :func:`goodput_capacity`);
* a *path* is a sequence of link ids;
* a *flow* (connection) is a list of subflow paths: one path for plain TCP,
  several (possibly repeated) for an MPTCP connection.

Rates are returned as ``numpy.ndarray`` of float64 in the units of the
capacities.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse as sp

__all__ = [
    "maxmin_rates",
    "connection_rates",
    "alpha_fair_rates",
    "lia_rates",
    "lia_subflow_rates",
    "TCP_LIKE",
    "COUPLED_CCS",
    "max_concurrent_flow",
    "max_concurrent_flow_graph",
    "jain_index",
    "goodput_capacity",
]

Link = Hashable
Path = Sequence[Hashable]
Flow = Sequence[Path]
#: link -> capacity; Any, not Hashable: Mapping is invariant in its key, so a
#: dict[tuple[str, str], float] would not be a Mapping[Hashable, float]
Capacities = Mapping[Any, float]

# A link counts as saturated when its spare capacity is below this fraction of
# its capacity: the water level is computed in floating point, so demanding an
# exact zero would miss links that are full up to rounding.
_SAT_RTOL = 1e-10
# Frozen connection rates (and the level a check LP must keep) are re-imposed
# slightly relaxed so that rounding in HiGHS' answer can never make the next LP
# infeasible.  HiGHS' feasibility tolerance is 1e-7 absolute, and interior point
# without crossover is only feasible to ~1e-7 relative: a 1e-9 relaxation once
# made a check LP "infeasible" (a 20-switch Jellyfish, 114 traced subflows, level
# at a full 15 Mb/s link; tests/data/aggregate_lp_regression.json).
_FREEZE_RELAX = {False: 1e-8, True: 1e-7}
# When even that leaves a level LP infeasible, the relaxation grows tenfold, twice
# (1e-7 was needed for a 20-switch Jellyfish at 5 Mb/s, 128 traced subflows:
# tests/data/aggregate_lp_regression_2.json, which failed a CI's quick fairness
# run on 2026-12-03); a rate then moves by at most 1e-6 (1e-5 interior point) of
# itself, far below what any table prints.
_RELAX_STEPS = (1.0, 10.0, 100.0)
# Duals below this fraction of the largest are treated as zero (they sum to 1
# over the unfrozen connections; interior-point duals of unblocked connections
# are small but not zero).
_DUAL_RTOL = 1e-6
# A connection counts as unable to rise above the level when the verification
# LP lets it rise by less than this, relative to the level (or to the largest
# capacity when the level is tiny): LP solvers are only that exact (simplex
# vertices to ~1e-9; interior points without crossover to ~1e-8, so a tighter
# IPM tolerance would reject blocked connections and cost many extra LPs).
_VERIFY_RTOL = {False: 1e-9, True: 1e-7}
# LPs with at least this many constraint nonzeros whose optimal value alone is
# needed go to HiGHS' interior-point solver instead of simplex (see _solve_lp).
_IPM_MIN_NNZ = 2000


def _capacity(capacities: Capacities, link: Link) -> float:
    """Return the validated capacity of one link."""
    try:
        value = capacities[link]
    except KeyError:
        raise ValueError(f"link {link!r} is not in capacities") from None
    value = float(value)
    # NaN or negative capacities have no meaning and would poison the
    # water-filling arithmetic silently, so reject them up front.
    if math.isnan(value) or value < 0:
        raise ValueError(f"capacity of link {link!r} must be >= 0, got {value!r}")
    return value


def _index_paths(
    capacities: Capacities, paths: Sequence[Path]
) -> tuple[list[Link], np.ndarray, list[np.ndarray]]:
    """Map paths to (link ids, capacity array, per-path link-index arrays)."""
    index: dict[Link, int] = {}
    links: list[Link] = []
    caps: list[float] = []
    out: list[np.ndarray] = []
    for p, path in enumerate(paths):
        path = list(path)
        if not path:
            raise ValueError(f"path {p} has no links")
        row = []
        for link in path:
            try:
                i = index.get(link)
            except TypeError:  # unhashable: cannot be a key of capacities
                raise ValueError(f"link {link!r} is not a hashable link id") from None
            if i is None:
                cap = _capacity(capacities, link)
                i = len(links)
                index[link] = i
                links.append(link)
                caps.append(cap)
            row.append(i)
        # A repeated link means the path loops; it would be charged twice on
        # that link, which no real (loop-free) route does.
        if len(set(row)) != len(row):
            dup = next(link for k, link in enumerate(path) if row.index(row[k]) != k)
            raise ValueError(f"path {p} uses link {dup!r} more than once (loop)")
        out.append(np.asarray(row, dtype=np.int64))
    return links, np.asarray(caps, dtype=float), out


def _flatten_flows(flows: Sequence[Flow]) -> tuple[list[Path], np.ndarray]:
    """Flatten connections into (paths, connection index of each path)."""
    paths: list[Path] = []
    owner: list[int] = []
    for i, flow in enumerate(flows):
        flow = list(flow)
        if not flow:
            raise ValueError(f"flow {i} has no paths")
        paths.extend(flow)
        owner.extend([i] * len(flow))
    return paths, np.asarray(owner, dtype=np.int64)


def maxmin_rates(capacities: Capacities, paths: Sequence[Path]) -> np.ndarray:
    """Max-min fair rate of each path, each path treated as an independent flow."""
    # Exact progressive filling, one numpy pass per bottleneck event (not per
    # small increment). ValueError for an empty path, a link missing from
    # capacities, or a link used twice in one path.
    n = len(paths)
    if n == 0:
        return np.zeros(0)
    _, cap, rows = _index_paths(capacities, paths)
    n_links = len(cap)
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=n)
    lidx = np.concatenate(rows)
    pidx = np.repeat(np.arange(n, dtype=np.int64), lengths)

    rates = np.zeros(n)
    active = np.ones(n, dtype=bool)
    # Water-filling keeps every unfrozen path at the same "level"; per link we
    # only need how many unfrozen paths cross it and how much the frozen ones
    # already use, so each event costs O(links + remaining incidences).
    count = np.bincount(lidx, minlength=n_links).astype(float)
    frozen_load = np.zeros(n_links)
    finite = np.isfinite(cap)
    level = 0.0
    n_active = n
    while n_active:
        live = count > 0
        fair = np.full(n_links, np.inf)
        with np.errstate(invalid="ignore"):
            fair[live] = (cap[live] - frozen_load[live]) / count[live]
        nxt = fair.min()
        if not np.isfinite(nxt):
            # Remaining paths cross only infinite-capacity links.
            rates[active] = np.inf
            break
        # Rounding must never lower the level of later events below an
        # earlier one (max-min rates are frozen in non-decreasing order).
        nxt = level = max(float(nxt), level)
        with np.errstate(invalid="ignore"):
            spare = cap - frozen_load - count * nxt
        sat = live & finite & (spare <= _SAT_RTOL * cap)
        sat[int(np.argmin(fair))] = True  # the event link is full by definition
        newly = np.zeros(n, dtype=bool)
        newly[pidx[sat[lidx]]] = True  # lidx/pidx only hold active paths
        rates[newly] = nxt
        active &= ~newly
        n_active -= int(newly.sum())
        ent = newly[pidx]
        delta = np.bincount(lidx[ent], minlength=n_links)
        count -= delta
        frozen_load += delta * nxt
        # Drop incidences of frozen paths so later events get cheaper.
        keep = ~ent
        lidx = lidx[keep]
        pidx = pidx[keep]
    return rates


def _big(*matrices: sp.spmatrix | None) -> bool:
    """Whether an LP with these constraint matrices should go to interior point."""
    return sum(m.nnz for m in matrices if m is not None) >= _IPM_MIN_NNZ


def _solve_lp(
    c: np.ndarray,
    A_ub: sp.spmatrix,
    b_ub: np.ndarray,
    A_eq: sp.spmatrix | None = None,
    b_eq: np.ndarray | None = None,
    ipm: bool = False,
) -> scipy.optimize.OptimizeResult:
    """Run HiGHS (simplex, or interior point without crossover); raise unless optimal/unbounded."""
    if not ipm:
        res = scipy.optimize.linprog(
            c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, method="highs"
        )
    else:
        # Large path/multicommodity LPs are massively degenerate (many equal
        # paths, a single cost coefficient): HiGHS' dual simplex needed 30k
        # iterations and >2 min on a k=16 fat tree with 8 subflows per
        # connection, and 80 s for the k=8 all-paths LP, while its interior
        # point method converges in ~20 iterations. Crossover to a vertex
        # (half of the IPM time) is skipped: callers only need the optimal
        # value (exact to the IPM tolerance, ~1e-9 relative) or duals whose
        # support they verify. scipy passes the unlisted run_crossover
        # option to HiGHS verbatim, with a warning we silence.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.optimize.OptimizeWarning)
            res = scipy.optimize.linprog(
                c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                method="highs-ipm", options={"run_crossover": "off"},
            )
        if res.status not in (0, 3):
            # IPX sometimes stops "imprecise" without crossover (seen on
            # Jellyfish instances); crossover then repairs the answer.
            res = scipy.optimize.linprog(
                c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, method="highs-ipm"
            )
    if res.status == 2:
        raise InfeasibleLP(f"HiGHS failed (status 2): {res.message}")
    if res.status not in (0, 3):
        raise RuntimeError(f"HiGHS failed (status {res.status}): {res.message}")
    return res


def _floored(head: np.ndarray, floor: np.ndarray, slack: float) -> np.ndarray:
    """A right-hand side: ``head``'s rows, then -s_i <= -floor_i * (1 - slack)."""
    return np.concatenate([head, -floor * (1 - slack)])


def _solve_with_slack(c: np.ndarray, A_ub: sp.spmatrix, b_for: Callable[[float], np.ndarray],
                      relax: float, ipm: bool) -> tuple[scipy.optimize.OptimizeResult, float]:
    """_solve_lp with ``b_for(slack)``'s right-hand side, the floors' relative slack grown
    through _RELAX_STEPS times ``relax`` while HiGHS finds them infeasible by a hair; the
    answer and the slack it needed (InfeasibleLP past the last step)."""
    for step in _RELAX_STEPS[:-1]:
        try:
            return _solve_lp(c, A_ub, b_for(relax * step), ipm=ipm), relax * step
        except InfeasibleLP:
            pass
    last = relax * _RELAX_STEPS[-1]
    return _solve_lp(c, A_ub, b_for(last), ipm=ipm), last


class InfeasibleLP(RuntimeError):
    """HiGHS found an LP infeasible (status 2): progressive filling relaxes and retries."""


def _path_variables(
    capacities: Capacities, flows: Sequence[Flow]
) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray, np.ndarray]:
    """(owner per LP variable, finite-link x variable incidence, capacities, unbounded mask)."""
    # One variable per distinct (connection, path); the mask marks connections
    # owning a path made only of infinite-capacity links.
    paths, owner = _flatten_flows(flows)
    _, cap, rows = _index_paths(capacities, paths)
    # In an LP a repeated subflow path adds nothing (the split is free), so
    # keep one variable per distinct path of each connection.
    seen: set[tuple[int, tuple[int, ...]]] = set()
    var_owner: list[int] = []
    var_rows: list[np.ndarray] = []
    for o, r in zip(owner.tolist(), rows):
        key = (o, tuple(sorted(r.tolist())))
        if key in seen:
            continue
        seen.add(key)
        var_owner.append(o)
        var_rows.append(r)
    finite = np.isfinite(cap)
    unbounded = np.zeros(len(flows), dtype=bool)
    for o, r in zip(var_owner, var_rows):
        if not finite[r].any():
            unbounded[o] = True
    # Infinite links impose no constraint, so they get no row.
    link_row = np.full(len(cap), -1, dtype=np.int64)
    link_row[finite] = np.arange(int(finite.sum()))
    cols, rws = [], []
    for j, r in enumerate(var_rows):
        rr = link_row[r]
        rr = rr[rr >= 0]
        rws.append(rr)
        cols.append(np.full(len(rr), j, dtype=np.int64))
    n_vars = len(var_rows)
    n_rows = int(finite.sum())
    rr = np.concatenate(rws) if rws else np.zeros(0, dtype=np.int64)
    cc = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    A_link = sp.csr_matrix((np.ones(len(rr)), (rr, cc)), shape=(n_rows, n_vars))
    return np.asarray(var_owner, dtype=np.int64), A_link, cap[finite], unbounded


def _aggregate_rates(capacities: Capacities, flows: Sequence[Flow]) -> np.ndarray:
    """Max-min fair rates between connections that may split over their paths."""
    n = len(flows)
    var_owner, A_link, b_link, unbounded = _path_variables(capacities, flows)
    rates = np.zeros(n)
    rates[unbounded] = np.inf  # such a connection can take infinity on its free path
    # Variables of unbounded connections are dropped: they need no finite link.
    keep_var = ~unbounded[var_owner]
    var_owner = var_owner[keep_var]
    A_link = sp.csr_matrix(A_link[:, np.flatnonzero(keep_var)])
    n_vars = len(var_owner)
    m = A_link.shape[0]
    # S[i, j] = 1 when variable j belongs to connection i (s_i = sum_p x_ip = S x).
    S = sp.csr_matrix(
        (np.ones(n_vars), (var_owner, np.arange(n_vars))), shape=(n, n_vars)
    )
    link_block = sp.hstack([A_link, sp.csr_matrix((m, 1))])
    ipm = _big(link_block, S)   # decided once: the relaxation below depends on it
    frozen = unbounded.copy()
    while not frozen.all():
        open_ = np.flatnonzero(~frozen)
        done = np.flatnonzero(frozen & ~unbounded)
        # Rows: link capacities; t - s_i <= 0 for open i; -s_i <= -r_i for
        # frozen i (they keep their rate; relaxed by a hair so that rounding
        # in earlier answers can never make this LP infeasible).
        rows = [link_block, sp.hstack([-S[open_], sp.csr_matrix(np.ones((len(open_), 1)))])]
        if len(done):
            rows.append(sp.hstack([-S[done], sp.csr_matrix((len(done), 1))]))
        A = sp.vstack(rows, format="csr")
        c = np.zeros(n_vars + 1)
        c[-1] = -1.0  # maximise the common level t
        res, relax = _solve_with_slack(
            c, A, functools.partial(_floored, np.concatenate([b_link, np.zeros(len(open_))]),
                                    rates[done]), _FREEZE_RELAX[ipm], ipm)
        if res.status == 3:  # cannot happen: every open connection crosses a finite link
            raise RuntimeError("aggregate max-min LP unbounded")
        level = max(float(res.x[-1]), 0.0)
        y = -np.asarray(res.ineqlin.marginals[m : m + len(open_)])
        stuck = _blocked(A_link, S, b_link, rates, open_, done, level, y, ipm, relax)
        rates[open_[stuck]] = level
        frozen[open_[stuck]] = True
    return rates


def _blocked(
    A_link: sp.csr_matrix,
    S: sp.csr_matrix,
    b_link: np.ndarray,
    rates: np.ndarray,
    open_: np.ndarray,
    done: np.ndarray,
    level: float,
    y: np.ndarray,
    ipm: bool,
    relax: float,
) -> np.ndarray:
    """Mask over open_ of the connections that cannot rise above level (at least one);
    ``relax``: the floors' relative slack, the one the level's own LP needed."""
    # Dual y_i of "t <= s_i" (y >= 0, sum y = 1): for any feasible point
    # sum_i y_i s_i <= t* (weak duality), so a connection with y_i > 0 cannot
    # rise above t* while the others keep t*: it is blocked. Conversely every
    # blocked connection has y_i > 0 in some optimal dual (strict
    # complementarity), and an interior-point dual has (nearly) maximal
    # support, so one round usually freezes a whole level; a simplex vertex
    # dual may miss some, which then freeze in a later round at the same level.
    # Solver duals are only accurate to HiGHS' tolerances (a 1e-8 simplex dual
    # once froze a connection that could still grow by 1e-5), so candidates
    # are checked with one LP: maximise the sum of their rates keeping every
    # open connection >= level; a sum of |F| * level proves none can rise.
    # Candidates seen above level are dropped and the check repeated; if none
    # survives, connections are tested one by one in order of decreasing y.
    cand = y > _DUAL_RTOL * max(float(y.max()), 0.0)
    # Rows: links; -s_i <= -level for open i; -s_i <= -r_i for frozen i.
    floor = np.concatenate([np.full(len(open_), level), rates[done]])
    A = sp.vstack([A_link, -S[open_], -S[done]], format="csr")
    S_open = S[open_]
    scale = max(float(b_link.max()) if len(b_link) else 1.0, 1e-300)

    def max_sum(mask: np.ndarray) -> tuple[float, np.ndarray | None]:
        """Optimal sum of the rates of open connections in mask, and each rate.  Floors
        that HiGHS finds infeasible by a hair (the level came from an interior-point
        answer) get the level LP's growing slack: seen on a 20-switch Jellyfish's traced
        subflows, tests/data/aggregate_lp_regression_3.json."""
        c = -np.asarray(S_open[mask].sum(axis=0)).ravel()
        res, _ = _solve_with_slack(c, A, functools.partial(_floored, b_link, floor), relax,
                                   ipm)
        if res.status != 0:
            return math.inf, None
        return -res.fun, np.asarray(S_open @ res.x).ravel()

    while cand.any():
        k = int(cand.sum())
        tol = _VERIFY_RTOL[ipm] * max(k * level, scale)
        total, s = max_sum(cand)
        if total <= k * level + tol:
            return cand
        if s is None:
            break
        # The sum exceeds k * level + tol, so some candidate exceeds its share.
        over = cand & (s > level + tol / k)
        if not over.any():
            break
        cand &= ~over
    # Rare fallback: test one connection at a time, most likely first.
    tol = _VERIFY_RTOL[ipm] * max(level, scale)
    best, best_val = 0, math.inf
    for i in np.argsort(-y, kind="stable"):
        mask = np.zeros(len(open_), dtype=bool)
        mask[i] = True
        total, _ = max_sum(mask)
        if total <= level + tol:
            return mask
        if total < best_val:
            best, best_val = i, total
    # Some connection is blocked at an optimal level; numerically the one
    # that can rise least is it.
    mask = np.zeros(len(open_), dtype=bool)
    mask[best] = True
    return mask


def connection_rates(
    capacities: Capacities, flows: Sequence[Flow], mode: str = "independent"
) -> np.ndarray:
    """Rate of each connection (list of subflow paths) under the chosen fairness model.

    mode="independent": every subflow is an independent flow in the max-min
    allocation and a connection gets the sum of its subflows. This is what
    upstream Linux MPTCP gives: it has no coupled congestion control, so each
    subflow competes like a separate TCP flow (n subflows on one bottleneck get
    n shares).

    mode="aggregate": max-min fairness between *connections*, each connection
    being one per-connection aggregate that may split its rate over its paths
    arbitrarily (the ideal of coupled/resource-pooling congestion control).
    Computed by progressive filling with a sequence of HiGHS LPs.
    """
    if mode == "independent":
        paths, owner = _flatten_flows(flows)
        if not paths:
            return np.zeros(0)
        sub = maxmin_rates(capacities, paths)
        return np.bincount(owner, weights=sub, minlength=len(flows))
    if mode == "aggregate":
        if len(flows) == 0:
            return np.zeros(0)
        return _aggregate_rates(capacities, flows)
    raise ValueError(f"unknown mode {mode!r}; expected 'independent' or 'aggregate'")


#: the TCP-like models by name: alpha of the alpha-fair utility (Mo & Walrand 2000).
#: propfair (alpha = 1): proportional fairness, maximise sum log x (Kelly 1998); mpd (alpha =
#: 2): "minimum potential delay", the allocation TCP Reno's AIMD tends to when every flow
#: sees the same round-trip time (Kelly; Low 2003).  Max-min is the limit alpha -> infinity.
TCP_LIKE = {"propfair": 1.0, "mpd": 2.0}
#: the congestion controls (--cc) that couple an MPTCP connection's subflows, aiming at the
#: resource pooling the coupled TCP-like model gives (emulator/bpf/cc/: RFC 6356's LIA, and
#: BALIA and OLIA); under any other control the subflows share as independent flows
COUPLED_CCS = ("lia", "balia", "olia")
#: weight of the per-subflow log term a coupled program is solved again with when its split
#: is degenerate (moves a connection's total by about this share of a link: negligible)
COUPLED_SPREAD = 1e-6


def alpha_fair_rates(capacities: Capacities, flows: Sequence[Flow], alpha: float = 1.0,
                     coupled: bool = False) -> np.ndarray:
    """Rate of each connection under alpha-fairness, solved as a convex program (cvxpy,
    Clarabel).  Unlike max-min, a flow that crosses more loaded links gets less: the
    allocation TCP's congestion control tends to, where max-min is the wrong yardstick
    for paths of different lengths.

    coupled=False: every subflow is its own flow in the utility (upstream MPTCP's
    uncoupled subflows, like ``connection_rates(mode="independent")``); coupled=True: the
    utility is of each connection's total over its paths (resource pooling: coupled
    congestion control's ideal).  Equal weights (the emulator adds no propagation delay,
    so round-trip times differ only by queueing).  A subflow that crosses only links of
    infinite capacity is unbounded (inf), as in ``maxmin_rates``.
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if len(flows) == 0:
        return np.zeros(0)
    paths, owner = _flatten_flows(flows)
    _, cap, rows = _index_paths(capacities, paths)
    finite = np.isfinite(cap)
    free = np.array([not finite[r].any() for r in rows])
    if coupled and free.any():
        # a connection with one unbounded path is unbounded as a whole
        out = np.zeros(len(flows))
        out[np.unique(owner[free])] = np.inf
        keep = ~np.isin(owner, owner[free])
    else:
        out, keep = None, ~free
    sel = np.flatnonzero(keep)
    rates = np.full(len(paths), np.inf)
    if len(sel):
        rates[sel] = _alpha_fair_solve(cap, [rows[i] for i in sel], owner[sel], alpha,
                                       coupled)
    if coupled:
        totals = np.bincount(owner[keep], weights=rates[keep], minlength=len(flows))
        return np.where(out == np.inf, np.inf, totals) if out is not None else totals
    return np.bincount(owner, weights=rates, minlength=len(flows))


def _incidence(cap: np.ndarray, rows: Sequence[np.ndarray]) -> sp.csr_matrix:
    """Finite links x paths 0/1 matrix (a link in the order of the finite ones in cap)."""
    finite = np.flatnonzero(np.isfinite(cap))
    where = np.full(len(cap), -1, dtype=np.int64)
    where[finite] = np.arange(len(finite))
    cols = np.repeat(np.arange(len(rows)), [len(r) for r in rows])
    links = where[np.concatenate(rows)] if rows else np.zeros(0, dtype=np.int64)
    keep = links >= 0
    return sp.csr_matrix((np.ones(int(keep.sum())), (links[keep], cols[keep])),
                         shape=(len(finite), len(rows)))


def _alpha_fair_solve(cap: np.ndarray, rows: list[np.ndarray], owner: np.ndarray,
                      alpha: float, coupled: bool) -> np.ndarray:
    """The subflow rates of one alpha-fair program (every row crosses a finite link)."""
    import cvxpy as cp  # a second or two to import: only the models that need it pay

    finite = np.flatnonzero(np.isfinite(cap))
    scale = float(cap[finite].max())          # solve in units of the largest link
    a = _incidence(cap, rows)
    x = cp.Variable(len(rows), nonneg=True)
    if coupled:
        groups = np.unique(owner)
        g = sp.csr_matrix((np.ones(len(owner)), (np.searchsorted(groups, owner),
                                                 np.arange(len(owner)))),
                          shape=(len(groups), len(owner)))
        y = g @ x
    else:
        y = x
    if alpha == 1.0:
        utility = cp.sum(cp.log(y))
    elif alpha > 1.0:
        utility = -cp.sum(cp.power(y, 1.0 - alpha)) / (alpha - 1.0)
    else:
        utility = cp.sum(cp.power(y, 1.0 - alpha)) / (1.0 - alpha)
    if coupled:
        # the totals are unique but not their split over a connection's subflows (two
        # subflows on one path can trade any amount), and Clarabel ended 'optimal_inaccurate'
        # on that flat direction (traced k=4 paths, 2026-11-26); a vanishing concave term
        # per subflow makes the split unique
        utility = utility + COUPLED_SPREAD * cp.sum(cp.log(x))
    limits = a @ x <= cap[finite] / scale
    problem = cp.Problem(cp.Maximize(utility), [limits])
    ended = []
    # Clarabel (interior point) first; SCS (first order) when Clarabel fails outright, as
    # it did on a coupled k=10 fat-tree permutation (2,000 subflows); an answer that is not
    # Clarabel's 'optimal' is taken only when its optimality conditions check out
    for solver, opts in ((cp.CLARABEL, {}), (cp.SCS, {"eps": 1e-7, "max_iters": 200_000})):
        try:
            problem.solve(solver=solver, **opts)
        except cp.error.SolverError as exc:
            ended.append(f"{solver}: {str(exc).split('.')[0]}")
            continue
        ended.append(f"{solver}: {problem.status}")
        if x.value is None or limits.dual_value is None:
            continue
        if (solver == cp.CLARABEL and problem.status == cp.OPTIMAL) or (
                problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and _kkt_holds(
                    a, cap[finite] / scale, np.asarray(x.value, dtype=float),
                    np.asarray(limits.dual_value, dtype=float), owner, alpha, coupled)):
            return np.clip(np.asarray(x.value, dtype=float), 0.0, None) * scale
    raise RuntimeError(f"alpha-fair model (alpha={alpha}): {'; '.join(ended)}")


#: how far an 'optimal_inaccurate' alpha-fair answer may miss its optimality conditions
#: (relative) and exceed a link (share of the link) and still be taken
_KKT_RTOL = 1e-3


def _kkt_holds(a: sp.spmatrix, cap: np.ndarray, x: np.ndarray, prices: np.ndarray,
               owner: np.ndarray, alpha: float, coupled: bool) -> bool:
    """True when an alpha-fair answer meets its optimality conditions: no link over its
    capacity, and every subflow that carries traffic has a marginal utility equal to the
    sum of its links' prices (the solver's duals), within _KKT_RTOL.  Clarabel reports
    'optimal_inaccurate' on some large programs (k=10 permutations) whose answer is right
    to these tolerances: checked here rather than trusted."""
    x = np.clip(x, 0.0, None)
    prices = np.clip(prices, 0.0, None)
    if np.any(a @ x > cap * (1 + _KKT_RTOL)):
        return False
    if coupled:
        totals = np.bincount(np.searchsorted(np.unique(owner), owner), weights=x)
        y = totals[np.searchsorted(np.unique(owner), owner)]
        grad = y ** -alpha + COUPLED_SPREAD / np.maximum(x, 1e-300)
    else:
        grad = np.maximum(x, 1e-300) ** -alpha
    price = a.T @ prices
    used = x > _KKT_RTOL * x.max()
    return bool(np.all(np.abs(grad[used] - price[used]) <= _KKT_RTOL * grad[used]))


#: LIA's equilibrium is solved until every link with a loss rate carries its capacity, and
#: no link more, within this share of the capacity
LIA_RTOL = 1e-3
_LIA_MAX_ITER = 100_000
#: steps without the miss halving before the price step is halved
_LIA_PATIENCE = 2_000


def lia_rates(capacities: Capacities, flows: Sequence[Flow], coupled: bool = True,
              rtts: Sequence[float] | None = None) -> np.ndarray:
    """Rate of each connection at the fluid equilibrium of RFC 6356's coupled increase
    (LIA, ``--cc lia``) on the given paths: the allocation LIA itself settles at, where the
    coupled alpha-fair model is the pooled allocation it only moves toward.

    With equal round-trip times (as in alpha_fair_rates), a Reno loss response per subflow
    and the per-ACK increase min(a/w_total, 1/w_r), a = max_r w_r / w_total, a subflow's
    window balances where it is inversely proportional to its path's loss rate q_r, and the
    connection's total is sqrt(2/q_min), a Reno flow's on its least-lossy path:

        x_r = sqrt(2 / q_min) * (1/q_r) / sum_r' (1/q_r')

    A link's loss rate is a price: zero unless the link is full.  coupled=False gives every
    subflow Reno's own rate sqrt(2/q_r), the alpha = 2 model over independent subflows
    (the same allocation as ``alpha_fair_rates(..., alpha=2)`` on single-path flows: a
    check on the solver).  Infinite-capacity links as in alpha_fair_rates.

    ``rtts`` (one per subflow, in the order of the flows' paths, any unit) gives each
    subflow its own round-trip time, with RFC 6356's alpha in full (see _lia_split); only
    their ratios matter.
    """
    return _lia(capacities, flows, coupled, rtts, per_connection=True)


def lia_subflow_rates(capacities: Capacities, flows: Sequence[Flow],
                      coupled: bool = True, rtts: Sequence[float] | None = None
                      ) -> np.ndarray:
    """The subflow rates of lia_rates, in the order of the flows' paths."""
    return _lia(capacities, flows, coupled, rtts, per_connection=False)


def _lia(capacities: Capacities, flows: Sequence[Flow], coupled: bool,
         rtts: Sequence[float] | None, per_connection: bool) -> np.ndarray:
    """lia_rates (per_connection) or lia_subflow_rates."""
    if len(flows) == 0:
        return np.zeros(0)
    paths, owner = _flatten_flows(flows)
    rtt = None
    if rtts is not None:
        rtt = np.asarray(rtts, dtype=float).reshape(-1)
        if len(rtt) != len(paths):
            raise ValueError(f"got {len(rtt)} round-trip times for {len(paths)} subflows")
        if not (np.isfinite(rtt) & (rtt > 0)).all():
            raise ValueError("round-trip times must be finite and > 0")
    _, cap, rows = _index_paths(capacities, paths)
    finite = np.isfinite(cap)
    free = np.array([not finite[r].any() for r in rows])
    # a connection with one unbounded path is unbounded as a whole (it would put its
    # whole window there); under coupled=False only that subflow is
    blocked = np.isin(owner, owner[free]) if coupled else free
    rates = np.full(len(paths), np.inf)
    sel = np.flatnonzero(~blocked)
    if len(sel):
        rates[sel] = _lia_solve(cap, [rows[i] for i in sel], owner[sel], coupled,
                                None if rtt is None else rtt[sel])
    if coupled:
        rates[blocked & ~free] = 0.0   # its traffic is on the unbounded path
    if per_connection:
        return np.bincount(owner, weights=rates, minlength=len(flows))
    return rates


#: bisection steps for a connection's window scale when some subflow is at Reno's cap
_LIA_BISECT = 60


def _lia_split(q: np.ndarray, owner: np.ndarray, coupled: bool,
               rtt: np.ndarray | None = None) -> np.ndarray:
    """Subflow rates (units of sqrt(1/price)) for path loss rates q; owner sorted.

    With round-trip times, RFC 6356's alpha = W max_r(w_r/rtt_r^2) / (sum_r w_r/rtt_r)^2
    (W the connection's total window) and the per-ACK increase min(alpha/W, 1/w_r) balance a
    loss response of w_r/2 where w_r = min(c/q_r, sqrt(2/q_r)), c = 2 alpha / W the same
    for all of a connection's subflows, and x_r = w_r/rtt_r.  c solves
    c (sum w/rtt)^2 = 2 max(w/rtt^2), whose left side over c minus the right side over c
    only grows with c (one root).  While no subflow is at Reno's cap sqrt(2/q_r),
    c = sqrt(2 M) / S with M = max 1/(q rtt^2), S = sum 1/(q rtt); with equal round-trip
    times the cap never binds and this is the closed form of lia_rates."""
    if not coupled:
        x = np.sqrt(2.0 / q)
        return x if rtt is None else x / rtt
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    count = np.diff(np.r_[starts, len(q)])
    if rtt is None:
        qmin = np.minimum.reduceat(q, starts)
        inv = 1.0 / q
        total = np.add.reduceat(inv, starts)
        return np.repeat(np.sqrt(2.0 / qmin) / total, count) * inv
    inv_q, reno = 1.0 / q, np.sqrt(2.0 / q)

    def excess(c: np.ndarray) -> np.ndarray:
        """c (sum w/rtt)^2 - 2 max(w/rtt^2) per connection, for scales c."""
        w = np.minimum(np.repeat(c, count) * inv_q, reno)
        return c * np.add.reduceat(w / rtt, starts) ** 2 \
            - 2.0 * np.maximum.reduceat(w / rtt ** 2, starts)

    c = np.sqrt(2.0 * np.maximum.reduceat(inv_q / rtt ** 2, starts)) \
        / np.add.reduceat(inv_q / rtt, starts)
    capped = np.repeat(c, count) * inv_q > reno * (1 + 1e-12)
    if capped.any():
        # bisect on log c.  lo: below every subflow's cap sqrt(2 q_r) and below the
        # uncapped root, so excess < 0.  hi: every subflow at its cap; if excess is still
        # negative there, every subflow is Reno and c converges to hi, which says so.
        at_cap = reno / inv_q
        hi = np.maximum.reduceat(at_cap, starts)
        lo = np.minimum(c, np.minimum.reduceat(at_cap, starts)) * 1e-6
        for _ in range(_LIA_BISECT):
            mid = np.sqrt(lo * hi)
            low = excess(mid) < 0
            lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
        c = np.sqrt(lo * hi)
    return np.minimum(np.repeat(c, count) * inv_q, reno) / rtt


def _lia_solve(cap: np.ndarray, rows: list[np.ndarray], owner: np.ndarray,
               coupled: bool, rtt: np.ndarray | None) -> np.ndarray:
    """Subflow rates at LIA's equilibrium (every row crosses a finite link).

    Prices (loss rates) move by tatonnement, p_l <- p_l * (load_l / c_l)^g: a full link's
    price rises, an idle one's falls toward zero.  Rates are homogeneous of degree -1/2 in
    the prices, so each step also rescales all prices to put the busiest link exactly at its
    capacity.  Done when no link is over its capacity and every link below it has a price
    too small to matter (under LIA_RTOL of the cheapest path through it) while every other
    link is full, all within LIA_RTOL; g halves when that miss stops shrinking."""
    order = np.argsort(owner, kind="stable")
    own = owner[order]
    rtt_sorted = None if rtt is None else rtt[order]
    finite = np.flatnonzero(np.isfinite(cap))
    a = _incidence(cap, [rows[i] for i in order])
    crossed = np.diff(a.indptr) > 0           # a link no subflow crosses has no price
    a, c = a[np.flatnonzero(crossed)], cap[finite][crossed]
    a.sort_indices()
    at = a.T.tocsr()
    p = np.ones(a.shape[0])
    gain, best, since = 1.0, np.inf, 0
    for _ in range(_LIA_MAX_ITER):
        q = at @ p
        x = _lia_split(q, own, coupled, rtt_sorted)
        load = a @ x / c
        top = float(load.max())
        # x scales as p^-1/2: multiplying p by top^2 puts the busiest link at capacity
        p *= top * top
        q *= top * top
        x /= top
        load /= top
        cheapest = np.minimum.reduceat(q[a.indices], a.indptr[:-1])
        idle = p <= LIA_RTOL * cheapest
        miss = max(float(np.abs(load[~idle] - 1.0).max(initial=0.0)),
                   float(load.max()) - 1.0)
        if miss <= LIA_RTOL:
            out = np.empty(len(order))
            out[order] = x
            return out
        if miss < 0.5 * best:
            best, since = miss, 0
        else:
            since += 1
            if since >= _LIA_PATIENCE:      # not shrinking: oscillating, take smaller steps
                gain, since = gain / 2, 0
        # a link clearly under its capacity keeps the full step toward a zero price: with
        # the halved one, such a link left just under capacity (another on the same
        # connections binds first) decays too slowly to pass as idle
        p = p * np.power(np.maximum(load, 1e-12),
                         np.where(load < 1.0 - LIA_RTOL, 1.0, gain))
    raise RuntimeError(f"LIA equilibrium: no convergence in {_LIA_MAX_ITER} steps "
                       f"(largest miss {best:.2e})")


def _demand_array(demands: Sequence[float] | None, n: int) -> np.ndarray:
    """Validate demands (default 1.0 each) and return them as an array."""
    if demands is None:
        return np.ones(n)
    d = np.asarray(demands, dtype=float).reshape(-1)
    if len(d) != n:
        raise ValueError(f"got {len(d)} demands for {n} connections")
    if np.isnan(d).any() or (d < 0).any() or np.isinf(d).any():
        raise ValueError("demands must be finite and >= 0")
    return d


def max_concurrent_flow(
    capacities: Capacities, flows: Sequence[Flow], demands: Sequence[float] | None = None
) -> float:
    """Largest lambda such that every connection can carry lambda*demand over its own paths."""
    # Returns inf when nothing constrains lambda (all demands zero, or every
    # connection with demand has a path made only of infinite-capacity links).
    n = len(flows)
    d = _demand_array(demands, n)
    if n == 0:
        return math.inf
    var_owner, A_link, b_link, unbounded = _path_variables(capacities, flows)
    n_vars = len(var_owner)
    # Connections with no demand or an unconstrained path never bind lambda.
    binding = np.flatnonzero((d > 0) & ~unbounded)
    if len(binding) == 0:
        return math.inf
    S = sp.csr_matrix(
        (np.ones(n_vars), (var_owner, np.arange(n_vars))), shape=(n, n_vars)
    )
    # Rows: link capacities; sum_p x_ip - lambda*d_i = 0 (carrying more than
    # the demand never helps; the equality form also ran ~1.5x faster in
    # HiGHS' interior point than "lambda*d_i - sum_p x_ip <= 0").
    A_ub = sp.hstack([A_link, sp.csr_matrix((A_link.shape[0], 1))], format="csr")
    A_eq = sp.hstack([S[binding], sp.csr_matrix(-d[binding].reshape(-1, 1))], format="csr")
    c = np.zeros(n_vars + 1)
    c[-1] = -1.0
    res = _solve_lp(c, A_ub, b_link, A_eq=A_eq, b_eq=np.zeros(len(binding)),
                    ipm=_big(A_ub, A_eq))
    if res.status == 3:
        return math.inf
    return max(float(res.x[-1]), 0.0)


def max_concurrent_flow_graph(
    capacities: Capacities,
    pairs: Sequence[tuple[Hashable, Hashable]],
    demands: Sequence[float] | None = None,
) -> float:
    """Largest lambda such that every (src, dst) pair can carry lambda*demand over any paths."""
    # The graph is the directed graph of the capacities' link ids (u, v).
    # Multicommodity-flow LP with per-commodity link flows and conservation.
    # Commodities are grouped by source (one commodity per source, with a
    # demand at each of its destinations): exact for max concurrent flow,
    # since flows of one source can be decomposed into paths to its
    # destinations, and it keeps the LP at #sources x #links variables.
    # Returns inf when nothing constrains lambda.
    n = len(pairs)
    d = _demand_array(demands, n)
    nodes: dict[Hashable, int] = {}
    eu_list: list[int] = []
    ev_list: list[int] = []
    ecap_list: list[float] = []
    for link in capacities:
        if not (isinstance(link, tuple) and len(link) == 2):
            raise ValueError(f"link id {link!r} is not a (u, v) tuple")
        u, v = link
        if u == v:
            raise ValueError(f"link {link!r} is a self-loop")
        cap = _capacity(capacities, link)
        eu_list.append(nodes.setdefault(u, len(nodes)))
        ev_list.append(nodes.setdefault(v, len(nodes)))
        ecap_list.append(cap)
    # Aggregate demands per source -> destination (duplicates add up).
    by_src: dict[int, dict[int, float]] = {}
    for (s, t), dem in zip(pairs, d.tolist()):
        if s not in nodes:
            raise ValueError(f"source node {s!r} is not in the graph")
        if t not in nodes:
            raise ValueError(f"destination node {t!r} is not in the graph")
        if s == t:
            raise ValueError(f"pair ({s!r}, {t!r}) has the same source and destination")
        if dem > 0:
            dst = by_src.setdefault(nodes[s], {})
            dst[nodes[t]] = dst.get(nodes[t], 0.0) + dem
    if not by_src:
        return math.inf
    N = len(nodes)
    eu = np.asarray(eu_list, dtype=np.int64)
    ev = np.asarray(ev_list, dtype=np.int64)
    ecap = np.asarray(ecap_list, dtype=float)
    E = len(eu)

    edge_parts, src_parts = [], []
    for k, s in enumerate(by_src):
        # Flow of commodity s never needs to re-enter s.
        e = np.flatnonzero(ev != s)
        edge_parts.append(e)
        src_parts.append(np.full(len(e), k, dtype=np.int64))
    var_edge = np.concatenate(edge_parts)
    var_src = np.concatenate(src_parts)
    n_vars = len(var_edge)
    srcs = np.fromiter(by_src, dtype=np.int64, count=len(by_src))
    lam = n_vars  # column of lambda

    # Conservation for commodity k at node v != s_k:
    #   inflow - outflow - lambda * d(s_k, v) = 0.
    # Row id k*N + v, then the rows of v == s_k (redundant) are removed.
    n_comm = len(srcs)
    row_map = np.arange(n_comm * N).reshape(n_comm, N)
    drop = row_map[np.arange(n_comm), srcs]
    valid = np.ones(n_comm * N, dtype=bool)
    valid[drop] = False
    new_id = np.cumsum(valid) - 1
    src_of_var = srcs[var_src]
    r_in = var_src * N + ev[var_edge]  # head node gets +1 (never the source)
    tail = eu[var_edge]
    out_ok = tail != src_of_var
    r_out = (var_src * N + tail)[out_ok]
    rows = [new_id[r_in], new_id[r_out]]
    cols = [np.arange(n_vars), np.flatnonzero(out_ok)]
    vals = [np.ones(n_vars), -np.ones(len(r_out))]
    dem_rows, dem_vals = [], []
    for k, dst in enumerate(by_src.values()):
        for t, dem in dst.items():
            dem_rows.append(new_id[k * N + t])
            dem_vals.append(-dem)
    rows.append(np.asarray(dem_rows, dtype=np.int64))
    cols.append(np.full(len(dem_rows), lam, dtype=np.int64))
    vals.append(np.asarray(dem_vals))
    n_eq = int(valid.sum())
    A_eq = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_eq, n_vars + 1),
    )
    # Capacity rows: sum over commodities of the flow on e <= c_e (finite e only).
    fin = np.isfinite(ecap)
    cap_row = np.full(E, -1, dtype=np.int64)
    cap_row[fin] = np.arange(int(fin.sum()))
    vr = cap_row[var_edge]
    ok = vr >= 0
    A_ub = sp.csr_matrix(
        (np.ones(int(ok.sum())), (vr[ok], np.flatnonzero(ok))),
        shape=(int(fin.sum()), n_vars + 1),
    )
    c = np.zeros(n_vars + 1)
    c[lam] = -1.0
    res = _solve_lp(c, A_ub, ecap[fin], A_eq=A_eq, b_eq=np.zeros(n_eq), ipm=_big(A_ub, A_eq))
    if res.status == 3:
        return math.inf
    return max(float(res.x[lam]), 0.0)


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n * sum x^2); NaN when all values are zero."""
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0:
        raise ValueError("jain_index of an empty sequence")
    if np.isnan(x).any() or (x < 0).any():
        raise ValueError("jain_index needs non-negative numbers")
    sq = float(np.dot(x, x))
    if sq == 0.0:
        # 0/0: with nothing allocated, fairness is undefined, not perfect.
        return float("nan")
    return float(x.sum()) ** 2 / (x.size * sq)


def goodput_capacity(
    link_rate_mbps: float,
    mtu: int = 1500,
    mss_overhead: int = 52,
    extra_option_bytes: int = 0,
    wire_overhead: int = 14,
) -> float:
    """TCP payload goodput of a link shaped to link_rate_mbps, for bulk MTU-sized segments."""
    # Payload per segment: MTU minus 20 B IPv4 + 20 B TCP headers + 12 B TCP
    # timestamp option (on by default in Linux) = MSS 1448 for MTU 1500.
    # extra_option_bytes covers e.g. the MPTCP DSS option carried on data.
    # Bytes charged per segment: on Mininet's veth + HTB shaping, HTB charges
    # qdisc_pkt_len = skb->len, which includes the 14 B Ethernet header but no
    # FCS / preamble / inter-frame gap (those exist only on real wires); for
    # GSO skbs the kernel adds the per-segment headers back
    # (qdisc_pkt_len_init), so the 1514 B/segment accounting still holds.
    payload = mtu - mss_overhead - extra_option_bytes
    charged = mtu + wire_overhead
    if link_rate_mbps < 0 or payload <= 0 or charged <= 0:
        raise ValueError("need link_rate_mbps >= 0 and a positive payload per segment")
    return float(link_rate_mbps) * payload / charged
