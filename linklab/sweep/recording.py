"""Recording a repetition while the sweep waits for the next one.

Writing a repetition (its raw files, its row, results.csv: linklab/results/store.py) costs
~0.3 s in the lab VM, where every file crosses 9p. The sweep then mostly waits on purpose: the
pause between repetitions, the next point's reconfiguration, pre-flight and settle. So the write
runs in one background thread, in order, and the sweep waits for it only where it must:
  - before anything measures again (the next repetition's probes, the end of the next point's
    settle), so a measurement never shares the lab's CPU with a write;
  - before it moves a recorded repetition aside (a disturbed one measured again);
  - at the end, before the table and the manifest are final.
A write that fails raises where the sweep waits for it, as it did when the sweep wrote in line.
Kill -9 in between leaves what any crash leaves: a repetition written whole or not at all
(atomic writes), found or redone on resume.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from linklab.sweep.phases import PhaseClock


class Recording:
    """One writer thread. `totals` gets the time the sweep waited for a write ("record"); the
    writer's own busy time, mostly hidden behind the sweep's waits, is `background_s`."""

    def __init__(self, totals: PhaseClock) -> None:
        self.totals = totals
        self.background_s = 0.0
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future | None = None

    def submit(self, write: Callable[[], None]) -> None:
        """Run `write` after the previous one, in the background."""
        self.wait()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="linklab-record")
        self._pending = self._pool.submit(self._timed, write)

    def _timed(self, write: Callable[[], None]) -> None:
        t0 = time.monotonic()
        try:
            write()
        finally:
            self.background_s += time.monotonic() - t0

    def wait(self) -> None:
        """Until the last write is done; its exception, if it failed."""
        pending, self._pending = self._pending, None
        if pending is not None:
            with self.totals.phase("record"):
                pending.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
