"""The claims of 001_da816e6d87c9a0a9.txt (Orca end-to-end evaluations: in-network multicast
vs application-layer unicast) that the orca experiment judges, and three preconditions of the
comparison (what multicast and unicast put on the sender's link, and that no round ends with
missing data).

The criteria are the ones this experiment checked before the claims became data (moved here
unchanged from figures.py: same tolerances, same numbers).  Read from summary.csv,
receivers.csv and rounds.csv of the newest chosen run.  For model runs the times are the
model's bounds (said in each verdict's basis); the preconditions need a measurement.
"""
from __future__ import annotations

from functools import partial

from analysis.claims import (
    Cause,
    Claim,
    Measure,
    Missing,
    Outcome,
    Run,
    Samples,
    claim_maker,
    need_rows,
    num,
)
from analysis.intervals import Band

from .figures import sender_cpu

PAPER = "001_da816e6d87c9a0a9.txt"
PAPER_SPEEDUP = 4.16      # Fig. 5: Orca over unicast at the largest workload (1.4 GB)
PAPER_PROCS_GAIN = 0.85   # Fig. 8: "improves the total application running time by 85%"
SPEEDUP_TOLERANCE = 0.15  # the speedup claim holds within 15 % of the paper's
SPEEDUP_BAND = Band(PAPER_SPEEDUP * (1 - SPEEDUP_TOLERANCE),
                    PAPER_SPEEDUP * (1 + SPEEDUP_TOLERANCE))
#: Fig. 8's "by 85 %" is a point value (1.85x): the same 15 % both ways (issue #52: a point
#: value gets a two-sided band; before 2026-12-01 the criterion was ">= 1.85")
PROCS_BAND = Band((1 + PAPER_PROCS_GAIN) * (1 - SPEEDUP_TOLERANCE),
                  (1 + PAPER_PROCS_GAIN) * (1 + SPEEDUP_TOLERANCE))
COPIES_LIMIT = 1.05       # multicast: each file byte at most once on the sender's link
#: a capped sender is CPU-bound (the paper's regime) when one unicast process puts at most
#: this share of the link's rate on it
CPU_BOUND_SHARE = 0.8
#: "unicast time falls as processes are added": N processes take at most this share of one
#: process's time, and no added process makes it slower than this factor (run spread)
FALL_SHARE, STEP_SLACK = 0.8, 1.05


def _all_rows(runs: list[Run]) -> list[dict[str, str]]:
    return need_rows(runs[:1], "summary.csv")


def _summary(runs: list[Run]) -> list[dict[str, str]]:
    """The uncapped transfers (Figs. 5-8 as the experiment always ran them)."""
    rows = [r for r in _all_rows(runs) if not sender_cpu(r)]
    if not rows:
        raise Missing("no uncapped transfers (--sender-cpu 0)")
    return rows


def _measured(runs: list[Run]) -> bool:
    rows = _summary(runs)
    return str(rows[0].get("measured")) == "True"


def _cpuless(runs: list[Run]) -> bool:
    """Whether the runs' view measures transfers with no CPU under them (ns-3's): sending
    processes only share the sender's link, and a CPU cap means nothing."""
    return runs[0].view.measures and not runs[0].view.has_cpu


def _regime(runs: list[Run]) -> str:
    if not _measured(runs):
        return "model bound, not a measurement"
    paced = float(runs[0].params.get("pace", 1) or 0) > 0
    return ("link-bound (paced sender): the copies each mode puts on the sender's link set "
            "the ratio" if paced else "unpaced sender: losses at its own queue and their "
            "repair add to the link's time")


