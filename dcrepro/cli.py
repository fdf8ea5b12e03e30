"""The ``dcrepro`` command: run | sweep | run-one | collect | rerun | plot | judge | report |
list | clean | calibrate | check | env."""
from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from dcrepro.catalogue import KINDS
from store.registry import EXPERIMENTS, sweep_script
from store.registry import module as _module
from topos.spec import SpecError


def _positive_int(text: str) -> int:
    """A whole number of at least 1 (argparse's type for a count of repetitions)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"takes a whole number of at least 1, not {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to document every flag)."""
    ap = argparse.ArgumentParser(
        prog="dcrepro", description="Reproduce datacenter-network experiments on Mininet.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--version", action="store_true",
                    help="print dcrepro's version and the commit it runs from")
    sub = ap.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run an experiment (root) and draw its figures")
    for p in _experiment_parsers(run):
        p.add_argument("--dry-run", action="store_true",
                       help="check the parameters and print them resolved, the network's "
                            "size, repetitions x traffic time, an estimate of the wall time "
                            "here and the output folder; build and write nothing (no root)")
    sweep = sub.add_parser(
        "sweep", help="run an experiment over a grid of parameter values (root for emulated "
        "runs); the same command again resumes",
        description="Run an experiment over a grid of parameter values (--grid KEY=V1/V2); "
        "the same command again resumes.  Every EXPERIMENT takes its own flags, the grid, "
        "and the launch options: --engine local|parallel|slurm (who runs the runs: this "
        "process, GNU parallel over --hosts, or a Slurm job array), --retries, "
        "--concurrency, --launch-timeout.  See `dcrepro sweep EXPERIMENT --help`.")
    for p in _experiment_parsers(sweep):
        p.add_argument("--grid", action="append", default=[], metavar="KEY=V1/V2",
                       help="a parameter and its values, e.g. --grid bw=10/20 --grid seed=1/2 "
                            "(repeatable; every combination runs)")
        p.add_argument("--name", default=None,
                       help="sweep folder name under OUT/sweeps (default: the experiment and "
                            "the grid); give the same name to resume")
        p.add_argument("--plan-only", action="store_true",
                       help="write the manifest (one line per run) and stop; any launcher "
                            "then runs its lines with `dcrepro run-one`")
        _launch_arguments(p)
    one = sub.add_parser("run-one", help="run one line of a sweep manifest unless it is "
                         "complete (what any launcher calls)")
    one.add_argument("manifest", help="OUT/sweeps/<name>/manifest.jsonl")
    one.add_argument("run_id", help="the run id of a manifest line")
    one.add_argument("--redo-flagged", action="store_true",
                     help="run it again if it finished flagged (kept as invalid)")
    col = sub.add_parser("collect", help="write a sweep folder's summary.csv from its "
                         "complete runs (refused when their machines differ)")
    col.add_argument("sweep_dir", help="OUT/sweeps/<name>")
    _collect_arguments(col)
    rerun = sub.add_parser("rerun", help="run a run folder's experiment again with its exact "
                           "parameters (same seed) into a new folder; differences in code "
                           "version or machine are printed and recorded")
    rerun.add_argument("run_dir", help="results/<experiment>/<run id>")
    rerun.add_argument("--out", default=None,
                       help="results root folder (default: the one RUN_DIR is in)")
    rerun.add_argument("--seed", type=int, default=None,
                       help="a replication: every parameter of the run but this seed (the "
                            "old and new seeds are recorded in config.json's rerun_of)")
    plot = sub.add_parser("plot", help="(re)draw the figures of a run folder (no root needed)")
    plot.add_argument("run_dir", help="results/<experiment>/<run id>")
    judge = sub.add_parser("judge", help="judge the paper's claims again on finished run "
                           "folders (claims.csv, claims.md; no figures, no root)",
                           description="Rewrite claims.csv and claims.md of every run "
                           "folder under the paths, from their tables, after a claim's "
                           "criterion, cause or regime changed; one line per folder.  A "
                           "folder where a claim would measure a different value (a table "
                           "stripped or changed) is kept as it was, unless --force.")
    judge.add_argument("paths", nargs="+", metavar="RUN_OR_FOLDER",
                       help="run folders, or folders searched for them (results/reference)")
    judge.add_argument("--force", action="store_true",
                       help="also rewrite a folder where a claim would measure a different "
                            "value (its tables changed, or a claim's statistic did)")
    rep = sub.add_parser("report", help="which of the papers' claims hold: one page "
                         "(index.html), report.md and verdicts.json, and one line per claim",
                         description="Judge every experiment's paper claims on the newest "
                         "complete run under a results folder, or on the runs and sweeps "
                         "given, and write a self-contained page that can be copied.")
    rep.add_argument("paths", nargs="*", metavar="RESULTS_DIR | RUN_OR_SWEEP",
                     help="a results folder (default: results), run folders or sweep "
                          "folders")
    rep.add_argument("--out", default=None,
                     help="report folder (default: report/ in the results folder of the "
                          "first path)")
    rep.add_argument("--all", action="store_true",
                     help="print one line per claim (every claim, with its cause), not the "
                          "one screen of headline claims")
    rep.add_argument("--reference", default=None, metavar="DIR",
                     help="the runs whose verdicts the headline lines are compared with "
                          "(default: the committed results/reference; 'none': no comparison)")
    only = rep.add_mutually_exclusive_group()
    only.add_argument("--markdown-table", action="store_true",
                      help="print only the verdict counts per experiment as markdown and "
                           "write nothing")
    only.add_argument("--headlines", action="store_true",
                      help="print only the headline claims' verdicts with their intervals "
                           "as markdown (the README's, for results/reference) and write "
                           "nothing")
    only.add_argument("--pages", metavar="DOCS_DIR", default=None,
                      help="write only the generated results pages, one per paper and the "
                           "index (docs/results for results/reference: analysis/pages.py)")
    lst = sub.add_parser("list", help="what a flag can name: experiments (default), "
                         "topologies, routings, dataplanes, backends, ccs, aqms",
                         description="What a flag can name, from the registries themselves: "
                         "each entry's spec (every key with its default), an example and what "
                         "it is.")
    lst.add_argument("kind", nargs="?", default="experiments", choices=KINDS,
                     help="what to list")
    what = lst.add_mutually_exclusive_group()
    what.add_argument("--markdown", action="store_true",
                      help="the README's experiment table (or, for papers, its list of "
                           "papers), generated from the registry")
    what.add_argument("--sweeps", action="store_true",
                      help="the sweep script of every experiment (what reproduce.sh runs)")
    lst.add_argument("--runs", type=_positive_int, default=None, metavar="N",
                     help="with --sweeps: each experiment that has repetitions runs N")
    clean = sub.add_parser("clean", help="remove what crashed dcrepro runs left behind "
                           "(only their own bridges, interfaces and processes)")
    clean.add_argument("--force", action="store_true",
                       help="also clean runs whose dcrepro process is still alive")
    cal = sub.add_parser("calibrate", help="measure one flow per link rate on this machine "
                         "(root); shown beside every later run's fidelity report")
    cal.add_argument("--topo", default="fattree,k=4", help="topology spec")
    cal.add_argument("--bw", default="10,50", help="comma list of link rates, Mb/s")
    cal.add_argument("--duration", type=float, default=15.0, help="seconds per flow")
    cal.add_argument("--trim", type=float, default=3.0, help="seconds dropped at each end")
    cal.add_argument("--cc", default="cubic", help="TCP congestion control")
    cal.add_argument("--dataplane", default="auto", help="bpf, ovs or auto (as for run)")
    cal.add_argument("--out", default="results", help="results root (calibration.json)")
    chk = sub.add_parser("check", help="before a reproduction (root, under a minute): "
                         "can this machine carry it? CPUs, load, steal, one flow's "
                         "calibration (stored as calibrate stores it), a verdict and how "
                         "long the quick reproduction takes here",
                         description="Measure this machine in under a minute on a real "
                         "emulated network (root): its CPUs, the work beside ours and the "
                         "hypervisor's steal, one TCP flow on the network and rate the "
                         "quick runs' fidelity lines look up (stored in OUT/calibration.json "
                         "as `dcrepro calibrate` stores it), and the network's bring-up "
                         "time; print a verdict (fine, busy or slow, with what it means) "
                         "and how long the quick reproduction takes here.  Exit 0 whatever "
                         "the verdict; 1 when it could not measure, 2 on bad input or "
                         "without root.")
    chk.add_argument("--out", default="results", help="results root (calibration.json)")
    chk.add_argument("--runs", type=_positive_int, default=None, metavar="N",
                     help="estimate for N repetitions of every experiment (reproduce.sh "
                          "--runs N), not quick mode's own counts")
    sub.add_parser("env", help="print the environment report")
    return ap


