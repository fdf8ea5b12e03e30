"""When MPTCP subflows join, at start-up (root).  Prints figures, asserts nothing.

    .venv/bin/python bench/bench_subflow_joins.py [--topo fattree,k=4] [--routing ecmp]
        [--bw 5] [--variants 100:open,100:guard] [--seeds 3] [--duration 10] [--trim 4]
        [--cc lia] [--subflows 8] [--events FILE]

A fairness run starts a connection again when it is still short of its subflows when its
window is due (``trim - 0.5`` s after its start; harness.traffic._await_subflows).  This
bench asks why a connection is short: per network (one permutation of MPTCP iperf3 flows,
every host sending once, as ``dcrepro run fairness`` does), an ``ip mptcp monitor`` in
every sending host stamps each event as it arrives, and every sending host's own counters
(nstat) say how many SYNs it sent again (``TcpExtTCPSynRetrans``: an MP_JOIN's SYN or
SYN-ACK lost on the way) and how many MP_JOIN SYNs it sent.

Per connection (the first data connection of each flow: the second connection a sender
opens to its server's port, after iperf3's control connection), from its CREATED event:
when its initial subflow was established and when each later subflow was (SF_ESTABLISHED),
the gaps between successive joins, which closed again at once (a join the server refused
at its last ACK), how many subflows the server's own path manager tried to open toward
the client, and whether it had all ``--subflows`` subflows alive when its window was due.
A variant is ``QUEUE:open`` or ``QUEUE:guard`` (the tail-drop queue of every port, packets;
whether servers may open subflows of their own: hostnet.mptcp_endpoints's ``guard``, the
default since 2026-11-28); variants alternate within each seed, so slow drifts of the
machine fall on all.  Prints one line per network and, per variant, medians over all
connections.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from random import Random
from typing import Any

import routing
import topos
from emulator.emulation import Emulation
from emulator.proc import install_signal_handlers
from emulator.shaping import LinkSpec
from harness.traffic import BASE_PORT, Flow, run_iperf
from topos.traffic import permutation

EVENT = re.compile(r"\[\s*(\w+)\]\s+token=(\w+)(.*)")
FIELD = re.compile(r"(\w+)=(\S+)")
COUNTERS = ("TcpExtTCPSynRetrans", "MPTcpExtMPJoinSynTx", "MPTcpExtMPJoinSynAckRx",
            "MPTcpExtMPJoinRejected", "MPTcpExtMPJoinSynTxConnectErr")


def parse_event(line: str) -> tuple[str, str, dict[str, str]] | None:
    """One `ip mptcp monitor` line as (event, token, fields), or None for anything else."""
    m = EVENT.match(line.strip())
    if not m:
        return None
    return m.group(1), m.group(2), dict(FIELD.findall(m.group(3)))


def reader(name: str, proc: subprocess.Popen, t0: float,
           sink: list[tuple[float, str, str, str, dict[str, str]]]) -> None:
    """Stamp every event of one host's monitor as it arrives (s after ``t0``)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        ev = parse_event(line)
        if ev is not None:
            sink.append((time.monotonic() - t0, name, *ev))


def connections(events: list[tuple[float, str, str, str, dict[str, str]]],
                flows: list[Flow]) -> list[dict[str, Any]]:
    """Per flow: its first data connection's token, when it was established, when each later
    subflow joined and when any closed (s after its CREATED event; a close without an
    error code right after a join is the peer refusing the join at its last ACK), and how
    many subflows its server's side tried to open toward the client (refused: error 111)."""
    rows: list[dict[str, Any]] = []
    for f in flows:
        mine = [e for e in events if e[1] == f.src]
        created = [(t, tok) for t, _, kind, tok, fl in mine
                   if kind == "CREATED" and fl.get("dport") == str(f.port)]
        if len(created) < 2:
            rows.append({"flow": f.name, "data_connection": None})
            continue
        t_created, token = created[1]       # created[0] is iperf3's control connection
        est = [t for t, _, kind, tok, _ in mine if kind == "ESTABLISHED" and tok == token]
        joins = sorted(t for t, _, kind, tok, _ in mine
                       if kind == "SF_ESTABLISHED" and tok == token)
        closes = sorted((t, fl.get("error", "")) for t, _, kind, tok, fl in mine
                        if kind == "SF_CLOSED" and tok == token)
        theirs = [e for e in events if e[1] == f.dst]
        served = {tok for _, _, kind, tok, fl in theirs
                  if kind == "CREATED" and fl.get("sport") == str(f.port)}
        refused = sum(1 for _, _, kind, tok, fl in theirs
                      if kind == "SF_CLOSED" and tok in served and fl.get("error") == "111")
        rows.append({"flow": f.name, "data_connection": token,
                     "established_s": (est[0] - t_created) if est else None,
                     "joins_s": [t - t_created for t in joins],
                     "closes_s": [(t - t_created, err) for t, err in closes],
                     "server_attempts_refused": refused})
    return rows


