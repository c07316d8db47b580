"""What a probe is, and what the probes of one repetition share.

A repetition is a window of traffic (linklab/measure/traffic.py) and the probes around it. Each
probe is one thing measured besides the traffic (flent's runners: one object per tool, with a
start, a finish and a result), and follows four steps, each with a default that does nothing:

  before(rep)  before the window opens: snapshots, idle measurements, receivers that must listen
  start(rep)   the traffic has started: what runs beside it (a load ping, the fault timeline)
  finish(rep)  the traffic has ended: stop what ran beside it, keep its output in rep.raw
               (kept even when a later step fails: the raw output explains the failure)
  row(rep)     after the window: read what comes after (the second snapshot), return row fields

The steps run probe by probe in the order the probes were given, except `finish`, which runs in
reverse (last begun, first finished: the CPU sampler, begun last, stops first, as the traffic
ends). `row` sees the fields of the probes before it in rep.row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from linklab.handle import LabHandle
from linklab.model.resolved import Lab


@dataclass
class Repetition:
    """One repetition of a point, as its probes see it."""

    handle: LabHandle
    client: str  # the node that sends
    server: str  # the node that receives
    family: int  # 4 or 6
    omit: float  # seconds of iperf3's warm-up at the window's start, measured but not counted
    # Filled as the repetition runs:
    opened: float = 0.0  # time.monotonic() when the traffic started
    wall_opened: float = 0.0  # time.time() then (the host's CPU samples are on this clock)
    wall_closed: float = 0.0  # time.time() when the window and what ran beside it were over
    traffic_json: str = ""  # the (first) iperf3 client's JSON report: its intervals are a time series
    raw: dict[str, str] = field(default_factory=dict)  # file name -> a tool's output, kept verbatim
    row: dict[str, Any] = field(default_factory=dict)  # the tidy row, filled step by step

    @property
    def lab(self) -> Lab:
        return self.handle.lab

    @property
    def client_ns(self) -> str:
        return self.handle.ns(self.client)

    @property
    def server_ns(self) -> str:
        return self.handle.ns(self.server)

    @property
    def target(self) -> str:
        """The name the client reaches the server by (lab hosts files name NODE and NODE-v6)."""
        return self.server if self.family == 4 else f"{self.server}-v6"


class Probe:
    # The phase its time is charged to (linklab/sweep/phases.py).
    phase: ClassVar[str] = "counters"

    def before(self, rep: Repetition) -> None:
        pass

    def start(self, rep: Repetition) -> None:
        pass

    def finish(self, rep: Repetition) -> None:
        pass

    def row(self, rep: Repetition) -> dict[str, Any]:
        return {}
