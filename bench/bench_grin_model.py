"""GRIN hop-count study (paper 003, section 5.1) on the pure flow model.

Run: .venv/bin/python bench/bench_grin_model.py [--racks 6 --servers 20 ...]
Prints one row per (degree, pattern, active %): mean total flows over the
seeds (optimum, h1/h2 by LP, h1/h2 by path sampling) and h1/opt, h2/opt as
"mean/worst" over the seeds, then the headline numbers beside the paper's.
Asserts nothing: it is a measurement, not a test.  The same instances (one loop,
model.grin.hop_instances) as a run folder whose claims are judged: `dcrepro run grin-hops`.
"""

import onecore  # noqa: F401 - first: one BLAS thread

# isort: split
import argparse
import time

from model.grin import (
    A2A_CAP,
    GROUP_SIZE,
    N_PATHS,
    PATTERNS,
    HopRow,
    hop_count_table,
    summarize,
)

# Section 5.1, in words (the per-cell values of Fig. 5 are only in the figure).
PAPER = {
    "h1_gap_mean": ("h1 below optimum, mean", "7 %  (\"on average ... just 7%\")"),
    "h1_gap_worst": ("h1 below optimum, worst", "32 % (GRIN6, permutation)"),
    "h2_gap_mean": ("h2 below optimum, mean", "-    (\"seldom more than 1%\")"),
    "h2_gap_worst": ("h2 below optimum, worst", "-"),
    "h2_within": ("rows with h2 within 1 % of optimum", "most (\"seldom more than 1%\")"),
    "sampled_h1_gap_mean": ("sampled h1 below optimum, mean", "-"),
    "sampled_h2_gap_mean": ("sampled h2 below optimum, mean", "-"),
    "sampled_h1_better": ("rows with sampled h1 >= sampled h2", "most (\"only a few instances where h2"
                                                                " is marginally better\")"),
}


def int_list(text: str) -> list[int]:
    """'1-6' or '1,2,5' -> list of ints."""
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", type=int, default=6)
    ap.add_argument("--servers", type=int, default=20, help="servers per rack")
    ap.add_argument("--degrees", type=int_list, default=int_list("1-6"), help="e.g. 1-6 or 1,3")
    ap.add_argument("--patterns", default=",".join(PATTERNS),
                    help=f"comma-separated subset of {','.join(PATTERNS)}")
    ap.add_argument("--active", type=int_list, default=[10, 30, 50, 70], help="active servers, %%")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--placement", choices=("rack", "cross"), default="rack")
    ap.add_argument("--paths", type=int, default=N_PATHS, help="sampled paths per connection")
    ap.add_argument("--group-size", type=int, default=GROUP_SIZE)
    ap.add_argument("--a2a-cap", type=int, default=A2A_CAP)
    ap.add_argument("--formulation", choices=("auto", "path", "compact"), default="auto",
                    help="h1/h2 LP: explicit paths, segment (compact) form, or path unless huge")
    args = ap.parse_args(argv)
    args.patterns = [p for p in args.patterns.split(",") if p]
    bad = [p for p in args.patterns if p not in PATTERNS]
    if bad:
        ap.error(f"unknown pattern(s) {bad}; expected {PATTERNS}")
    return args


HEADER = (f"{'deg':>3} {'pattern':<11} {'act%':>4} {'conns':>6} {'opt':>7} {'h1':>7} {'h2':>7} "
          f"{'smp1':>7} {'smp2':>7} | {'h1/opt':>11} {'h2/opt':>11} {'smp1/opt':>11} "
          f"{'smp2/opt':>11} {'time s':>7}")


def fmt_row(r: HopRow) -> str:
    def pair(mean: float, worst: float) -> str:
        return f"{mean:.3f}/{worst:.3f}"

    return (f"{r.degree:>3} {r.pattern:<11} {r.active_pct:>4g} {r.connections:>6.0f} {r.opt:>7.2f} "
            f"{r.h1:>7.2f} {r.h2:>7.2f} {r.sampled_h1:>7.2f} {r.sampled_h2:>7.2f} | "
            f"{pair(r.h1_ratio, r.h1_ratio_worst):>11} {pair(r.h2_ratio, r.h2_ratio_worst):>11} "
            f"{pair(r.sampled_h1_ratio, r.sampled_h1_ratio_worst):>11} "
            f"{pair(r.sampled_h2_ratio, r.sampled_h2_ratio_worst):>11} {r.seconds:>7.2f}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    t0 = time.perf_counter()
    print(f"# GRIN section 5.1: {args.racks} racks x {args.servers} servers on one non-blocking switch, "
          f"{args.placement} placement, degrees {args.degrees}, active {args.active} %, "
          f"{args.seeds} seed(s), {args.paths} sampled paths/connection, "
          f"group size {args.group_size}, all-to-all cap {args.a2a_cap}, LP {args.formulation}")
    print("# flows: mean total flow over seeds (unit = one server link); ratios: mean/worst over seeds")
    print(HEADER, flush=True)
    rows = hop_count_table(
        args.racks, args.servers, args.degrees, args.patterns, args.active, args.seeds,
        placement=args.placement, n_paths=args.paths, group_size=args.group_size,
        a2a_cap=args.a2a_cap, formulation=args.formulation,
        on_row=lambda r: print(fmt_row(r), flush=True),
    )
    print("# headline numbers          ours      paper")
    for key, value in summarize(rows).items():
        label, paper = PAPER[key]
        shown = f"{100 * value:6.1f} %"
        print(f"#   {label:<38} {shown:>9}   {paper}")
    print(f"# total wall time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