def _unicast(runs: list[Run], single: bool, most: str, lacking: str
             ) -> tuple[dict[str, str], float]:
    """The unicast row with one sending process (``single``) or more, beside multicast, that
    has the largest ``most``, and its speedup of multicast (Missing: ``lacking``)."""
    rows = [r for r in _summary(runs) if r.get("mode") == "unicast"
            and (int(num(r, "procs")) == 1) == single
            and r.get("speedup_of_multicast", "") != ""]
    if not rows:
        raise Missing(lacking)
    row = max(rows, key=lambda r: num(r, most))
    return row, num(row, "speedup_of_multicast")


def speedup(runs: list[Run], _cond: str) -> Outcome:
    top, s = _unicast(runs, True, "workload",
                      "no single-process unicast beside multicast at one workload")
    return Outcome(f"{s:.2f}x ({top['total_mb']} MB)",
                   abs(s - PAPER_SPEEDUP) <= SPEEDUP_TOLERANCE * PAPER_SPEEDUP, _regime(runs))


def procs_gain(runs: list[Run], _cond: str) -> Outcome:
    most, s = _unicast(runs, False, "procs",
                       "no unicast with more than one sending process (--procs 1,2,4)")
    detail = ("more processes cannot beat the link the copies share; the paper's sender was "
              "CPU-bound" if _measured(runs) else "model bound, not a measurement")
    if _cpuless(runs):
        detail += " (ns-3 has no CPU: the processes only share the sender's link)"
    return Outcome(f"unicast time = {s:.2f}x multicast's ({int(num(most, 'procs'))} "
                   "processes)", s >= 1 + PAPER_PROCS_GAIN, detail)


def _need_measured(runs: list[Run]) -> None:
    if not _measured(runs):
        raise Missing("the model backend sends nothing (a precondition of a measurement)")


def multicast_copies(runs: list[Run], _cond: str) -> Outcome:
    _need_measured(runs)
    mc = [r for r in _all_rows(runs) if r.get("mode") == "multicast"]
    if not mc:
        raise Missing("no multicast transfers")
    worst = max(num(r, "copies_max") for r in mc)
    return Outcome(f"max {worst:.3f} copies", worst <= COPIES_LIMIT,
                   "copies = link bytes / bytes of one copy of every file with headers")


def unicast_copies(runs: list[Run], _cond: str) -> Outcome:
    _need_measured(runs)
    un = [r for r in _all_rows(runs) if r.get("mode") == "unicast"]
    n = len({r["receiver"] for r in runs[0].table("receivers.csv")})
    if not un or not n:
        raise Missing("no unicast transfers or no receivers")
    lo = min(num(r, "copies") for r in un)
    return Outcome(f"min {lo:.3f} copies for {n} receivers", lo >= n - 0.01)


def rounds_complete(runs: list[Run], _cond: str) -> Outcome:
    _need_measured(runs)
    receivers = need_rows(runs[:1], "receivers.csv")
    key = ("run", "workload", "mode", "procs", "round")

    def at(r: dict[str, str]) -> tuple[str | float, ...]:
        return (*(r[k] for k in key), sender_cpu(r))
    sizes = {at(r): r["size_bytes"] for r in runs[0].table("rounds.csv")}
    bad = [r for r in receivers if r["complete"] != "True"
           or sizes.get(at(r)) != r["bytes_received"]]
    lost = sum(int(r["lost_before_repair"]) for r in receivers)
    rep = sum(int(r["repaired"]) for r in receivers)
    return Outcome(f"{len(receivers) - len(bad)}/{len(receivers)} receiver-rounds complete "
                   "with every byte", not bad,
                   f"datagrams lost before repair {lost}, repaired {rep}")


# -- the CPU-bound sender (--sender-cpu): Fig. 8 in the paper's regime -----------------------

def capped(runs: list[Run]) -> list[str]:
    """One condition per sender cap in the run (cores per sending process), smallest first."""
    caps = sorted({sender_cpu(r) for r in runs[0].table("summary.csv")} - {0.0})
    return [f"sender_cpu={c:g}" for c in caps]


