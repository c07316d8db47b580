"""member_share: how a bond spreads a flow's traffic over its members, from the members' own
counters during the flow: every member carries at least `min_share` of the bytes (and none more
than `max_share`). A bond hashing every flow onto one member fails; so does one member down.

    - {id: spread, kind: member_share, from: h1, to: h2, node: h1, link: bond, streams: 8, min_share: 0.3}

The node's bond is read in the direction it sends (tx) when it is the flow's sender, else in
the direction it receives (rx). No flag makes it inconclusive: which member a flow takes is the
hash's choice, not the emulator's speed (a slow emulator slows every member alike).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from linklab.check.kinds.base import link_problem, node_problem, ping_target
from linklab.check.kinds.measured import MeasuredKind, MeasuredParams
from linklab.measure.iperf3 import Iperf3Client
from linklab.model.resolved import Lab


class Params(MeasuredParams):
    node: str  # whose bond: the flow's sender or receiver
    link: str
    streams: Annotated[int, Field(ge=1, le=64)] = 8
    min_share: Annotated[float, Field(ge=0, le=1)] | None = None
    max_share: Annotated[float, Field(ge=0, le=1)] | None = None

    @model_validator(mode="after")
    def _bounds(self):
        if (self.min_share is None) == (self.max_share is None):
            raise ValueError("give min_share (each member carries at least) or max_share (none carries more), one of them")
        return self


def shares(p: Params, row: dict[str, Any], lab: Lab) -> dict[str, float | None]:
    """Each member's share of the bytes, from a repetition's row (counters.spread_row keys)."""
    side = "client" if p.node == p.src else "server"
    direction = "tx" if p.node == p.src else "rx"
    return {m: row.get(f"{side}_member_{direction}_share_{m}") for m in lab.link(p.link).bond_members(p.node)}


class MemberShare(MeasuredKind):
    name = "member_share"
    Params = Params
    summary = "a bond spreads a flow over its members: each carries at least min_share (measured)"
    unit = "share"
    limits = frozenset()

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = super().problems(p, lab)
        out += node_problem(lab, p.node, ("node",)) or link_problem(lab, p.link, ("link",), p.node)
        if not out and p.node not in (p.src, p.dst):
            out.append((("node",), f"{p.node!r} is neither end of the flow ({p.src} -> {p.dst}): its bond carries none of it"))
        if not out and not lab.link(p.link).bond_members(p.node):
            out.append((("link",), f"{p.node} has no bond on link {p.link!r}"))
        return out

    def what(self, p: Params) -> str:
        which = "smallest" if p.min_share is not None else "largest"
        return f"{which} member share of {p.node}'s bond ({p.streams} streams {p.src} -> {p.dst})"

    def bounds(self, p: Params, lab: Lab) -> tuple[float | None, float | None]:
        return p.min_share, p.max_share

    def members(self, p: Params, lab: Lab) -> dict[str, list[str]]:
        return {p.node: lab.link(p.link).bond_members(p.node)}

    def client(self, p: Params, lab: Lab) -> Iperf3Client:
        return Iperf3Client(server=ping_target(lab, p.dst, p.family), port=p.port, duration=p.duration,
                            streams=p.streams, ipv6=p.family == 6, omit=p.warmup)

    def metric(self, p: Params, row: dict[str, Any], lab: Lab) -> float | None:
        got = [v if v is not None else 0.0 for v in shares(p, row, lab).values()]
        if not got:
            return None
        return min(got) if p.min_share is not None else max(got)
