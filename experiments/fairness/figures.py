"""Summaries and figures of the ``fairness`` experiment (Jellyfish + ksp vs fat tree + ECMP).

Reads and writes run folders only: flows.csv (one row per connection), links.csv (per
directed link utilisation), path_lengths.csv (per run and topology), fidelity.csv.  The
Reno-based models solved again from a run's stored paths are analysis.remodel's.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from analysis.figures import (
    caption,
    interval_bars,
    judged,
    note,
    optional_table,
    panel_row,
    rank_curves,
    rank_line,
    rank_plot,
    run_means,
    save,
    table,
)
from analysis.intervals import Interval, mean_interval
from analysis.summaries import group_rows, group_stats, runs_and_all, with_goodput
from store import cell, read_csv, write_csv

#: max-min, coupled max-min (aggregate), the TCP-like alpha-fair model (--tcp-model)
MODEL_METRICS = ("norm_model", "norm_model_aggregate", "norm_model_tcp",
                 "norm_model_tcp_coupled")


def _groups(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The rows by topology."""
    return group_rows(rows, lambda r: str(r["topology"]))


def write_model_summary(run_dir: Path, rows: list[dict[str, Any]]) -> None:
    """flows.csv and summary.csv (per topology, per run and over all runs) of model rates."""
    write_csv(run_dir / "flows.csv", rows)
    out = []
    for topo, mine in _groups(rows).items():
        for run, sel in runs_and_all(mine):
            for metric in MODEL_METRICS:
                stats = group_stats(cell(r.get(metric)) for r in sel)
                if stats["n"]:
                    out.append({"topology": topo, "run": run, "measure": metric, **stats})
    write_csv(run_dir / "summary.csv", out)


def fidelity_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per topology over all runs: the headline numbers and how far the measurement tools and
    the flow-level model agree with each other (the tools: where the rows have wire rates)."""
    out = []
    emulated = bool(rows) and "norm_bwm" in rows[0]
    groups = _groups(rows)
    main = "norm_bwm" if emulated else "norm_model"
    ref = group_stats(cell(r.get(main)) for r in groups.get("fattree", []))
    for topo, sel in groups.items():
        row: dict[str, Any] = {"topology": topo, "servers": sel[0].get("servers", ""),
                               "runs": len({str(r["run"]) for r in sel})}
        metrics = ("norm_bwm", "norm_goodput", *MODEL_METRICS) if emulated else MODEL_METRICS
        for metric in metrics:
            st = group_stats(cell(r.get(metric)) for r in sel)
            for k in ("mean", "jain", "p10"):
                if st.get("n"):
                    row[f"{k}_{metric[5:]}"] = st[k]
        st = group_stats(cell(r.get(main)) for r in sel)
        if st.get("n") and ref.get("n") and ref["mean"]:
            row["mean_vs_fattree"] = round(st["mean"] / ref["mean"], 4)
        if emulated:
            bwm = np.array([cell(r["norm_bwm"]) for r in sel])
            ipf = np.array([cell(r["norm_goodput"]) for r in sel])
            ok = (ipf > 0) & np.isfinite(bwm)
            if ok.any():
                ratio = bwm[ok] / ipf[ok]
                # bwm-ng counts 1514-B frames per 1448 B of payload: expect ~1.046
                row["bwm_over_iperf_median"] = round(float(np.median(ratio)), 4)
                row["bwm_over_iperf_p90_dev"] = round(float(np.percentile(
                    np.abs(ratio - np.median(ratio)), 90)), 4)
            # the models' capacities are payload goodput (1448 B per 1514 B frame), so they
            # are compared with iperf3's payload; bwm-ng's frames also carry MPTCP's options
            # and retransmissions (bwm_over_iperf_median: 1.11-1.17 for MPTCP-8, not 1.046)
            for suffix, metric in (("model", "norm_model"), ("model_tcp", "norm_model_tcp")):
                mdl = np.array([cell(r.get(metric)) for r in sel])
                okm = (mdl > 0) & np.isfinite(ipf)
                if okm.any():
                    row[f"emulated_over_{suffix}_mean"] = round(float(ipf[okm].mean() /
                                                                      mdl[okm].mean()), 4)
                    row[f"flow_corr_emulated_{suffix}"] = round(float(np.corrcoef(
                        ipf[okm], mdl[okm])[0, 1]), 3) \
                        if okm.sum() > 2 and mdl[okm].std() > 0 else ""
            cpu = [cell(r.get("cpu_mean")) for r in sel]
            sat = [cell(r.get("cpu_saturated_share")) for r in sel]
            row["cpu_mean"] = round(float(np.nanmean(cpu)), 1) if cpu else ""
            row["cpu_saturated_share"] = round(float(np.nanmean(sat)), 3) if sat else ""
            row["subflows_min"] = min(int(cell(r.get("subflows"))) for r in sel)
        out.append(row)
    return out


def write_fidelity(run_dir: Path, rows: list[dict[str, Any]], timing: dict[str, Any]) -> None:
    """fidelity.csv: one row per topology plus one row with the run's timing."""
    out = fidelity_rows(rows)
    out.append({"topology": "timing", **timing})
    write_csv(run_dir / "fidelity.csv", out)


