"""Issue #26's ablation of the TCP Outcast (linear topology): one setting changed at a time
against the default, 10 repetitions per N, shown as distributions (every repetition, the
median and quartiles) beside the mean and its Student-t 95 % interval, the claims' statistic.

``scripts/outcast-ablation.sh`` runs ``dcrepro run outcast`` once per setting below, each into
``results/outcast-ablation/<setting>/``, then calls ``python -m studies.outcast_ablation
results/outcast-ablation``, which reads those run folders only (summary.csv, flows.csv,
drops.csv, config.json) and writes ablation.csv, ablation.md and ablation.png beside them.

Each setting names the condition of the paper's testbed (1 GbE commodity switches, tail drop,
microsecond RTTs, windows limited by congestion) or of the emulator that it changes, so the
table says which of them turns the outcast on or off.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np

from analysis.intervals import bars_words, bracket_text, error_bars, mean_interval
from experiments.outcast.figures import rate
from store import cell, newest_ok_run, read_csv, write_csv

#: what every setting shares (the sweep script adds them): 3 N, 10 repetitions each
COMMON = ["--flows", "2,6,12", "--runs", "10", "--duration", "12", "--trim", "2"]
#: below this share of its fair share a repetition counts as an outcast (claims.py)
OUTCAST_SHARE = 0.5


@dataclass(frozen=True)
class Setting:
    """One point of the ablation: its name, its flags and what it changes."""
    name: str
    flags: tuple[str, ...]
    changes: str


SETTINGS = [
    Setting("default", ("--dataplane", "bpf"),
            "bpf dataplane, 10 Mb/s, pfifo 20, tc's own HTB burst, rto_min 200 ms, reno, "
            "the sender's socket released at the first switch"),
    Setting("socket-kept", ("--dataplane", "bpf,socket=keep"),
            "packets keep the sender's socket through the fabric (before the TSQ fix): TCP "
            "Small Queues caps each flow at about 2 packets in flight"),
    Setting("ovs", ("--dataplane", "ovs"),
            "Open vSwitch's userspace datapath under os-ken instead of the kernel switch "
            "(batched forwarding, some loss inside the switch)"),
    Setting("rto-2ms", ("--dataplane", "bpf", "--rto-min", "2ms"),
            "rto_min 2 ms (one 4-ms jiffy at HZ = 250): the datacenter-tuned timeout"),
    Setting("red", ("--dataplane", "bpf", "--aqm", "red"),
            "RED before every tail-drop queue (the paper's proposed fix): early random drops"),
    Setting("burst-15k", ("--dataplane", "bpf", "--burst", "15k"),
            "Mininet TCLink's HTB burst of 15 KiB: links release packets in bursts"),
    Setting("queue-100", ("--dataplane", "bpf", "--queue", "100"),
            "a 100-packet tail-drop queue instead of 20"),
    Setting("rate-100", ("--dataplane", "bpf", "--bw", "100"),
            "100 Mb/s links instead of 10: 10x shorter service time per packet"),
]
#: ns-3's arrival jitter (issue #52, written before the runs: docs/notebook/
#: 2026-12-01-headlines.md, item 6): every packet on every link delayed by a uniform random
#: extra of up to J us, 1200 us being one 1500-byte packet at 10 Mb/s; the emulator has no
#: per-packet jitter (no netem), so only the simulator's side is swept.  Into
#: results/outcast-ablation-jitter/<setting>/ by `python -m studies.outcast_ablation
#: --list --jitter`'s commands.
JITTER_COMMON = ["--backend", "sim", "--flows", "6,12", "--runs", "10", "--duration", "15",
                 "--trim", "3", "--seed", "1"]
JITTER = [Setting(f"sim-jitter-{j}", ("--pkt-jitter-us", str(j)),
                  f"ns-3 with up to {j} us of random extra delay per packet and link"
                  + (" (deterministic: one sample)" if j == 0 else ""))
          for j in (0, 150, 300, 600, 1200)]


def _quantile(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) if values else float("nan")


def newest_run(folder: Path) -> Path | None:
    """The newest complete (status ok) outcast run folder under ``folder``, or None."""
    return newest_ok_run(folder, "outcast")


class SettingRow(TypedDict):
    """ablation.csv's row: one setting at one N, over its repetitions."""
    setting: str
    flows: int
    runs: int
    lone_share_median: float
    lone_share_q1: float
    lone_share_q3: float
    # the mean over repetitions and its Student-t 95 % interval (the claims' statistic, was
    # the repetitions' min and max); '' without a repetition
    lone_share_mean: float | str
    lone_share_lo: float | str
    lone_share_hi: float | str
    runs_below_half: int
    lone_zero_runs: int
    lone_port_drop_rate_median: float
    uplink_drop_rate_median: float
    cpu_mean: float
    run_folder: str
    shares: str                      # every repetition's, space-separated


