"""Every resource of a run, recorded in /run/dcrepro/<run>.json the moment it exists.

Teardown removes exactly these; ``dcrepro clean`` (emulator/cleanup.py) removes what a
killed run left, and touches nothing it did not record (plus bridges tagged with a dead
run's id).  This ledger only records: it imports none of the modules that own a kind.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from .proc import pid_alive

#: where runs record their resources and live folders (a tmpfs: gone after a reboot, as the
#: resources are).  DCREPRO_STATE_DIR moves it for a process that must not meet the
#: machine's runs: scripts/test.sh's pure tests, whose model runs beside the integration
#: tier would otherwise mark its SIGKILLed runs before the test's own next run does
STATE_DIR = Path(os.environ.get("DCREPRO_STATE_DIR") or "/run/dcrepro")
#: private bpffs mounts of BPF-dataplane runs live below this directory
BPFFS_DIR = STATE_DIR / "bpffs"
KINDS = ("bridges", "intfs", "pids", "bpffs", "struct_ops", "cgroups")


class Registry:
    """Records every resource of a run in /run/dcrepro/<run>.json as soon as it exists."""

    def __init__(self, run_id: str) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self.path = STATE_DIR / f"{run_id}.json"
        self.state: dict[str, Any] = {"run": run_id, "pid": os.getpid(), "sysctl": {},
                                      **{k: [] for k in KINDS}}
        self.save()

    def add(self, key: str, values: list[Any]) -> None:
        """Append resources of one kind and persist at once."""
        self.state[key].extend(values)
        self.save()

    def save(self) -> None:
        """Write atomically so a crash never leaves half a file."""
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(self.state))
        except OSError:
            tmp.unlink(missing_ok=True)     # no empty or half record for `clean` to misread
            raise
        tmp.replace(self.path)

    def remove(self) -> None:
        """The run has cleaned up: forget it."""
        self.path.unlink(missing_ok=True)


def _run(argv: list[str], timeout: float = 20) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"timed out after {timeout}s")
    except FileNotFoundError:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]} not found")


def bpf_mounts() -> list[str]:
    """bpffs mount points below BPFFS_DIR (dcrepro's private pins)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    return [p[1] for p in (l.split() for l in lines)
            if len(p) > 2 and p[2] == "bpf" and p[1].startswith(str(BPFFS_DIR))]


def remove_bpffs(path: str) -> bool:
    """Unmount a private bpffs (every stacked mount: dropping the pins detaches nothing
    that still holds a reference) and remove the directory; idempotent, for crashed runs
    too.  True when nothing is left."""
    path = os.path.abspath(path)
    for _ in range(8):
        if not os.path.ismount(path):
            break
        _run(["umount", path])
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return not os.path.exists(path)


#: a ledger's .tmp younger than this may be a save in progress: left alone
PARTIAL_SAVE_AGE_S = 10.0


def adopt_partial_saves(force: bool = False) -> list[str]:
    """A run that died between writing its ledger's ``.tmp`` (Registry.save) and renaming it
    left its latest state there: take that as the ledger when it is whole JSON and its
    owner is gone (or ``force``), so the clean that follows finds every resource; drop it
    when it is not whole."""
    done: list[str] = []
    for tmp in sorted(STATE_DIR.glob("*.tmp")):
        try:
            if time.time() - tmp.stat().st_mtime < PARTIAL_SAVE_AGE_S:
                continue        # a save in progress (it takes microseconds)
            state = json.loads(tmp.read_text())
            if not isinstance(state, dict):
                raise ValueError("not a ledger")
        except FileNotFoundError:
            continue            # renamed meanwhile by its run
        except (OSError, ValueError):
            tmp.unlink(missing_ok=True)
            done.append(f"removed the partial ledger {tmp.name}")
            continue
        pid = state.get("pid", -1)
        if pid_alive(pid) and pid != os.getpid() and not force:
            continue            # its run is alive: it renames the file itself
        tmp.replace(tmp.with_suffix(".json"))
        done.append(f"took {tmp.name}, the last save of run {state.get('run')}, as its ledger")
    return done
