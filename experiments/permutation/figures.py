"""Figures of the permutation experiment, from its run folder only (flows.csv)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.figures import caption, fidelity_plot, note, rank_plot
from analysis.summaries import goodput_means, with_goodput
from store import read_csv


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
    out = [note(rank_plot(run_dir / "rank.png",
                          [(f"{t.upper()}-{routing}", rs, metric) for t, rs in by_t.items()],
                          caption(config, "throughput by rank of flow (000 Fig. 4)")),
                f"{how}; flows sorted within each run, mean over runs at each rank, shaded: "
                "the 95 % interval of the mean over runs")]
    if wire:
        t = "mptcp" if "mptcp" in by_t else next(iter(by_t))
        out.append(note(rank_plot(
            run_dir / "iperf_vs_bwm.png",
            [("iperf3 (receiver payload)", by_t[t], "norm_goodput"),
             ("bwm-ng (receiver port, L2 frames)", by_t[t], "norm_bwm")],
            caption(config, f"iperf3 vs bwm-ng, {t.upper()} (000 Fig. 5)")),
            "iperf3: payload goodput at the receiver; bwm-ng: L2 frames at the receiver's "
            "switch port, so a frame carries 1514 B per 1448 B of payload (ratio 1.046)"))
        out.append(note(fidelity_plot(run_dir / "fidelity.png",
                                      [(t.upper(), rs, "norm_goodput")
                                       for t, rs in by_t.items()],
                                      caption(config, "emulated vs flow model, per flow")),
                        "each flow's iperf3 goodput against the max-min rate the flow model "
                        "gives it on the paths its packets took; on the diagonal the "
                        "emulator behaves as a perfect network"))
    return out

