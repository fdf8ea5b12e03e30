"""Launchers that hand a sweep's runs to other engines: GNU parallel (this machine, or
several over ssh) and Slurm job arrays.  The in-process ``local`` launcher is
``sweep.run_sweep``.

Every launcher does the same three things: compute "manifest minus complete" at launch
time and write it to ``missing.txt`` in the sweep folder, hand out exactly those run ids,
each as ``dcrepro run-one MANIFEST RUN_ID`` (which is idempotent and takes a per-run lock,
so a retried or doubly launched run is never written twice), and collect at the end
(``sweep.finish``).  A failed, killed or cancelled run therefore needs no bookkeeping of its
own: the next launch finds it missing and hands it out again.

Assumptions, checked before anything is started: every host has this checkout at the same
path (same code version: run-one refuses another), and the sweep folder is shared (NFS or
the like), since run-one writes into it.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm  # the ETA's format, as dcrepro/sweep.py's

from .sweep import Progress, check_code, finish, read_manifest, state, todo

ENGINES = ("local", "parallel", "slurm")
#: seconds between looks at the sweep folder (progress) and at Slurm's queue
POLL_S = 1.0
#: a run interrupted by a launcher's stop gets SIGINT and this long to tear its network
#: down (dcrepro's own cleanup) before TERM, then KILL
GRACE_MS = 30000


@dataclass
class Options:
    """What the launchers take from the command line."""
    hosts: Path | None = None        # parallel: GNU parallel --sshloginfile; None: here
    retries: int = 1                 # parallel: attempts per run within one launch
    concurrency: int = 1             # slurm: array tasks at once (%N)
    timeout: float = 24 * 3600.0     # the whole launch; then everything started is stopped
    mixed: bool = False              # collect: accept runs from differing machines
    redo_flagged: bool = False       # run again the runs kept as invalid (flagged)


def dcrepro_command() -> list[str]:
    """How a job starts dcrepro: the venv's entry point by absolute path (not resolved: the
    venv's python is a symlink whose target would lose the venv), or ``python -m``."""
    exe = os.path.abspath(sys.executable)
    script = os.path.join(os.path.dirname(exe), "dcrepro")
    return [script] if os.access(script, os.X_OK) else [exe, "-m", "dcrepro.cli"]


def runone_command(manifest: Path, dcrepro: list[str] | None = None) -> list[str]:
    """``dcrepro run-one /abs/MANIFEST`` (the run id is appended by the engine)."""
    return [*(dcrepro or dcrepro_command()), "run-one", str(manifest.resolve())]


def write_ids(sweep_dir: Path, lines: list[dict[str, Any]]) -> Path:
    """missing.txt: one run id a line, what this launch hands out (array task i = line i+1)."""
    path = sweep_dir / "missing.txt"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(f"{x['run_id']}\n" for x in lines))
    tmp.replace(path)
    return path


# --- checks before anything starts (ValueError: one line, exit 2) -------------------------

