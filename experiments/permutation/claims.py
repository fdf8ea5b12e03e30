"""The claims of 000_b87022286e416fdf.txt (the Jellyfish/MPTCP fairness write-up) that the
permutation experiment judges: single-path TCP vs MPTCP under ECMP on a k=4 fat tree (its
Fig. 4) and its two measurement tools (its Fig. 5).

Every criterion below, with its reason, was written down before any run was looked at.
Read from flows.csv only; every chosen run's flows are pooled (a sweep over seeds adds
permutations, as the write-up's 8 runs do).
"""
from __future__ import annotations

import statistics
from collections.abc import Callable

from analysis.claims import (
    Cause,
    Claim,
    Missing,
    Outcome,
    Run,
    Samples,
    claim_maker,
    fmt,
    grouped,
    jain_gap,
    mean_jain,
    need_rows,
    per_unit,
    ratio_of_means,
    rows,
    same_view,
)
from analysis.intervals import Band
from store import cell

from .figures import FRAME_OVER_PAYLOAD, TOOLS_TOLERANCE

PAPER = "000_b87022286e416fdf.txt"
#: 000_'s Fig. 4 shape (and htsim's 0.877 / 0.574 = 1.53 at k=4): MPTCP about 1.5x TCP
FIG4_RATIO = 1.5
#: "about": within 10 % of 1.5, i.e. 1.35..1.65 (reason in the claim)
FIG4_TOLERANCE = 0.10
#: htsim's MPTCP-8 / TCP at k=4 (0.877 / 0.574), the number the figure draws beside ours
HTSIM_RATIO = 1.53
#: htsim's published anchor (PLATFORM.md): MPTCP-8 with coupled LIA, k=4 fat tree, ECMP
HTSIM_MEAN, HTSIM_JAIN = 0.877, 0.98
#: issue #25/#28's goal: mean and Jain's index within 5 % of htsim's
HTSIM_TOLERANCE = 0.05
#: the congestion controls the k=4 claims are reported for, one condition each
CONTROLS = ("lia", "cubic")


def _by_rep(runs: list[Run], transport: str, col: str = ""
            ) -> dict[tuple[str, str | None], list[float]]:
    """Per repetition (run folder, run): the transport's flows' normalized throughputs (or
    the column ``col``)."""
    runs = same_view(runs)
    # goodput whatever the view: iperf3's (emulated, what rank.png draws), the simulated
    # receiver's (sim), the model's max-min rate (model)
    metric = col or "norm_goodput"
    groups = grouped(need_rows(runs, "flows.csv"), metric, lambda r: (
        r["_run"], r.get("run")) if r.get("transport") == transport else None)
    if not groups:
        raise Missing(f"no {transport} flows with {metric} (run with --transport tcp,mptcp)")
    return groups


def _per_run(runs: list[Run], transport: str) -> list[list[float]]:
    return list(_by_rep(runs, transport).values())


def rep_ratios(runs: list[Run], _cond: str) -> Samples:
    """Per repetition: its MPTCP flows' mean over its TCP flows' mean (both transports ran
    on the same permutation, one after the other, on the same network)."""
    return Samples(per_unit(_by_rep(runs, "mptcp"), _by_rep(runs, "tcp"), ratio_of_means))


def rep_jain_gaps(runs: list[Run], _cond: str) -> Samples:
    """Per repetition: Jain's index of its MPTCP flows minus that of its TCP flows."""
    return Samples(per_unit(_by_rep(runs, "mptcp"), _by_rep(runs, "tcp"), jain_gap))


#: the regime: MPTCP is multipath; a connection left with one subflow (a lost join, a
#: flushed endpoint) is single-path TCP under another name, and judges nothing of MPTCP
MIN_MPTCP_SUBFLOWS = 2


def multipath(runs: list[Run], _cond: str) -> str:
    """'' when every MPTCP flow of every repetition ran on at least two subflows (the
    emulator's measured count; the model's is the count it was asked for), else why not."""
    runs = same_view(runs)
    counts = [v for g in grouped(rows(runs, "flows.csv"), "subflows", lambda r: 1 if r.get(
        "transport") == "mptcp" else None).values() for v in g]
    few = sum(1 for v in counts if v < MIN_MPTCP_SUBFLOWS)
    return (f"{few} of {len(counts)} MPTCP flows ran on fewer than {MIN_MPTCP_SUBFLOWS} "
            "subflows (not multipath)") if few else ""


