"""Recording a repetition while the sweep goes on to what comes before the next one.

Recording a repetition writes about ten files and the table, each fsynced and renamed into place
(linklab/results/store.py). In the lab VM every one of those is a round trip to the host over
9p: ~0.2 s a repetition spent waiting, not computing. One background thread does it while the
sweep sleeps through the pause between repetitions or reconfigures, settles and checks the next
point; the sweep waits for it before the next repetition's first probe, so no write ever overlaps
a measurement, and at the end. A failure to record is raised where the sweep waits, as it would
have been in the foreground; what was recorded is all or nothing either way.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class Recorder:
    """At most one recording in flight: `submit` waits for the previous one first."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="linklab-record")
        self._pending: Future | None = None

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.wait()
        self._pending = self._pool.submit(fn, *args, **kwargs)

    def wait(self) -> None:
        """Until the recording in flight is on disk; re-raises what it raised."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)
