"""loss: the share of UDP datagrams a path loses at a sending rate (iperf3's receiver count),
at most `max`.

    - {id: clean, kind: loss, from: h1, to: h2, rate: 50mbit, max: 0.5%}
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from linklab import units
from linklab.check.kinds.base import ping_target
from linklab.check.kinds.measured import MeasuredKind, MeasuredParams
from linklab.measure.iperf3 import Iperf3Client
from linklab.model.resolved import Lab


class Params(MeasuredParams):
    rate: Annotated[float, BeforeValidator(units.parse_rate), Field(gt=0)]  # as written: scaled like the links
    max: Annotated[float, BeforeValidator(units.parse_percent)]
    length: Annotated[int, Field(ge=16, le=65000)] | None = None  # datagram payload bytes


class Loss(MeasuredKind):
    name = "loss"
    worse = 1  # a starved emulator or its bursts lose more
    Params = Params
    summary = "UDP loss at a sending rate, at most max (measured, repeated, with a tolerance)"
    unit = "percent"

    def what(self, p: Params) -> str:
        return f"UDP loss {p.src} -> {p.dst} at {units.format_rate(p.rate)}"

    def bounds(self, p: Params, lab: Lab) -> tuple[float | None, float | None]:
        return None, p.max

    def client(self, p: Params, lab: Lab) -> Iperf3Client:
        return Iperf3Client(server=ping_target(lab, p.dst, p.family), port=p.port, duration=p.duration,
                            protocol="udp", bitrate=p.rate * lab.scale, length=p.length, ipv6=p.family == 6,
                            omit=p.warmup)

    def metric(self, p: Params, row: dict[str, Any], lab: Lab) -> float | None:
        return row.get("lost_percent")
