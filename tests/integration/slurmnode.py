"""A real one-node Slurm cluster in a temporary folder (munged, slurmctld, slurmd), for the
launcher tests and bench/bench_launchers.py.  Nothing outside the folder is touched: the
daemons get their own munge key and socket, ports, state and spool folders, and every
client finds them through ``SLURM_CONF``."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")


def missing_programs() -> list[str]:
    """Slurm and munge programs that are not installed (setup.sh --with-slurm installs)."""
    return [p for p in PROGRAMS if not shutil.which(p) and not os.path.exists(f"/usr/sbin/{p}")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class SlurmNode:
    """``with SlurmNode() as node:`` a one-node cluster whose node is idle; ``node.env`` is
    the environment for sbatch/squeue (also set in os.environ while it runs)."""

    def __init__(self, cpus: int = 2, timeout: float = 60.0) -> None:
        self.cpus = max(1, min(cpus, os.cpu_count() or 1))
        self.timeout = timeout
        self.dir = Path(tempfile.mkdtemp(prefix="dcrepro-slurm-"))
        self.procs: list[subprocess.Popen] = []
        self.host = socket.gethostname()
        self.env = {**os.environ, "SLURM_CONF": str(self.dir / "slurm.conf")}
        self._old_conf = os.environ.get("SLURM_CONF")

    def _config(self) -> str:
        d = self.dir
        return "\n".join([
            "ClusterName=dcrepro",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={d}/munge.socket",
            "SlurmUser=root", "SlurmdUser=root", "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/linear",
            # a batch job is scheduled when it arrives or a task ends, not on the next
            # periodic pass: the default builtin/backfill delays cost 3 s between tasks
            "SchedulerType=sched/backfill",
            "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "ReturnToService=2", "MinJobAge=300",
            f"StateSaveLocation={d}/state", f"SlurmdSpoolDir={d}/spool",
            f"SlurmctldPidFile={d}/slurmctld.pid", f"SlurmdPidFile={d}/slurmd.pid",
            f"SlurmctldLogFile={d}/slurmctld.log", f"SlurmdLogFile={d}/slurmd.log",
            f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=100 "
            "State=UNKNOWN",
            f"PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP",
            ""])

    def start(self) -> SlurmNode:
        """Key, config, the three daemons (foreground children), then wait for an idle node."""
        d = self.dir
        for sub in ("state", "spool"):
            (d / sub).mkdir()
        key = d / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o400)
        (d / "slurm.conf").write_text(self._config())
        os.environ["SLURM_CONF"] = self.env["SLURM_CONF"]
        log = open(d / "daemons.out", "ab")
        self._log = log
        # root runs munged here (a container has no munge service): --force allows that
        self._spawn([_exe("munged"), "-F", "--force", f"--key-file={key}",
                     f"--socket={d}/munge.socket", f"--pid-file={d}/munged.pid",
                     f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"], log)
        self._poll(lambda: (d / "munge.socket").exists(), "munged did not open its socket")
        self._spawn([_exe("slurmctld"), "-D", "-i"], log)
        self._spawn([_exe("slurmd"), "-D", "-N", self.host], log)
        self._poll(lambda: self.node_state() == "idle",
                   "the slurm node did not become idle")
        return self

    def _spawn(self, argv: list[str], log) -> None:
        self.procs.append(subprocess.Popen(argv, env=self.env, stdout=log, stderr=log,
                                           start_new_session=True))

    def _poll(self, ok, what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not ok():
            dead = [p.args[0] for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{what} ({'exited: ' + ', '.join(dead) if dead else 'timeout'}"
                                   f"); logs in {self.dir}")
            time.sleep(0.2)

    def node_state(self) -> str:
        """sinfo's state of the node ('' if slurmctld does not answer)."""
        p = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True,
                           text=True, timeout=15, check=False)
        return p.stdout.strip() if p.returncode == 0 else ""

    def queue(self) -> list[str]:
        """Job ids still in the queue."""
        p = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True,
                           text=True, timeout=15, check=False)
        return p.stdout.split()

    def stop(self) -> None:
        """Cancel every job, stop the daemons (TERM, then KILL after 15 s), remove the folder."""
        if self.procs and self.procs[-1].poll() is None:
            subprocess.run(["scancel", "--full", "-u", "root"], env=self.env,
                           capture_output=True, timeout=15, check=False)
            deadline = time.monotonic() + 30
            while self.queue() and time.monotonic() < deadline:
                time.sleep(0.2)
        for p in reversed(self.procs):  # slurmd, slurmctld, then munged
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=5)
        self.procs.clear()
        if getattr(self, "_log", None):
            self._log.close()
        if self._old_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = self._old_conf
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> SlurmNode:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def leftovers() -> list[str]:
    """Slurm or munge processes alive on this machine (pgrep), for teardown checks."""
    p = subprocess.run(["pgrep", "-a", "-f", "slurmctld|slurmd|slurmstepd|munged"],
                       capture_output=True, text=True, timeout=10, check=False)
    # a zombie slurmstepd holds nothing and is reaped by init a moment later
    return [line for line in p.stdout.splitlines()
            if "pgrep" not in line and "<defunct>" not in line]
