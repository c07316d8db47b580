"""rtt: a percentile of the round trip between two hosts (ping, `count` probes `interval`
apart), within bounds. Repeated like every measured check; a round trip the emulator itself
inflated (the emulator_rtt flag: measured far above what the topology's delays ask for) is
inconclusive, never failed.

    - {id: rtt, kind: rtt, from: h1, to: h2, percentile: 50, min: 19ms, max: 22ms}
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from linklab import units
from linklab.check.kinds.base import Context, ping_target
from linklab.check.kinds.measured import DELAY_LIMITS, MeasuredKind, MeasuredParams
from linklab.measure import disturbance
from linklab.measure.ping import Ping
from linklab.model import paths
from linklab.model.resolved import Lab

Time = Annotated[float, BeforeValidator(lambda v: None if v is None else units.parse_time(v)), Field(ge=0)]


class Params(MeasuredParams):
    percentile: Annotated[float, Field(ge=0, le=100)] = 50
    min: Time | None = None
    max: Time | None = None
    count: Annotated[int, Field(ge=2, le=1000)] = 20
    interval: Annotated[float, BeforeValidator(units.parse_time), Field(ge=0.01, le=5)] = 0.1

    @model_validator(mode="after")
    def _bounds(self):
        if self.min is None and self.max is None:
            raise ValueError("give min:, max: or both (times, e.g. 20ms)")
        return self


class Rtt(MeasuredKind):
    name = "rtt"
    worse = 1  # a busy emulator delays more
    Params = Params
    summary = "a percentile of the round trip, within bounds (measured, repeated, with a tolerance)"
    unit = "time"
    limits = DELAY_LIMITS

    def what(self, p: Params) -> str:
        return f"RTT p{p.percentile:g} {p.src} -> {p.dst}"

    def bounds(self, p: Params, lab: Lab) -> tuple[float | None, float | None]:
        return p.min, p.max

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        ping = Ping(target=ping_target(ctx.lab, p.dst, p.family), count=p.count, interval=p.interval, family=p.family)
        asked = paths.asked_rtt_s(ctx.lab, p.src, p.dst)
        rows = []
        for _ in range(p.repeat):
            res = ctx.run(p.src, ping.argv(), timeout=p.count * p.interval + 20)
            rows.append({"stdout": res.stdout, "stderr": res.stderr,
                         "asked_rtt_ms": None if asked is None else round(asked * 1e3, 4)})
            if len(rows) < p.repeat and self.decided(p, [rtt_row(p, r) for r in rows], ctx.lab):
                break
        return {"rows": rows}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab):
        return super().judge(p, {"rows": [rtt_row(p, r) for r in raw.get("rows", [])]}, lab)

    def metric(self, p: Params, row: dict[str, Any], lab: Lab) -> float | None:
        return row.get("rtt_s")


def rtt_row(p: Params, raw: dict[str, Any]) -> dict[str, Any]:
    """A ping burst's output -> the percentile asked for (seconds) and the emulator_rtt flag. Pure."""
    try:
        res = Ping.parse(raw.get("stdout", ""), raw.get("stderr", ""))
    except Exception as e:
        return {"error": str(e)}
    if not res.rtts_ms:
        return {"error": f"no reply to {res.transmitted} pings"}
    row = {"rtt_s": res.rtt_percentile(p.percentile) / 1e3, "ping_rtt_p50_ms": res.rtt_percentile(50)}
    row.update(disturbance.flags(row, asked_rtt_ms=raw.get("asked_rtt_ms")))
    return row