def setting_rows(name: str, run: Path) -> list[SettingRow]:
    """One row per N of one setting's run: the lone flow's share of its fair share over the
    repetitions, how many were outcasts, drop rates per input port, CPU."""
    summary = [r for r in read_csv(run / "summary.csv") if r.get("run") != "all"]
    flows = read_csv(run / "flows.csv")
    out: list[SettingRow] = []
    for n in sorted({int(cell(r["flows"])) for r in summary}):
        rows = [r for r in summary if int(cell(r["flows"])) == n]
        shares = [cell(r["lone_share_of_fair"]) for r in rows]
        shares = [x for x in shares if x == x]
        lone_zero = sum(1 for f in flows if int(cell(f["flows"])) == n and f["role"] == "lone"
                        and rate(f) == 0)
        iv = mean_interval(shares) if shares else None
        col = {c: [cell(r[c]) for r in rows if r.get(c, "") != ""]
               for c in ("drop_rate_lone_port", "drop_rate_uplink_port", "cpu_mean")}
        out.append({
            "setting": name, "flows": n, "runs": len(shares),
            "lone_share_median": round(_quantile(shares, 0.5), 4),
            "lone_share_q1": round(_quantile(shares, 0.25), 4),
            "lone_share_q3": round(_quantile(shares, 0.75), 4),
            "lone_share_mean": round(iv.mean, 4) if iv else "",
            "lone_share_lo": round(iv.lo, 4) if iv else "",
            "lone_share_hi": round(iv.hi, 4) if iv else "",
            "runs_below_half": sum(x < OUTCAST_SHARE for x in shares),
            "lone_zero_runs": lone_zero,
            "lone_port_drop_rate_median": round(_quantile(col["drop_rate_lone_port"], 0.5), 4),
            "uplink_drop_rate_median": round(_quantile(col["drop_rate_uplink_port"], 0.5), 4),
            "cpu_mean": round(_quantile(col["cpu_mean"], 0.5), 1),
            "run_folder": str(run),
            "shares": " ".join(f"{x:.3f}" for x in shares),
        })
    return out


def collect(root: Path) -> list[SettingRow]:
    """Rows of every setting that has a complete run under ``root``, in SETTINGS order."""
    rows: list[SettingRow] = []
    for s in SETTINGS + JITTER:
        run = newest_run(root / s.name)
        if run is not None:
            rows += setting_rows(s.name, run)
    return rows


