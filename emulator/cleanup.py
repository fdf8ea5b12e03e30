"""Cleaning what runs left: a dead run's recorded resources (``dcrepro clean``), orphans no
ledger names, and what is left on the machine.

The ledger (emulator/registry.py) only records; this module sits above it and above each
kind's owner (cc.py: struct_ops, cgroup.py: cgroups, sysinfo.py: Open vSwitch's daemons)
and imports all of them itself, so a clean after a crash removes every kind whatever the
process happened to import before.  Owners and the ledger are read through their modules
(``cc.orphan_struct_ops``, ``registry.STATE_DIR``), so a place moved or faked there (a
test, DCREPRO_STATE_DIR) is the one cleaned here too.
"""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from . import cc, cgroup, registry, sysinfo
from .proc import kill_namespace_strays, pid_alive
from .registry import _run

# Open vSwitch's run directory: its sockets and pid files (a crash leaves the sockets)
OVS_RUN = Path("/var/run/openvswitch")

#: how a line of clean_state/delete_bridges says something is left that a later clean must try
NOT_DONE = "could not"


def list_bridges() -> list[str] | None:
    """The bridges Open vSwitch lists, or None when it could not be asked (its database
    server does not answer): "none left" and "could not ask" are different answers."""
    p = _run(["ovs-vsctl", "--timeout=10", "list-br"])
    return p.stdout.split() if p.returncode == 0 else None


def delete_bridges(bridges: list[str]) -> list[str]:
    """Delete bridges in one OVS transaction, then check that each is gone.

    With the switch daemon dead, ``--no-wait``: otherwise ovs-vsctl waits for a daemon that
    will never confirm (10 s per bridge before this).  With the database server dead nothing
    can be deleted or checked: every bridge is reported as not done.
    """
    if not bridges:
        return []
    wait = [] if sysinfo.vswitchd_pid() else ["--no-wait"]
    p = _run(["ovs-vsctl", "--timeout=10", *wait,
              *[a for b in bridges for a in ("--", "--if-exists", "del-br", b)]], timeout=30)
    left = list_bridges()
    if left is None:
        # one line for all: the cause is one, and a line per bridge (20 on a k=4 fat tree)
        # buried the run's own error line under them
        names = bridges[0] if len(bridges) == 1 else f"{bridges[0]} ... {bridges[-1]}"
        return [f"{NOT_DONE} delete {len(bridges)} bridge(s) ({names}): Open vSwitch's "
                "database (ovsdb-server) does not answer"]
    return [f"deleted bridge {b}" if b not in left else
            f"{NOT_DONE} delete bridge {b}: {p.stderr.strip()[:200] or 'still listed'}"
            for b in bridges]


