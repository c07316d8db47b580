"""failover: how long a flow stops when one of a bond's members is taken down under it (as a
pulled cable: linklab/measure/probes/faults.py), at most `max_outage`. The outage is read from
iperf3's 0.1 s intervals (linklab/measure/timeline.py: the time the flow stayed below half its
rate); the member comes back up as the flow's time ends, so that a flow with no member left can
still end its test.

    - {id: failover, kind: failover, from: h1, to: h2, link: bond, member: 0, at: 2s, max_outage: 1s}
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from linklab import units
from linklab.check.kinds.base import Context, link_problem, ping_target
from linklab.check.kinds.measured import MeasuredKind, MeasuredParams, Seconds
from linklab.measure.iperf3 import Iperf3Client
from linklab.model.resolved import Lab

INTERVAL_S = 0.1  # iperf3's finest report interval (linklab/measure/probes/faults.py reads outages at it)


class Params(MeasuredParams):
    link: str
    member: Annotated[int, Field(ge=0, le=15)] = 0
    at: Annotated[float, BeforeValidator(units.parse_time), Field(gt=0)] = 2.0
    max_outage: Annotated[float, BeforeValidator(units.parse_time), Field(ge=0)]
    duration: Annotated[Seconds, Field(ge=2, le=120)] = 6

    @model_validator(mode="after")
    def _inside(self):
        if self.at >= self.duration - 1:
            raise ValueError(f"at {self.at:g} s leaves less than 1 s of the {self.duration} s flow to recover in")
        return self


class Failover(MeasuredKind):
    name = "failover"
    worse = 1  # a starved emulator stretches the outage
    Params = Params
    summary = "the outage of a flow when a bond member goes down under it, at most max_outage (measured)"
    unit = "time"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = super().problems(p, lab) + link_problem(lab, p.link, ("link",))
        if not out:
            link = lab.link(p.link)
            if link.kind != "bond":
                out.append((("link",), f"link {p.link!r} is no bond"))
            elif p.member >= len(link.veths):
                out.append((("member",), f"link {p.link!r} has {len(link.veths)} members: 0-{len(link.veths) - 1}"))
        return out

    def what(self, p: Params) -> str:
        return f"outage of {p.src} -> {p.dst} when {p.link} member {p.member} goes down"

    def bounds(self, p: Params, lab: Lab) -> tuple[float | None, float | None]:
        return None, p.max_outage

    def report_interval(self, p: Params) -> float:
        return INTERVAL_S

    def client(self, p: Params, lab: Lab) -> Iperf3Client:
        return Iperf3Client(server=ping_target(lab, p.dst, p.family), port=p.port, duration=p.duration,
                            ipv6=p.family == 6, omit=p.warmup, interval=INTERVAL_S, get_server_output=True)

    def extra_probes(self, p: Params, ctx: Context) -> list:
        from linklab.measure.probes.faults import RESTORE_MARGIN_S, FaultTimeline
        from linklab.sweep.experiment import Event
        # Back up as the flow's time ends (module text): with no other member up, what this check
        # exists to catch, the flow could not end its test before its timeout.
        return [FaultTimeline([Event(at=p.at, set=f"links[{p.link}].bond.member[{p.member}].state=down")], {},
                              restore_at=p.duration + RESTORE_MARGIN_S)]

    def metric(self, p: Params, row: dict[str, Any], lab: Lab) -> float | None:
        if row.get("fault1_applied_s") is None:
            return None  # the member was not taken down: nothing measured
        out = row.get("fault1_outage_s")
        # Never back above half its rate before the window ended: as long as the rest of the window.
        return float(out) if out is not None else float(p.duration - p.at)
