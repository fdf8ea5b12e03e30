"""``dcrepro sweep`` and ``dcrepro run-one``: one experiment over a grid of parameter values,
as a manifest of runs that any launcher can hand out, resumable.

A sweep lives in ``<out>/sweeps/<name>/``:

* ``manifest.jsonl``: a header (experiment, code version) and one line per run: a stable
  run id (a hash of the experiment, its full parameters and the code version), the grid
  values, the parameters, the exact command that runs it, and what machine it needs;
* ``runs/<run id>/``: a complete run folder (status ``ok``), moved there in one rename once
  it ended, with ``fingerprint.json`` (the machine it ran on); ``runs/<run id>.invalid/``:
  one that ended ``ok`` but whose numbers are ``suspect``: finished and flagged (the next
  launch does not redo it unless ``--redo-flagged``: completion and trust are separate);
* ``work/``: runs in progress or failed (their folders stay as a record);
* ``progress.log`` and, at the end, ``summary.csv`` (every finished run's summary rows with
  the grid values and its ``flagged`` reason in front), refused when the runs come from
  machines that differ.

``run_one`` is the only thing that runs a manifest line: it returns at once when the run
finished, takes a lock so that two launches of one run never both write it, runs in
``work/`` and moves the folder into place last.  ``run_sweep`` (the ``local`` launcher,
one launch per sweep folder) calls it for every run that has not finished, so a Ctrl-C, a
crash or a failed run costs only the runs not yet finished.
"""
from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import platform
import re
import shlex
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the ETA of a progress line in tqdm's format ('05:42', '1:02:05'), as the run's own bar
from tqdm import tqdm

from store import read_csv, status_of, write_csv

#: run-one's exit code when another launch holds the run (EX_TEMPFAIL)
BUSY = 75


def parse_grid(items: list[str], defaults: dict[str, Any],
               types: dict[str, type] | None = None) -> dict[str, list[Any]]:
    """``--grid key=v1/v2`` items (repeatable) -> key -> values, typed like the default (or
    as ``types`` says: harness.params.param_types knows the None defaults' types)."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not text:
            raise ValueError(f"--grid {item!r}: write KEY=VALUE[/VALUE...]")
        if key not in defaults:
            raise ValueError(f"--grid {item!r}: unknown parameter {key!r} (one of "
                             f"{', '.join(sorted(defaults))})")
        kind = types[key] if types else type(defaults[key])
        for raw in text.split("/"):
            try:
                value = kind(raw) if kind is not bool else raw.lower() in ("1", "true")
            except ValueError:
                raise ValueError(f"--grid {item!r}: {raw!r} is not a {kind.__name__}") from None
            values = grid.setdefault(key, [])
            if value in values:
                raise ValueError(f"--grid {item!r}: {key}={raw} given twice")
            values.append(value)
    return grid


def points(base: dict[str, Any], grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values over the base parameters, in grid order."""
    keys = list(grid)
    out = []
    for i, combo in enumerate(itertools.product(*(grid[k] for k in keys))):
        values = dict(zip(keys, combo))
        label = ",".join(f"{k}={v}" for k, v in values.items()) or "base"
        out.append({"index": i, "label": label, "values": values,
                    "params": {**base, **values}})
    return out


def run_id(experiment: str, params: dict[str, Any], code: str) -> str:
    """Stable identity of one run: experiment, every parameter, the code version."""
    text = json.dumps([experiment, params, code], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def command(experiment: str, params: dict[str, Any]) -> list[str]:
    """The `dcrepro run` command line that runs these parameters (for people and logs)."""
    argv = ["dcrepro", "run", experiment]
    for k, v in params.items():
        if k == "quick":
            continue
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return argv


def write_manifest(sweep_dir: Path, experiment: str, pts: list[dict[str, Any]],
                   code: str) -> list[dict[str, Any]]:
    """Write manifest.jsonl, or check that the existing one is this sweep at this code
    version (ValueError, one line, otherwise).  Returns the run lines."""
    header = {"experiment": experiment, "code": code}
    lines = [{"run_id": run_id(experiment, p["params"], code), "index": p["index"],
              "label": p["label"], "values": p["values"], "params": p["params"],
              "command": shlex.join(command(experiment, p["params"])),
              "needs": "any" if p["params"].get("backend") == "model" else
              f"root, dataplane {p['params'].get('dataplane', 'any')}"} for p in pts]
    path = sweep_dir / "manifest.jsonl"
    if path.exists():
        old_header, old = read_manifest(path)
        if old_header["experiment"] != experiment or \
                [r["params"] for r in old] != json.loads(json.dumps([r["params"] for r in lines])):
            raise ValueError(f"{sweep_dir} holds a different sweep (experiment, grid or "
                             "parameters differ); choose another --name")
        if old_header["code"] != code:
            raise ValueError(f"{path} was planned with code {old_header['code']}, this is "
                             f"{code}; finish it with that version or choose another --name")
        return old
    sweep_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(x, default=str) + "\n" for x in [header, *lines]))
    tmp.replace(path)
    return lines