def _experiment_parsers(command: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """One subparser of ``command`` per registered experiment, with the experiment's flags."""
    exps = command.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    parsers = []
    for name in EXPERIMENTS:
        mod = _module(name)
        # the figure's runs may add flags to these defaults (permutation's sweep: --cc lia
        # --bw 5), so `run NAME --quick` alone is not always what the quick reproduction ran
        sweep = sweep_script(name)
        epilog = (f"scripts/reproduce.sh makes the figure with {sweep} (--quick unless "
                  f"--full), which may set flags beyond the defaults above; a run folder's "
                  f"config.json has every value it ran with." if sweep else None)
        p = exps.add_parser(name, help=mod.HELP.replace("%", "%%"), description=mod.HELP,
                            epilog=epilog)
        mod.add_arguments(p)
        parsers.append(p)
    return parsers


def _collect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mixed", action="store_true",
                   help="accept runs whose machines differ (kernel, CPU model, cores, "
                        "dataplane, Python, iperf3, OVS); the differing fields become columns")


def _launch_arguments(p: argparse.ArgumentParser) -> None:
    from .launch import ENGINES, Options
    g = p.add_argument_group("launching (beyond one machine)")
    g.add_argument("--engine", choices=ENGINES, default="local",
                   help="who runs the runs that are not complete: local (this process, in "
                        "order), parallel (GNU parallel, one run per host at a time), slurm "
                        "(a job array, one whole node per run)")
    g.add_argument("--hosts", default=None, metavar="FILE",
                   help="parallel: one [user@]host a line (':' is this machine); default "
                        "this machine only")
    g.add_argument("--retries", type=int, default=Options.retries,
                   help="parallel: attempts per run within one launch")
    g.add_argument("--concurrency", type=int, default=Options.concurrency,
                   help="slurm: array tasks (nodes) at once")
    g.add_argument("--launch-timeout", type=float, default=Options.timeout, metavar="S",
                   help="parallel, slurm: stop (cancel) everything after this many seconds")
    _collect_arguments(p)
    p.add_argument("--redo-flagged", action="store_true",
                   help="run again the runs that finished flagged by their fidelity check "
                        "(kept as <run id>.invalid; by default a finished run is never "
                        "redone, and the summary marks it in column flagged)")


