"""What this machine can do, detected at run time and recorded with every run."""
from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import time
from functools import lru_cache
from typing import Any

from .proc import pid_alive


def run_text(argv: list[str], timeout: float = 10) -> str:
    """stdout+stderr of a command, or '' if it is missing or fails to start."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (p.stdout + p.stderr).strip()


@lru_cache(maxsize=1)
def kernel_config() -> dict[str, str]:
    """CONFIG_* values from /proc/config.gz (empty if the kernel does not expose it)."""
    try:
        with gzip.open("/proc/config.gz", "rt") as fh:
            return dict(line.strip().split("=", 1) for line in fh if line.startswith("CONFIG_"))
    except OSError:
        return {}


def kernel_feature(option: str, module: str) -> bool:
    """True if a kernel feature is built in, or loaded/loadable as ``module``."""
    value = kernel_config().get(option)
    if value == "y" or os.path.exists(f"/sys/module/{module}"):
        return True
    if value == "m" and shutil.which("modprobe"):
        return subprocess.run(["modprobe", "-q", module], check=False).returncode == 0
    return False


def ovs_datapath() -> str:
    """'kernel' when the Open vSwitch kernel datapath is usable, else 'user' (netdev)."""
    return "kernel" if kernel_feature("CONFIG_OPENVSWITCH", "openvswitch") else "user"


OVS_VSWITCHD_PID = "/var/run/openvswitch/ovs-vswitchd.pid"
OVSDB_SERVER_PID = "/var/run/openvswitch/ovsdb-server.pid"


def _live_pid(pidfile: str) -> int | None:
    """The pid in a pidfile if that process lives (not a zombie, not exiting: a SIGKILLed
    ovs-vswitchd takes 1-10 s to exit, and waiting on it for those seconds is pointless)."""
    try:
        with open(pidfile, encoding="ascii") as fh:
            pid = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def vswitchd_pid() -> int | None:
    """Pid of a live ovs-vswitchd (the switch daemon itself), or None."""
    return _live_pid(OVS_VSWITCHD_PID)


def ovsdb_pid() -> int | None:
    """Pid of a live ovsdb-server (Open vSwitch's database server), or None."""
    return _live_pid(OVSDB_SERVER_PID)


def vswitchd_answers(timeout: float = 3.0) -> bool:
    """True if ovs-vswitchd answers on its control socket.  ``ovs-vsctl show`` is not enough:
    the database server answers it alone, and bridge creation then blocks for ever."""
    return bool(run_text(["ovs-appctl", "-T", str(int(timeout)), "-t", "ovs-vswitchd",
                          "version"], timeout=timeout + 2)) and vswitchd_pid() is not None


def mininet_version() -> str:
    """Mininet's VERSION, read from its source: importing Mininet changes the logging
    class of the whole process, and model-only runs must not pay for that."""
    import importlib.util
    spec = importlib.util.find_spec("mininet")
    if spec is None or not spec.submodule_search_locations:
        return "missing"
    try:
        with open(os.path.join(list(spec.submodule_search_locations)[0], "net.py"),
                  encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return "missing"
    m = re.search(r"^VERSION\s*=\s*['\"]([^'\"]+)", text, re.M)
    return m.group(1) if m else "unknown"


def versions() -> dict[str, str]:
    """Versions of every component a result depends on."""
    def first(text: str) -> str:
        return text.splitlines()[0] if text else "missing"
    out = {
        "kernel": os.uname().release,
        "ovs": first(run_text(["ovs-vsctl", "--version"])),
        "iperf3": first(run_text(["iperf3", "--version"])),
        "bwm-ng": first(run_text(["bwm-ng", "-V"])),
        "mptcpize": "present" if shutil.which("mptcpize") else "missing",
    }
    try:
        from importlib.metadata import version
        out["os-ken"] = version("os-ken")
    except Exception:
        out["os-ken"] = "missing"
    out["mininet"] = mininet_version()
    out["clang"] = first(run_text(["clang", "--version"]))
    return out


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ('unknown' where it has none, e.g. on arm)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return "unknown"


#: where the kernel lists the CPU's vulnerabilities and its mitigation of each
VULNERABILITIES = "/sys/devices/system/cpu/vulnerabilities"


def mitigations() -> dict[str, str]:
    """The kernel's CPU-vulnerability mitigations that add work to every kernel return or
    indirect call (SRSO's Safe RET, retpolines), by /sys name, first clause only.  Recorded
    with the CPU model because a packet-hop's cost differs 1.8 times between two VMs of
    the same size here, and these may differ between them (docs/measured.md, "Why is a
    packet-hop 1.8 times dearer on the AMD VM?")."""
    out = {}
    for name in ("spectre_v2", "spec_rstack_overflow", "retbleed"):
        try:
            with open(os.path.join(VULNERABILITIES, name), encoding="ascii") as fh:
                out[name] = fh.read().strip().split(";")[0]
        except OSError:
            continue
    return out


def read_sysctl(name: str) -> str:
    """A root-namespace sysctl value, or '' if absent."""
    try:
        with open("/proc/sys/" + name.replace(".", "/"), encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def ns3_version() -> str | None:
    """The ns-3 simulator's version (PyPI ``ns3``, ``setup.sh --with-sim``; the sim
    backend), or None; read from its package metadata, since importing it takes ~20 s."""
    from importlib import metadata
    try:
        return metadata.version("ns3")
    except metadata.PackageNotFoundError:
        return None


def git_state(repo: str) -> dict[str, Any]:
    """Commit and dirty flag of the dcrepro checkout that produced a result."""
    commit = run_text(["git", "-C", repo, "rev-parse", "HEAD"])
    dirty = run_text(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit if re.fullmatch(r"[0-9a-f]{40}", commit) else None,
            "dirty": bool(dirty)}


#: an MPTCP subflow in `ss -tni` output: its connection's token is the one after the slash
#: ("tcp-ulp-mptcp flags:mc token:0000(id:0)/3b3ba3d6(id:0) ..."), shared by its subflows
_SS_TOKEN = re.compile(r"tcp-ulp-mptcp\b.*?\btoken:[0-9a-f]+\(id:\d+\)/([0-9a-f]+)\(")


def ss_subflows(text: str) -> dict[str, int]:
    """Established MPTCP subflows per connection (token -> count) in `ss -tni` output."""
    out: dict[str, int] = {}
    for token in _SS_TOKEN.findall(text):
        out[token] = out.get(token, 0) + 1
    return out


def wait_subflows(pid: int, want: int, timeout: float = 30.0) -> bool:
    """Poll (every 0.1 s, up to ``timeout`` s) until a connection in the network namespace
    of ``pid`` has ``want`` established MPTCP subflows; False if none did in time.  For the
    fault tests and bench_faults, which must flush subflows after they joined: joins take
    about a second on a quiet host, and a fixed sleep is a guess about the host."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = run_text(["nsenter", "-t", str(pid), "-n", "ss", "-tniH", "state",
                         "established"])
        if max(ss_subflows(text).values(), default=0) >= want:
            return True
        time.sleep(0.1)
    return False