def _mean(groups: list[list[float]]) -> float:
    flat = [x for g in groups for x in g]
    return sum(flat) / len(flat)


def _over_tcp(runs: list[Run], holds: Callable[[float], bool]) -> Outcome:
    """MPTCP's mean over TCP's mean, every flow of every repetition, judged by ``holds``."""
    tcp, mptcp = _mean(_per_run(runs, "tcp")), _mean(_per_run(runs, "mptcp"))
    if tcp <= 0:
        raise Missing("TCP's mean throughput is 0")
    ratio = mptcp / tcp
    return Outcome(f"{fmt(ratio)}x", holds(ratio),
                   f"mean normalized throughput MPTCP {fmt(mptcp, 3)}, TCP {fmt(tcp, 3)}")


def mean_over_tcp(runs: list[Run], _cond: str) -> Outcome:
    """MPTCP's mean over TCP's mean, above 1."""
    return _over_tcp(runs, lambda ratio: ratio > 1.0)


def jain_over_tcp(runs: list[Run], _cond: str) -> Outcome:
    tcp, mptcp = mean_jain(_per_run(runs, "tcp")), mean_jain(_per_run(runs, "mptcp"))
    return Outcome(f"Jain MPTCP {fmt(mptcp, 3)} vs TCP {fmt(tcp, 3)}", mptcp > tcp,
                   "mean over repetitions of each one's Jain index")


def tools_agree(runs: list[Run], _cond: str) -> Outcome:
    """Median over MPTCP flows of bwm-ng's over iperf3's rate, against the framing ratio."""
    flows = need_rows(same_view(runs), "flows.csv")
    if not any("bwm_mbps" in r for r in flows):
        raise Missing(f"the {runs[0].backend} view measures no wire rate (bwm-ng): the "
                      "emulator's does")
    ratios = []
    for r in flows:
        ipf, bwm = cell(r.get("goodput_mbps")), cell(r.get("bwm_mbps"))
        if r.get("transport") == "mptcp" and ipf > 0 and bwm == bwm:
            ratios.append(bwm / ipf)
    if not ratios:
        raise Missing("no MPTCP flow with both an iperf3 and a bwm-ng rate")
    med = statistics.median(ratios)
    off = med / FRAME_OVER_PAYLOAD - 1
    return Outcome(f"bwm-ng/iperf3 {fmt(med, 3)} ({off:+.1%} from {fmt(FRAME_OVER_PAYLOAD, 3)})",
                   abs(off) <= TOOLS_TOLERANCE, f"median of {len(ratios)} MPTCP flows")


def fig4_ratio(runs: list[Run], _cond: str) -> Outcome:
    """MPTCP's mean over TCP's, against Fig. 4's about 1.5."""
    return _over_tcp(runs, lambda ratio: abs(ratio / FIG4_RATIO - 1) <= FIG4_TOLERANCE)


def htsim_mean(runs: list[Run], _cond: str) -> Outcome:
    """MPTCP-8's mean normalized goodput against htsim's 0.877."""
    got = _mean(_per_run(runs, "mptcp"))
    off = got / HTSIM_MEAN - 1
    return Outcome(f"{fmt(got, 3)} ({off:+.1%} from {HTSIM_MEAN})",
                   abs(off) <= HTSIM_TOLERANCE, "every MPTCP flow of every repetition")


def htsim_jain(runs: list[Run], _cond: str) -> Outcome:
    """MPTCP-8's Jain index (mean over repetitions) against htsim's 0.98."""
    got = mean_jain(_per_run(runs, "mptcp"))
    off = got / HTSIM_JAIN - 1
    return Outcome(f"{fmt(got, 3)} ({off:+.1%} from {HTSIM_JAIN})",
                   abs(off) <= HTSIM_TOLERANCE, "mean over repetitions of each one's Jain index")


#: why bwm-ng reads more than iperf3 for MPTCP: the pairing ablation (no receiver's port
#: carries a reverse flow's ACKs) tests the ACK part; the DSS option is counted, not ablated
TOOLS_CAUSE = Cause(
    "bwm-ng counts every frame the receiver's switch port carries, the ACKs of the host's "
    "own outgoing flow among them, and MPTCP adds to both: a DSS option in every data "
    "segment and about one ACK, with a data-ACK option, per data segment, where TCP sends "
    "fewer and smaller ones.  With half the hosts only sending and half only receiving "
    "(--pattern pairing) no measured port carries a reverse flow's ACKs, and MPTCP's "
    "bwm-ng / iperf3 falls to within the claim's tolerance of the framing ratio",
    ablation=("permutation-ablation/permutation", "permutation-ablation/pairing"))