def live_at(row: dict[str, Any], t: float) -> int:
    """Subflows of a connection alive ``t`` s after it was created (the first included)."""
    return 1 + sum(1 for j in row["joins_s"] if j <= t) - \
        sum(1 for c, _ in row["closes_s"] if c <= t)


def nstat(emu: Emulation, hosts: list[str]) -> dict[str, dict[str, int]]:
    """The counters of every host, absolute (nstat's history file is per user, not per
    namespace, so it is neither read nor written: -a -s)."""
    out = emu.hosts_cmd(hosts, ["nstat", "-a", "-s", "-z", *COUNTERS])
    got: dict[str, dict[str, int]] = {}
    for h, text in out.items():
        got[h] = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] in COUNTERS:
                got[h][parts[0]] = int(parts[1])
    return got


def one(args: argparse.Namespace, queue: int, guard: bool, seed: int) -> dict[str, Any]:
    """One network: its connections' join times and its senders' counters."""
    topo = topos.build(args.topo)
    plan = routing.make_plan(topo, args.routing)
    pairs = permutation(topo.hosts(), Random(seed))
    flows = [Flow(a, b) for a, b in pairs]
    with tempfile.TemporaryDirectory(prefix="bench-joins-") as tmp, \
            Emulation(topo, plan, LinkSpec(args.bw, queue), Path(tmp),
                      f"bench-joins-{int(time.time())}", cc=args.cc,
                      dataplane="bpf") as emu:
        failed = emu.ping_all()
        if failed:
            raise SystemExit(f"bench_subflow_joins: unreachable pairs {failed[:3]}")
        emu.configure_mptcp(args.subflows, guard=guard)
        senders = sorted({f.src for f in flows})
        before = nstat(emu, senders)
        events: list[tuple[float, str, str, str, dict[str, str]]] = []
        t0 = time.monotonic()
        threads = []
        for h in senders:
            p = emu.popen(emu.host(h), ["stdbuf", "-oL", "ip", "mptcp", "monitor"],
                          stdout=subprocess.PIPE, text=True)
            th = threading.Thread(target=reader, args=(h, p, t0, events), daemon=True)
            th.start()
            threads.append(th)
        time.sleep(0.5)                          # the monitors subscribe before traffic
        meas = run_iperf(emu, flows, "mptcp", duration=args.duration, trim=args.trim,
                         out=Path(tmp) / "iperf", port=BASE_PORT, subflows=args.subflows)
        after = nstat(emu, senders)
    counters = {h: {c: after[h].get(c, 0) - before[h].get(c, 0) for c in COUNTERS}
                for h in senders}
    rows = connections(events, flows)
    if args.events:
        with open(args.events, "a") as fh:
            for t, h, kind, tok, fl in events:
                fh.write(json.dumps({"queue": queue, "seed": seed, "t": round(t, 4),
                                     "host": h, "event": kind, "token": tok, **fl}) + "\n")
            for f in flows:
                fh.write(json.dumps({"queue": queue, "seed": seed, "flow": f.name,
                                     "src": f.src, "port": f.port,
                                     "restarts": f.restarts}) + "\n")
    return {"queue": queue, "seed": seed, "rows": rows, "counters": counters,
            "restarts": meas["restarts"], "cpu_mean": meas["cpu_mean"],
            "flows": flows}


def summary(net: dict[str, Any], want: int, due: float) -> dict[str, Any]:
    """Figures of one network."""
    rows = [r for r in net["rows"] if r["data_connection"]]
    by_src = {f.name: f.src for f in net["flows"]}
    full = [r["joins_s"][want - 2] for r in rows if len(r["joins_s"]) >= want - 1]
    gaps = [b - a for r in rows for a, b in zip(r["joins_s"], r["joins_s"][1:])]
    first = [r["joins_s"][0] for r in rows if r["joins_s"]]
    est = [r["established_s"] for r in rows if r["established_s"] is not None]
    short = [r for r in rows if live_at(r, due) < want]
    refused_joins = [r for r in rows if any(not err for _, err in r["closes_s"])]
    retrans = {h: c.get("TcpExtTCPSynRetrans", 0) for h, c in net["counters"].items()}
    short_lost = sum(1 for r in short if retrans.get(by_src[r["flow"]], 0) > 0)
    return {"connections": len(rows), "missing": len(net["rows"]) - len(rows),
            "established": est, "first_join": first, "gaps": gaps, "all_joined": full,
            "short": len(short), "short_with_syn_retrans": short_lost,
            "short_with_join_closed": sum(1 for r in short if r in refused_joins),
            "joins_closed": sum(1 for r in rows for _, err in r["closes_s"] if not err),
            "server_attempts_refused": sum(r["server_attempts_refused"] for r in rows),
            "join_rejected": sum(c.get("MPTcpExtMPJoinRejected", 0)
                                 for c in net["counters"].values()),
            "connect_errors": sum(c.get("MPTcpExtMPJoinSynTxConnectErr", 0)
                                  for c in net["counters"].values()),
            "hosts_with_syn_retrans": sum(1 for v in retrans.values() if v > 0),
            "syn_retrans": sum(retrans.values()),
            "join_syns": sum(c.get("MPTcpExtMPJoinSynTx", 0)
                             for c in net["counters"].values()),
            "restarts": len(net["restarts"]), "cpu_mean": net["cpu_mean"]}