# -- figures --------------------------------------------------------------------------------

def _label(_topo: str, rows: list[dict[str, str]]) -> str:
    spec = rows[0].get("spec", "")
    routing = rows[0].get("routing", "")
    servers = rows[0].get("servers", "")
    if spec.startswith("fattree"):
        name = "fat tree " + spec.split(",", 1)[1]
    else:
        keep = [p for p in spec.split(",")[1:] if not p.startswith(("seed=", "hosts="))
                and p != "grow=0"]
        name = "Jellyfish " + ",".join(keep)
    return f"{name} + {routing} ({servers} servers)"


def _extra(config: dict[str, Any]) -> str:
    """The networks compared, for the figures' notes."""
    p = config["params"]
    parts = [f"fattree={p.get('fattree')}", f"jellyfish={p.get('jellyfish')} (seed per run)",
             f"ksp k={p.get('k')}", f"transport={p.get('transport')}"]
    if p.get("extra_servers"):
        parts.append(f"extra_servers={p['extra_servers']}")
    if p.get("grow") is not None:
        parts.append(f"grow={p['grow']}")
    return ", ".join(parts)


def plot_rank(run_dir: Path, config: dict[str, Any], rows: list[dict[str, str]]) -> list[Path]:
    """rank.png (+ model/aggregate variants) from flows.csv rows."""
    emulated = "norm_bwm" in rows[0]         # wire rates: a measured view
    groups = _groups(rows)
    nets = _extra(config)
    main = "norm_bwm" if emulated else "norm_model"
    out = [note(rank_plot(
        run_dir / "rank.png", [(_label(t, rs), rs, main) for t, rs in groups.items()],
        caption(config, "Jellyfish vs fat tree: throughput by rank of flow (000 Fig. 6)"),
        claims=judged(run_dir, config, "rank.png")),
        nets, "throughput: bwm-ng at each receiver's switch port (L2 frames), as the "
        "paper; flows sorted within each run, mean over runs at each rank, shaded: its "
        "95 % interval" if emulated else
        "flow-level model over the routing plans (CRC32 hash per switch of synthetic "
        "5-tuples); independent max-min subflows (upstream MPTCP: no coupled CC); shaded: "
        "the 95 % interval of the mean over runs")]
    if emulated:
        tcp = config["params"].get("tcp_model", "off")
        models = [("emulated", "norm_bwm", "-", 0.25), ("max-min", "norm_model", "--", 0.1)]
        if tcp != "off":
            models.append((tcp, "norm_model_tcp", ":", 0.1))
        out.append(note(_panels(run_dir / "rank_vs_model.png", groups, models, caption(
            config, "emulated vs flow models, by rank of flow")), nets,
            "one panel per topology: emulated (bwm-ng, solid, its 95 % interval shaded) "
            "against the models on the same plans, CRC32 hash per switch of the run's real "
            "subflow 5-tuples, independent subflows (upstream MPTCP, no coupled CC): "
            "max-min (dashed) and "
            f"{tcp} (dotted; alpha-fair: a subflow on more loaded links gets less, as "
            "TCP's does), their intervals lighter"
            if tcp != "off" else "max-min only (--tcp-model off)"))
        tools = [("iperf3", "norm_goodput", "-", 0.2), ("bwm-ng", "norm_bwm", "--", 0.2)]
        out.append(note(_panels(run_dir / "iperf_vs_bwm.png", groups, tools, caption(
            config, "iperf3 vs bwm-ng, by rank of flow")),
            "one panel per topology; iperf3: receiver payload; bwm-ng: receiver port, L2 "
            "frames (1514 B per 1448 B of payload); shaded: the 95 % interval of the mean "
            "over runs"))
    elif any(cell(r.get("norm_model_aggregate")) == cell(r.get("norm_model_aggregate"))
             for r in rows):
        out.append(note(rank_plot(
            run_dir / "rank_aggregate.png",
            [(_label(t, rs), rs, "norm_model_aggregate") for t, rs in groups.items()],
            caption(config, "coupled-MPTCP ideal, by rank of flow")), nets,
            "flow-level model, coupled MPTCP ideal (aggregate max-min over each "
            "connection's paths)"))
    return out


