"""CPU caps for a run's processes: a cgroup with a CFS bandwidth limit.

The Orca paper's unicast sender was CPU-bound (a Python process per core at 10 Gb/s); an
emulated link of tens of Mb/s is outrun by one uncapped Python process.  A cap puts the
CPU back in the way: every process of a sender runs in one cgroup whose bandwidth is
``cores`` of a CPU (cgroup v2 ``cpu.max``; on a hybrid v1 machine, such as this project's,
the v1 ``cpu`` controller's ``cpu.cfs_quota_us``/``cpu.cfs_period_us``, the same CFS
bandwidth control).  The cgroups live under a parent named ``dcrepro`` and are named
``<run>+<use>``, recorded in the run's registry the moment they exist, removed at teardown
and by ``dcrepro clean`` (which also removes those of runs that are not alive any more).

The pure parts (where the controller is, the limit's files and values, cpu.stat) take text
and return values, so unit tests need no root.
"""
from __future__ import annotations

import errno
import math
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

#: the parent of every dcrepro cgroup in the hierarchy that has the cpu controller
PARENT = "dcrepro"
#: CFS period: short, so that a capped sender is throttled in slices of a few ms (a 100 ms
#: period would let it burst at full speed for the quota and then stall, which is a
#: different, burstier sender)
PERIOD_US = 10_000
#: the kernel's smallest quota (1 ms): smaller caps lengthen the period instead
MIN_QUOTA_US = 1_000
#: the kernel's largest period (1 s)
MAX_PERIOD_US = 1_000_000


@dataclass(frozen=True)
class Hierarchy:
    """Where the cpu controller is mounted, and which cgroup version it is."""

    root: Path
    version: int   # 2: unified (cpu.max); 1: the v1 cpu controller (cpu.cfs_*)


def pick_hierarchy(mounts: str, controllers_of: dict[str, str]) -> Hierarchy | None:
    """The hierarchy to cap CPU in, from /proc/self/mounts text: a cgroup2 mount whose
    ``cgroup.controllers`` (``controllers_of[mount point]``) lists cpu, else a v1 mount
    with the cpu option; None when neither exists."""
    v1 = None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        point, kind, opts = parts[1], parts[2], parts[3].split(",")
        if kind == "cgroup2" and "cpu" in controllers_of.get(point, "").split():
            return Hierarchy(Path(point), 2)
        if kind == "cgroup" and "cpu" in opts and v1 is None:
            v1 = Hierarchy(Path(point), 1)
    return v1


def find_hierarchy() -> Hierarchy | None:
    """This machine's hierarchy for CPU caps (see pick_hierarchy)."""
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return None
    controllers = {}
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            try:
                controllers[parts[1]] = (Path(parts[1]) / "cgroup.controllers").read_text()
            except OSError:
                pass
    return pick_hierarchy(mounts, controllers)


def quota(cores: float) -> tuple[int, int]:
    """(quota, period) in µs for ``cores`` of a CPU: the period is PERIOD_US unless the
    quota would fall below the kernel's 1 ms, then just long enough."""
    if not 0 < cores <= 1024:
        raise ValueError(f"a CPU cap must be above 0 cores, got {cores}")
    period = PERIOD_US
    if cores * period < MIN_QUOTA_US:
        period = math.ceil(MIN_QUOTA_US / cores)
        if period > MAX_PERIOD_US:
            raise ValueError(f"a CPU cap of {cores} cores is below the kernel's smallest "
                             f"({MIN_QUOTA_US / MAX_PERIOD_US} cores)")
    return round(cores * period), period


def limit_files(version: int, cores: float | None) -> dict[str, str]:
    """The files (and their text) that set a cap of ``cores`` (None: no cap)."""
    if cores is None:
        return {"cpu.max": "max"} if version == 2 else {"cpu.cfs_quota_us": "-1"}
    q, period = quota(cores)
    if version == 2:
        return {"cpu.max": f"{q} {period}"}
    # v1 checks quota against the current period: the period first, then the quota
    return {"cpu.cfs_period_us": str(period), "cpu.cfs_quota_us": str(q)}


