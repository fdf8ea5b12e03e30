"""Figures of the permutation experiment, from its run folder only (flows.csv)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.figures import caption, fidelity_plot, rank_plot, suspect_note
from store import read_csv


def plot_permutation(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """rank.png (TCP vs MPTCP); emulated runs also iperf_vs_bwm.png and fidelity.png."""
    rows = read_csv(run_dir / "flows.csv")
    by_t = {t: [r for r in rows if r["transport"] == t]
            for t in dict.fromkeys(r["transport"] for r in rows)}
    routing = config["params"].get("routing", "")
    emulated = config["params"].get("backend", "emulated") == "emulated"
    metric = "norm_iperf" if emulated else "norm_model"
    note = suspect_note(run_dir)
    out = [rank_plot(run_dir / "rank.png",
                     [(f"{t.upper()}-{routing}", rs, metric) for t, rs in by_t.items()],
                     caption(config, "\nshaded: min-max over runs" + note))]
    if emulated:
        t = "mptcp" if "mptcp" in by_t else next(iter(by_t))
        out.append(rank_plot(
            run_dir / "iperf_vs_bwm.png",
            [("iperf3 (receiver payload)", by_t[t], "norm_iperf"),
             ("bwm-ng (receiver port, L2 frames)", by_t[t], "norm_bwm")],
            caption(config, f"\n{t.upper()}; a frame carries 1514 B per 1448 B of payload")))
        out.append(fidelity_plot(run_dir / "fidelity.png",
                                 [(t.upper(), rs, "norm_iperf") for t, rs in by_t.items()],
                                 caption(config, note)))
    return out

