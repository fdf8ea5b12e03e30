"""Process helpers shared by the whole emulator: every command bounded, every child reaped."""
from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class RunError(RuntimeError):
    """The run cannot continue; the message says why (and the run is marked failed)."""


def run(argv: list[str], timeout: float = 30, input_text: str | None = None,
        ok: bool = False) -> subprocess.CompletedProcess[str]:
    """Run a command with a timeout; unless ``ok``, a non-zero exit raises RunError naming the
    command and its stderr (head and tail: a BPF verifier log ends with the reason)."""
    cmd = " ".join(argv[:6]) + (" ..." if len(argv) > 6 else "")
    try:
        p = subprocess.run(argv, input=input_text, capture_output=True, text=True,
                           timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RunError(f"timed out after {timeout}s: {cmd}") from None
    except FileNotFoundError:
        raise RunError(f"command not found: {argv[0]} (./setup.sh installs it)") from None
    if p.returncode != 0 and not ok:
        err = p.stderr.strip()
        if len(err) > 1500:
            err = f"{err[:500]} [...] {err[-1000:]}"
        raise RunError(f"{cmd} failed ({p.returncode}): {err}")
    return p


def run_group(argv: list[str], timeout: float, cwd: str | None = None,
              grace: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run a long command (a whole ``dcrepro run``, under ``flock`` or not) in its own
    process group and capture its output; past ``timeout`` the whole group is stopped
    (SIGTERM, so a run cleans up, SIGKILL after ``grace``) and reaped, and RunError says so.
    ``subprocess.run``'s timeout kills only the direct child: a ``dcrepro run`` under
    ``flock`` would go on running."""
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_process(p, grace)
        p.communicate()
        raise RunError(f"no end within {timeout:g} s: {' '.join(argv[:6])}") from None
    except BaseException:   # Ctrl-C in the caller: the group must not outlive it
        stop_process(p, grace)
        raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


@contextmanager
def held_lock(path: str | None, wait_s: float) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` for the block (nothing when None), waiting for it
    at most ``wait_s`` seconds (RunError after): the benches' way to take the machine's
    heavy-work lock without letting the wait eat the run's own timeout."""
    if path is None:
        yield
        return
    with open(path, "a") as fh:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RunError(f"{path} still held by another job after {wait_s:g} s") \
                        from None
                time.sleep(1.0)   # polling a lock held for minutes: a second is fine-grained
        yield     # closing the file releases the lock


def check(argv: list[str], timeout: float = 30, input_text: str | None = None) -> str:
    """Run a command, return stdout; raise RunError with its stderr if it fails or hangs."""
    return run(argv, timeout, input_text).stdout


def in_ns(pid: int, argv: list[str]) -> list[str]:
    """argv run inside the network namespace of Mininet host process ``pid``."""
    return ["mnexec", "-a", str(pid), *argv]


def stop_process(proc: subprocess.Popen[Any], timeout: float = 3.0) -> None:
    """SIGTERM a process group, SIGKILL it after ``timeout``, and reap it."""
    stop_all([proc], timeout)


def stop_all(procs: list[subprocess.Popen[Any]], timeout: float = 3.0) -> None:
    """stop_process for many at once: SIGTERM to every group first, one shared wait, then
    SIGKILL what is left (a failed run's 32 iperf3 processes: about 3 s, not 3 s each)."""
    alive = [p for p in procs if p.poll() is None]
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        for p in alive:
            try:
                os.killpg(p.pid, sig)
            except (ProcessLookupError, PermissionError):
                try:
                    p.send_signal(sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + wait
        for p in alive:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        alive = [p for p in alive if p.poll() is None]
        if not alive:
            return


def how_ended(p: subprocess.Popen[Any]) -> str:
    """'exit status N' or 'signal NAME' of a finished process."""
    rc = p.returncode
    if rc is not None and rc < 0:
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit status {rc}"


def first_line(p: subprocess.Popen[str], timeout: float) -> str:
    """The child's first line of output (text-mode stdout pipe); '' when it printed none
    within ``timeout`` s, e.g. a receiver that cannot bind or a sender whose connect hangs.
    poll(), not select(): a run's fds can be above select's limit of 1024."""
    assert p.stdout is not None, "first_line needs stdout=PIPE"
    poller = select.poll()
    poller.register(p.stdout, select.POLLIN)
    return p.stdout.readline() if poller.poll(max(0.0, timeout) * 1000) else ""


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: task flag in /proc/<pid>/stat (field 9): the process is in exit, past any signal
PF_EXITING = 0x4


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists and is neither a zombie nor exiting.

    A zombie has ended: only its parent's reaping is pending. An exiting process (a SIGKILLed
    ovs-vswitchd closing its hundreds of packet sockets, each waiting for an RCU grace
    period) stays in /proc for 1-10 s while it can do nothing more: it is dead already."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            # "pid (comm) S ppid ...": the fields follow the last ')' (comm may hold one);
            # the state is the first of them, the flags the seventh
            fields = fh.read().rsplit(b")", 1)[1].split()
        return fields[0] != b"Z" and not int(fields[6]) & PF_EXITING
    except (OSError, IndexError, ValueError):
        return True


def kill_namespace_strays(owners: list[int], spare: set[int]) -> list[str]:
    """SIGKILL every process in the network namespaces of ``owners`` (a run's Mininet hosts)
    except ``spare``; never in the namespace of PID 1 or of this process.

    The namespaces are the run's own, so whatever runs in them is the run's: a process whose
    start was cut short (Ctrl-C, or SIGKILL of dcrepro) before it was recorded, or a
    grandchild that left its group.  Returns "pid command" of each one stopped.
    """
    shared = set()
    for pid in (1, os.getpid()):
        try:
            shared.add(os.readlink(f"/proc/{pid}/ns/net"))
        except OSError:
            pass
    spaces = set()
    for pid in owners:
        try:
            spaces.add(os.readlink(f"/proc/{pid}/ns/net"))
        except OSError:
            pass          # ended: its namespace went with it, or lives on through a stray
    spaces -= shared
    hosts = [[str(p)] for p in owners]
    stray = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in spare or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().decode(errors="replace").split("\0")
            # (an mnexec that has not entered the namespace yet counts too)
            if os.readlink(f"/proc/{entry}/ns/net") not in spaces and not (
                    argv[:2] == ["mnexec", "-a"] and argv[2:3] in hosts):
                continue
            cmd = " ".join(argv).strip()
            os.kill(int(entry), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue          # it ended meanwhile
        stray.append(f"{entry} {cmd[:80]}")
    return stray


class Interrupted(KeyboardInterrupt):
    """A signal asked the run to stop; ``signum`` gives the exit code 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"{signal.Signals(signum).name}")
        self.signum = signum


def exit_code(exc: BaseException) -> int:
    """130 for SIGINT (or a plain KeyboardInterrupt), 128 + N for signal N."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


@contextmanager
def signals_deferred(notice: str | None = None) -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the block ends, then raise the first as Interrupted.

    For blocks that must not be cut in half: starting a process and recording it (a Ctrl-C
    inside ``subprocess.Popen`` leaves a live child that nobody knows of), and teardown.
    Only the main thread receives signals; elsewhere this does nothing.  ``notice`` is
    printed when a signal arrives, to say why the program did not stop at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def defer(signum: int, _frame: Any) -> None:
        pending.append(signum)
        if notice:
            print(notice, file=sys.stderr, flush=True)
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, defer) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if pending:
        raise Interrupted(pending[0])


def install_signal_handlers() -> None:
    """Turn SIGINT/SIGTERM/SIGHUP into an exception so every ``finally``/``__exit__`` runs.

    Called first thing by the CLI.  SIGINT is set explicitly: a process started in the
    background by a non-interactive shell inherits SIGINT as ignored, and Python then
    installs no KeyboardInterrupt handler.
    """
    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)