def parse_stat(text: str, version: int) -> dict[str, float]:
    """cpu.stat as periods, throttled periods and throttled seconds (both versions)."""
    kv = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            kv[parts[0]] = int(parts[1])
    throttled = (kv.get("throttled_usec", 0) / 1e6 if version == 2
                 else kv.get("throttled_time", 0) / 1e9)
    return {"nr_periods": kv.get("nr_periods", 0), "nr_throttled": kv.get("nr_throttled", 0),
            "throttled_s": throttled}


def run_of(name: str) -> str:
    """The run id a dcrepro cgroup's name (``<run>+<use>``) belongs to."""
    return name.split("+")[0]


def wrap(argv: list[str], procs_file: str, pin: int | None = None) -> list[str]:
    """``argv`` started inside a cgroup: a shell moves itself there, then execs it, so every
    process the command starts is in the cgroup from its first instruction; with ``pin``,
    on that CPU only (``taskset``; children inherit it)."""
    pinned = ["taskset", "-c", str(pin), *argv] if pin is not None else argv
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', procs_file, *pinned]


def rps_mask(cpus: list[int]) -> str:
    """The hex mask of /sys/class/net/<dev>/queues/rx-N/rps_cpus for ``cpus`` (none: "0",
    RPS off: the packets are processed where they were sent)."""
    if cpus and min(cpus) < 0:
        raise ValueError(f"RPS: CPUs are numbered from 0, got {cpus}")
    return format(sum(1 << c for c in set(cpus)), "x")


class CpuCap:
    """One cgroup of dcrepro's (``<hierarchy>/dcrepro/<name>``) with a CPU limit."""

    def __init__(self, hier: Hierarchy, name: str) -> None:
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"a cgroup name must be one path component, got {name!r}")
        self.hier = hier
        self.path = hier.root / PARENT / name

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def create(self) -> None:
        """Make the parent (v2: with the cpu controller enabled for children) and the
        cgroup; an existing one of the same name is reused."""
        parent = self.hier.root / PARENT
        if self.hier.version == 2:
            _enable_cpu(self.hier.root)
        parent.mkdir(exist_ok=True)
        if self.hier.version == 2:
            _enable_cpu(parent)
        self.path.mkdir(exist_ok=True)

    def set(self, cores: float | None) -> None:
        """Cap every process in the cgroup at ``cores`` of a CPU together (None: no cap)."""
        for name, text in limit_files(self.hier.version, cores).items():
            (self.path / name).write_text(text)

    def read_limit(self) -> str:
        """The limit as the kernel holds it (for the record)."""
        if self.hier.version == 2:
            return (self.path / "cpu.max").read_text().strip()
        q = (self.path / "cpu.cfs_quota_us").read_text().strip()
        return f"{q} {(self.path / 'cpu.cfs_period_us').read_text().strip()}"

    def stat(self) -> dict[str, float]:
        return parse_stat((self.path / "cpu.stat").read_text(), self.hier.version)

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in Path(self.procs_file).read_text().split()]
        except OSError:
            return []


def _enable_cpu(cg: Path) -> None:
    ctl = cg / "cgroup.subtree_control"
    if "cpu" not in ctl.read_text().split():
        ctl.write_text("+cpu")


def remove(path: str | Path, wait: float = 3.0) -> bool:
    """Remove one of dcrepro's cgroups: kill what still runs in it (only dcrepro's own
    processes were ever put there), wait for them to leave, rmdir.  Then remove the
    dcrepro parent if no other run uses it.  True when the cgroup is gone."""
    path = Path(path)
    if path.parent.name != PARENT:
        raise ValueError(f"{path} is not one of dcrepro's cgroups")
    end = time.monotonic() + wait
    while path.exists():
        try:
            pids = [int(x) for x in (path / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            path.rmdir()
        except FileNotFoundError:
            break
        except OSError as e:
            # EBUSY: a killed process has not left yet
            if e.errno not in (errno.EBUSY, errno.ENOTEMPTY) or time.monotonic() > end:
                return False
            time.sleep(0.05)
    try:
        path.parent.rmdir()
    except OSError:
        pass   # another run's cgroup is there (or it is gone already)
    return not path.exists()


def leftovers(hier: Hierarchy | None = None) -> list[Path]:
    """Every cgroup under dcrepro's parent (any run's)."""
    hier = hier or find_hierarchy()
    parent = hier.root / PARENT if hier else None
    if parent is None or not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if p.is_dir())
