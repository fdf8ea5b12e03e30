"""Figures of the permutation experiment, from its run folder only (flows.csv)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis.claims import Missing, mean_jain
from analysis.figures import (
    PAPER_COLOUR,
    caption,
    fidelity_plot,
    judged,
    note,
    paper_claims,
    paper_line,
    paper_number,
    paper_source,
    per_run,
    rank_plot,
)
from analysis.summaries import goodput_means, with_goodput
from store import cell, read_csv

#: bwm-ng counts Ethernet frames at the receiver's switch port: 1514 B per 1448 B of payload
FRAME_OVER_PAYLOAD = 1514 / 1448
#: "roughly the same": the tools' median ratio within 5 % of the framing ratio (the claim
#: tools-agree judges with it; defined here, where the figure that draws it reads it)
TOOLS_TOLERANCE = 0.05


def mean_jains(rows_by: dict[str, list[dict[str, Any]]], metric: str) -> dict[str, float]:
    """Per transport: analysis.claims.mean_jain of its repetitions' flows (what the Jain
    claims compute); a transport whose flows all moved nothing is left out."""
    out = {}
    for t, rows in rows_by.items():
        try:
            out[t] = mean_jain(per_run(rows, lambda r: cell(r[metric])).values())
        except Missing:
            continue
    return out


def paper_marks(config: dict[str, Any], claims: list[tuple[Any, Any]], tcp: str, mptcp: str,
                jains: dict[str, float] | None = None
                ) -> Callable[[Any, dict[str, tuple[float, str]]], None] | None:
    """What rank.png draws of the paper's numbers, when this run measures the claims that
    hold them (the k=4 claims against htsim): htsim's MPTCP-8 mean (the htsim-mean
    claim's paper text, 'htsim 0.877': figures may not import claims.py) and its MPTCP/TCP
    ratio (the fig4-ratio claim's paper_value) applied to our TCP mean, each a dotted red
    line labelled with where it is from, beside our two means (dashed); htsim's Jain
    index (the htsim-jain claim's), a number no rank curve shows, as a legend entry beside
    ours (``jains``: transport label -> mean Jain, mean_jains); None when no such claim is
    measured."""
    keys = {v.key for _, v in claims}
    found = {c.key.rsplit("-", 1)[0]: c for c in paper_claims(config, "rank.png")
             if c.key in keys}
    ratio, mean = found.get("fig4-ratio"), found.get("htsim-mean")
    jain = found.get("htsim-jain")
    htsim = paper_number(mean) if mean is not None else None
    htsim_jain = paper_number(jain) if jain is not None else None
    if ratio is None and htsim is None and htsim_jain is None:
        return None

    def draw(ax: Any, means: dict[str, tuple[float, str]]) -> None:
        for label in (tcp, mptcp):
            if label in means:
                ax.axhline(means[label][0], color=means[label][1], lw=0.9, ls="--",
                           alpha=0.8, zorder=1)
        if mean is not None and htsim is not None:
            paper_line(ax, htsim, f"htsim MPTCP-8 mean {htsim:g} ({paper_source(mean)})")
        if ratio is not None and ratio.paper_value is not None and tcp in means:
            paper_line(ax, ratio.paper_value * means[tcp][0],
                       f"htsim's {ratio.paper_value:g}x our TCP mean ({paper_source(ratio)})",
                       below=htsim is not None)
        if jain is not None and htsim_jain is not None:
            ours = ", ".join(f"{label.split('-')[0]} {j:.3f}"
                             for label, j in (jains or {}).items())
            ax.plot([], [], ls="none", marker="$J$", color=PAPER_COLOUR,
                    label=f"htsim MPTCP-8 Jain index {htsim_jain:g} ({paper_source(jain)})"
                          + (f"; ours {ours}" if ours else ""))
    return draw


def _framing(ax: Any, means: dict[str, tuple[float, str]]) -> None:
    """iperf_vs_bwm.png: where bwm-ng's mean would be if the tools agreed: iperf3's mean
    times the framing ratio, within the claim's tolerance (the claim itself tests the
    median flow's own ratio; the band shows the same test on the means)."""
    got = next((m for label, (m, _) in means.items() if label.startswith("iperf3")), None)
    if got is None or got != got:
        return
    at = got * FRAME_OVER_PAYLOAD
    ax.axhspan(at * (1 - TOOLS_TOLERANCE), at * (1 + TOOLS_TOLERANCE), color="grey",
               alpha=0.15, lw=0, zorder=0,
               label=f"bwm-ng if the tools agreed: iperf3 mean x 1514/1448 "
                     f"+/- {TOOLS_TOLERANCE:.0%}")


def plot_permutation(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """rank.png (TCP vs MPTCP); emulated runs also iperf_vs_bwm.png and fidelity.png."""
    rows = with_goodput(read_csv(run_dir / "flows.csv"),
                        config["params"].get("backend", "emulated"))
    by_t = {t: [r for r in rows if r["transport"] == t]
            for t in dict.fromkeys(r["transport"] for r in rows)}
    routing = config["params"].get("routing", "")
    metric = "norm_goodput"
    how = goodput_means(config["params"].get("backend", "emulated")) + " over the link rate"
    # the wire rate (bwm-ng) and the comparison with the model on traced paths: the
    # emulator's measurements
    wire = bool(rows) and "norm_bwm" in rows[0]
    claims = judged(run_dir, config, "rank.png")
    jains = {f"{t.upper()}-{routing}": j for t, j in mean_jains(by_t, metric).items()}
    marks = paper_marks(config, claims, f"TCP-{routing}", f"MPTCP-{routing}", jains)
    out = [note(rank_plot(run_dir / "rank.png",
                          [(f"{t.upper()}-{routing}", rs, metric) for t, rs in by_t.items()],
                          caption(config, "throughput by rank of flow (000 Fig. 4)"),
                          claims=claims, decorate=marks),
                f"{how}; flows sorted within each run, mean over runs at each rank, shaded: "
                "the 95 % interval of the mean over runs" +
                ("; dashed: our mean per transport; red dotted: htsim's numbers the write-up's "
                 "Fig. 4 claims are judged against (the claims' values), MPTCP-8's mean and "
                 "its ratio to TCP's applied to our TCP mean; J: htsim's Jain index of "
                 "MPTCP-8 beside ours (mean over runs of each run's index)" if marks
                 else ""))]
    if wire:
        t = "mptcp" if "mptcp" in by_t else next(iter(by_t))
        out.append(note(rank_plot(
            run_dir / "iperf_vs_bwm.png",
            [("iperf3 (receiver payload)", by_t[t], "norm_goodput"),
             ("bwm-ng (receiver port, L2 frames)", by_t[t], "norm_bwm")],
            caption(config, f"iperf3 vs bwm-ng, {t.upper()} (000 Fig. 5)"),
            claims=judged(run_dir, config, "iperf_vs_bwm.png"), decorate=_framing),
            "iperf3: payload goodput at the receiver; bwm-ng: L2 frames at the receiver's "
            "switch port, so a frame carries 1514 B per 1448 B of payload (ratio 1.046); "
            "grey band: the iperf3 mean times that ratio within the claim's 5 % tolerance, "
            "where bwm-ng's mean would be if the tools agreed (the claim tests the median "
            "flow's own ratio)"))
        out.append(note(fidelity_plot(run_dir / "fidelity.png",
                                      [(t.upper(), rs, "norm_goodput")
                                       for t, rs in by_t.items()],
                                      caption(config, "emulated vs flow model, per flow")),
                        "each flow's iperf3 goodput against the max-min rate the flow model "
                        "gives it on the paths its packets took; on the diagonal the "
                        "emulator behaves as a perfect network"))
    return out