def med(xs: list[float]) -> str:
    """Median of xs in seconds, or '-'."""
    return f"{statistics.median(xs):.3f}" if xs else "-"


def p90(xs: list[float]) -> str:
    """90th percentile of xs in seconds (nearest rank), or '-'."""
    return f"{sorted(xs)[int(0.9 * (len(xs) - 1))]:.3f}" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topo", default="fattree,k=4")
    ap.add_argument("--routing", default="ecmp")
    ap.add_argument("--bw", type=float, default=5.0)
    ap.add_argument("--variants", default="100:open,100:guard")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--trim", type=float, default=4.0)
    ap.add_argument("--cc", default="lia")
    ap.add_argument("--subflows", type=int, default=8)
    ap.add_argument("--events", default="", help="append every stamped event (JSON lines)")
    args = ap.parse_args()
    install_signal_handlers()
    variants: list[tuple[str, int, bool]] = []
    for v in args.variants.split(","):
        q, _, mode = v.partition(":")
        if not q.isdigit() or mode not in ("open", "guard"):
            raise SystemExit(f"bench_subflow_joins: variant {v!r} is not QUEUE:open or "
                             "QUEUE:guard")
        variants.append((v, int(q), mode == "guard"))
    due = max(1.0, args.trim - 0.5)
    print(f"bench_subflow_joins: {args.topo} {args.routing}, MPTCP-{args.subflows} "
          f"{args.cc}, {args.bw:g} Mb/s, variants {args.variants}, {args.seeds} seeds, "
          f"{args.duration:g} s, window due {due:g} s after a flow's start", flush=True)
    nets: dict[str, list[dict[str, Any]]] = {v: [] for v, _, _ in variants}
    for seed in range(1, args.seeds + 1):
        order = variants if seed % 2 else variants[::-1]
        for v, q, guard in order:
            s = summary(one(args, q, guard, seed), args.subflows, due)
            nets[v].append(s)
            print(f"  seed {seed} {v}: {s['connections']} connections "
                  f"({s['missing']} not seen), established {med(s['established'])} s, "
                  f"first join {med(s['first_join'])} s, join gap {med(s['gaps'])} s, "
                  f"all {args.subflows} {med(s['all_joined'])} s "
                  f"({len(s['all_joined'])} reached), short at {due:g} s {s['short']} "
                  f"({s['short_with_syn_retrans']} with a SYN sent again, "
                  f"{s['short_with_join_closed']} with a join closed at once), joins "
                  f"closed at once {s['joins_closed']}, joins rejected (servers' MIB) "
                  f"{s['join_rejected']}, servers' own subflows refused "
                  f"{s['server_attempts_refused']}, subflows that failed at connect "
                  f"{s['connect_errors']}, hosts with "
                  f"SYNs sent again {s['hosts_with_syn_retrans']}, SYNs sent again "
                  f"{s['syn_retrans']}, MP_JOIN SYNs {s['join_syns']}, restarts "
                  f"{s['restarts']}, CPU {s['cpu_mean']:.0f} %", flush=True)
    print("per variant, over all its networks (medians over connections):")
    for v, ss in nets.items():
        def pool(key: str, ss: list[dict[str, Any]] = ss) -> list[float]:
            return [x for s in ss for x in s[key]]
        n = sum(s["connections"] for s in ss)
        print(f"  {v}: {n} connections; established {med(pool('established'))} s; "
              f"first join {med(pool('first_join'))} s; join gap {med(pool('gaps'))} s "
              f"(p90 {p90(pool('gaps'))}); "
              f"all {args.subflows} joined {med(pool('all_joined'))} s "
              f"({len(pool('all_joined'))} of {n}); short at {due:g} s "
              f"{sum(s['short'] for s in ss)} ({sum(s['short_with_syn_retrans'] for s in ss)} "
              f"with a SYN sent again, {sum(s['short_with_join_closed'] for s in ss)} with a "
              f"join closed at once); joins closed at once "
              f"{sum(s['joins_closed'] for s in ss)}, rejected by the servers' MIB "
              f"{sum(s['join_rejected'] for s in ss)}; restarts {sum(s['restarts'] for s in ss)}; "
              f"SYNs sent again {sum(s['syn_retrans'] for s in ss)}")


if __name__ == "__main__":
    main()