def clean_state(state: dict[str, Any]) -> list[str]:
    """Remove what a (dead) run recorded; return what was done. Touches nothing else."""
    done = []
    # first, while the hosts' shells still hold their namespaces: what runs in them unrecorded
    # (a client whose start SIGKILL cut short between fork and record)
    pids = state.get("pids", [])
    done += [f"killed unrecorded process {s}" for s in kill_namespace_strays(pids, set(pids))]
    for pid in pids:
        if pid_alive(pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            done.append(f"killed process group {pid}")
    done += delete_bridges(state.get("bridges", []))
    group = state.get("link_group")
    if group:
        _run(["ip", "link", "del", "group", str(group)])
    for intf in state.get("intfs", []):
        if _run(["ip", "link", "del", intf]).returncode == 0:
            done.append(f"deleted interface {intf}")
    for path in state.get("bpffs", []):
        if not os.path.lexists(path):
            continue                    # nothing there (its run removed it): nothing to say
        done.append(f"removed bpffs {path}" if registry.remove_bpffs(path) else
                    f"could not remove bpffs {path}")
    if state.get("cgroups"):
        # CPU caps (emulator/cgroup.py): after the processes above, which ran in them
        for path in state["cgroups"]:
            done.append(f"removed cgroup {path}" if cgroup.remove(path) else
                        f"{NOT_DONE} remove cgroup {path}")
    if state.get("struct_ops"):
        # a congestion control's link dies with the run's process; one some other process
        # kept open (an inherited descriptor) is detached by the ids recorded
        done += cc.clean_struct_ops(state["struct_ops"])
    for name, value in state.get("sysctl", {}).items():
        _run(["sysctl", "-qw", f"{name}={value}"])
        done.append(f"restored {name}={value}")
    return done


def clean_all(force: bool = False) -> list[str]:
    """Clean every recorded run whose owner process is gone (all of them with ``force``)."""
    done: list[str] = []
    if not registry.STATE_DIR.exists():
        return done
    done += registry.adopt_partial_saves(force)
    for path in sorted(registry.STATE_DIR.glob("*.json")):
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            continue
        if pid_alive(state.get("pid", -1)) and state.get("pid") != os.getpid() and not force:
            done.append(f"skipped run {state.get('run')}: its process {state['pid']} is alive")
            continue
        lines = clean_state(state)
        done += lines
        if any(line.startswith(NOT_DONE) for line in lines):
            # keep the record: a later clean (once OVS answers again) must find the rest
            done.append(f"kept the record of run {state.get('run')}: something is left")
            continue
        path.unlink(missing_ok=True)
    live = {json.loads(p.read_text()).get("run") for p in registry.STATE_DIR.glob("*.json")}
    # bridges tagged as ours whose registry entry was lost (e.g. /run wiped)
    ovs = _run(["ovs-vsctl", "--timeout=10", "--columns=name,external_ids", "--format=json",
                "list", "bridge"])
    out = ovs.stdout
    if ovs.returncode != 0 and OVS_RUN.exists():
        if _ovsdb_alive():
            done.append(f"{NOT_DONE} look for orphan bridges: Open vSwitch's database does "
                        "not answer (./setup.sh restarts it)")
        else:
            # nothing forwards on a bridge of a dead database; its rows come back when it
            # restarts, and the next clean looks then (so this is no failure of this one)
            done.append("no orphan bridges looked for: Open vSwitch's database is not running "
                        "(./setup.sh starts it; clean again then)")
    if out:
        for name, ext in json.loads(out)["data"]:
            tags = dict(ext[1]) if isinstance(ext, list) and ext[0] == "map" else {}
            if "dcrepro-run" in tags and tags["dcrepro-run"] not in live:
                _run(["ovs-vsctl", "--timeout=10", "--if-exists", "del-br", name])
                done.append(f"deleted orphan bridge {name}")
    # dcrepro's BPF congestion controls still registered when no live run recorded them
    done += cc.orphan_struct_ops(live_entries(live))
    # CPU-cap cgroups of runs that are not live any more ("<run>+<use>")
    for cg in cgroup.leftovers():
        if cgroup.run_of(cg.name) not in live:
            done.append(f"removed orphan cgroup {cg}" if cgroup.remove(cg) else
                        f"{NOT_DONE} remove orphan cgroup {cg}")
    # private bpffs mounts of runs that are not live any more ("<run>" or "<run>+<use>")
    for mnt in registry.bpf_mounts():
        if Path(mnt).name.split("+")[0] not in live:
            done.append(f"removed orphan bpffs {mnt}" if registry.remove_bpffs(mnt) else
                        f"could not remove orphan bpffs {mnt}")
    return done


def _ovsdb_alive() -> bool:
    """Whether the process in ovsdb-server's pid file lives (its socket outlives a crash)."""
    try:
        return pid_alive(int((OVS_RUN / "ovsdb-server.pid").read_text()))
    except (OSError, ValueError):
        return False


def live_entries(live: set[Any]) -> list[dict[str, Any]]:
    """The struct_ops registrations recorded by the runs named in ``live``."""
    out: list[dict[str, Any]] = []
    for p in registry.STATE_DIR.glob("*.json"):
        try:
            state = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if state.get("run") in live:
            out += state.get("struct_ops", [])
    return out


def machine_leftovers() -> dict[str, list[str]]:
    """Emulator state present on the machine (any origin): bridges, veths, processes, pins."""
    bridges = _run(["ovs-vsctl", "--timeout=10", "list-br"]).stdout.split()
    veths = _run(["ip", "-o", "link", "show", "type", "veth"]).stdout.splitlines()
    procs = _run(["pgrep", "-af", "iperf3|bwm-ng|mininet:|controller.launch"]).stdout.splitlines()
    # a zombie (<defunct>) is already dead: only init's reaping of an orphan is pending; a
    # version probe (sysinfo's "iperf3 --version", which any run's environment report makes,
    # the pure tests' model runs beside the integration tier among them) ends by itself
    return {"bridges": bridges, "veths": veths,
            "procs": [p for p in procs if "pytest" not in p and "<defunct>" not in p
                      and not p.endswith(" --version")],
            "bpffs": registry.bpf_mounts(),
            "cgroups": [str(c) for c in cgroup.leftovers()],
            "struct_ops": [f"{m['name']} (map {m['id']})" for m in cc.registered_struct_ops()
                           if m["name"] in cc.STRUCT_OPS_NAMES]}