def _panels(path: Path, groups: dict[str, list[dict[str, Any]]],
            curves: list[tuple[str, str, str, float]], title: str) -> Path:
    """rank_vs_model.png and iperf_vs_bwm.png: one panel per topology, a rank curve per
    (name, metric, line style, band alpha) of ``curves``, the first with markers (one axes
    for every topology's curves overlaid bands of different topologies)."""
    fig, axes = panel_row(len(groups), title, width=5.0, height=4.6)
    for ax, (t, rs) in zip(axes, groups.items()):
        for k, (name, metric, style, alpha) in enumerate(curves):
            if k and not any(cell(r.get(metric)) > 0 for r in rs):
                continue
            curve = rank_curves(rs, metric)
            if not len(curve[0]):
                ax.plot([], [], label=f"{name} (no values)")
                continue
            rank_line(ax, curve, f"{name} (mean {curve[0].mean():.2f})", ls=style,
                      marker=None if k else "o", alpha=alpha)
        ax.set_title(_label(t, rs), fontsize=8.5)
        ax.set_xlabel("rank of flow")
        ax.set_ylim(0, 1.1)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    axes[0].set_ylabel("throughput, normalized to the link rate")
    return save(fig, path)


def plot_path_lengths(run_dir: Path, config: dict[str, Any]) -> Path:
    """Share of host pairs at each path length and within h hops (paper Fig. 1 idea)."""
    rows = read_csv(run_dir / "path_lengths.csv")
    # topology -> run -> hops -> share (a length a run's graph lacks is a share of 0)
    per: dict[str, dict[str, dict[int, float]]] = {}
    for r in rows:
        per.setdefault(r["topology"], {}).setdefault(r.get("run", "0"), {})[
            int(r["hops"])] = float(r["share"])
    hops = sorted({h for d in per.values() for run in d.values() for h in run
                   if h >= 2})   # a path has >= 2 links
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    width = 0.8 / max(1, len(per))
    runs = max((len(d) for d in per.values()), default=0)
    for i, (topo, d) in enumerate(per.items()):
        # the mean over runs (one random graph each) and its Student-t 95 % interval
        ivs = [mean_interval([run.get(h, 0.0) for run in d.values()]) for h in hops]
        x = np.arange(len(hops)) + (i - (len(per) - 1) / 2) * width
        interval_bars(ax1, x, ivs, width, capsize=2, label=topo)
        cum = np.cumsum([iv.mean for iv in ivs])
        ax2.plot(hops[:-1], cum[:-1], marker="o", label=topo)
    names = [str(h) for h in hops[:-1]] + [f">{hops[-2]}"]
    ax1.set_xticks(np.arange(len(hops)), names)
    ax1.set_xlabel("path length (links, host links included)")
    ax1.set_ylabel("fraction of server pairs")
    ax1.legend(fontsize=8, loc="upper left")     # upper right covered the fat tree's bar
    ax1.grid(alpha=0.3, axis="y")
    ax2.set_xticks(hops[:-1])
    ax2.set_xlabel("h (links, host links included)")
    ax2.set_ylabel("fraction of server pairs within h links")
    ax2.set_ylim(-0.03, 1.05)     # a point at 0 would be cut by the frame
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=8, loc="upper left")
    fig.suptitle(caption(config, "path lengths between servers (Jellyfish paper, Fig. 1)"),
                 fontsize=9)
    path = save(fig, run_dir / "path_lengths.png")
    return note(path, "shortest paths computed from the graphs; mean over runs (one random "
                "Jellyfish graph per run), bars: the Student-t 95 % interval of that mean"
                + (f" over {runs} runs" if runs > 1 else " (one run: none)"))


