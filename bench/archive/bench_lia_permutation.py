"""MPTCP-8 on the k=4 permutation with coupled ``lia`` beside uncoupled ``cubic``, side by
side in one run (issue #25, part 5; root).  Prints figures, asserts nothing.

    .venv/bin/python bench/archive/bench_lia_permutation.py [--bw 10] [--seeds 3] [--duration 30]
        [--trim 5] [--ccs lia,cubic] [--wmem default --wmem 4194304,4194304,4194304]
        [--rmem default --rmem 16777216,16777216,16777216] [--lock /tmp/dcrepro-heavy.lock]

Each seed runs ``dcrepro run permutation --runs 1 --seed S --cc CC`` (TCP and MPTCP with 8
subflows over ECMP, the same permutation for every control of that seed), once per
``--wmem`` and ``--rmem`` (the hosts' net.ipv4.tcp_wmem and tcp_rmem; ``default``: as the
machine has it): a variant is a control with a send- and a receive-buffer setting.  The variants alternate their order by seed so that a
slow drift of the machine does not favour one.  Per
run and transport, from the run's summary.csv (iperf3 goodput normalised to the link rate,
over all 16 flows): the mean, Jain's index, the ratio of the mean to the flow model's on the
run's traced paths, bwm-ng's mean (bytes on the receiver's link: headers, retransmissions
and the reverse flow's ACKs included), the senders' bytes acked (every subflow's tcp_info,
over the window in absolute time), the MPTCP connections' own counters over the same window
(mptcp_info: data acked at the sender's connection, data its receiver took in order), how
often a sender's connection stood still (no new data on any subflow while data was in
flight), whether the run was flagged by its fidelity checks
(and why, shortened), for a BPF control its counters (config.json: ``cc_bpf.stats``), and
how much of the time the MPTCP subflows were held by the send buffer and by the receiver's
window (tcp_limits.csv), and what the hosts' stacks sent again under MPTCP (fidelity.json
``stack_counters``, every host summed): TCP retransmissions and MPTCP reinjections per
segment sent, duplicate connection-level data, data MPTCP queued out of order and
receive-side drops per segment received.  Then per control the medians over seeds, the ratios to htsim's published anchor for this case (LIA, k=4 fat tree,
8 subflows: mean 0.877, Jain 0.98; single-path TCP 0.574) and MPTCP over TCP (``000_…``
Fig. 4 shape: about 1.5).

Under ``--cc lia``, single-path TCP runs lia on one subflow, which is Reno's increase; under
``--cc cubic`` it is cubic.  A flagged run (CPU above 90 %, late dequeues, ...) is printed
and counted, not dropped: the reader decides what it is worth.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from emulator.proc import RunError, held_lock, run_group
from store import read_csv

REPO = Path(__file__).resolve().parents[2]
#: htsim's numbers for this case (PLATFORM.md, from the Jellyfish reproduction's runs)
HTSIM = {"mptcp_mean": 0.877, "mptcp_jain": 0.98, "tcp_mean": 0.574}


def summary(run: Path) -> dict[str, dict[str, float]]:
    """Per transport: mean and Jain of norm_iperf, and the model's mean (summary.csv)."""
    out: dict[str, dict[str, float]] = {}
    for r in read_csv(run / "summary.csv"):
        d = out.setdefault(r["transport"], {})
        if r["measure"] == "norm_iperf":
            d.update(mean=float(r["mean"]), jain=float(r["jain"]))
        elif r["measure"] == "norm_bwm":
            d["bwm_mean"] = float(r["mean"])
        elif r["measure"] in ("norm_acked", "norm_msk_acked", "norm_msk_received") and \
                r.get("mean") not in (None, ""):
            d[r["measure"].removeprefix("norm_") + "_mean"] = float(r["mean"])
        elif r["measure"] == "norm_model":
            d["model_mean"] = float(r["mean"])
    return out


def subflow_limits(run: Path) -> dict[str, float]:
    """What held the MPTCP subflows (tcp_limits.csv of every repetition): the mean over
    subflows of the share of samples limited by the congestion window and of the time
    limited by the send buffer (MPTCP's connection-level buffer; htsim has none) and by the
    receiver's window."""
    rows = [r for f in sorted(run.glob("run*/mptcp/tcp_limits.csv")) for r in read_csv(f)]
    out = {}
    for key in ("cwnd_limited", "sndbuf_limited", "rwnd_limited"):
        vals = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
        if vals:
            out[key] = round(statistics.mean(vals), 3)
    return out