def cmd_run(args: argparse.Namespace) -> int:
    """Validate everything, then run inside a run folder; always leave a status behind."""
    mod = _module(args.experiment)
    from harness.common import checked, resolve
    try:
        params = checked(mod, resolve(args, mod.PARAMS.defaults(), mod.QUICK))
        _check_writable(Path(args.out), params.backend_name(), create=not args.dry_run)
    except (ValueError, SpecError) as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        return _dry_run(mod, params, Path(args.out))
    return _execute(mod, params, Path(args.out))


def _estimate(mod: ModuleType, params: Any, out: Path) -> tuple[Any, Any]:
    """The run's plan and its wall-time estimate here (dcrepro/estimate.py): scaled by the
    earlier runs under ``out`` (this experiment's, else any), else by the stored bring-up.
    ValueError/SpecError when the plan cannot be made."""
    from . import check, estimate
    backend = params.backend_name()
    plan = estimate.plan_of(mod, params)
    modules = {name: _module(name) for name in EXPERIMENTS}
    earlier = estimate.earlier_runs(out, [mod.NAME], backend, modules)
    whose = f" of {mod.NAME} in {out}"
    if not earlier:         # another experiment's runs still tell this machine's speed
        earlier = estimate.earlier_runs(out, EXPERIMENTS, backend, modules)
        whose = f" of other experiments in {out}"
    dataplane = str(getattr(params, "dataplane", check.REFERENCE_DATAPLANE))
    return plan, estimate.estimate(plan, backend, earlier,
                                   check.stored_bringup(out, dataplane), dataplane, whose)


def _dry_run(mod: ModuleType, params: Any, out: Path) -> int:
    """Print what the run would do and how long it would take here; build nothing (the
    plan builds topology objects only: dcrepro/estimate.py)."""
    from . import estimate
    backend = params.backend_name()
    try:
        plan, est = _estimate(mod, params, out)
    except (ValueError, SpecError) as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(estimate.lines(mod.NAME, params, plan, backend, est, out)))
    if backend == "emulated" and os.geteuid() != 0:
        print("note: the run itself needs root (sudo .venv/bin/dcrepro ...)")
    return 0