def read_hosts(path: Path) -> list[str]:
    """The host file: one ``[user@]host`` or ``:`` (this machine) a line, ``#`` comments."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"--hosts {path}: cannot read it ({exc.strerror})") from None
    hosts = [h.strip() for h in text.splitlines() if h.strip() and not h.strip().startswith("#")]
    if not hosts:
        raise ValueError(f"--hosts {path}: no hosts in it (one [user@]host or : a line)")
    for h in hosts:
        if re.match(r"^\d+/", h):
            raise ValueError(f"--hosts {path}: {h!r}: drop the job count; every host runs one "
                             "run at a time (an emulation takes the whole machine)")
        if " " in h or "\t" in h:
            raise ValueError(f"--hosts {path}: {h!r}: write [user@]host only; put ssh options "
                             "in ~/.ssh/config")
    return hosts


def check_hosts(hosts: list[str], need: list[str], timeout: float = 30.0) -> None:
    """Every host other than ``:`` answers ssh without a password and sees the paths in
    ``need`` (the dcrepro program and the results folder): ValueError naming the first
    host that does not."""
    remote = [h for h in hosts if h != ":"]
    if remote and not shutil.which("ssh"):
        raise ValueError("--hosts: ssh is not installed (apt-get install openssh-client)")
    test = " && ".join(f"test -e {shlex.quote(p)}" for p in need) or "true"
    for h in remote:
        try:
            p = subprocess.run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", h,
                                test], capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            raise ValueError(f"--hosts: {h} is unreachable (ssh gave no answer in "
                             f"{timeout:.0f} s)") from None
        if p.returncode == 255:  # ssh's own failure: network, host key, authentication
            why = (p.stderr.strip().splitlines() or ["no reason given"])[-1]
            raise ValueError(f"--hosts: {h} is unreachable ({why})")
        if p.returncode != 0:
            raise ValueError(f"--hosts: {h} does not see {' or '.join(need)} (every host needs "
                             "this checkout at the same path and the results folder shared)")


def check_engine(engine: str, opts: Options, out: Path) -> None:
    """Everything an engine needs, before the manifest is written or anything started."""
    if engine != "parallel" and opts.hosts is not None:
        raise ValueError("--hosts is for --engine parallel")
    if engine != "slurm" and opts.concurrency != 1:
        raise ValueError("--concurrency is for --engine slurm")
    if opts.retries < 1:
        raise ValueError(f"--retries must be >= 1, got {opts.retries}")
    if opts.concurrency < 1:
        raise ValueError(f"--concurrency must be >= 1, got {opts.concurrency}")
    if opts.timeout <= 0:
        raise ValueError(f"--launch-timeout must be > 0, got {opts.timeout}")
    if engine == "parallel":
        if not shutil.which("parallel"):
            raise ValueError("--engine parallel: GNU parallel is not installed "
                             "(./setup.sh --with-slurm installs it)")
        if opts.hosts is not None:
            check_hosts(read_hosts(opts.hosts), [dcrepro_command()[0], str(out.resolve())])
    if engine == "slurm":
        for tool in ("sbatch", "squeue", "scancel"):
            if not shutil.which(tool):
                raise ValueError(f"--engine slurm: {tool} not found (./setup.sh --with-slurm "
                                 "installs Slurm's client; a cluster must be configured)")


# --- GNU parallel --------------------------------------------------------------------------

def parallel_argv(runone: list[str], ids: Path, joblog: Path, hosts: Path | None,
                  retries: int) -> list[str]:
    """The GNU parallel command line: one run per host at a time (``--jobs 1`` is per
    sshlogin), the run id appended to the run-one command."""
    return ["parallel", "--will-cite", "--jobs", "1",
            *(["--sshloginfile", str(hosts.resolve())] if hosts else ["--sshlogin", ":"]),
            "--joblog", f"+{joblog}",          # '+': append, one file for every launch
            "--retries", str(retries),
            "--termseq", f"INT,{GRACE_MS},TERM,10000,KILL,25",
            "--line-buffer", "--tag",          # live output, each line led by its run id
            "--arg-file", str(ids),
            shlex.join(runone) + " {}"]


def run_process(argv: list[str], timeout: float, tick: Callable[[], None],
                say: Callable[[str], None]) -> int:
    """Run a launcher process in its own process group (a Ctrl-C in the terminal reaches
    only dcrepro, which then stops it in order); its exit code, or 124 after ``timeout``."""
    from emulator.proc import signals_deferred
    with signals_deferred():   # no Ctrl-C between the start and knowing the child
        proc = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                return proc.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                tick()
            if time.monotonic() > deadline:
                say(f"launch timeout ({timeout:.0f} s): stopping {argv[0]}")
                _stop(proc)
                return 124
    except KeyboardInterrupt:
        with signals_deferred(f"sweep: stopping {argv[0]} and its runs (at most "
                              f"{GRACE_MS // 1000 + 20} s)"):
            _stop(proc)
        raise


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """TERM to the launcher (GNU parallel then sends --termseq to every job, remote ones
    too), wait for it, then KILL whatever is left in its process group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=GRACE_MS / 1000 + 20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=10)


# --- Slurm ---------------------------------------------------------------------------------

def slurm_script(sweep_dir: Path, runone: list[str], ids: Path, count: int,
                 concurrency: int) -> str:
    """A batch script for a job array of ``count`` tasks, ``concurrency`` at once, each task
    on a whole node; task i runs line i+1 of ``ids``."""
    sweep_dir = sweep_dir.resolve()
    return f"""#!/bin/bash
# dcrepro sweep {sweep_dir.name}: one array task per line of {ids.name} (written at launch)
#SBATCH --job-name=dcrepro-{re.sub(r'[^A-Za-z0-9_.=,-]', '_', sweep_dir.name)}
#SBATCH --array=0-{count - 1}%{concurrency}
#SBATCH --exclusive
#SBATCH --nodes=1
#SBATCH --output={sweep_dir}/slurm/%A_%a.out
# --exclusive: an emulation needs the whole machine (one run per node at a time)
set -euo pipefail
run_id=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" {shlex.quote(str(ids.resolve()))})
exec {shlex.join(runone)} "$run_id"
"""


class Slurm:
    """The three Slurm calls a launch makes (a test replaces them)."""

    def submit(self, script: Path) -> str:
        """sbatch the script: its job id (ValueError with sbatch's message if refused)."""
        p = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True,
                           text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            raise ValueError(f"sbatch refused the array: {p.stderr.strip() or p.stdout.strip()}")
        return p.stdout.strip().split(";")[0]

    def queued(self, job: str) -> bool:
        """True while any task of the job is pending or running."""
        try:
            p = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i"], capture_output=True,
                               text=True, timeout=30, check=False)
        except subprocess.TimeoutExpired:
            return True          # slurmctld busy: look again, the launch timeout bounds it
        if p.returncode != 0:    # a job purged from slurmctld's memory is unknown: finished
            return "Invalid job id" not in p.stderr
        return bool(p.stdout.strip())

    def cancel(self, job: str) -> None:
        """scancel the whole array."""
        subprocess.run(["scancel", job], capture_output=True, timeout=30, check=False)