def send_stalls(run: Path, trim: float) -> float | None:
    """The share of half-second sampling intervals in which an MPTCP data connection's
    sender put no new data on any subflow (mptcp_info's bytes_sent did not grow) while data
    was in flight at the data level: the whole connection stood still, e.g. with its
    window full of data parked behind one subflow's hole.  Over every sender connection of
    the run's repetitions that sent at least 1 MB, each without its first and last ``trim``
    seconds; None without samples."""
    by_conn: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for f in sorted(run.glob("run*/mptcp/mptcp_samples.csv")):
        for r in read_csv(f):
            by_conn.setdefault((str(f), r["host"], r["saddr"], r["sport"], r["daddr"],
                                r["dport"]), []).append(r)
    stalled = total = 0
    for rows in by_conn.values():
        rows.sort(key=lambda r: float(r["time"]))
        if int(rows[-1]["bytes_sent"]) - int(rows[0]["bytes_sent"]) < 1_000_000:
            continue      # a control connection or a receiving end
        lo, hi = float(rows[0]["time"]) + trim, float(rows[-1]["time"]) - trim
        inside = [r for r in rows if lo <= float(r["time"]) <= hi]
        for a, b in zip(inside, inside[1:]):
            total += 1
            stalled += int(b["bytes_sent"]) == int(a["bytes_sent"]) and \
                int(a["data_in_flight"]) > 0
    return round(stalled / total, 3) if total else None


def cc_stats(run: Path) -> dict[str, Any]:
    """The BPF control's counters of each network of the run (config.json runtime)."""
    runtime = json.loads((run / "config.json").read_text()).get("runtime", {})
    return {label: (facts.get("cc_bpf") or {}).get("stats")
            for label, facts in runtime.items()
            if isinstance(facts, dict) and facts.get("cc_bpf")}


def stack_shares(run: Path) -> dict[str, float]:
    """The stack counters of the run's MPTCP traffic (fidelity.json reports'
    ``stack_counters``, every host summed): TCP retransmissions and MPTCP reinjections per
    segment sent, duplicate connection-level data per segment received; the mean over the
    run's repetitions."""
    reports = json.loads((run / "fidelity.json").read_text()).get("reports", [])
    nets = [f["stack_counters"] for f in reports
            if f.get("transport") == "mptcp" and f.get("stack_counters")]
    out = {}
    for key in ("retrans_share", "mptcp_retrans_share", "mptcp_dup_share", "rcv_drop_share",
                "mptcp_ofo_share"):
        vals = [float(n[key]) for n in nets if n.get(key) is not None]
        if vals:
            out[key] = round(statistics.mean(vals), 4)
    return out