def markdown(rows: list[SettingRow]) -> str:
    """The table of ablation.md: one line per setting, N columns of median (quartiles),
    outcasts out of runs, and the mean [its 95 % interval]."""
    ns = sorted({int(r["flows"]) for r in rows})
    head = "| setting | changes | " + " | ".join(
        f"N = {n}: median (q1-q3), outcasts; mean [95 % interval]" for n in ns) + " |"
    lines = ["# Outcast ablation: one setting changed at a time", "",
             "The lone flow's goodput as a share of its fair share (link / (N + 1)): median "
             "and quartiles over the repetitions, in how many repetitions it stayed "
             "below half (an outcast), and the mean over the repetitions with its Student-t "
             "95 % interval (the claims' statistic).  Made by `scripts/outcast-ablation.sh` (10 "
             "repetitions x 12 s per N and setting; ns-3's jitter sweep: the commands of "
             "`--list --jitter`), then `.venv/bin/python -m studies.outcast_ablation "
             "<its folder>`; docs/notebook/002-outcast.md reads it.", "", head,
             "|" + "---|" * (2 + len(ns))]
    for s in SETTINGS + JITTER:
        mine = {int(r["flows"]): r for r in rows if r["setting"] == s.name}
        if not mine:
            continue
        cells = []
        for n in ns:
            r = mine.get(n)
            cells.append("-" if r is None else
                         f"{r['lone_share_median']:.3f} ({r['lone_share_q1']:.3f}-"
                         f"{r['lone_share_q3']:.3f}), {r['runs_below_half']} of {r['runs']}"
                         + (f"; mean {bracket_text(mean_interval(_shares(r)))}"
                            if _shares(r) else ""))
        lines.append(f"| `{s.name}` | {s.changes} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _shares(r: SettingRow) -> list[float]:
    """Every repetition's lone share of a row (its ``shares`` column)."""
    return [float(v) for v in r["shares"].split()]


def plot(rows: list[SettingRow], path: Path) -> Path:
    """One panel per N: every repetition's lone share, per setting (dots), and their mean
    with its Student-t 95 % interval (black; was the median, a line without a spread)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysis.figures import save

    ns = sorted({int(r["flows"]) for r in rows})
    names = [s.name for s in SETTINGS + JITTER if any(r["setting"] == s.name for r in rows)]
    fig, axes = plt.subplots(1, len(ns), figsize=(4.2 * len(ns), 4.2), sharey=True,
                             squeeze=False)
    counts, below = [], False
    for ax, n in zip(axes[0], ns):
        for i, name in enumerate(names):
            r = next((x for x in rows if x["setting"] == name and int(x["flows"]) == n), None)
            if r is None or not r["shares"]:
                continue
            ys = _shares(r)
            # the dots left of the setting's tick, its mean and interval right of them
            xs = [i - 0.12 + 0.2 * ((k % 5) - 2) / 2 for k in range(len(ys))]
            ax.scatter(xs, ys, s=14, alpha=0.7, color=f"C{i % 10}")
            iv = mean_interval(ys)
            counts.append(iv.n)
            below |= iv.lo < 0
            ax.errorbar([i + 0.22], [iv.mean], yerr=error_bars([iv]) if iv.n > 1 else None,
                        fmt="o", color="k", ms=4, capsize=3, elinewidth=1.2)
        ax.axhline(OUTCAST_SHARE, ls="--", color="grey", lw=1)
        ax.axhline(1.0, ls=":", color="grey", lw=1)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
        ax.set_title(f"N = {n}")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("lone flow's goodput / its fair share")
    # a share: an interval reaching below 0 is cut there (after every panel is drawn: the
    # shared axis's top then fits them all)
    axes[0][0].set_ylim(bottom=-0.1)
    fig.suptitle("TCP Outcast ablation: one setting changed at a time (dashed: half the "
                 "fair share, dotted: the fair share)\ndots: each repetition; black: their "
                 "mean, " + bars_words(counts) + (" (cut at 0)" if below else ""),
                 fontsize=10)
    return save(fig, path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("root", nargs="?", type=Path, default=Path("results/outcast-ablation"),
                   help="the ablation's results folder (default: results/outcast-ablation)")
    p.add_argument("--list", action="store_true",
                   help="print each setting's name and flags, one per line, and exit")
    p.add_argument("--jitter", action="store_true",
                   help="with --list: ns-3's arrival-jitter sweep instead")
    args = p.parse_args(argv)
    if args.list:
        for s in JITTER if args.jitter else SETTINGS:
            print(s.name, *s.flags, *(JITTER_COMMON if args.jitter else COMMON))
        return 0
    rows = collect(args.root)
    if not rows:
        print(f"outcast-ablation: no complete run under {args.root}", file=sys.stderr)
        return 1
    write_csv(args.root / "ablation.csv", rows)
    (args.root / "ablation.md").write_text(markdown(rows))
    fig = plot(rows, args.root / "ablation.png")
    print(markdown(rows), end="")
    print(f"outcast-ablation: {args.root / 'ablation.csv'}, {args.root / 'ablation.md'}, {fig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