def core_balance(links: list[dict[str, str]]) -> dict[str, float]:
    """Coefficient of variation of per-link utilisation of each topology's agg-core links,
    per run, averaged (0 = every core link carries the same traffic)."""
    out: dict[str, float] = {}
    per: dict[tuple[str, str], list[float]] = {}
    for r in links:
        if r["layer"] == "agg-core":
            per.setdefault((r["topology"], r["run"]), []).append(float(r["util"]))
    for topo in dict.fromkeys(t for t, _ in per):
        cvs = [np.std(v) / np.mean(v) for (t, _), v in per.items() if t == topo and np.mean(v)]
        if cvs:
            out[topo] = round(float(np.mean(cvs)), 3)
    return out


def plot_utilisation(run_dir: Path, config: dict[str, Any]) -> Path | None:
    """Per-link utilisation grouped by switch layer, one box + points per layer and topology."""
    rows = read_csv(run_dir / "links.csv")
    if not rows:
        return None
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        groups.setdefault((r["topology"], r["layer"]), []).append(float(r["util"]))
    keys = list(groups)
    # at least 7.2 in: the title's run line (about 100 characters) ran past a 6-in frame
    fig, ax = plt.subplots(figsize=(max(7.2, 1.3 * len(keys)), 4.5))
    data = [groups[k] for k in keys]
    ax.boxplot(data, showfliers=False, widths=0.5)
    rng = np.random.default_rng(0)
    for i, vals in enumerate(data, start=1):
        ax.scatter(i + rng.uniform(-0.18, 0.18, len(vals)), vals, s=6, alpha=0.4)
    ax.set_xticks(range(1, len(keys) + 1), [f"{t}\n{layer}" for t, layer in keys], fontsize=8)
    ax.set_ylabel("link utilisation per direction\n(bytes sent / what the link rate allows)")
    ax.set_ylim(0, 1.1)
    ax.grid(alpha=0.3, axis="y")
    source = rows[0].get("source", "")
    cv = core_balance(rows)
    cv_text = ", ".join(f"{t} agg-core CV {v}" for t, v in cv.items())
    how = ("port counters (L2 bytes) over the trimmed window" if source == "measured"
           else "flow-level model loads (payload)")
    ax.set_title(caption(config, "link utilisation by switch layer"), fontsize=9)
    path = save(fig, run_dir / "utilisation.png")
    return note(path, f"{how}; every directed link of every run", cv_text)


# -- why Jellyfish loses: every subflow's path against its rate --------------------------

def _links(path: str, src: str, dst: str) -> list[tuple[str, str]]:
    """Directed links of a subflow (its switches between its two hosts)."""
    nodes = [src, *path.split(">"), dst]
    return list(zip(nodes, nodes[1:]))