def _cap_of(cond: str) -> float:
    """The cores per process of a 'sender_cpu=C' condition; 0 (uncapped) for ''."""
    return float(cond.split("=", 1)[1]) if cond else 0.0


def rep_ratios(runs: list[Run], cond: str, many: bool) -> Samples:
    """Per repetition (run folder, run), at the largest workload under the condition's cap:
    unicast's total time over multicast's, unicast with one process or (``many``) with the
    most processes the run has.  From transfers.csv: each transfer of each repetition."""
    cap = _cap_of(cond)
    rows = [r for r in need_rows(runs, "transfers.csv") if sender_cpu(r) == cap]
    # a measured transfer's time, or the model's bound where nothing was sent
    col = "total_s" if any(r.get("total_s", "") != "" for r in rows) else "bound_s"
    rows = [r for r in rows if r.get(col, "") != ""]
    if not rows:
        raise Missing(f"no transfers under {cond or 'no cap'}")
    top = max(int(num(r, "workload")) for r in rows)
    rows = [r for r in rows if int(num(r, "workload")) == top]
    procs = max(int(num(r, "procs")) for r in rows if r["mode"] == "unicast") if many else 1
    times: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        if r["mode"] == "multicast" or int(num(r, "procs")) == procs:
            times.setdefault((r["_run"], r["run"]), {})[r["mode"]] = num(r, col)
    return Samples(tuple(t["unicast"] / t["multicast"] for t in times.values()
                         if t.get("multicast", 0) > 0 and "unicast" in t))


def cpu_bound(runs: list[Run], cond: str) -> str:
    """The paper's regime for Figs. 5 and 8: '' when one sending process cannot fill the
    link (one unicast process puts at most CPU_BOUND_SHARE of its rate on it), else why
    not.  The paper's 4.16x with four receivers exceeds the 4x that copies on a link alone
    give, and its Fig. 8 gains from more cores: its sender was CPU-bound.  A link-bound
    sender gives the number of receivers by construction, and more processes change
    nothing."""
    if runs and not runs[0].view.has_cpu:
        return (f"the {runs[0].backend} view has no CPU: its sender is link-bound, so the "
                "ratio is the number of receivers by construction")
    rows = [r for r in _all_rows(runs) if sender_cpu(r) == _cap_of(cond)
            and r.get("mode") == "unicast" and int(num(r, "procs")) == 1]
    bw = float(runs[0].params.get("bw") or 0)
    if not rows or not bw:
        return "no single-process unicast to tell the sender's regime by"
    share = num(rows[0], "mbps_per_process") / bw
    if share <= CPU_BOUND_SHARE:
        return ""
    return (f"link-bound: one unicast process puts {share:.2f} of the link's rate on it "
            f"(> {CPU_BOUND_SHARE}), so unicast/multicast is the number of copies by "
            "construction; the paper's sender was CPU-bound (run with --sender-cpu)")


def _capped_rows(runs: list[Run], cond: str, regime_required: bool = True
                 ) -> tuple[list[dict[str, str]], str]:
    """The largest workload's rows under the condition's cap, and the regime in words.
    Missing when the cap did not make one unicast process CPU-bound (not the paper's
    regime, so the claim cannot be judged there), unless not ``regime_required`` (a claim
    whose ``regime`` says so itself)."""
    if runs and _cpuless(runs):
        raise Missing("not simulated: a CPU-bound sender is a real process under a CPU cap, "
                      "and ns-3 has no CPU (an imposed per-process rate would only restate "
                      "the prediction)")
    if not cond:
        raise Missing("no capped transfers (run with --sender-cpu)")
    mine = [r for r in _all_rows(runs) if sender_cpu(r) == _cap_of(cond)]
    if not mine:
        raise Missing(f"no transfers under {cond}")
    top = max(int(num(r, "workload")) for r in mine)
    mine = [r for r in mine if int(num(r, "workload")) == top]
    one = [r for r in mine if r.get("mode") == "unicast" and int(num(r, "procs")) == 1]
    if not one:
        raise Missing(f"no single-process unicast under {cond}")
    bw = float(runs[0].params.get("bw") or 0)
    share = num(one[0], "mbps_per_process") / bw if bw else float("nan")
    net = runs[0].params.get("sender_net", "same")
    regime = (f"one unicast process {num(one[0], 'mbps_per_process'):.1f} Mb/s = "
              f"{share:.2f} of the link, sender cores "
              f"{one[0].get('sender_cores', '?')}, network work {net} from the sender")
    if not share <= CPU_BOUND_SHARE and regime_required:
        raise Missing(f"not CPU-bound under {cond}: {regime} (> {CPU_BOUND_SHARE} of the "
                      "link: not the paper's regime)")
    return mine, f"CPU-bound, the paper's regime: {regime}"


