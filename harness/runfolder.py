"""One folder per run: config.json (every resolved parameter and fact), status, data, figures."""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import secrets
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator.environment import environment
from emulator.proc import pid_alive
from emulator.registry import STATE_DIR
from emulator.sysinfo import cpu_model, git_state, mitigations
from store import FINAL
from store.papers import scale

REPO = Path(__file__).resolve().parent.parent
#: one marker per unfinished run folder: a run killed by SIGKILL is found from here
LIVE_DIR = STATE_DIR / "folders"


def process_start(pid: int) -> str:
    """Start time of a process in clock ticks since boot ('' if it is gone): with the pid,
    it names one process even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


#: the handler of the newest run folder on the "dcrepro" logger (_share_warnings)
_SHARED: list[logging.Handler] = []


def _share_warnings(handler: logging.Handler) -> None:
    """The harness's own warnings (the "dcrepro" logger: a flow started again, a subflow
    lost, a tracer's count) go to the newest run's log.txt too, beside the terminal: the
    log keeps the run's whole story, with the time of each.  A run made later in the same
    process (a sweep's next point) takes them over."""
    shared = logging.getLogger("dcrepro")
    for old in _SHARED:
        shared.removeHandler(old)
        old.close()
    _SHARED[:] = [handler]
    shared.addHandler(handler)


class RunFolder:
    """results/<experiment>/<UTC timestamp>-<short id>/ with config.json and status.json."""

    def __init__(self, root: Path, experiment: str, params: dict[str, Any]) -> None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        self.id = f"{stamp}-{secrets.token_hex(3)}"
        self.path = root / experiment / self.id
        self.path.mkdir(parents=True, exist_ok=False)
        self.owner = {"pid": os.getpid(), "start": process_start(os.getpid())}
        self.config: dict[str, Any] = {
            "experiment": experiment, "run_id": self.id, "params": dict(params),
            "git": git_state(str(REPO)), "environment": environment(), "runtime": {},
            # which machine (the report's provenance; a sweep's fingerprint.json has it too)
            "machine": {"host": socket.gethostname(), "cpu_model": cpu_model(),
                        "mitigations": mitigations()},
            "started_utc": stamp,
            # the set-up against the paper's (rate, duration), as the verdicts show it
            "scale": scale(experiment, params)}
        self.write_config()
        self.set_status("running")
        self.log = logging.getLogger(f"dcrepro.{self.id}")
        handler = logging.FileHandler(self.path / "log.txt")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        # exactly this handler: a logger created after Mininet was imported is Mininet's
        # class, which adds a terminal handler of its own
        self.log.handlers = [handler]
        self.log.setLevel(logging.INFO)
        self.log.propagate = False  # the CLI prints its own one-line message
        _share_warnings(handler)
        #: called as each network of the run ends (the CLI's progress line sets it)
        self.on_network: Callable[[str], None] = lambda where: None

    def network_done(self, where: str) -> None:
        """A network of the run is finished (a backend says so): the progress line's step
        (dcrepro/progress.py; nothing happens without one)."""
        self.on_network(where)

    def write_config(self) -> None:
        """Rewrite config.json (called again as runtime facts arrive)."""
        (self.path / "config.json").write_text(json.dumps(self.config, indent=1, default=str))

    def flag(self, reason: str) -> None:
        """Name a reason to doubt this run's numbers: the final status keeps it beside ``ok``
        (config.json too), so a partial measurement is never a silent ``ok``."""
        self.config.setdefault("suspect", []).append(reason)
        self.write_config()

    def record(self, key: str, value: Any) -> None:
        """Add an observed runtime fact (datapath, qdiscs read back, ...) to config.json."""
        self.config["runtime"][key] = value
        self.write_config()

    def set_status(self, status: str, error: str | None = None, **extra: Any) -> None:
        """running | measured | ok | failed | interrupted | killed, with the error that ended
        it.  ``measured``: every table is written, figures are not yet; ``ok`` comes last."""
        body = {"status": status, "error": error,
                "time_utc": dt.datetime.now(dt.UTC).isoformat(), **self.owner,
                **extra}
        tmp = self.path / "status.json.tmp"
        try:
            tmp.write_text(json.dumps(body, indent=1))
        except OSError:
            tmp.unlink(missing_ok=True)    # a full disk leaves no empty status.json.tmp
            raise
        tmp.replace(self.path / "status.json")
        marker = LIVE_DIR / f"{self.id}.json"
        if status in FINAL:
            marker.unlink(missing_ok=True)
        elif not marker.exists():
            try:
                LIVE_DIR.mkdir(parents=True, exist_ok=True)
                marker.write_text(json.dumps({"path": str(self.path.resolve()), **self.owner}))
            except OSError:
                pass  # not root (model runs): nobody can SIGKILL-orphan an emulation then


def keep_final_status(folder: RunFolder, status: str, error: str) -> bool:
    """A final status that could not be written into the folder (its disk is full) is kept
    in the run's live marker (under /run, another file system) for mark_killed_runs to
    write later; False if that failed too."""
    marker = LIVE_DIR / f"{folder.id}.json"
    try:
        LIVE_DIR.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"path": str(folder.path.resolve()), **folder.owner,
                                      "final": {"status": status, "error": error}}))
        return True
    except OSError:
        return False


def mark_killed_runs() -> list[str]:
    """Give every run folder whose dcrepro process died without a final status (SIGKILL,
    power loss) the status ``killed``, and every one whose final status could not be written
    (a full disk: keep_final_status) that status; return what was marked."""
    done = []
    for marker in sorted(LIVE_DIR.glob("*.json")) if LIVE_DIR.exists() else []:
        try:
            m = json.loads(marker.read_text())
        except (OSError, ValueError):
            marker.unlink(missing_ok=True)
            continue
        final = m.get("final")    # the run is over even if its process lives on (a sweep)
        if not final and pid_alive(m["pid"]) and process_start(m["pid"]) == m.get("start"):
            continue
        status_path = Path(m["path"]) / "status.json"
        try:
            status = json.loads(status_path.read_text())
        except (OSError, ValueError):
            status = {"status": "running"}
        if status.get("status") not in FINAL:
            now = dt.datetime.now(dt.UTC).isoformat()
            if final:
                status.update(**final, time_utc=now,
                              note="written later: there was no room when the run ended")
            else:
                status.update(status="killed", error=f"the dcrepro process (pid {m['pid']}) "
                              "died without recording a final status (SIGKILL or power "
                              f"loss) while the run was '{status.get('status')}'",
                              time_utc=now)
            try:
                status_path.write_text(json.dumps(status, indent=1))
            except OSError:
                continue          # still no room: keep the marker for the next look
            done.append(f"marked run {m['path']} {status['status']}")
        marker.unlink(missing_ok=True)
    return done