def subflow_facts(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per subflow (rows of subflows.csv): its rate (measured when the run measured one,
    else the TCP-like model's), path length in links, and how it shares the fabric:
    ``siblings`` = other subflows of its own connection on at least one of its switch-to-
    switch links (a collision), ``fabric_share`` = the most subflows of the whole
    permutation on any switch-to-switch link of its path (its likely bottleneck's count),
    ``paths`` = distinct paths of its connection."""
    out: list[dict[str, Any]] = []
    for (_run, _topo), group in _by(rows, ("run", "topology")).items():
        fabric = [[lk for lk in _links(r["path"], r["src"], r["dst"])[1:-1]] for r in group]
        load: dict[tuple[str, str], int] = {}
        for lks in fabric:
            for lk in set(lks):
                load[lk] = load.get(lk, 0) + 1
        conn: dict[str, list[int]] = {}
        for i, r in enumerate(group):
            conn.setdefault(r["src"], []).append(i)
        for i, r in enumerate(group):
            mine = set(fabric[i])
            sib = sum(1 for j in conn[r["src"]] if j != i and mine & set(fabric[j]))
            measured = cell(r.get("mbps"))
            out.append({"run": r["run"], "topology": r["topology"], "src": r["src"],
                        "links": int(r["links"]), "mbps": measured,
                        "model_mbps": cell(r.get("model_mbps")),
                        "model_tcp_mbps": cell(r.get("model_tcp_mbps")),
                        "rtt_ms": cell(r.get("rtt_ms")), "siblings": sib,
                        "fabric_share": max((load[lk] for lk in mine), default=0),
                        "paths": len({group[j]["path"] for j in conn[r["src"]]})})
    return out


def _by(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[tuple[Any, ...],
                                                                  list[dict[str, Any]]]:
    """The rows by their values of ``keys``."""
    return group_rows(rows, lambda r: tuple(r[k] for k in keys))


#: the rates compared per subflow: measured (tcp_info bytes acked), max-min, TCP-like
SUBFLOW_RATES = (("mbps", "measured"), ("model_mbps", "max-min"),
                 ("model_tcp_mbps", "TCP-like model"))


def _nanmean(vals: list[float]) -> float:
    v = np.array(vals, dtype=float)
    return round(float(np.nanmean(v)), 4) if np.isfinite(v).any() else float("nan")


def subflow_summary(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean rates per topology and group: by path length (``by`` = links), by whether a
    sibling collides, by fabric share; one ``all`` row per topology with the correlations
    of the measured rate with path length, fabric share and RTT (Spearman's)."""
    from scipy.stats import spearmanr
    out: list[dict[str, Any]] = []
    for (topo,), mine in _by(facts, ("topology",)).items():
        groups: list[tuple[str, Any, list[dict[str, Any]]]] = [("all", "", mine)]
        groups += [("links", k, v) for (k,), v in sorted(_by(mine, ("links",)).items())]
        groups += [("sibling_collides", k, v) for (k,), v in sorted(
            _by([{**f, "coll": f["siblings"] > 0} for f in mine], ("coll",)).items())]
        groups += [("fabric_share", k, v) for (k,), v in sorted(
            _by(mine, ("fabric_share",)).items())]
        for by, value, sel in groups:
            row: dict[str, Any] = {"topology": topo, "by": by, "value": value,
                                   "subflows": len(sel),
                                   "mean_links": _nanmean([f["links"] for f in sel]),
                                   "mean_rtt_ms": _nanmean([f["rtt_ms"] for f in sel])}
            for col, _ in SUBFLOW_RATES:
                row[f"mean_{col}"] = _nanmean([f[col] for f in sel])
            if by == "all":
                row["share_colliding"] = round(float(np.mean([f["siblings"] > 0
                                                              for f in sel])), 4)
                row["mean_paths_per_connection"] = _nanmean(
                    [f["paths"] for f in {(f["run"], f["src"]): f for f in sel}.values()])
                row["mean_fabric_share"] = _nanmean([f["fabric_share"] for f in sel])
                # the measured rate where the run measured one, else the TCP-like model's
                col = "mbps" if any(f["mbps"] == f["mbps"] for f in sel) else "model_tcp_mbps"
                row["rate"] = col
                rate = np.array([f[col] for f in sel], dtype=float)
                ok = np.isfinite(rate)
                for name in ("links", "fabric_share", "rtt_ms"):
                    x = np.array([f[name] for f in sel], dtype=float)
                    good = ok & np.isfinite(x)
                    row[f"spearman_rate_{name}"] = round(float(spearmanr(
                        x[good], rate[good])[0]), 3) if good.sum() > 2 and \
                        np.ptp(x[good]) > 0 else ""
            out.append(row)
    return out


def group_intervals(items: list[dict[str, Any]], by: str, col: str) -> dict[Any, Interval]:
    """Per value of ``by``: each run's mean of ``col`` over its items with that value (NaN
    left out), and their mean over the runs with its Student-t 95 % interval."""
    means = {value: run_means(group, lambda f: float(f[col]))
             for (value,), group in _by(items, (by,)).items()}
    return {value: mean_interval(m) for value, m in means.items() if m}


def plot_subflows(run_dir: Path, config: dict[str, Any]) -> Path | None:
    """subflows.png and subflow_summary.csv from subflows.csv: every subflow's rate by its
    path length and by its fabric share, measured beside max-min and the TCP-like model
    (issue #28: why Jellyfish loses)."""
    rows = optional_table(run_dir / "subflows.csv")
    if not rows:
        return None
    facts = subflow_facts(rows)
    summary = subflow_summary(facts)
    write_csv(run_dir / "subflow_summary.csv", summary)
    emulated = "mbps" in rows[0]             # the subflows' own measured rates
    rates = SUBFLOW_RATES if emulated else SUBFLOW_RATES[1:]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    styles = {"measured": "-", "max-min": "--", "TCP-like model": ":"}
    runs = len({f["run"] for f in facts})
    for i, (topo, _) in enumerate(_by(facts, ("topology",)).items()):
        color = f"C{i}"
        mine = [f for f in facts if f["topology"] == topo[0]]
        # per connection: its subflows' total, by how many distinct paths they took
        conns = [{"run": fs[0]["run"], "paths": fs[0]["paths"],
                  **{col: sum(f[col] for f in fs) for col, _ in rates}}
                 for fs in _by(mine, ("run", "src")).values()]
        for ax, by, items in ((axes[0], "links", mine), (axes[1], "fabric_share", mine),
                              (axes[2], "paths", conns)):
            for col, name in rates:
                ivs = group_intervals(items, by, col)
                xs = sorted(ivs)
                ax.plot(xs, [ivs[x].mean for x in xs], styles[name], color=color,
                        marker="o", ms=3, label=f"{topo[0]} {name}")
                if runs > 1 and col == rates[0][0]:    # measured (else the first model)
                    ax.fill_between(xs, [max(0.0, ivs[x].lo) for x in xs],
                                    [ivs[x].hi for x in xs], color=color, alpha=0.18, lw=0)
    axes[0].set_xlabel("path length (links, host links included)")
    axes[1].set_xlabel("most subflows on one switch-to-switch link of its path")
    axes[2].set_xlabel("distinct paths of the connection's subflows")
    for ax in axes[:2]:
        ax.set_ylabel("mean subflow rate (Mb/s)")
    axes[2].set_ylabel("mean connection rate (Mb/s)")
    for ax in (axes[0], axes[2]):      # counts of links and of paths: whole-number ticks
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)          # a rate (an interval of two runs can reach below 0)
    # under the panels: inside the first one it covered the Jellyfish band
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7,
               frameon=False)
    fig.suptitle(caption(config, "why Jellyfish loses: subflow rate by path length and by "
                         "link sharing"), fontsize=9)
    path = save(fig, run_dir / "subflows.png", rect=(0, 0.06, 1, 1))
    share = "; ".join(f"{r['topology']}: {r['share_colliding']:.0%} of subflows collide with "
                      f"a sibling, {r['mean_paths_per_connection']} paths per connection"
                      for r in summary if r["by"] == "all")
    return note(path, "rates: " + ("tcp_info bytes acked per subflow socket over its flow's "
                                   "window (measured), " if emulated else "")
                + "max-min and the TCP-like model (independent subflows) on the traced "
                "paths; per group, each run's mean, then their mean over runs; shaded: the "
                "Student-t 95 % interval of the measured one's (of max-min's without a "
                "measurement), cut at 0; the summary's means pool every run's subflows",
                share)


def plot_fairness(run_dir: Path, config: dict[str, Any]) -> list[Path]:
    """Every figure of a fairness run folder: rank.png, path_lengths.png, utilisation.png
    (+ rank_vs_model.png and iperf_vs_bwm.png when emulated, rank_aggregate.png for the model
    when computed)."""
    run_dir = Path(run_dir)
    rows = with_goodput(table(run_dir, "flows.csv", "flows"),
                        config["params"].get("backend", "emulated"))
    out = plot_rank(run_dir, config, rows)
    out.append(plot_path_lengths(run_dir, config))
    for extra in (plot_utilisation(run_dir, config), plot_subflows(run_dir, config)):
        if extra is not None:
            out.append(extra)
    return out


def headline(run_dir: Path) -> str:
    """One line per topology (mean, Jain, p10 of the main measure) from fidelity.csv."""
    lines = []
    for r in read_csv(Path(run_dir) / "fidelity.csv"):
        if r["topology"] == "timing":
            continue
        m = "bwm" if r.get("mean_bwm") else "model"
        lines.append(f"{r['topology']}: mean {r.get(f'mean_{m}')} jain {r.get(f'jain_{m}')} "
                     f"p10 {r.get(f'p10_{m}')} vs fattree {r.get('mean_vs_fattree', '')}")
    return "\n".join(lines)