def procs_fall(runs: list[Run], cond: str) -> Outcome:
    mine, regime = _capped_rows(runs, cond)
    uni = sorted((r for r in mine if r.get("mode") == "unicast"),
                 key=lambda r: num(r, "procs"))
    if len(uni) < 2:
        raise Missing(f"unicast with one process only under {cond} (--procs 1,2,4)")
    times = [num(r, "time_s") for r in uni]
    steps_ok = all(b <= STEP_SLACK * a for a, b in zip(times, times[1:]))
    text = " -> ".join(f"{int(num(r, 'procs'))}: {t:.2f} s" for r, t in zip(uni, times))
    return Outcome(f"unicast {text} ({times[-1] / times[0]:.2f} of one process's)",
                   times[-1] <= FALL_SHARE * times[0] and steps_ok, regime)


def speedup_capped(runs: list[Run], cond: str) -> Outcome:
    """Fig. 5's ratio (single-process unicast over multicast, largest workload) under the
    condition's cap, from summary.csv (the mean over repetitions)."""
    mine, regime = _capped_rows(runs, cond, regime_required=False)
    one = [r for r in mine if r.get("mode") == "unicast" and int(num(r, "procs")) == 1
           and r.get("speedup_of_multicast", "") != ""]
    if not one:
        raise Missing(f"no single-process unicast beside multicast under {cond}")
    s = num(one[0], "speedup_of_multicast")
    return Outcome(f"{s:.2f}x", abs(s - PAPER_SPEEDUP) <= SPEEDUP_TOLERANCE * PAPER_SPEEDUP,
                   regime)


def procs_gain_cpu(runs: list[Run], cond: str) -> Outcome:
    mine, regime = _capped_rows(runs, cond, regime_required=False)
    uni = [r for r in mine if r.get("mode") == "unicast"
           and r.get("speedup_of_multicast", "") != ""]
    mc = [r for r in mine if r.get("mode") == "multicast"]
    if not uni or not mc:
        raise Missing(f"no multicast beside unicast under {cond}")
    most = max(uni, key=lambda r: num(r, "procs"))
    s = num(most, "speedup_of_multicast")
    n = int(num(most, "procs"))
    # the prediction written with the criterion: unicast with n processes is limited by
    # min(n r_u, link), multicast by its one process r_m; so the ratio is about
    # n r_m / min(n r_u, link)
    bw = float(runs[0].params.get("bw") or 0)
    r_m, r_u1 = num(mc[0], "mbps_per_process"), num(
        next(r for r in mine if r.get("mode") == "unicast" and int(num(r, "procs")) == 1),
        "mbps_per_process")
    link = bw * float(runs[0].params.get("pace") or 1)
    pred = n * r_m / min(n * r_u1, link) if link else float("nan")
    return Outcome(f"unicast time = {s:.2f}x multicast's ({n} processes)",
                   s >= 1 + PAPER_PROCS_GAIN,
                   f"{regime}; multicast's process {r_m:.1f} Mb/s; predicted "
                   f"{n} r_m / min({n} r_u, paced link) = {pred:.2f}x")