def _code_version() -> str:
    from emulator.sysinfo import git_state
    from harness.runfolder import REPO
    git = git_state(str(REPO))
    return f"{(git['commit'] or 'unknown')[:12]}{'-dirty' if git['dirty'] else ''}"


def cmd_sweep(args: argparse.Namespace) -> int:
    """Validate every grid point first, write the manifest, run what is not complete."""
    from harness.common import checked, resolve
    from harness.params import param_types

    from .launch import Options, check_engine, launch
    from .sweep import parse_grid, points, run_sweep, state, write_manifest
    mod = _module(args.experiment)
    opts = Options(hosts=Path(args.hosts) if args.hosts else None, retries=args.retries,
                   concurrency=args.concurrency, timeout=args.launch_timeout,
                   mixed=args.mixed, redo_flagged=args.redo_flagged)
    try:
        defaults = mod.PARAMS.defaults()
        base = resolve(args, defaults, mod.QUICK)
        grid = parse_grid(args.grid, defaults, param_types(mod))
        pts = points(base, grid)
        for p in pts:
            checked(mod, p["params"])
        out = Path(args.out)
        _check_writable(out)
        name = args.name or "-".join([args.experiment] + [
            f"{k}={'_'.join(map(str, v))}" for k, v in grid.items()])
        if not all(c.isalnum() or c in "-_=.," for c in name):
            raise ValueError(f"--name {name!r}: use letters, digits and - _ = . ,")
        sweep_dir = out / "sweeps" / name
        if not args.plan_only:
            check_engine(args.engine, opts, out)
        code = _code_version()
        lines = write_manifest(sweep_dir, args.experiment, pts, code)
    except (ValueError, SpecError) as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    print(f"sweep folder: {sweep_dir}", flush=True)
    if args.plan_only:
        done = sum(state(sweep_dir, x["run_id"]) != "missing" for x in lines)
        print(f"manifest: {sweep_dir / 'manifest.jsonl'}: {len(lines)} runs, {done} finished")
        return 0
    if args.engine != "local":
        return launch(args.engine, sweep_dir / "manifest.jsonl", code, opts)
    return run_sweep(sweep_dir, args.experiment, lines,
                     lambda params, where: _execute(mod, params, where),
                     mixed=args.mixed, redo_flagged=args.redo_flagged)


def cmd_collect(args: argparse.Namespace) -> int:
    """summary.csv and the comparison figure of a sweep folder (wherever its runs were made):
    0 when every run is complete, 1 when some are not (summary of the rest), 2 when refused."""
    from .sweep import conclude, read_manifest, write_summary
    sweep_dir = Path(args.sweep_dir)
    try:
        _, lines = read_manifest(sweep_dir / "manifest.jsonl")
        note = write_summary(sweep_dir, lines, mixed=args.mixed)
    except ValueError as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    return conclude(sweep_dir, lines, note, lambda line: print(line, flush=True))


def cmd_run_one(args: argparse.Namespace) -> int:
    """One manifest line: 0 at once when complete, else run it and move it into place."""
    from harness.common import checked

    from .sweep import BUSY, check_code, read_manifest, run_one
    path = Path(args.manifest)
    try:
        header, lines = read_manifest(path)
        check_code(header, path, _code_version())
        line = next((x for x in lines if x["run_id"] == args.run_id), None)
        if line is None:
            raise ValueError(f"{path}: no run {args.run_id!r}")
        mod = _module(header["experiment"])
        checked(mod, line["params"])
    except (ValueError, SpecError) as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    rc, what = run_one(path.parent, line, header["experiment"],
                       lambda params, where: _execute(mod, params, where), args.redo_flagged)
    print(f"run-one {args.run_id} ({line['label']}): {what}",
          file=sys.stderr if rc not in (0, BUSY) else sys.stdout)
    return rc


def cmd_rerun(args: argparse.Namespace) -> int:
    """The experiment of a run folder again, with the parameters its config.json holds."""
    from harness.common import checked

    from .rerun import differences, params_of
    src = Path(args.run_dir)
    try:
        config = params_of(src, EXPERIMENTS)
        mod = _module(config["experiment"])
        seed = {}
        if args.seed is not None:
            if "seed" not in config["params"]:
                raise ValueError(f"{config['experiment']} takes no seed: --seed cannot apply")
            seed = {"seed_was": config["params"]["seed"], "seed": args.seed}
            config["params"]["seed"] = args.seed
        params = checked(mod, config["params"])
        out = Path(args.out) if args.out else src.resolve().parent.parent
        _check_writable(out)
    except (ValueError, SpecError) as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    diff = differences(config)
    for line in diff:
        print(f"dcrepro: rerun differs: {line}", file=sys.stderr)
    return _execute(mod, params, out, rerun_of={"run_dir": str(src.resolve()),
                                                "run_id": config.get("run_id"),
                                                "differences": diff, **seed})


