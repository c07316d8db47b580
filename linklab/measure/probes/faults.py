"""Faults on the window's timeline: the experiment's events applied at their times in a thread,
and per event its effect in iperf3's short-interval time series (linklab/measure/timeline.py):
for a failure the outage it caused, for a change how long the flow took to settle at its new
level."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from linklab.measure import timeline
from linklab.measure.probes.base import Probe, Repetition
from linklab.model.resolved import Lab

# iperf3's finest report interval: the time series an outage is read from.
INTERVAL_S = 0.1
# Members taken down come back this long after the flow's time on the timeline's clock (the
# `restore_at` of a sweep's or a failover check's timeline): iperf3 starts up to ~0.7 s after it
# under software emulation, and its last intervals must see the outage.
RESTORE_MARGIN_S = 1.0


class Event(Protocol):
    """An experiment's timeline event (linklab/sweep/experiment.py: Event)."""

    at: float
    set: str

    @property
    def kind(self) -> str: ...

    @property
    def is_failure(self) -> bool: ...

    def action(self) -> tuple[str, int, bool]: ...

    def link_state(self) -> tuple[str, bool]: ...

    def active(self) -> tuple[str, int]: ...


class FaultTimeline(Probe):
    """Applies the events in a thread from iperf3's omitted warm-up on; `finish` waits for it,
    brings back up every member and link it took down and restores every impairment it changed, so the
    next repetition starts as the point was. `targets`: for the i-th event that changes an
    impairment, the lab as it is with that event and every earlier one applied, resolved before
    the window opens (applying it then costs only the tc calls). `restore_at`: seconds into the
    window at which every member taken down comes back up, before the flow ends: a flow whose
    every member went down cannot end its test over the path (iperf3's results travel on its
    control connection), and without it waited for its timeout (~30 s) to be killed."""

    phase = "window_tail"

    def __init__(self, events: Sequence[Event], targets: Mapping[int, Lab], restore_at: float | None = None):
        self.events, self.targets = sorted(events, key=lambda e: e.at), dict(targets)
        self.restore_at = restore_at
        self.log: list[dict[str, Any]] = []
        self.down: set[tuple[str, int | None]] = set()  # (link, member) taken down; member None: the whole link
        self.current: Lab | None = None
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self, rep: Repetition) -> None:
        self.current = rep.lab
        zero = time.monotonic() + rep.omit
        self.thread = threading.Thread(target=self._run, args=(rep, zero), daemon=True)
        self.thread.start()

    def _apply(self, rep: Repetition, i: int, ev: Event) -> str:
        backend = rep.handle.backend
        if ev.kind == "member_state":
            link, member, up = ev.action()
            what = backend.set_member_state(rep.lab, link, member, up)
            (self.down.discard if up else self.down.add)((link, member))
            return what
        if ev.kind == "link_state":
            link, up = ev.link_state()
            what = backend.set_link_state(rep.lab, link, up)
            (self.down.discard if up else self.down.add)((link, None))
            return what
        if ev.kind == "active_member":
            return backend.set_active_member(rep.lab, *ev.active())
        target = self.targets[i]
        what = "; ".join(backend.change_impairments(self.current, target)) or "no queue changed"
        self.current = target
        return what

    def _run(self, rep: Repetition, zero: float) -> None:
        for i, ev in enumerate(self.events):
            if self.stop.wait(max(zero + ev.at - time.monotonic(), 0)):
                self.log.append({"set": ev.set, "at_s": ev.at, "applied_s": None, "note": "window ended first"})
                continue
            # started_s: when the timeline woke and began the change (linklab's timing); applied_s:
            # when the change was in (the tools': tc or netlink calls, slow on an emulated CPU).
            started = round(time.monotonic() - zero, 3)
            try:
                what = self._apply(rep, i, ev)
                self.log.append({"set": ev.set, "at_s": ev.at, "started_s": started,
                                 "applied_s": round(time.monotonic() - zero, 3), "did": what})
            except Exception as e:  # recorded, not fatal: the row says the fault did not happen
                hint = getattr(e, "hint", None)
                self.log.append({"set": ev.set, "at_s": ev.at, "started_s": started, "applied_s": None,
                                 "error": str(e) + (f" ({hint})" if hint else "")})
        if self.restore_at is not None and not self.stop.wait(max(zero + self.restore_at - time.monotonic(), 0)):
            self._restore_members(rep)

    def _restore_members(self, rep: Repetition) -> None:
        for link, member in sorted(self.down, key=lambda d: (d[0], -1 if d[1] is None else d[1])):
            if member is None:
                rep.handle.backend.set_link_state(rep.lab, link, True)
            else:
                rep.handle.backend.set_member_state(rep.lab, link, member, True)
            self.down.discard((link, member))

    def finish(self, rep: Repetition) -> None:
        if self.thread is None:
            return
        self.stop.set()
        self.thread.join(timeout=30)
        self._restore_members(rep)
        if self.current is not rep.lab:
            rep.handle.backend.change_impairments(self.current, rep.lab)
        rep.raw["events.json"] = json.dumps(self.log, indent=1)

    def row(self, rep: Repetition) -> dict[str, Any]:
        if self.thread is None:
            return {}
        doc = json.loads(rep.traffic_json) if rep.traffic_json.strip() else {}
        ivs, streams = timeline.series(doc), timeline.stream_series(doc)
        row: dict[str, Any] = {}
        for i, (ev, done) in enumerate(zip(self.events, self.log), start=1):
            row[f"fault{i}_action"] = ev.set
            row[f"fault{i}_applied_s"] = done.get("applied_s")
            until = min((e.at for e in self.events if e.at > ev.at), default=None)
            row.update(timeline.effect(ivs, ev.at, ev.is_failure, until, streams).row(f"fault{i}_"))
        row["fault_outage_fraction"] = timeline.OUTAGE_FRACTION
        return row