def read_manifest(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and run lines of a manifest (ValueError, one line, if it is not one)."""
    try:
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        header, lines = rows[0], rows[1:]
        assert "code" in header and all("run_id" in r for r in lines)
    except (OSError, ValueError, IndexError, AssertionError):
        raise ValueError(f"{path}: not a dcrepro sweep manifest") from None
    return header, lines


def check_code(header: dict[str, Any], path: Path, code: str) -> None:
    """ValueError (one line) unless the manifest at ``path`` was planned with ``code``."""
    if header["code"] != code:
        raise ValueError(f"{path} was planned with code {header['code']}, this is {code}")


def todo(sweep_dir: Path, lines: list[dict[str, Any]],
         redo_flagged: bool = False) -> list[dict[str, Any]]:
    """Manifest minus finished, in manifest order: the missing runs, and with
    ``redo_flagged`` the ones kept as invalid (finished, flagged by their fidelity check).
    Completion and trust are separate: a flagged run finished, and is not redone unless
    asked."""
    return [x for x in lines if (st := state(sweep_dir, x["run_id"])) == "missing"
            or (redo_flagged and st == "invalid")]


def finished(sweep_dir: Path, rid: str, redo_flagged: bool = False) -> bool:
    """Whether the run needs no launch: complete, or invalid and not to be redone."""
    st = state(sweep_dir, rid)
    return st == "complete" or (st == "invalid" and not redo_flagged)


def summary_line(sweep_dir: Path, lines: list[dict[str, Any]], note: str) -> tuple[str, bool]:
    """The line that reports summary.csv, and whether some run is not complete."""
    missing = [x["label"] for x in todo(sweep_dir, lines)]      # flagged ones finished
    return (f"summary: {sweep_dir / 'summary.csv'}" + (f" ({note})" if note else "")
            + (f"; not complete: {', '.join(missing)}" if missing else "")), bool(missing)


def state(sweep_dir: Path, rid: str) -> str:
    """complete | invalid | missing."""
    if (sweep_dir / "runs" / rid).is_dir():
        return "complete"
    return "invalid" if (sweep_dir / "runs" / f"{rid}.invalid").is_dir() else "missing"


def run_one(sweep_dir: Path, line: dict[str, Any], experiment: str,
            execute: Callable[[dict[str, Any], Path], int],
            redo_flagged: bool = False) -> tuple[int, str]:
    """Run one manifest line unless it finished (complete, or flagged and not to be redone):
    (exit code, what happened)."""
    rid = line["run_id"]
    if finished(sweep_dir, rid, redo_flagged):
        return 0, ("already complete" if state(sweep_dir, rid) == "complete"
                   else "already finished, flagged")
    runs, work = sweep_dir / "runs", sweep_dir / "work"
    runs.mkdir(parents=True, exist_ok=True)
    lock = open(runs / f".{rid}.lock", "w")  # noqa: SIM115 - held for the whole run
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return BUSY, "another launch is running it"
        if finished(sweep_dir, rid, redo_flagged):   # finished while we waited for the lock
            return 0, "already finished"
        work.mkdir(parents=True, exist_ok=True)
        where = Path(tempfile.mkdtemp(prefix=f"{rid}-", dir=work))
        rc = execute(line["params"], where)
        if rc != 0:
            return rc, f"exit {rc}, its folder stays in {where}"
        (folder,) = list((where / experiment).iterdir())
        suspect = status_of(folder).get("suspect") or []
        # written here, on the machine that ran it, before the rename makes it complete
        (folder / "fingerprint.json").write_text(json.dumps(fingerprint(folder), indent=1))
        target = runs / (f"{rid}.invalid" if suspect else rid)
        if target.exists():                            # an older invalid attempt
            target.rename(Path(tempfile.mkdtemp(prefix=f"{target.name}-replaced-",
                                                dir=work)) / "run")
        folder.rename(target)                          # one rename: complete, or not
        for empty in (where / experiment, where):
            empty.rmdir()
        return 0, (f"invalid (suspect: {suspect[0]})" if suspect else "complete")
    finally:
        lock.close()


class Progress:
    """progress.log and the terminal: one timestamped line each."""

    def __init__(self, sweep_dir: Path) -> None:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(sweep_dir / "progress.log", "a", encoding="utf-8")  # noqa: SIM115

    def __call__(self, line: str) -> None:
        self.log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
        self.log.flush()
        print(f"sweep: {line}", file=sys.stderr, flush=True)

    def close(self) -> None:
        self.log.close()


def point(x: dict[str, Any], lines: list[dict[str, Any]]) -> str:
    """'[i/N]': the run's place in the whole manifest."""
    return f"[{lines.index(x) + 1}/{len(lines)}]"


_STARTED = re.compile(r"^\[\d+/\d+\] (.+) \((\S+)\)(, ETA \S+)?$")
_ENDED = re.compile(r"^\[\d+/\d+\] (.+?): .* in \d+ s$")


def started_not_ended(log: Path) -> set[str]:
    """Run ids whose start progress.log records with no end line after it (the sweep was
    killed, or the machine stopped, during that run)."""
    if not log.exists():
        return set()
    open_ids: dict[str, str] = {}     # label -> run id of a point started and not ended
    for line in log.read_text(errors="replace").splitlines():
        text = line.split(" ", 1)[1] if " " in line else ""
        if m := _STARTED.match(text):
            open_ids[m.group(1)] = m.group(2)
        elif m := _ENDED.match(text):
            open_ids.pop(m.group(1), None)
    return set(open_ids.values())


def run_sweep(sweep_dir: Path, experiment: str, lines: list[dict[str, Any]],
              execute: Callable[[dict[str, Any], Path], int], mixed: bool = False,
              redo_flagged: bool = False) -> int:
    """The local launcher: run_one for every run that has not finished, in order; stop at
    an interrupted one (exit 130/143), go on after a failed one.  0 when all finished.
    One launch per sweep folder: a second one refuses in one line (BUSY), touching
    nothing, and never calls the first one's running point dead."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    held = open(sweep_dir / ".launch.lock", "a+", encoding="utf-8")  # noqa: SIM115 - held
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.seek(0)
        who = held.read().strip() or "another process"
        held.close()
        print(f"sweep: error: {sweep_dir} is being run by another launch ({who}); it "
              "resumes from what completed once that one ends", file=sys.stderr)
        return BUSY
    held.seek(0)
    held.truncate()
    held.write(f"pid {os.getpid()} on {socket.gethostname()}, since "
               f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
    held.flush()
    try:
        return _run_sweep(sweep_dir, experiment, lines, execute, mixed, redo_flagged)
    finally:
        held.close()


def _run_sweep(sweep_dir: Path, experiment: str, lines: list[dict[str, Any]],
               execute: Callable[[dict[str, Any], Path], int], mixed: bool,
               redo_flagged: bool) -> int:
    unfinished = started_not_ended(sweep_dir / "progress.log")
    say = Progress(sweep_dir)
    pending = todo(sweep_dir, lines, redo_flagged)
    say(f"{len(lines)} runs, {len(lines) - len(pending)} already finished, "
        f"{len(pending)} to run")
    # a point whose start the log records without an end: the sweep died during it
    for x in lines:
        if x["run_id"] in unfinished:
            say(f"{point(x, lines)} {x['label']}: ended without a result in an earlier "
                "launch (killed or the machine stopped)")
    code, spent = 0, list[float]()
    try:
        for n, x in enumerate(pending, start=1):
            eta = (f", ETA {tqdm.format_interval(sum(spent) / len(spent) * (len(pending) - n + 1))}"
                   if spent else "")
            # counted in the whole manifest, so that a resumed sweep says where it is
            say(f"{point(x, lines)} {x['label']} ({x['run_id']}){eta}")
            t0 = time.monotonic()
            rc, what = run_one(sweep_dir, x, experiment, execute, redo_flagged)
            spent.append(time.monotonic() - t0)
            say(f"{point(x, lines)} {x['label']}: {what} in {spent[-1]:.0f} s")
            if rc != 0:
                code = code or rc
                if rc >= 128:
                    say("interrupted; run the same command again to resume")
                    return rc
        return finish(sweep_dir, lines, say, code, mixed)
    finally:
        say.close()


def finish(sweep_dir: Path, lines: list[dict[str, Any]], say: Callable[[str], None],
           code: int = 0, mixed: bool = False) -> int:
    """After any launcher: the summary and what is not complete.  0 when every run is
    complete and summarised, 2 when the summary is refused, else the launcher's code or 1."""
    try:
        note = write_summary(sweep_dir, lines, mixed=mixed)
    except ValueError as exc:
        say(f"no summary: {exc}")
        return 2
    return conclude(sweep_dir, lines, note, say, code)


def conclude(sweep_dir: Path, lines: list[dict[str, Any]], note: str,
             say: Callable[[str], None], code: int = 0) -> int:
    """Once summary.csv is written: say what is complete, draw the comparison figure."""
    line, missing = summary_line(sweep_dir, lines, note)
    say(line)
    from analysis.sweep import plot_sweep
    try:
        for fig in plot_sweep(sweep_dir, list(lines[0]["values"]) if lines else []):
            say(f"figure: {fig}")
    except (ValueError, OSError) as exc:
        say(f"the comparison figure could not be drawn: {exc}")
        return code or 1
    return (code or 1) if missing else 0


#: what must be equal across a sweep's runs; ``host`` is recorded but may differ
COMPARED = ("kernel", "cpu_model", "cores", "dataplane", "python", "iperf3", "ovs")


def fingerprint(run_dir: Path) -> dict[str, Any]:
    """The machine a run ran on: what its config.json recorded (kernel, cores, dataplane,
    iperf3 and OVS versions) plus the CPU model, Python and host of the machine calling
    this, which is the one that ran it (run_one calls it before the final rename).
    A model-backend run depends on no dataplane, iperf3 or OVS: those are None."""
    from emulator.sysinfo import cpu_model
    try:
        config = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    env = config.get("environment") or {}
    versions = env.get("versions") or {}
    params = config.get("params") or {}
    emulated = params.get("backend", "emulated") == "emulated"
    return {"host": socket.gethostname(),
            "kernel": versions.get("kernel") or os.uname().release,
            "cpu_model": cpu_model(), "cores": env.get("cpus") or os.cpu_count(),
            "dataplane": params.get("dataplane") if emulated else None,
            "python": platform.python_version(),
            "iperf3": versions.get("iperf3") if emulated else None,
            "ovs": versions.get("ovs") if emulated else None}


def fingerprint_of(run_dir: Path) -> dict[str, Any]:
    """fingerprint.json of a finished run ('unknown' for a field it lacks)."""
    try:
        fp = json.loads((run_dir / "fingerprint.json").read_text())
    except (OSError, ValueError):
        fp = {}
    return {k: fp.get(k, "unknown") for k in ("host", *COMPARED)}


def machine_differences(fps: dict[str, dict[str, Any]], skip: set[str]) -> dict[str, str]:
    """Fingerprint field -> one line, for every field whose value is not the same for every
    run, most common value first: 'cpu_model differs: A (3 runs) vs B (1 run)'.  ``skip``:
    fields that are grid parameters (different on purpose)."""
    out = {}
    for key in COMPARED:
        if key in skip:
            continue
        counts = Counter(str(fp[key]) for fp in fps.values())
        if len(counts) > 1:
            out[key] = f"{key} differs: " + " vs ".join(
                f"{v} ({n} run{'s' if n > 1 else ''})" for v, n in counts.most_common())
    return out


def write_summary(sweep_dir: Path, lines: list[dict[str, Any]], mixed: bool = False) -> str:
    """summary.csv: each finished run's summary.csv rows, grid values, run id and
    ``flagged`` (the first reason its fidelity check gave, '' for a trusted run) in front (a
    run without a summary.csv contributes one row of its own).  Refused (ValueError, one
    line; summary.csv removed, it would be stale) when the runs' machines differ, unless
    ``mixed`` (the differing fields become columns).  Returns a note for people."""
    runs: list[tuple[dict[str, Any], Path, str]] = []
    invalid = 0
    for x in lines:
        st = state(sweep_dir, x["run_id"])
        if st == "complete":
            runs.append((x, sweep_dir / "runs" / x["run_id"], ""))
        elif st == "invalid":
            invalid += 1
            folder = sweep_dir / "runs" / f"{x['run_id']}.invalid"
            reasons = status_of(folder).get("suspect") or ["suspect"]
            runs.append((x, folder, str(reasons[0])))
    fps = {str(folder): fingerprint_of(folder) for _, folder, _ in runs}
    grid_keys = {k for x in lines for k in x["values"]}
    diff = machine_differences(fps, grid_keys)
    if diff and not mixed:
        (sweep_dir / "summary.csv").unlink(missing_ok=True)
        raise ValueError("; ".join(diff.values()) + "; pass --mixed to accept")
    rows: list[dict[str, Any]] = []
    for x, folder, why in runs:
        head = {**x["values"], "run_id": x["run_id"], "flagged": why}
        head.update({f"machine_{k}": fps[str(folder)][k] for k in diff})
        summary = folder / "summary.csv"
        rows += [{**head, **r} for r in read_csv(summary)] if summary.exists() else [head]
    write_csv(sweep_dir / "summary.csv", rows)
    notes = []
    if diff:
        notes.append("mixed machines: " + "; ".join(diff.values()))
    if invalid:
        notes.append(f"{invalid} flagged run{'s' if invalid > 1 else ''} included, marked in "
                     "column flagged (--redo-flagged runs them again)")
    return "; ".join(notes)