def _progress(mod: ModuleType, params: Any, out: Path,
              folder: Any) -> contextlib.AbstractContextManager[object]:
    """The run's progress line on a terminal (dcrepro/progress.py), from the dry run's
    estimate; nothing off the terminal, or when the run has no plan to estimate."""
    if not (sys.stdout.isatty() and sys.stderr.isatty()):
        return contextlib.nullcontext()
    from . import estimate
    from .progress import progress_line
    try:
        plan, est = _estimate(mod, params, out)
    except (ValueError, SpecError, OSError):
        return contextlib.nullcontext()
    return progress_line(estimate.network_shares(plan, params.backend_name(), est),
                         est.seconds, folder)


def _execute(mod: ModuleType, values: Mapping[str, Any], out: Path, **extra: object) -> int:
    """Run a validated experiment in a new run folder under ``out``; exit code.  The run
    gets its parameters typed and frozen (harness/params.py), whoever resolved them:
    flags, a sweep manifest line or a rerun's config.json."""
    from emulator.proc import RunError, exit_code
    from harness.params import typed
    from harness.runfolder import RunFolder, mark_killed_runs
    try:
        params = typed(mod, values)
    except ValueError as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    if params.backend_name() == "emulated" and os.geteuid() != 0:
        print("dcrepro: error: emulated runs need root (sudo .venv/bin/dcrepro ...)",
              file=sys.stderr)
        return 2
    if os.geteuid() == 0:
        for line in mark_killed_runs():
            print(f"dcrepro: {line}", file=sys.stderr)
    try:
        folder = RunFolder(out, mod.NAME, dict(params))
        if extra:
            folder.config.update(extra)
            folder.write_config()
    except OSError as exc:
        why = "no space left on the device" if no_space(exc) else exc.strerror or str(exc)
        print(f"dcrepro: error: cannot start a run folder under {out}: {why}", file=sys.stderr)
        return 1
    print(f"run folder: {folder.path}", flush=True)
    measured = False
    try:
        with _progress(mod, params, out, folder):
            mod.run(params, folder)
        folder.set_status("measured")
        measured = True
        code = _plot(folder.path)
        if code != 0:
            folder.set_status("failed", error="the figures could not be drawn",
                              data_complete=True)
            return code
        suspect = folder.config.get("suspect", [])
        folder.set_status("ok", suspect=suspect)
        if suspect:
            print(f"dcrepro: finished, but the numbers are suspect: {suspect[0]}"
                  f"{f' (+{len(suspect) - 1} more in status.json)' if len(suspect) > 1 else ''}",
                  file=sys.stderr)
        return 0
    except KeyboardInterrupt as exc:
        what = "figures not drawn; `dcrepro plot` redraws them" if measured else \
            "partial data left"
        kept = _final_status(folder, "interrupted", f"{exc or 'SIGINT'}", measured)
        print(f"dcrepro: interrupted ({exc or 'SIGINT'}); {what} in {folder.path}{kept}",
              file=sys.stderr)
        return exit_code(exc)
    except Exception as exc:
        kind = "" if isinstance(exc, RunError) else f"{type(exc).__name__}: "
        error = f"no space left on the device of {full_place(exc, folder.path)}" \
            if no_space(exc) else f"{kind}{exc}"
        try:
            folder.log.error("run failed: %s\n%s", exc, traceback.format_exc())
        except OSError:
            pass     # the log is on the same full disk; the line below says what happened
        kept = _final_status(folder, "failed", error, measured)
        print(f"dcrepro: run failed: {error}\n  details: {folder.path}/log.txt{kept}",
              file=sys.stderr)
        return 1


def _final_status(folder: Any, status: str, error: str, measured: bool) -> str:
    """Write the final status; '' or, when even that is impossible (a full disk), what the
    user should know."""
    from harness.runfolder import keep_final_status
    try:
        folder.set_status(status, error=error, data_complete=measured)
        return ""
    except OSError as exc:
        later = ("the next dcrepro run or `dcrepro clean` writes it once there is room"
                 if keep_final_status(folder, status, error) else "nor kept elsewhere")
        return f"\n  (its status.json could not be written: {exc.strerror}; {later})"


