"""Progress of a long sweep: which unit is running, how many are done, and an ETA.

A unit is one (point, rep). The ETA is the mean duration of units finished in this session
times the units left: units done by an earlier, interrupted session (or skipped) took no
time here, so counting them would make the estimate absurdly optimistic. With `workers`
measuring side by side (a cluster), the units left are shared among them, and the line says
what runs on which worker.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Callable, TextIO

_CLEAR = "\r\x1b[2K"


def format_duration(seconds: float) -> str:
    """'1h02m', '3m05s', '42s'."""
    s = max(0, int(round(seconds)))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    def __init__(self, total_units: int, already_done: int = 0, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, workers: int = 1):
        if total_units < 0 or not 0 <= already_done <= total_units:
            raise ValueError(f"bad progress counts: {already_done} done of {total_units}")
        self.total = total_units
        self.done = already_done
        # sys.stderr as it is when the progress starts, not when this module was imported (a test's
        # captured stream, long closed, would be written to otherwise)
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.started = clock()
        self.label: str | None = None
        self.workers = max(1, workers)
        self.running: dict[str, str] = {}  # worker -> what it measures now (a cluster's sweep)
        self._unit_started: float | None = None
        self._finished = 0  # units finished in this session, the ETA's sample
        self._spent = 0.0
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._line_open = False

    def start_unit(self, label: str) -> None:
        self.label = label
        self._unit_started = self.clock()
        self._emit()

    def finish_unit(self, seconds: float | None = None) -> None:
        """Count the running unit as done; `seconds` overrides the measured duration."""
        now = self.clock()
        if seconds is None:
            seconds = now - self._unit_started if self._unit_started is not None else 0.0
        self._finished += 1
        self._spent += seconds
        self.done = min(self.total, self.done + 1)
        self.label = None
        self._unit_started = None
        if self.tty:
            self._emit()

    def set_running(self, worker: str, label: str | None) -> None:
        """What `worker` measures now (None: nothing); said on the next line printed."""
        if label is None:
            self.running.pop(worker, None)
        else:
            self.running[worker] = label

    def refresh(self) -> None:
        """Say the line again (what runs where changed)."""
        self._emit()

    def skip(self, n: int = 1) -> None:
        """Count units as done without timing them (found already measured)."""
        self.done = min(self.total, self.done + n)

    def eta(self) -> float | None:
        """Seconds left, or None before any unit finished in this session."""
        if not self._finished:
            return None
        mean = self._spent / self._finished / self.workers
        left = self.total - self.done
        if self._unit_started is None or left == 0:
            return mean * left
        # The running unit is partly done, but don't promise less than the units after it.
        in_unit = self.clock() - self._unit_started
        return max(mean * (left - 1), mean * left - in_unit)

    def line(self) -> str:
        width = len(str(self.total))
        pct = 100 * self.done // self.total if self.total else 100
        eta = self.eta()
        head = f"[{self.done:>{width}}/{self.total}]"
        if self.label:
            head += f" {self.label}"
        if self.running:
            head += f" {self.total - self.done} left, running: " + "; ".join(
                f"{label} on {w}" for w, label in sorted(self.running.items()))
        return (f"{head} — {pct}%, elapsed {format_duration(self.clock() - self.started)}, "
                f"ETA {'?' if eta is None else format_duration(eta)}")

    def log(self, text: str) -> None:
        """Print a message without garbling the progress line."""
        if self.tty and self._line_open:
            self.stream.write(_CLEAR + text + "\n")
            self._line_open = False
            self._emit()
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the rewritten line on a TTY so the next output starts on its own."""
        if self.tty and self._line_open:
            self.stream.write("\n")
            self.stream.flush()
            self._line_open = False

    def _emit(self) -> None:
        text = self.line()
        if self.tty:
            # A line longer than the terminal wraps, and then \r only rewrites its last part.
            cols = shutil.get_terminal_size((100, 24)).columns
            self.stream.write(_CLEAR + text[: max(10, cols - 1)])
            self._line_open = True
        else:
            self.stream.write(text + "\n")  # CI logs: one line per unit, no control codes
        self.stream.flush()
