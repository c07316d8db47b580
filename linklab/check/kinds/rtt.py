"""rtt: a percentile of the round trip between two hosts (ping, `count` probes `interval`
apart), within bounds. Repeated like every measured check; a round trip the emulator itself
inflated (the emulator_rtt flag: the idle RTT measured far above what the topology's delays ask
for) is inconclusive, never failed.

`load: {streams: N}` measures the round trip under load, as flent's RRUL does: each repetition
sends N TCP streams of iperf3 from `from` to `to` (`duration`, `warmup` as a goodput check's)
and pings beside them every 0.1 s through the window; the percentile is of the replies from 1 s
past the warm-up on (slow start is not the queue a flow settles to). A queue the flow fills
(a FIFO at a bottleneck) adds its delay to every ping behind it: bufferbloat.

    - {id: rtt, kind: rtt, from: h1, to: h2, percentile: 50, min: 19ms, max: 22ms}
    - {id: loaded, kind: rtt, from: h1, to: h2, load: {streams: 4}, max: 50ms}
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from linklab import units
from linklab.check.kinds.base import Context, ping_target
from linklab.check.kinds.measured import DELAY_LIMITS, MeasuredKind, MeasuredParams
from linklab.measure import disturbance
from linklab.measure.iperf3 import Iperf3Client
from linklab.measure.ping import Ping, load_window
from linklab.model import paths
from linklab.model.resolved import Lab
from linklab.model.topology import Model

Time = Annotated[float, BeforeValidator(lambda v: None if v is None else units.parse_time(v)), Field(ge=0)]


class Load(Model):
    streams: Annotated[int, Field(ge=1, le=64)] = 1  # iperf3's TCP streams beside the ping


class Params(MeasuredParams):
    percentile: Annotated[float, Field(ge=0, le=100)] = 50
    min: Time | None = None
    max: Time | None = None
    count: Annotated[int, Field(ge=2, le=1000)] = 20
    interval: Annotated[float, BeforeValidator(units.parse_time), Field(ge=0.01, le=5)] = 0.1
    load: Load | None = None

    @model_validator(mode="after")
    def _bounds(self):
        if self.min is None and self.max is None:
            raise ValueError("give min:, max: or both (times, e.g. 20ms)")
        if self.load is not None and (given := sorted({"count", "interval"} & self.model_fields_set)):
            raise ValueError(f"{' and '.join(given)} set the ping of an idle path; under load the ping runs "
                             "through the flow every 0.1 s (duration: and warmup: set its length)")
        return self


class Rtt(MeasuredKind):
    name = "rtt"
    worse = 1  # a busy emulator delays more
    Params = Params
    summary = "a percentile of the round trip, idle or beside a TCP flow (load:), within bounds (measured)"
    unit = "time"
    limits = DELAY_LIMITS

    def what(self, p: Params) -> str:
        beside = f" beside {p.load.streams} TCP stream{'s' if p.load.streams > 1 else ''}" if p.load else ""
        return f"RTT p{p.percentile:g} {p.src} -> {p.dst}{beside}"

    def bounds(self, p: Params, lab: Lab) -> tuple[float | None, float | None]:
        return p.min, p.max

    def client(self, p: Params, lab: Lab) -> Iperf3Client:
        streams = p.load.streams if p.load else 1
        return Iperf3Client(server=ping_target(lab, p.dst, p.family), port=p.port, duration=p.duration,
                            streams=streams, ipv6=p.family == 6, omit=p.warmup)

    def extra_probes(self, p: Params, ctx: Context) -> list:
        return [LoadRtt(p.duration, p.percentile)] if p.load else []

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        if p.load:  # the measured kinds' repetitions: the flow, its probes and this ping beside it
            return super().observe(p, ctx)
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
        if p.load:  # rows as the repetitions made them (load_rtt_row's fields among them)
            return super().judge(p, raw, lab)
        return super().judge(p, {"rows": [rtt_row(p, r) for r in raw.get("rows", [])]}, lab)

    def metric(self, p: Params, row: dict[str, Any], lab: Lab) -> float | None:
        return row.get("load_rtt_s" if p.load else "rtt_s")


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


def load_rtt_row(stdout: str, stderr: str, interval_s: float, skip_s: float, percentile: float) -> dict[str, Any]:
    """The ping that ran beside a flow, one probe every `interval_s` -> the percentile of its
    replies from `skip_s` into the window (seconds: load_rtt_s), with how many were sent and
    answered there; an error when none was (a cut path measures nothing). Pure."""
    try:
        res = Ping.parse(stdout, stderr)
    except Exception as e:
        return {"error": f"the ping beside the flow: {e}"}
    window = load_window(res, interval_s, skip_s)
    row: dict[str, Any] = {"load_ping_sent": window.transmitted, "load_ping_received": window.received,
                           "load_ping_skip_s": skip_s}
    if not window.rtts_ms:
        return {**row, "error": f"no reply to {window.transmitted} pings beside the flow"}
    return {**row, "load_rtt_s": window.rtt_percentile(percentile) / 1e3,
            "load_ping_rtt_p50_ms": window.rtt_percentile(50)}


class LoadRtt:
    """A probe (linklab/measure/probes/base.py): a sweep's load ping (one ping every 0.1 s through
    the whole window, its output kept as ping-load.txt), its replies judged at the check's
    percentile (load_rtt_row)."""

    phase = "window_tail"

    def __init__(self, duration: float, percentile: float):
        # Imported when a check runs: what a measurement runs is not what parsing a checks file needs.
        from linklab.measure.probes import ping
        self.probe = ping
        self.ping = ping.LoadPing(idle=None, duration=duration)  # type: ignore[arg-type]  # its own row (the idle RTT beside) is not read: ours is
        self.percentile = percentile

    def before(self, rep) -> None:
        pass

    def start(self, rep) -> None:
        self.ping.start(rep)

    def finish(self, rep) -> None:
        self.ping.finish(rep)

    def row(self, rep) -> dict[str, Any]:
        if self.ping.proc is None:
            return {}
        return load_rtt_row(self.ping.out, self.ping.err, self.probe.LOAD_INTERVAL_S,
                            rep.omit + self.probe.LOAD_SKIP_S, self.percentile)