#: free space a run needs under its results root, MB: an emulated run writes iperf3 reports,
#: bwm-ng, tcp_info and port samples (a k=6 plts run about 60 MB), a model run a few tables
SPACE_NEEDED_MB = {"emulated": 200, "model": 20}


def _check_writable(root: Path, backend: str = "emulated", create: bool = True) -> None:
    """The results root exists (or can be made), is writable and has room for a run: else
    one line, exit 2.  ``create`` False (a dry run): the folder that would hold it is
    judged instead of making it."""
    where = root
    if create:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"--out {root}: cannot create it ({exc.strerror})") from None
    else:
        while not where.exists() and where != where.parent:
            where = where.parent
        if not where.is_dir():
            raise ValueError(f"--out {root}: cannot create it ({where} is not a folder)")
    if not os.access(where, os.W_OK | os.X_OK):
        raise ValueError(f"--out {root}: not writable")
    st = os.statvfs(where)
    free_mb = st.f_bavail * st.f_frsize / 1e6
    need = SPACE_NEEDED_MB.get(backend, SPACE_NEEDED_MB["emulated"])
    if free_mb < need:
        raise ValueError(f"--out {root}: {free_mb:.0f} MB free, a {backend} run needs about "
                         f"{need} MB")


def full_place(exc: BaseException, default: Path) -> Path:
    """Where the full disk is: the folder of the file an OSError in the chain names (the
    run registry under /run/dcrepro is a tmpfs of its own), else ``default``."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.filename:
            return Path(str(seen.filename)).parent
        seen = seen.__cause__ or seen.__context__
    return default


def no_space(exc: BaseException) -> bool:
    """Whether a failure comes from a full disk (ENOSPC anywhere in its chain, or a tool's
    own words for it)."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno == errno.ENOSPC or \
                "No space left on device" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _plot(run_dir: Path) -> int:
    import analysis
    try:
        figures, verdicts = analysis.plot_and_judge(run_dir)
    except Exception as exc:      # one line here; the traceback goes to the run's log.txt
        kind = "" if isinstance(exc, (ValueError, FileNotFoundError)) else \
            f"{type(exc).__name__}: "
        print(f"dcrepro: error: {kind}{exc} (traceback in {run_dir / 'log.txt'})",
              file=sys.stderr)
        try:
            with open(run_dir / "log.txt", "a") as fh:
                fh.write(f"figures failed: {kind}{exc}\n{traceback.format_exc()}")
        except OSError:
            pass
        return 1
    # the answer, not the tables (summary.csv and the rest stay in the folder)
    from analysis.claims import Run
    from analysis.report import run_answer
    for line in run_answer(Run.open(run_dir), verdicts):
        print(line)
    for f in figures:
        print(f"figure: {f}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """The report of analysis.report: every path made absolute here, once."""
    from analysis import report
    paths = [Path(p).resolve() for p in (args.paths or ["results"])]
    try:
        root, sources = report.gather(paths)
        judged = report.build(root, sources)
        if args.markdown_table or args.headlines:
            print((report.markdown_table if args.markdown_table else report.headline_table)(
                judged), end="")
            return 0
        if args.pages:
            from analysis import pages
            where = Path(args.pages).resolve()
            try:
                written = pages.write(judged, where)
            except OSError as exc:
                print(f"dcrepro: error: cannot write the pages in {where}: "
                      f"{exc.strerror or exc}", file=sys.stderr)
                return 1
            print("\n".join(f"page: {path}" for path in written))
            return 0
        out = Path(args.out).resolve() if args.out else root / "report"
        report.check_out(out)
    except ValueError as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    reference = _reference(args, paths)
    same = report.headline_pairs(judged, reference)     # paired once, for page and screen
    page, lines = report.render(judged, out, reference, same)
    print("\n".join(lines if args.all else report.screen(judged, reference, same)))
    print(f"report: {page}")
    return 0


#: the committed reference runs (README: quote these), what a user's headlines are set beside
REFERENCE = Path(__file__).resolve().parents[1] / "results" / "reference"


def _reference(args: argparse.Namespace, judged: list[Path]) -> Any:
    """The reference report the headline lines are compared with (analysis.report.Report),
    or None: asked not to, the reference is what is judged, or it is not there (a line
    says so)."""
    from analysis import report
    if args.reference == "none":
        return None
    where = Path(args.reference).resolve() if args.reference else REFERENCE
    if any(p == where or where in p.parents for p in judged):
        return None
    if not where.is_dir():
        if args.reference:
            print(f"dcrepro: no reference runs at {where}: headlines not compared",
                  file=sys.stderr)
        return None
    try:
        return report.build(*report.gather([where]))
    except ValueError as exc:
        print(f"dcrepro: the reference at {where} could not be judged ({exc}): headlines "
              "not compared", file=sys.stderr)
        return None


def cmd_list(args: argparse.Namespace) -> int:
    """Names and one-line help, the README table, or the sweep scripts, from the registry;
    or another registry (dcrepro/catalogue.py)."""
    from store import papers, registry
    if args.kind == "papers" and not args.sweeps:
        print(papers.markdown_list() if args.markdown else "\n".join(
            f"{p.file[:3]}  {papers.citation(p)}" for p in papers.PAPERS.values()),
              end="" if args.markdown else "\n")
        return 0
    if args.kind != "experiments":
        if args.markdown or args.sweeps:
            print(f"dcrepro: error: --markdown lists experiments or papers, --sweeps "
                  f"experiments, not {args.kind}", file=sys.stderr)
            return 2
        from dcrepro import catalogue
        print("\n".join(catalogue.lines(args.kind)))
        return 0
    if args.runs and not args.sweeps:
        print("dcrepro: error: --runs goes with --sweeps", file=sys.stderr)
        return 2
    if args.markdown:
        from emulator.dataplane_registry import capabilities
        print(registry.markdown_table(capabilities()), end="")
    elif args.sweeps:
        print("\n".join(registry.sweep_commands(args.runs)))
    else:
        width = max(map(len, EXPERIMENTS))
        for name in EXPERIMENTS:
            print(f"{name:{width}}  {_module(name).HELP}")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    """Remove leftovers of dead runs (resources recorded in /run/dcrepro)."""
    from emulator.cleanup import clean_all
    from harness.runfolder import mark_killed_runs
    if os.geteuid() != 0:
        print("dcrepro: error: clean needs root", file=sys.stderr)
        return 2
    from emulator.cleanup import NOT_DONE
    done = clean_all(force=args.force) + mark_killed_runs()
    print("\n".join(done) if done else "nothing to clean")
    return 1 if any(line.startswith(NOT_DONE) for line in done) else 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Validate, then measure and store the single-flow calibration."""
    from emulator.dataplane_registry import resolve as resolve_dataplane
    from emulator.proc import RunError, exit_code
    from harness.params import FlowParams, check_topo

    from .calibrate import calibrate
    try:
        try:
            rates = [float(x) for x in args.bw.split(",")]
        except ValueError:
            raise ValueError(f"--bw {args.bw!r}: give link rates in Mb/s, e.g. 10,50") from None
        args.dataplane = resolve_dataplane(args.dataplane)
        check_topo(args.topo)
        for bw in rates:
            # a run's checks of these values (--cc, as before, is left to the calibration)
            FlowParams(bw=bw, duration=args.duration, trim=args.trim,
                       dataplane=args.dataplane).check()
    except (ValueError, SpecError) as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("dcrepro: error: calibrate needs root", file=sys.stderr)
        return 2
    try:
        calibrate(args.topo, rates, args.duration, args.trim, args.cc, Path(args.out),
                  dataplane=args.dataplane)
    except KeyboardInterrupt as exc:
        return exit_code(exc)
    except RunError as exc:
        print(f"dcrepro: calibration failed: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Measure this machine, store the calibration, print the verdict and the estimate."""
    from emulator.dataplane_registry import resolve as resolve_dataplane
    from emulator.proc import RunError, exit_code

    from . import check
    try:
        _check_writable(Path(args.out))
        dataplane = resolve_dataplane("auto")     # what the quick runs use
    except ValueError as exc:
        print(f"dcrepro: error: {exc}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("dcrepro: error: check needs root (it brings up an emulated network)",
              file=sys.stderr)
        return 2
    try:
        found, stored = check.run(Path(args.out), dataplane,
                                  say=lambda line: print(line, flush=True))
    except KeyboardInterrupt as exc:
        print(f"dcrepro: check interrupted ({exc or 'SIGINT'})", file=sys.stderr)
        return exit_code(exc)
    except (RunError, OSError) as exc:
        print(f"dcrepro: check could not measure this machine: {exc}", file=sys.stderr)
        return 1
    print("\n".join(check.lines(found, stored, EXPERIMENTS, args.runs)))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dcrepro`` console script."""
    from emulator.proc import exit_code, install_signal_handlers
    install_signal_handlers()  # first: a signal in the first second is not lost
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        print(f"dcrepro: interrupted ({exc or 'SIGINT'})", file=sys.stderr)
        return exit_code(exc)


#: every argument that names a file or folder: made absolute once, at the door, so that no
#: later step (a child process in another working folder, a launcher on another machine)
#: depends on where dcrepro was started
PATH_ARGS = ("out", "run_dir", "manifest", "sweep_dir", "hosts")


def absolute_paths(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with every PATH_ARGS value made absolute (without resolving links)."""
    for name in PATH_ARGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value:
            setattr(args, name, os.path.abspath(value))
    return args


def cmd_plot(args: argparse.Namespace) -> int:
    """(Re)draw a run folder's figures; a folder that is no run folder is bad input (2)."""
    where = Path(args.run_dir)
    if not (where / "status.json").is_file():     # bad input, not a failed drawing
        print(f"dcrepro: error: {where} is not a dcrepro run folder (no status.json)",
              file=sys.stderr)
        return 2
    return _plot(where)


def cmd_judge(args: argparse.Namespace) -> int:
    """Judge the claims again on every run folder under the paths (analysis.judge)."""
    import analysis
    folders: list[Path] = []
    for given in map(Path, args.paths):
        if (given / "status.json").is_file():
            folders.append(given)
        elif given.is_dir():
            folders += sorted(s.parent for s in given.rglob("status.json"))
        else:
            print(f"dcrepro: error: {given}: no such folder", file=sys.stderr)
            return 2
    if not folders:
        print(f"dcrepro: error: no run folder under {' '.join(args.paths)}", file=sys.stderr)
        return 2
    failed = 0
    for folder in folders:
        try:
            print(analysis.judge(folder, force=args.force))
        except (ValueError, OSError, KeyError) as exc:
            failed += 1
            print(f"dcrepro: error: {folder}: {exc}", file=sys.stderr)
    return 1 if failed else 0


def cmd_env(args: argparse.Namespace) -> int:
    """Print the environment report of this machine (emulator.environment)."""
    from emulator.environment import environment
    print(json.dumps(environment(), indent=1))
    return 0


#: each subcommand of build_parser and the function that runs it (its exit code)
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run, "rerun": cmd_rerun, "sweep": cmd_sweep, "run-one": cmd_run_one,
    "collect": cmd_collect, "plot": cmd_plot, "report": cmd_report, "judge": cmd_judge,
    "list": cmd_list, "clean": cmd_clean, "calibrate": cmd_calibrate, "check": cmd_check,
    "env": cmd_env,
}


#: what `dcrepro` alone prints
OVERVIEW = """dcrepro: rerun published datacenter-network experiments on one Linux machine
(Mininet with real switches, ns-3, a flow model) and regenerate the papers' figures.

  dcrepro list                          the experiments (and: dcrepro list topologies,
                                        routings, dataplanes, backends, ccs, aqms)
  dcrepro run permutation --backend model   a run in seconds, no root
  sudo .venv/bin/dcrepro run permutation --topo fattree,k=4 --routing ecmp
                                        the same traffic on an emulated network
  dcrepro report                        the papers' claims judged on your runs

Every command: dcrepro COMMAND --help.  The figures of every paper: ./scripts/reproduce.sh.
Docs: README.md and docs/usage.md in {repo}"""


def version() -> str:
    """'dcrepro 0.1.0 (commit 1234abc)': the installed version and this checkout's commit."""
    import subprocess
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed
    try:
        ver = installed("dcrepro")
    except PackageNotFoundError:
        ver = "(not installed)"
    repo = Path(__file__).resolve().parents[1]
    try:
        got = subprocess.run(["git", "-C", str(repo), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        commit = got.stdout.strip() if got.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        commit = ""
    return f"dcrepro {ver} (commit {commit or 'unknown: not a git checkout'})"


def _main(argv: list[str] | None) -> int:
    logging.basicConfig(level=logging.WARNING, format="dcrepro: %(levelname)s %(message)s")
    args = absolute_paths(build_parser().parse_args(argv))
    if args.version:
        print(version())
        return 0
    if args.command is None:
        print(OVERVIEW.format(repo=Path(__file__).resolve().parents[1]))
        return 0
    command = COMMANDS.get(args.command)
    return 2 if command is None else command(args)


if __name__ == "__main__":
    sys.exit(main())