def one(args: argparse.Namespace, seed: int, cc: str, wmem: str, rmem: str,
        out: Path) -> dict[str, Any]:
    """One run of one control with one send- and one receive-buffer setting ('' = the
    machine's); its figures, or {'failed': why}."""
    cmd = [str(REPO / ".venv/bin/dcrepro"), "run", "permutation", "--topo", "fattree,k=4",
           "--transport", "tcp,mptcp", "--subflows", "8", "--runs", "1", "--seed", str(seed),
           "--cc", cc, "--bw", str(args.bw), "--duration", str(args.duration), "--trim",
           str(args.trim), "--out", str(out), *(["--wmem", wmem] if wmem else []),
           *(["--rmem", rmem] if rmem else [])]
    try:   # the lock's wait is bounded apart from the run's own timeout
        with held_lock(args.lock, args.lock_wait):
            p = run_group(cmd, args.timeout, str(REPO))
    except RunError as e:
        return {"failed": str(e)}
    runs = sorted((out / "permutation").iterdir()) if (out / "permutation").exists() else []
    if not runs or not (runs[-1] / "summary.csv").is_file():
        return {"failed": ((p.stderr or p.stdout).strip().splitlines() or ["no output"])[-1]}
    run = runs[-1]
    status = json.loads((run / "status.json").read_text())
    flags = [f[:90] for f in status.get("suspect") or []]
    return {"by_transport": summary(run), "subflow_limits": subflow_limits(run),
            "send_stalls": send_stalls(run, args.trim),
            "stack": stack_shares(run), "flagged": flags, "cc_bpf": cc_stats(run), "exit": p.returncode}


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bw", type=float, default=10.0, help="link rate, Mb/s")
    ap.add_argument("--seeds", type=int, default=3, help="permutations (seeds 1..N)")
    ap.add_argument("--duration", type=float, default=30.0, help="traffic time per flow, s")
    ap.add_argument("--trim", type=float, default=5.0, help="seconds cut at each end")
    ap.add_argument("--ccs", default="lia,cubic", help="congestion controls, comma list")
    ap.add_argument("--wmem", action="append", default=None,
                    help="the hosts' tcp_wmem MIN,DEFAULT,MAX for a variant, or 'default'; "
                         "repeat for several (default: one variant, the machine's)")
    ap.add_argument("--rmem", action="append", default=None,
                    help="the hosts' tcp_rmem MIN,DEFAULT,MAX for a variant, or 'default'; "
                         "repeat for several (default: one variant, the machine's)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds one run may take")
    ap.add_argument("--lock", default=None, help="flock this file around every run")
    ap.add_argument("--lock-wait", type=float, default=7200.0,
                    help="seconds to wait for --lock before a run counts as failed")
    args = ap.parse_args()
    ccs = [c for c in args.ccs.split(",") if c]
    if args.seeds < 1 or not ccs:
        ap.error("--seeds must be at least 1 and --ccs must name a control")
    wmems = ["" if w == "default" else w for w in (args.wmem or ["default"])]
    rmems = ["" if r == "default" else r for r in (args.rmem or ["default"])]
    variants = [(cc, w, r) for cc in ccs for w in wmems for r in rmems]
    label = {v: v[0] + (f" wmem={v[1]}" if v[1] else "") + (f" rmem={v[2]}" if v[2] else "")
             for v in variants}
    got: dict[str, list[dict[str, Any]]] = {label[v]: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="bench-lia-") as tmp:
        for seed in range(1, args.seeds + 1):
            order = variants if seed % 2 else list(reversed(variants))
            for n, (cc, wmem, rmem) in enumerate(order):
                r = one(args, seed, cc, wmem, rmem, Path(tmp) / f"{seed}-{n}")
                print(json.dumps({"seed": seed, "cc": cc, "wmem": wmem or "default",
                                  "rmem": rmem or "default", **r}),
                      flush=True)
                if "by_transport" in r:
                    got[label[(cc, wmem, rmem)]].append(r)
    print(f"\nk=4 fat tree, ECMP, {args.bw:g} Mb/s, {args.duration:g} s (trim {args.trim:g}); "
          f"medians over seeds; htsim (LIA): MPTCP-8 {HTSIM['mptcp_mean']}, Jain "
          f"{HTSIM['mptcp_jain']}, TCP {HTSIM['tcp_mean']}")
    width = max(len(n) for n in got)
    print(f"{'variant':{width}} runs flagged | MPTCP mean  Jain  /model /htsim  bwm  acked "
          "conn-acked conn-received stalled sndbuf  rwnd | TCP mean  Jain  /htsim | "
          "MPTCP/TCP | "
          "MPTCP network: retrans reinject dup rcvdrop ofo")
    for name, rs in got.items():
        m = [r["by_transport"].get("mptcp", {}) for r in rs]
        t = [r["by_transport"].get("tcp", {}) for r in rs]
        mm = med([x["mean"] for x in m if "mean" in x])
        mj = med([x["jain"] for x in m if "jain" in x])
        mmod = med([x["mean"] / x["model_mean"] for x in m if x.get("model_mean")])
        tm = med([x["mean"] for x in t if "mean" in x])
        tj = med([x["jain"] for x in t if "jain" in x])
        mb = med([x["bwm_mean"] for x in m if "bwm_mean" in x])
        ma = med([x["acked_mean"] for x in m if "acked_mean" in x])
        # the connections' own counters (mptcp_info): data acked at the sender, data taken
        # in order at the receiver
        ca = med([x["msk_acked_mean"] for x in m if "msk_acked_mean" in x])
        cr = med([x["msk_received_mean"] for x in m if "msk_received_mean" in x])
        stall = med([r["send_stalls"] for r in rs if r.get("send_stalls") is not None])
        sb = med([r["subflow_limits"]["sndbuf_limited"] for r in rs
                  if "sndbuf_limited" in r["subflow_limits"]])
        rw = med([r["subflow_limits"]["rwnd_limited"] for r in rs
                  if "rwnd_limited" in r["subflow_limits"]])
        st = {k: med([r["stack"][k] for r in rs if k in r.get("stack", {})])
              for k in ("retrans_share", "mptcp_retrans_share", "mptcp_dup_share",
                        "rcv_drop_share", "mptcp_ofo_share")}
        flagged = sum(1 for r in rs if r["flagged"])
        print(f"{name:{width}} {len(rs):4} {flagged:7} | {mm:10.3f} {mj:5.3f} {mmod:6.3f} "
              f"{mm / HTSIM['mptcp_mean']:6.3f} {mb:5.3f} {ma:5.3f} {ca:10.3f} {cr:13.3f} {stall:7.3f} "
              f"{sb:6.3f} {rw:5.3f} | {tm:8.3f} {tj:5.3f} "
              f"{tm / HTSIM['tcp_mean']:6.3f} | {mm / tm:9.3f} | {st['retrans_share']:7.4f} "
              f"{st['mptcp_retrans_share']:8.4f} {st['mptcp_dup_share']:6.4f} "
              f"{st['rcv_drop_share']:7.4f} {st['mptcp_ofo_share']:6.4f}")


if __name__ == "__main__":
    main()
