"""reorder: the share of packets a path delivers out of order (RFC 4737, a sequence-numbered UDP
probe sent in bursts beside a TCP flow: linklab/measure/reorder.py), at most `max`.

    - {id: in-order, kind: reorder, from: h1, to: h2, streams: 1, max: 0.01}
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from linklab.check.kinds.base import Context, ping_target
from linklab.check.kinds.measured import MeasuredKind, MeasuredParams
from linklab.measure.iperf3 import Iperf3Client
from linklab.model.resolved import Lab

PROBE_PORT_OFFSET = 100


class Params(MeasuredParams):
    max: Annotated[float, Field(ge=0, le=1)]  # reordered packets / received
    streams: Annotated[int, Field(ge=1, le=64)] = 1


class Reorder(MeasuredKind):
    name = "reorder"
    worse = 1  # a starved emulator reorders more
    Params = Params
    summary = "the share of packets delivered out of order beside a flow, at most max (measured)"
    unit = "ratio"

    def what(self, p: Params) -> str:
        return f"reordered share {p.src} -> {p.dst}"

    def bounds(self, p: Params, lab: Lab) -> tuple[float | None, float | None]:
        return None, p.max

    def client(self, p: Params, lab: Lab) -> Iperf3Client:
        return Iperf3Client(server=ping_target(lab, p.dst, p.family), port=p.port, duration=p.duration,
                            streams=p.streams, ipv6=p.family == 6, omit=p.warmup)

    def extra_probes(self, p: Params, ctx: Context) -> list:
        from linklab.measure.probes.reorder import Reordering
        return [Reordering(port=p.port + PROBE_PORT_OFFSET, duration=p.duration)]

    def metric(self, p: Params, row: dict[str, Any], lab: Lab) -> float | None:
        return row.get("reorder_ratio")