def run_array(slurm: Slurm, script: Path, timeout: float, tick: Callable[[], None],
              say: Callable[[str], None]) -> int:
    """Submit, then poll the queue until the array is gone: 0, or 124 after ``timeout``
    (the array is cancelled then, and on Ctrl-C)."""
    from emulator.proc import signals_deferred
    with signals_deferred():   # a job id is known before a Ctrl-C can act
        job = slurm.submit(script)
    say(f"slurm job {job} submitted ({script})")
    deadline = time.monotonic() + timeout
    try:
        while slurm.queued(job):
            if time.monotonic() > deadline:
                say(f"launch timeout ({timeout:.0f} s): cancelling slurm job {job}")
                _cancel(slurm, job)
                return 124
            tick()
            time.sleep(POLL_S)   # a poll interval, not a synchronisation
        return 0
    except KeyboardInterrupt:
        with signals_deferred(f"sweep: cancelling slurm job {job}"):
            say(f"interrupted: cancelling slurm job {job}")
            _cancel(slurm, job)
        raise


def _cancel(slurm: Slurm, job: str, wait: float = 60.0) -> None:
    """scancel, then wait (bounded) for the tasks to leave the queue: a cancelled task gets
    SIGTERM, and dcrepro tears its network down before it goes."""
    slurm.cancel(job)
    deadline = time.monotonic() + wait
    while slurm.queued(job) and time.monotonic() < deadline:
        time.sleep(0.2)


# --- the launch ----------------------------------------------------------------------------

def launch(engine: str, manifest: Path, code: str, opts: Options,
           runner: Callable[..., int] = run_process, slurm: Slurm | None = None,
           dcrepro: list[str] | None = None) -> int:
    """Hand the runs of ``manifest`` that are not complete to ``engine`` (parallel or
    slurm), wait for them, collect.  Exit code as ``sweep.finish``; 2 (one line, nothing
    started) if the manifest was planned with code other than ``code``."""
    header, lines = read_manifest(manifest)
    try:
        check_code(header, manifest, code)
    except ValueError as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    sweep_dir = manifest.parent
    say = Progress(sweep_dir)
    try:
        pending = todo(sweep_dir, lines, opts.redo_flagged)
        say(f"{len(lines)} runs, {len(lines) - len(pending)} already finished, "
            f"{len(pending)} to run (engine {engine})")
        code_rc = 0
        if pending:
            ids = write_ids(sweep_dir, pending)
            runone = runone_command(manifest, dcrepro) + (["--redo-flagged"]
                                                          if opts.redo_flagged else [])
            tick = _ticker(sweep_dir, pending, say)
            if engine == "parallel":
                argv = parallel_argv(runone, ids, sweep_dir / "parallel.joblog", opts.hosts,
                                     opts.retries)
                say(f"hosts: {opts.hosts or 'this machine only'}; joblog "
                    f"{sweep_dir / 'parallel.joblog'}")
                code_rc = runner(argv, opts.timeout, tick, say)
            elif engine == "slurm":
                (sweep_dir / "slurm").mkdir(exist_ok=True)
                script = sweep_dir / "slurm-job.sh"
                script.write_text(slurm_script(sweep_dir, runone, ids, len(pending),
                                               opts.concurrency))
                try:
                    code_rc = run_array(slurm or Slurm(), script, opts.timeout, tick, say)
                except ValueError as exc:
                    print(f"dcrepro: error: {exc}", file=sys.stderr)
                    return 2
            else:
                raise ValueError(f"unknown engine {engine!r}")
            tick()
        return finish(sweep_dir, lines, say, code_rc, opts.mixed)
    except KeyboardInterrupt:
        say("interrupted; run the same command again to resume")
        raise
    finally:
        say.close()


def _ticker(sweep_dir: Path, pending: list[dict[str, Any]],
            say: Callable[[str], None]) -> Callable[[], None]:
    """A progress line (and ETA) each time another handed-out run finishes (complete, or
    kept as invalid when its fidelity check flagged it)."""
    t0, seen = time.monotonic(), [0]

    def tick() -> None:
        done = sum(state(sweep_dir, x["run_id"]) != "missing" for x in pending)
        if done != seen[0]:
            seen[0] = done
            spent = time.monotonic() - t0
            left = len(pending) - done
            say(f"[{done}/{len(pending)}] finished" +
                (f", ETA {tqdm.format_interval(spent / done * left)}" if done and left else ""))
    return tick
