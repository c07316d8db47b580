"""Where a sweep's time goes: wall time per named phase of a repetition.

Each repetition keeps its phases in `timings.json` (raw) and as `phase_<name>_s` columns in its
row. A point's one-off phases (reconfigure, settle, pre-flight, server start) are charged to the
first repetition measured for that point, where they were paid; the later repetitions of the
point show them as absent. `bench/sweep_overhead.py` sums them against what the experiment asks
for (settle, warm-up, window, pause) to show the overhead beyond it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PREFIX = "phase_"
SUFFIX = "_s"

# What the experiment asks for: these phases are waits it requested, not overhead.
ASKED = ("settle", "window", "pause")
# A point's checks run while its lab settles (engine.prepare_point), and `settle` is only what
# is left of the wait after them: the asked settle covers the three together.
IN_SETTLE = ("preflight", "qdisc_dump", "settle")
# Paid once per point (charged to its first repetition), or once per sweep: the rest is paid by
# every repetition. A sweep of 10 repetitions per point pays the first a tenth as often.
PER_POINT = ("reconfigure", "settle", "preflight", "qdisc_dump", "server_start")
PER_SWEEP = ("startup", "restore")
# Reported by every measured repetition, 0 when nothing ran in it (a probe the experiment did not
# ask for): the same phase columns in every row, whatever was measured.
EVERY_REP = ("counters", "cc_read", "cpu_sampling", "window", "window_tail", "parse", "host_cpu")


class PhaseClock:
    """Accumulates wall time per phase name, in the order phases first ran."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - t0)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def merge(self, other: PhaseClock) -> None:
        for name, s in other.seconds.items():
            self.add(name, s)

    def total(self) -> float:
        return sum(self.seconds.values())

    def row(self) -> dict[str, float]:
        return {column(name): round(s, 3) for name, s in self.seconds.items()}

    def raw(self) -> str:
        return json.dumps({"seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                           "total_s": round(self.total(), 3)}, indent=1) + "\n"


def column(name: str) -> str:
    return f"{PREFIX}{name}{SUFFIX}"


def from_row(row: dict[str, Any]) -> dict[str, float]:
    """The phases a stored row recorded, by name (empty cells are phases that did not run)."""
    out = {}
    for key, value in row.items():
        if key.startswith(PREFIX) and key.endswith(SUFFIX) and value not in (None, ""):
            out[key[len(PREFIX):-len(SUFFIX)]] = float(value)
    return out


def breakdown(rows: list[dict[str, Any]], *, window_asked_s: float, settle_s: float, pause_s: float,
              outside: dict[str, float] | None = None) -> dict[str, Any]:
    """Per-phase totals of a run's rows, and the overhead beyond what the experiment asks for.

    Asked for: `settle` once per point (covering the pre-flight and qdisc dump that run inside
    it: IN_SETTLE), the window (`window_asked_s` = duration + iperf3's omitted warm-up) once per
    repetition, `pause` between repetitions. Whatever a phase took beyond that is overhead: the
    window's own excess (process start, connecting, the final report) included; what the settle's
    three took beyond it is shared among them by their time. `outside` are the sweep's phases in
    no row (start-up, recording, restore).
    """
    measured = [r for r in rows if from_row(r)]
    totals: dict[str, float] = {}
    for r in measured:
        for name, s in from_row(r).items():
            totals[name] = totals.get(name, 0.0) + s
    for name, s in (outside or {}).items():
        totals[name] = totals.get(name, 0.0) + s
    n = len(measured)
    points = len({r.get("point_id") for r in measured})
    reps_paused = sum(1 for r in measured if "pause" in from_row(r))
    asked = {"settle": settle_s * points, "window": window_asked_s * n, "pause": pause_s * reps_paused}
    inside = sum(totals.get(name, 0.0) for name in IN_SETTLE)
    beyond_settle = inside - min(asked["settle"], inside)
    overhead = {name: ((beyond_settle * s / inside if inside else 0.0) if name in IN_SETTLE
                       else s - min(asked.get(name, 0.0), s))
                for name, s in totals.items()}
    total_overhead = sum(overhead.values())
    every_rep = sum(s for name, s in overhead.items() if name not in PER_POINT + PER_SWEEP)
    per_point = sum(s for name, s in overhead.items() if name in PER_POINT)
    return {"repetitions": n, "points": points, "seconds": totals, "asked": asked,
            "overhead": overhead, "overhead_s": total_overhead,
            "overhead_per_rep_s": total_overhead / n if n else None,
            # The split: what every repetition pays, what each point pays once, what the sweep pays once.
            "paid_per_rep_s": every_rep / n if n else None,
            "paid_per_point_s": per_point / points if points else None,
            "paid_per_sweep_s": sum(s for name, s in overhead.items() if name in PER_SWEEP),
            "asked_s": sum(asked.values()), "accounted_s": sum(totals.values())}