#: the claims are the permutation's: a run of the `--pattern pairing` ablation (or one from
#: before the flag, which has no such parameter and was a permutation) judges none of them
_PATTERN = {"pattern": ("permutation", None)}
_claim = claim_maker(PAPER, experiment="permutation", pools=True, select=_PATTERN,
                     figure="rank.png")
#: what the two transports' claims need
_BOTH = "run permutation with --transport tcp,mptcp"


CLAIMS = [
    _claim(key="mptcp-mean", text="MPTCP's mean throughput above single-path TCP's",
           where="Fig. 4 (and the MPTCP paper's Fig. 3 it shows)",
           paper="MPTCP above TCP (no number)",
           quote="we confirmed that MPTCP was indeed working and providing the advertised "
                 "fairness benefits",
           criterion="per repetition MPTCP mean / TCP mean; the 95 % interval of its mean "
                     "above 1",
           reason="The write-up shows MPTCP 'providing the advertised fairness benefits' over "
                  "single-path TCP on a 16-host fat tree with ECMP and gives no number, so the "
                  "criterion is the ordering itself.  Means over every flow of every run (the "
                  "write-up averages its runs); iperf3 goodput for emulated runs, as our "
                  "rank.png draws, the flow model's rates for model runs.",
           measure=mean_over_tcp, needs=_BOTH, headline=True, samples=rep_ratios,
           band=Band(1.0), regime=multipath),
    _claim(key="mptcp-jain", text="MPTCP shares the fabric more fairly than single-path TCP",
           where="Fig. 4",
           paper="MPTCP fairer (no number)",
           quote="MPTCP shows better fairness compared to Single Path TCP",
           criterion="per repetition Jain's index of MPTCP minus TCP's; the 95 % interval "
                     "of its mean above 0",
           reason="Jain's index over the flows' normalized throughputs is the one-number "
                  "form of the fairness the figure shows; it is computed per run (that run's "
                  "flows share the fabric) and averaged over runs; the text gives no value, "
                  "so any increase counts.",
           measure=jain_over_tcp, needs=_BOTH, samples=rep_jain_gaps, band=Band(0.0),
           regime=multipath),
    _claim(key="tools-agree", figure="iperf_vs_bwm.png",
           text="iperf3 and bwm-ng report roughly the same throughput",
           where="Fig. 5 (MPTCP, k=4 fat tree, ECMP)",
           paper="roughly the same",
           quote="both tools provided roughly the same readings",
           criterion=f"median MPTCP flow's bwm-ng / iperf3 within {TOOLS_TOLERANCE:.0%} of "
                     "1514/1448",
           reason="bwm-ng counts Ethernet frames at the receiver's switch port, 1514 B per "
                  "1448 B of payload, so equal readings give a ratio of 1.046, not 1.  "
                  "'Roughly the same' is read as within 5 % of that for the median flow, a "
                  "tolerance about the size of the framing overhead itself.  Emulated runs "
                  "only: the model measures nothing.",
           measure=tools_agree, needs="an emulated run (the model has no measuring tools)",
           causes={"emulated": TOOLS_CAUSE}),
]


#: why MPTCP-8 falls short of the model (and so of 1.5x and of htsim's mean), per control:
#: the wire-bytes ablation (--pattern pairing against the permutation), run once for each;
#: under lia it moved far more than the ACKs' bytes, hence a cause of its own
WIRE_CAUSES = {
    "cubic": Cause(
        "on the run's own traced paths the max-min model gives MPTCP-8 about htsim's mean "
        "and ratio over TCP, but MPTCP-8 falls short of that model while TCP reaches it: "
        "MPTCP puts more bytes on the wire per payload byte, a DSS option in every data "
        "segment and about one ACK per data segment, and in a permutation those ACKs share "
        "each host's access link with the data it sends.  With half the hosts only sending "
        "and half only receiving (--pattern pairing) MPTCP-8 comes closer to its model; the "
        "DSS option and the retransmissions are counted for the rest, not ablated",
        ablation=("permutation-ablation/permutation", "permutation-ablation/pairing")),
    "lia": Cause(
        "on each repetition's traced paths the max-min model puts MPTCP-8 about at htsim's "
        "mean, but the emulated lia falls short of that model while TCP reaches its own: "
        "the reverse flows' ACKs, about one per data segment, share each sender's access "
        "queue with its data.  With half the hosts only sending and half only receiving "
        "(--pattern pairing) lia comes near its model, by far more than the ACKs' bytes "
        "account for, so most of it is read as their wait behind data in the same tail-drop "
        "queue (not separately ablated)",
        # the pair rerun on 2026-12-02 with both arms trusted (the first pair, of
        # 2026-11-27, was flagged for the switch's loss; docs/notebook/2026-12-01-headlines.md
        # run 10)
        ablation=("permutation-ablation-lia-2/permutation",
                  "permutation-ablation-lia-2/pairing")),
}


