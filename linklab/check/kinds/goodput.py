"""goodput: what a TCP or UDP flow from one host to another delivers, as a fraction of theory or
in absolute terms. Theory is what the path's slowest hop carries (a bond's members add up; the
lab's scale applied) times the payload per wire byte at the path's MTU for the check's protocol
and family (linklab/model/paths.py: goodput_fraction). Absolute rates are written as a
topology writes them and scaled like its links.

    - {id: goodput, kind: goodput, from: h1, to: h2, streams: 8, min_fraction: 0.8}
    - {id: floor, kind: goodput, from: h1, to: h2, min: 500mbit, repeat: 5, tolerance: 0.1}
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from linklab import units
from linklab.check.kinds.base import ping_target
from linklab.check.kinds.measured import MeasuredKind, MeasuredParams
from linklab.measure.iperf3 import Iperf3Client
from linklab.model import paths
from linklab.model.resolved import Lab

Rate = Annotated[float, BeforeValidator(lambda v: None if v is None else units.parse_rate(v)), Field(gt=0)]


class Params(MeasuredParams):
    protocol: Literal["tcp", "udp"] = "tcp"
    streams: Annotated[int, Field(ge=1, le=64)] = 1
    min_fraction: Annotated[float, Field(gt=0, le=1.5)] | None = None
    max_fraction: Annotated[float, Field(gt=0, le=1.5)] | None = None
    min: Rate | None = None
    max: Rate | None = None
    udp_rate: Rate | None = None  # UDP: the sending rate as written (default: the path's theory, unscaled)
    mtu: Annotated[int, Field(ge=68, le=65535)] | None = None  # for theory (default: the path's MTU)

    @model_validator(mode="after")
    def _bounds(self):
        fractions = self.min_fraction is not None or self.max_fraction is not None
        rates = self.min is not None or self.max is not None
        if fractions == rates:
            raise ValueError("give min_fraction/max_fraction (of theory) or min/max (rates), one pair")
        return self


def theory_bps(lab: Lab, src: str, dst: str, protocol: str, mtu: int | None = None, family: int = 4) -> float | None:
    """The goodput the path's links allow: the sweeps' goodput theory on the slowest hop's rate."""
    rate = paths.bottleneck_bps(lab, src, dst)
    mtu = mtu or paths.path_mtu(lab, src, dst)
    if rate is None or mtu is None:
        return None
    timestamps = protocol != "tcp" or paths.tcp_timestamps(lab, src, dst)
    return paths.goodput_bps(rate, mtu, family, protocol=protocol, timestamps=timestamps)


class Goodput(MeasuredKind):
    name = "goodput"
    Params = Params
    summary = "TCP/UDP goodput as a fraction of theory or a rate (measured, repeated, with a tolerance)"
    unit = "rate"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = super().problems(p, lab)
        theory = None if out else theory_bps(lab, p.src, p.dst, p.protocol, p.mtu, p.family)
        if not out and p.min is None and p.max is None and theory is None:
            out.append((("min_fraction" if p.min_fraction is not None else "max_fraction",),
                        f"no link on the path {p.src} -> {p.dst} has a rate, so there is no theory to take a "
                        "fraction of: give min:/max: as rates instead"))
        if not out and p.protocol == "udp" and p.udp_rate is None and theory is None:
            out.append((("udp_rate",), "no link on the path has a rate to send UDP at: give udp_rate"))
        return out

    def what(self, p: Params) -> str:
        return f"{p.protocol.upper()} goodput {p.src} -> {p.dst}" + (f" ({p.streams} streams)" if p.streams > 1 else "")

    def bounds(self, p: Params, lab: Lab) -> tuple[float | None, float | None]:
        if p.min is not None or p.max is not None:
            return (p.min * lab.scale if p.min else None, p.max * lab.scale if p.max else None)
        t = theory_bps(lab, p.src, p.dst, p.protocol, p.mtu, p.family) or 0.0
        return (p.min_fraction * t if p.min_fraction else None, p.max_fraction * t if p.max_fraction else None)

    def expected(self, p: Params, lab: Lab) -> str:
        text = super().expected(p, lab)
        if p.min_fraction is not None or p.max_fraction is not None:
            t = theory_bps(lab, p.src, p.dst, p.protocol, p.mtu, p.family)
            band = "-".join(f"{f:g}" for f in (p.min_fraction, p.max_fraction) if f is not None)
            text += f"; {band} of theory {self.show(t)}"
        return text

    def client(self, p: Params, lab: Lab) -> Iperf3Client:
        rate = None
        if p.protocol == "udp":
            rate = p.udp_rate * lab.scale if p.udp_rate else theory_bps(lab, p.src, p.dst, "udp", p.mtu, p.family)
        return Iperf3Client(server=ping_target(lab, p.dst, p.family), port=p.port, duration=p.duration,
                            streams=p.streams, protocol=p.protocol, bitrate=rate, ipv6=p.family == 6, omit=p.warmup)

    def metric(self, p: Params, row: dict[str, Any], lab: Lab) -> float | None:
        return row.get("throughput_bps")
