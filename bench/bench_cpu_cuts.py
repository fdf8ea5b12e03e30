"""The per-packet cuts of issue #22 side by side (root).  Prints figures, asserts nothing.

    .venv/bin/python bench/bench_cpu_cuts.py [--topo fattree,k=6] [--bw 10] [--seeds 3]
        [--duration 30] [--transport tcp|mptcp] [--cc CC] [--lock /tmp/dcrepro-heavy.lock]
        [--variant LABEL:DATAPLANE[:SHAPER[:IDLE_CPUS[:REV]]]]

Every variant runs the same ECMP permutation (``dcrepro run permutation --transport tcp
--runs 1 --seed S``; ``--transport mptcp`` for MPTCP-8) once per seed, interleaved (seed 1 of every variant, then seed 2,
...), so slow drifts of the machine fall on all of them alike.  Default variants:

  base           ``--dataplane bpf``: every packet counted in the switch's flow records, HTB
  flows=sampled  ``bpf,flows=sampled``: flow records sampled where the 5-tuple fixes the port
  tbf            ``--shaper tbf``: TBF + the same pfifo instead of HTB + pfifo
  both           both cuts

A fourth field sets ``--idle-cpus`` (halt, the default, or spin: a lowest-priority busy
loop per CPU, so that no vCPU halts; the CPU figures count the loops as niced work, not
load), e.g. ``spin:bpf:htb:spin``.  A fifth names a git revision to run instead of this
tree (checked out once into a detached worktree under the out folder, run with this
tree's venv, removed at the end), so that code before and after a change runs side by
side in one bench: ``before:bpf:htb:halt:HEAD~1``.  A sixth changes the machine for that
variant's runs only (restored after each), a comma list of: ``fifo``, the kernel's softirq
threads (ksoftirqd/N) at SCHED_FIFO priority 1, so that softirq work the kernel defers to
them no longer waits behind the hosts' processes; ``net.core.NAME=N``, that sysctl;
``batch=N``, the run's own ``--softirq-batch N`` (which sets net.core.dev_weight and
netdev_budget itself while the network is up, over any sysctl given here); ``lowat=N``,
the run's own ``--rcvlowat N`` (receivers woken once per N bytes), e.g.
``fifo:bpf:htb:auto::fifo``, ``kernel:bpf:htb:auto::batch=0`` or
``lowat:bpf:htb:auto::lowat=16384``.  ``napi`` (or ``napififo``, its threads then at SCHED_FIFO
priority 1): once the run's first iperf3 starts (the network is up, its offloads set), every
veth of the run, in the root namespace and in each host's, gets GRO on, which gives a veth a
NAPI instance of its own, and threaded NAPI, so that a packet crossing a veth is forwarded
by that device's kernel thread (napi/DEV-N) instead of in the NET_RX softirq of whatever
runs on the CPU (the run's packets are spaced at the link rate, so a poll seldom finds two of
one flow to merge); ``gro``: the same NAPI instances, polled in the softirq (no threads), in
place of the CPU's input backlog.  The run's report gets ``napi_veths`` (how many veths were
switched) and ``napi_threads`` (how many such threads ran).  ``schedbatch``: every thread
of every iperf3 of the run at SCHED_BATCH (a watcher sets each new one within 0.3 s), so that
a host process woken by a packet never preempts the CPU on the spot: a wake-up that
would (need_resched) also ends the softirq loop that is running, and what it had still
pending, an HTB timer's NET_TX among it, waits for ksoftirqd or a later interrupt; the
report gets ``batch_threads``.

``--bpf-stats`` turns kernel.bpf_stats_enabled on for the bench (restored after; every BPF
program run then pays two clock reads, in every variant alike) and looks at every
program's run time and count every PROG_SAMPLE_S s during each run (``bpftool -j prog
show``): per variant, the switch program's and the dequeue-gap probe's own ns per run and
ns per packet-hop (their run time over the switch program's runs in the same window: it
runs once per packet-hop).  These are the programs' own costs, exact where the busy CPU
per packet-hop moves ±10 % from seed to seed.  With a BPF congestion control (``--cc lia``,
``balia``, ``olia``, ``dctcp``), each of its ops the same way, by name: e.g. the cost of the
ssthresh-fault guard (docs/transports.md) is its ``in_ack_event`` and ``set_state`` ops,
side by side with the revision before it (``--variant before:bpf:::2a33932~1``).  A
program's own run time leaves out the struct_ops trampoline that calls it.

Per variant, from each run's own fidelity.json: the CPU (whole machine, mean of the run's
samples, per seed and the median over seeds; the share of samples above 90 %), busy CPU
microseconds per packet-hop (cpu_us_per_packet_hop: busy CPU seconds of the traffic window
over packets that entered switch ports), busy-link dequeue gaps within 10 % (full-size
frames), emulated/model aggregate, packets lost outside the queues (and, beside them, the
machine's input-backlog drops during the run: /proc/net/softnet_stat, where a veth's packet
waits for its softirq), and how many runs were ``suspect`` (with their reasons).  With
``--lock`` every run holds that lock (flock) for itself only, so other heavy work can
interleave between runs.  Run on an otherwise quiet machine: everything else competes for
the same cores.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, NamedTuple

from dataplanes.bpf.switch import bpf_stats
from emulator.proc import RunError, held_lock, run_group
from emulator.sysinfo import cpu_model
from harness.traffic import input_backlog_drops as backlog_drops

REPO = Path(__file__).resolve().parent.parent
#: how long one run may wait for --lock, and then take
LOCK_WAIT_S, RUN_TIMEOUT_S = 7200.0, 1800.0
#: seconds between two looks at the BPF programs' run statistics (--bpf-stats)
PROG_SAMPLE_S = 5.0
#: the programs --bpf-stats reports, by their kernel names (bpftool truncates to 15)
PROGS = {"switch": "dcrepro_switch", "probe": "on_dequeue"}
#: BPF congestion-control ops (emulator/bpf/cc: lia.bpf.c, which balia and olia build too,
#: and dctcp.bpf.c), each reported under its own name: they run per ACK or per loss event,
#: not per packet-hop, and the ssthresh-fault guard added ops of its own
CC_OP = re.compile(r"(lia|dctcp)_\w+")
VARIANTS = ("base:bpf", "flows=sampled:bpf,flows=sampled", "tbf:bpf:tbf",
            "both:bpf,flows=sampled:tbf")


#: the machine tweaks without a value (see machine_tweaks and the module's docstring)
MACHINE_WORDS = ("fifo", "napi", "napififo", "gro", "schedbatch")


class Variant(NamedTuple):
    """One column of the bench: its label, the run's dataplane, shaper and idle CPUs, and
    the git revision of the code ('' = this tree)."""

    label: str
    dataplane: str
    shaper: str = "htb"
    idle_cpus: str = "halt"
    rev: str = ""
    machine: str = ""


def parse_variant(text: str) -> Variant:
    """'LABEL:DATAPLANE[:SHAPER[:IDLE_CPUS[:REV[:MACHINE]]]]' -> Variant (the run's own
    validation checks the values, git the revision; MACHINE: see machine_tweaks)."""
    label, _, rest = text.partition(":")
    dataplane, _, rest = rest.partition(":")
    shaper, _, rest = rest.partition(":")
    idle, _, rest = rest.partition(":")
    rev, _, machine = rest.partition(":")
    bad = [t for t in machine.split(",") if t and t not in MACHINE_WORDS
           and not re.fullmatch(r"net\.core\.[a-z_]+=\d+|batch=\d+|lowat=\d+", t)]
    if not label or not dataplane or ":" in machine or bad:
        raise ValueError(f"--variant {text!r}: want LABEL:DATAPLANE[:SHAPER[:IDLE_CPUS[:REV"
                         f"[:{','.join(MACHINE_WORDS)},net.core.NAME=N,batch=N,lowat=N,...]]]]")
    return Variant(label, dataplane, shaper or "htb", idle or "halt", rev, machine)


@contextmanager
def machine_tweaks(spec: str) -> Iterator[None]:
    """The variant's machine changes for the block, undone after (also on errors): each
    ``net.core.NAME=N`` sysctl set and restored, ``fifo`` as softirq_threads (``batch=N``
    and ``lowat=N`` are the run's own flags: one() passes them)."""
    tweaks = spec.split(",")
    saved: dict[Path, str] = {}
    try:
        for t in tweaks:
            if t.startswith("net.core."):
                name, _, value = t.partition("=")
                knob = Path("/proc/sys") / name.replace(".", "/")
                saved[knob] = knob.read_text().strip()
                knob.write_text(value)
        with softirq_threads("fifo" if "fifo" in tweaks else ""):
            yield
    finally:
        for knob, value in saved.items():
            knob.write_text(value)


def pids_named(prefix: str) -> list[int]:
    """The processes (and kernel threads) whose name starts with ``prefix``."""
    pids = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().startswith(prefix):
                pids.append(int(comm.parent.name))
        except (OSError, ValueError):
            continue
    return pids


@contextmanager
def softirq_threads(policy: str) -> Iterator[int]:
    """With 'fifo': every ksoftirqd/N at SCHED_FIFO priority 1 for the block, SCHED_OTHER
    again after (also on errors); yields how many threads were changed."""
    pids = pids_named("ksoftirqd/") if policy == "fifo" else []
    changed = []
    try:
        for pid in pids:
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(1))
            changed.append(pid)
        yield len(changed)
    finally:
        for pid in changed:
            try:
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass


class Watcher:
    """A tweak that works beside one run, in a thread of its own from the block's start to
    its end (``_loop`` returns once ``_stop`` is set)."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _loop(self) -> None:
        raise NotImplementedError


class VethNapi(Watcher):
    """The ``napi`` and ``gro`` tweaks (see the module's docstring): waits for the run's
    first iperf3, then turns GRO (and with ``threaded`` threaded NAPI) on for every veth,
    once; ``veths`` counts the veths switched, ``threads`` the napi/ threads."""

    def __init__(self, threaded: bool, fifo: bool) -> None:
        super().__init__()
        self.threaded, self.fifo, self.veths, self.threads = threaded, fifo, 0, 0

    def _loop(self) -> None:
        while not pids_named("iperf3"):
            if self._stop.wait(0.2):
                return
        root = os.readlink("/proc/self/ns/net")
        spaces: dict[str, int] = {}
        for pid in pids_named(""):
            try:
                spaces.setdefault(os.readlink(f"/proc/{pid}/ns/net"), pid)
            except OSError:
                continue
        script = ("for d in /sys/class/net/*; do n=${d##*/}; "
                  "ethtool -i $n 2>/dev/null | grep -q 'driver: veth' || continue; "
                  "ethtool -K $n gro on && echo $n"
                  f"{' && echo 1 > $d/threaded' if self.threaded else ''}; done")
        for space, pid in spaces.items():
            cmd = (["sh", "-c", script] if space == root else
                   ["nsenter", f"--net=/proc/{pid}/ns/net", "unshare", "-m", "sh", "-c",
                    f"mount -t sysfs sysfs /sys && {script}"])
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                                     check=False).stdout
            except subprocess.TimeoutExpired:
                continue   # that namespace's veths stay as they were; veths says how many
            self.veths += len(out.split())
        napi = pids_named("napi/")
        for pid in napi if self.fifo else []:
            try:
                os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(1))
            except OSError:
                pass
        self.threads = len(napi)


class BatchHosts(Watcher):
    """The ``schedbatch`` tweak (see the module's docstring): sets every thread of every
    iperf3 to SCHED_BATCH as they appear (every 0.3 s); ``threads`` counts them."""

    def __init__(self) -> None:
        super().__init__()
        self.threads = 0
        self._done: set[int] = set()

    def _loop(self) -> None:
        while not self._stop.wait(0.3):
            for pid in pids_named("iperf3"):
                for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
                    tid = int(task.name)
                    if tid in self._done:
                        continue
                    try:
                        os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
                    except OSError:
                        continue
                    self._done.add(tid)
        self.threads = len(self._done)


@contextmanager
def worktrees(revs: set[str], root: Path) -> Iterator[dict[str, Path]]:
    """rev -> a detached worktree of it under ``root``, removed on the way out."""
    trees: dict[str, Path] = {}
    try:
        for rev in sorted(revs):
            where = root / f"tree-{len(trees)}"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where),
                            rev], check=True, capture_output=True, timeout=120)
            trees[rev] = where
        yield trees
    finally:
        for where in trees.values():
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(where)], capture_output=True, timeout=120)


def prog_totals() -> dict[int, tuple[str, int, int]]:
    """Every loaded BPF program: id -> (name, run_time_ns, run_cnt); {} if bpftool fails."""
    try:
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
                             text=True, timeout=20).stdout
        return {p["id"]: (p.get("name", ""), p.get("run_time_ns", 0), p.get("run_cnt", 0))
                for p in json.loads(out or "[]")}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {}


class ProgSampler:
    """While open, looks at the programs' statistics every PROG_SAMPLE_S s; ``costs()``:
    window_costs of those looks."""

    def __init__(self) -> None:
        self.looks: list[dict[int, tuple[str, int, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="prog-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(PROG_SAMPLE_S):
            self.looks.append(prog_totals())

    def __enter__(self) -> ProgSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)

    def costs(self) -> dict[str, float]:
        return window_costs(self.looks)


def window_costs(looks: list[dict[int, tuple[str, int, int]]]) -> dict[str, float]:
    """From successive looks (id -> (name, ns, runs)): '<prog>_ns_per_run',
    '<prog>_runs_per_packet_hop' and '<prog>_ns_per_packet_hop' for each PROGS entry and
    each congestion-control op seen (CC_OP, labelled 'cc <name>'), over
    the looks from the first to the last that saw a switch program (whose runs are the
    packet-hops).  A program counts from the window's first look (or from 0, if it was
    loaded later) to its own last look inside the window (the probe is closed before the
    switch); {} without two looks that saw a switch program."""
    at = [i for i, lk in enumerate(looks) if any(n == PROGS["switch"] for n, _, _ in lk.values())]
    if len(at) < 2:
        return {}
    window = looks[at[0]:at[-1] + 1]

    def delta(name: str) -> tuple[int, int]:
        ends: dict[int, tuple[int, int]] = {}
        for lk in window:
            ends.update({pid: (t, c) for pid, (n, t, c) in lk.items() if n == name})
        ns = runs = 0
        for pid, (t, c) in ends.items():
            _, t0, c0 = window[0].get(pid, (name, 0, 0))
            ns, runs = ns + t - t0, runs + c - c0
        return ns, runs
    hops = delta(PROGS["switch"])[1]
    out: dict[str, float] = {}
    ops = sorted({n for lk in window for n, _, _ in lk.values() if CC_OP.fullmatch(n)})
    for label, name in [*PROGS.items(), *((f"cc {n}", n) for n in ops)]:
        ns, runs = delta(name)
        if runs:
            out[f"{label}_ns_per_run"] = round(ns / runs, 1)
        if hops:
            out[f"{label}_runs_per_packet_hop"] = round(runs / hops, 3)
            out[f"{label}_ns_per_packet_hop"] = round(ns / hops, 1)
    return out


def one(topo: str, bw: float, duration: float, seed: int, v: Variant,
        out: Path, lock: str | None, tree: Path | None = None,
        transport: str = "tcp", sample_progs: bool = False, cc: str = "") -> dict[str, Any]:
    """One run (of ``tree``'s code, None: this tree; ``cc``: its --cc, '' the default);
    its fidelity report (of its one transport) with the programs' costs if
    ``sample_progs``, or {'failed': why}."""
    code = tree or REPO
    cli = ["env", f"PYTHONPATH={code}", str(REPO / ".venv/bin/python"), "-c",
           "import sys; from dcrepro.cli import main; sys.exit(main())"]
    cmd = [*cli, "run", "permutation", "--topo", topo,
           "--transport", transport, "--runs", "1", "--seed", str(seed), "--duration",
           str(duration), "--trim", "5", "--bw", str(bw), "--dataplane", v.dataplane,
           "--shaper", v.shaper, "--idle-cpus", v.idle_cpus, "--out", str(out)]
    cmd += ["--cc", cc] if cc else []
    cmd += [f"--softirq-batch={t.split('=')[1]}" for t in v.machine.split(",")
            if t.startswith("batch=")]
    cmd += [f"--rcvlowat={t.split('=')[1]}" for t in v.machine.split(",")
            if t.startswith("lowat=")]
    sampler = ProgSampler()
    tweaks = v.machine.split(",")
    napi = VethNapi(threaded="gro" not in tweaks, fifo="napififo" in tweaks)
    batch = BatchHosts()
    try:   # every wait bounded: the lock's and the run's
        with held_lock(lock, LOCK_WAIT_S), machine_tweaks(v.machine), \
                (sampler if sample_progs else nullcontext()), \
                (napi if {"napi", "napififo", "gro"} & set(tweaks) else nullcontext()), \
                (batch if "schedbatch" in tweaks else nullcontext()):
            drops = backlog_drops()
            p = run_group(cmd, RUN_TIMEOUT_S, str(code))
            drops = backlog_drops() - drops
    except RunError as e:
        return {"failed": str(e)}
    runs = sorted((out / "permutation").iterdir()) if (out / "permutation").exists() else []
    if p.returncode != 0 or not runs:
        return {"failed": failure(runs[-1] if runs else None, p.stderr)}
    report = json.loads((runs[-1] / "fidelity.json").read_text())["reports"][0]
    return dict(report, folder=str(runs[-1]), backlog_drops=drops, napi_veths=napi.veths,
                napi_threads=napi.threads, batch_threads=batch.threads,
                **sampler.costs())


def failure(folder: Path | None, stderr: str) -> str:
    """Why a run failed: the error its run folder recorded (status.json), else the last
    error line it printed (a warning printed before it is not the reason)."""
    try:
        error = json.loads((folder / "status.json").read_text()).get("error") if folder else None
    except (OSError, ValueError):
        error = None
    return error or next((l for l in reversed(stderr.splitlines())
                          if l.startswith("dcrepro:") and "WARNING" not in l),
                         stderr.strip()[-300:])


def fmt(values: list[float], spec: str) -> str:
    """'median (a, b, c)' of the values."""
    if not values:
        return "-"
    return (f"{statistics.median(values):{spec}} ("
            + ", ".join(f"{v:{spec}}" for v in values) + ")")


def table(results: dict[str, list[dict[str, Any]]]) -> None:
    """One row per figure, one column per variant (markdown)."""
    labels = list(results)
    ok = {k: [r for r in v if "failed" not in r] for k, v in results.items()}

    def row(name: str, pick: Any, spec: str) -> None:
        cells = [fmt([pick(r) for r in ok[k] if pick(r) is not None], spec) for k in labels]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| median (per seed) | " + " | ".join(f"`{k}`" for k in labels) + " |")
    print("|---|" + "---|" * len(labels))
    row("CPU, whole machine, mean of the run, %", lambda r: r.get("cpu_mean"), ".1f")
    row("share of CPU samples above 90 %", lambda r: r.get("cpu_saturated_share"), ".2f")
    row("niced work beside the run, share of the machine", lambda r: r.get("cpu_nice_share"),
        ".3f")
    row("steal, share of the machine", lambda r: r.get("cpu_steal_share"), ".3f")
    row("busy CPU per packet-hop, us", lambda r: r.get("cpu_us_per_packet_hop"), ".2f")
    row("busy-link gaps within 10 %, full-size frames",
        lambda r: r.get("gaps_within_10pct"), ".4f")
    row("emulated / model, aggregate", lambda r: r.get("aggregate_ratio"), ".3f")
    row("mean normalized throughput", lambda r: r.get("mean_norm_emulated"), ".3f")
    ops = sorted({k[:-len("_ns_per_run")] for rs in ok.values() for r in rs for k in r
                  if k.startswith("cc ") and k.endswith("_ns_per_run")})
    for prog in [*PROGS, *ops]:
        if any(f"{prog}_ns_per_run" in r for rs in ok.values() for r in rs):
            row(f"{prog} program, ns per run", lambda r, p=prog: r.get(f"{p}_ns_per_run"),
                ".0f")
            row(f"{prog} program, runs per packet-hop",
                lambda r, p=prog: r.get(f"{p}_runs_per_packet_hop"), ".2f")
            row(f"{prog} program, ns per packet-hop",
                lambda r, p=prog: r.get(f"{p}_ns_per_packet_hop"), ".0f")
    if any(r.get("napi_veths") for rs in ok.values() for r in rs):
        row("veths with NAPI (the napi and gro tweaks)",
            lambda r: r.get("napi_veths"), ".0f")
        row("napi threads", lambda r: r.get("napi_threads"), ".0f")
    if any(r.get("batch_threads") for rs in ok.values() for r in rs):
        row("iperf3 threads at SCHED_BATCH (the schedbatch tweak)",
            lambda r: r.get("batch_threads"), ".0f")
    row("tail drops in the queues", lambda r: r.get("queue_drops"), ".0f")
    row("lost outside the queues", lambda r: r.get("emulator_drops"), ".0f")
    row("still queued when the counters were read", lambda r: r.get("queued_at_end"), ".0f")
    row("of the machine: input-backlog drops during the run", lambda r: r.get("backlog_drops"),
        ".0f")
    print("| runs suspect (why: runs) | " + " | ".join(
        f"{sum(1 for r in ok[k] if r.get('suspect'))} of {len(results[k])}"
        + (f" ({why(ok[k])})" if why(ok[k]) else "")
        + "".join(f" (failed: {r['failed'][:80]})" for r in results[k] if "failed" in r)
        for k in labels) + " |")


#: the fidelity judge's reasons, by a word each holds
REASONS = {"CPU": "CPU", "dequeue gaps": "gaps", "model": "model", "outside": "loss",
           "limited": "not cwnd-limited", "apart": "apart"}


def why(reports: list[dict[str, Any]]) -> str:
    """'CPU 3, gaps 2': how many suspect runs gave each kind of reason."""
    counts = {short: sum(1 for r in reports if any(word in x for x in r.get("reasons") or []))
              for word, short in REASONS.items()}
    return ", ".join(f"{k} {n}" for k, n in counts.items() if n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topo", default="fattree,k=6")
    ap.add_argument("--bw", type=float, default=10.0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--transport", choices=("tcp", "mptcp"), default="tcp")
    ap.add_argument("--cc", default="", help="the runs' congestion control (default: the "
                    "run's own), e.g. lia with --transport mptcp")
    ap.add_argument("--bpf-stats", action="store_true",
                    help="count the switch program's, the probe's and the BPF congestion "
                         "controls' ops' own run time")
    ap.add_argument("--lock", default=None, help="flock this file around every run")
    ap.add_argument("--variant", action="append", default=None,
                    help="LABEL:DATAPLANE[:SHAPER[:IDLE_CPUS[:REV]]], repeatable (default: "
                         "base, flows=sampled, tbf, both)")
    ap.add_argument("--out", default=None, help="results root (default: a temp folder)")
    ap.add_argument("--table", default=None, help="print the table of an earlier bench's "
                    "cpu_cuts.json, run nothing")
    args = ap.parse_args()
    if args.table:
        table(json.loads(Path(args.table).read_text()))
        return 0
    variants = [parse_variant(v) for v in args.variant or VARIANTS]
    root = Path(args.out or tempfile.mkdtemp(prefix="dcrepro-cpucuts-"))
    print(f"bench_cpu_cuts: {args.topo}, {args.transport.upper()} permutation at {args.bw:g} Mb/s, "
          f"cc {args.cc or 'default'}, "
          f"{args.duration:g}-s flows, seeds 1..{args.seeds}, {os.cpu_count()} CPUs "
          f"({cpu_model()}: per-packet figures differ by CPU model, compare within one); "
          f"out {root}", flush=True)
    results: dict[str, list[dict[str, Any]]] = {v.label: [] for v in variants}
    with (bpf_stats() if args.bpf_stats else nullcontext()), \
            worktrees({v.rev for v in variants if v.rev}, root) as trees:
        for seed in range(1, args.seeds + 1):
            for v in variants:
                dest = root / f"{v.label.replace('=', '-')}-seed{seed}"
                r = one(args.topo, args.bw, args.duration, seed, v, dest, args.lock,
                        trees.get(v.rev), args.transport, args.bpf_stats, args.cc)
                results[v.label].append(r)
                print(f"  seed {seed} {v.label}: " + (
                      f"failed: {r['failed']}" if "failed" in r else
                      f"CPU {r.get('cpu_mean')} %, {r.get('cpu_us_per_packet_hop')} "
                      f"us/packet-hop, gaps {r.get('gaps_within_10pct')}, emulated/model "
                      f"{r.get('aggregate_ratio')}, lost outside {r.get('emulator_drops')}, "
                      f"suspect {r.get('suspect')}"), flush=True)
    print()
    table(results)
    (root / "cpu_cuts.json").write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
