"""The one progress line of `dcrepro run` on a terminal: how far the run is, by the dry
run's estimate (dcrepro/estimate.py), and when it should end.

The bar counts estimated seconds.  It moves with the clock inside the network being run (up
to just short of that network's estimate, so a slow network holds it rather than running
past) and jumps to the network's end when the backend says the network is done
(``RunFolder.network_done``).  tqdm draws it on stderr and keeps the run's own lines above
it (every line printed meanwhile goes out through tqdm).  Off the terminal (CI, a sweep, a
pipe, a redirect) there is no line at all and the output is exactly the run's own.
"""
from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

from tqdm import tqdm

from dcrepro.estimate import minutes

#: seconds between redraws (the clock's share of a network)
TICK_S = 0.5
#: how much of a network's estimate the clock may fill before the network says it is done
CLOCK_SHARE = 0.97


class _Lines(io.TextIOBase):
    """A stream that hands complete lines to ``emit`` (so tqdm can lift its bar for them)."""

    def __init__(self, emit: Any, real: IO[str]) -> None:
        self.emit, self.real, self.buf = emit, real, ""

    def write(self, s: str) -> int:
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self.emit(line, self.real)
        return len(s)

    def flush(self) -> None:
        if self.buf:
            self.emit(self.buf, self.real)
            self.buf = ""
        self.real.flush()

    def isatty(self) -> bool:
        return self.real.isatty()

    def fileno(self) -> int:
        return self.real.fileno()


class ProgressLine:
    """The bar of one run: ``shares`` (estimated seconds per network, in order) plus the
    run's own part at the end (``total`` minus their sum)."""

    def __init__(self, shares: list[float], total: float, out: IO[str]) -> None:
        self.shares = [max(0.0, s) for s in shares]
        self.total = max(total, sum(self.shares), 1.0)
        self.done = 0                      # networks finished
        self.step_start = time.monotonic()
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.bar = tqdm(total=round(self.total), file=out, unit="s", leave=False,
                        dynamic_ncols=True, mininterval=TICK_S, desc=self._what(),
                        bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}{postfix}")
        self.thread = threading.Thread(target=self._tick, name="progress", daemon=True)

    def _what(self) -> str:
        n = len(self.shares)
        return f"network {min(self.done + 1, n)}/{n}" if n else "run"

    def position(self) -> float:
        """Estimated seconds done: the finished networks', and the clock's share of the
        current one (the run's own part, once every network is done)."""
        with self.lock:
            done = sum(self.shares[:self.done])
            current = self.shares[self.done] if self.done < len(self.shares) else \
                self.total - sum(self.shares)
            spent = time.monotonic() - self.step_start
        return min(self.total, done + min(spent, CLOCK_SHARE * current))

    def network_done(self, where: str) -> None:
        """A network is finished: the bar jumps to its end."""
        with self.lock:
            self.done = min(self.done + 1, len(self.shares))
            self.step_start = time.monotonic()
        self._draw()

    def _draw(self) -> None:
        at = self.position()
        self.bar.n = round(at)
        self.bar.set_description_str(self._what(), refresh=False)
        # the estimate's own remainder (tqdm's would extrapolate the clock-driven bar)
        self.bar.set_postfix_str(f"about {minutes(self.total - at)} left", refresh=False)
        self.bar.refresh()

    def _tick(self) -> None:
        while not self.halt.wait(TICK_S):
            self._draw()

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.halt.set()
        if self.thread.ident is not None:      # started
            self.thread.join(timeout=2 * TICK_S)
        self.bar.close()


def _through(bar: tqdm, bar_file: IO[str]) -> Any:
    """Write a line to its stream with the bar lifted off ``bar_file`` meanwhile."""
    def emit(line: str, real: IO[str]) -> None:
        with bar.external_write_mode(file=bar_file):
            real.write(line + "\n")
            real.flush()
    return emit


@contextlib.contextmanager
def progress_line(shares: list[float] | None, total: float,
                  folder: Any) -> Iterator[ProgressLine | None]:
    """A progress line for the block when stdout and stderr are a terminal and the run has
    an estimate (``shares`` not None); ``folder.network_done`` steps it.  Off the terminal,
    nothing (yields None)."""
    if shares is None or not (sys.stdout.isatty() and sys.stderr.isatty()):
        yield None
        return
    real_out, real_err = sys.stdout, sys.stderr
    line = ProgressLine(shares, total, real_err)
    emit = _through(line.bar, real_err)
    sys.stdout, sys.stderr = _Lines(emit, real_out), _Lines(emit, real_err)
    before = folder.on_network
    folder.on_network = line.network_done
    line.start()
    try:
        yield line
    finally:
        folder.on_network = before
        for s in (sys.stdout, sys.stderr):
            s.flush()
        sys.stdout, sys.stderr = real_out, real_err
        line.close()