# A run with --sender-net same is the ablation that charges the emulated network's work to
# the capped sender (docs/notebook/001-orca.md): no claim is judged on it.  Folders from
# before the flag have no sender_net (None) and are judged as before.
_claim = claim_maker(PAPER, experiment="orca", select={"sender_net": ("away", None)},
                     needs="runs with --sender-net same are an ablation, judged by no claim",
                     figure="exec_time.png")


def _precondition(key: str, text: str, where: str, criterion: str, reason: str,
                  measure: Measure) -> Claim:
    """A premise of the comparison, not a claim of the paper: it states no value, and only a
    measured run can judge it."""
    return _claim(key=key, text=f"Precondition: {text}", where=where, paper="-",
                  criterion=criterion, reason=f"{reason}  Measured runs only.",
                  measure=measure)


#: the paper's words of Fig. 5 and Fig. 8, shared by the uncapped and the capped claims
_FIG5 = {"paper": f"{PAPER_SPEEDUP}x (1.4 GB)",
         "quote": "for the largest workload (1.4GB total file size) Orca achieves 4.16x "
                  "improvement"}
_FIG8 = {"paper": f"{PAPER_PROCS_GAIN:.0%} better", "paper_value": 1 + PAPER_PROCS_GAIN,
         "quote": "Even in the case that application uses one core for each multicast "
                  "destination, Orca improves the total application running time by 85%"}
#: how both Fig. 5 claims are judged: per repetition, against the band, in the regime
_FIG5_JUDGED = {"headline": True, "samples": partial(rep_ratios, many=False),
                "paper_value": PAPER_SPEEDUP,
                "band": SPEEDUP_BAND, "regime": cpu_bound}