def _per_cc(cc: str) -> list[Claim]:
    """The k=4 claims of issue #28 for one congestion control: emulated k=4 runs with
    ``--cc cc`` only (a condition per control: the controls run as separate runs)."""
    select = {"cc": (cc,), "topo": ("fattree,k=4",), "backend": ("emulated",), **_PATTERN}
    common = {"select": select, "condition": f"cc={cc}",
              "needs": f"run permutation --cc {cc} (k=4, --transport tcp,mptcp)"}
    htsim = ("htsim (the MPTCP authors' packet-level simulator, PLATFORM.md) gives, for "
             "MPTCP-8 with coupled LIA on the same k=4 fat tree under ECMP, mean 0.877 and "
             "Jain 0.98; issues #25 and #28 ask for both within 5 %.  Reported for lia (the "
             "same transport) and for uncoupled cubic beside it (in htsim LIA and uncoupled "
             "subflows differ by under 1 %, so the anchor applies to both).  iperf3 payload "
             "goodput over the link rate, as the other claims: at most 1448/1514 = 0.957, "
             "so if htsim counts whole packets our value reads up to 4.4 % lower for the "
             "same network.  ")
    wire = {"emulated": WIRE_CAUSES[cc]} if cc in WIRE_CAUSES else {}
    return [
        _claim(key=f"fig4-ratio-{cc}", text="MPTCP's mean throughput is about 1.5x "
                                             "single-path TCP's, against htsim",
               where="Fig. 4, against htsim (k=4 fat tree, ECMP: 0.877 / 0.574); the "
                     "write-up itself gives no number",
               paper="htsim 1.53x (not the write-up's)",
               criterion=f"per repetition MPTCP mean / TCP mean; the 95 % interval of its "
                         f"mean within {FIG4_TOLERANCE:.0%} of {FIG4_RATIO}",
               reason="Fig. 4's MPTCP and TCP curves, and htsim's published values for "
                      "this case (0.877 / 0.574 = 1.53), put MPTCP-8 at about 1.5x TCP on a "
                      "k=4 permutation.  'About' is read as within 10 % (1.35-1.65): TCP's "
                      "mean over 16 hashed flows depends on how many ECMP collisions a "
                      "permutation draws (0.52-0.56 per seed in bench_emulation, 0.57 in "
                      "htsim), so 5 permutations leave a few percent of uncertainty in the "
                      "denominator, and a band much narrower than that would judge the "
                      "draw rather than the network.  iperf3 goodput, every flow of every "
                      "repetition.", measure=fig4_ratio, causes=wire,
               headline=cc == "lia", samples=rep_ratios, paper_value=HTSIM_RATIO,
               band=Band(FIG4_RATIO * (1 - FIG4_TOLERANCE), FIG4_RATIO * (1 + FIG4_TOLERANCE)),
               regime=multipath, **common),
        _claim(key=f"htsim-mean-{cc}", text="MPTCP-8's mean throughput matches htsim's",
               where="Fig. 4, against htsim (k=4, LIA)", paper=f"htsim {HTSIM_MEAN}",
               criterion=f"|mean / {HTSIM_MEAN} - 1| <= {HTSIM_TOLERANCE:g}",
               reason=htsim + "Mean over every MPTCP flow of every repetition.",
               measure=htsim_mean, causes=wire, **common),
        _claim(key=f"htsim-jain-{cc}", text="MPTCP-8's Jain index matches htsim's",
               where="Fig. 4, against htsim (k=4, LIA)", paper=f"htsim {HTSIM_JAIN}",
               criterion=f"|Jain / {HTSIM_JAIN} - 1| <= {HTSIM_TOLERANCE:g}",
               reason=htsim + "Jain's index per repetition (its flows shared the fabric), "
                              "averaged.", measure=htsim_jain, **common),
    ]


CLAIMS += [c for cc in CONTROLS for c in _per_cc(cc)]