CLAIMS = [
    _claim(key="speedup", text="Multicast's speedup over single-process unicast at the "
                               "largest workload",
           where="Fig. 5 (section V.B)",
           **_FIG5,
           criterion=f"per repetition unicast time / multicast time; the 95 % interval of "
                     f"its mean within {SPEEDUP_TOLERANCE:.0%} of {PAPER_SPEEDUP}x; judged only "
                     "where the sender is CPU-bound (the paper's regime)",
           reason="A measured factor with run-to-run spread: within 15 % of the paper's counts "
                  "as reproduced.  Unicast's total time over multicast's, mean over runs, at "
                  "the largest workload the run has (the paper's is 1.4 GB; ours is scaled "
                  "to the link rate).",
           measure=speedup, **_FIG5_JUDGED),
    _claim(key="speedup-cpu", text="With a CPU-bound sender, multicast's speedup over "
                                   "single-process unicast at the largest workload",
           where="Fig. 5 (section V.B), in the paper's regime", conditions=capped,
           **_FIG5,
           criterion=f"per repetition unicast time / multicast time; the 95 % interval of "
                     f"its mean within {SPEEDUP_TOLERANCE:.0%} of {PAPER_SPEEDUP}x, judged "
                     f"only where one capped unicast process puts <= {CPU_BOUND_SHARE:.0%} "
                     "of the link's rate on it",
           reason="The speedup claim in the regime the paper's numbers imply (4.16x exceeds "
                  "the 4x that four copies on a link give, so its unicast was slowed by its "
                  "sender, not its link): the same band, on the capped runs (issue #52, "
                  "written 2026-12-01 before the runs that judge it).",
           measure=speedup_capped, **_FIG5_JUDGED),
    _claim(key="procs", figure="procs.png",
           text="Multicast beats unicast even with one sending process per "
                "receiver",
           where="Fig. 8 (section V.E)",
           **_FIG8,
           criterion=f"unicast/multicast >= {1 + PAPER_PROCS_GAIN:.2f} with the most processes",
           reason="'Improves by 85%' is read as unicast taking 1.85 times multicast's time; "
                  "at least that counts.",
           measure=procs_gain, regime=cpu_bound),
    _claim(key="procs-cpu-falls", figure="procs.png",
           text="With a CPU-bound sender, unicast gets faster as "
                "sending processes are added",
           where="Fig. 8 (section V.E)", conditions=capped,
           paper="unicast time falls with cores per destination",
           quote="the server can send each file to all of the receiver hosts concurrently "
                 "using different processes on multiple available cores",
           criterion=f"time with the most processes <= {FALL_SHARE} x one process's, and no "
                     f"added process slower by more than {STEP_SLACK - 1:.0%}; judged only "
                     f"where one capped unicast process puts <= {CPU_BOUND_SHARE:.0%} of "
                     "the link's rate on it (CPU-bound: the paper's regime)",
           reason="Fig. 8's premise: the paper's Python sender was CPU-bound at 10 Gb/s, so "
                  "processes on more cores sped unicast up.  The uncapped sender here is "
                  "link-bound, where this cannot happen; --sender-cpu caps every sending "
                  "process (cgroup CFS bandwidth) to put the CPU back in the way.  20 % "
                  "leaves room for run spread; 5 % per step for two process counts that "
                  "both fill the link.",
           measure=procs_fall),
    _claim(key="procs-cpu", figure="procs.png",
           text="With a CPU-bound sender, multicast beats unicast even "
                "with one sending process per receiver",
           where="Fig. 8 (section V.E)", conditions=capped,
           **_FIG8,
           causes={"emulated": Cause(
               "with one process per receiver unicast fills the sender's link while "
               "multicast's one capped process does not, so the ratio is set by the cap "
               "(about four times multicast's rate over the link's, predicted beside each "
               "verdict); the caps of the judged run are the ablation",
               ablation="orca/20261127T033146Z-b06002")},
           criterion=f"per repetition unicast time (most processes) / multicast time; the "
                     f"95 % interval of its mean within {SPEEDUP_TOLERANCE:.0%} of "
                     f"{1 + PAPER_PROCS_GAIN:.2f}, judged only where one capped unicast "
                     f"process puts <= {CPU_BOUND_SHARE:.0%} of the link's rate on it (the "
                     "paper's regime)",
           reason="As the uncapped claim, in the paper's regime.  Predicted before the data "
                  "(and reported beside each verdict): with N processes each capped at the "
                  "same cores, unicast is limited by min(N r_u, link) and multicast by its "
                  "one process r_m, so the ratio is about N r_m / min(N r_u, link): it holds "
                  "only where N processes overrun the link and one process reaches at least "
                  "1.85/N of it (0.46 of the link for 4 receivers); where N processes do not "
                  "fill the link it is about r_m / r_u, near 1.  The paper does not give its "
                  "per-process rate against its NIC; its own numbers (4.16x with one "
                  "process, 1.85x with four) mean four processes sped unicast up 2.25x, not "
                  "4x.",
           measure=procs_gain_cpu, headline=True, samples=partial(rep_ratios, many=True),
           band=PROCS_BAND, regime=cpu_bound),
    _precondition("multicast-once", "multicast carries each file byte at most once on the "
                  "sender's link (plus repairs)", "Figs. 1-2 (the switches replicate)",
                  f"max copies <= {COPIES_LIMIT}",
                  "In-network multicast is the comparison's premise; 5 % allows headers' "
                  "rounding and repairs.", multicast_copies),
    _precondition("unicast-n", "unicast carries each byte once per receiver behind the "
                  "sender's link", "section V (application-layer unicast)",
                  ">= number of receivers",
                  "Application-layer unicast sends one copy per receiver; fewer copies would "
                  "mean a receiver was not served.", unicast_copies),
    _precondition("complete", "no round completes with missing data",
                  "section V.C (a round ends when every receiver has the file)",
                  "all receiver-rounds complete with every byte",
                  "A time is only comparable if every receiver got every byte.",
                  rounds_complete),
]
