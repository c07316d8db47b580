"""qdisc: what a link does to the traffic a node sends on it, read back from the kernel's
qdiscs: rate, delay, jitter, loss, reordering, each within a tolerance (tc keeps rates in bytes
per second and times in ticks). Values as a topology writes them: a rate is compared after the
lab's scale (a 1gbit link runs at 100mbit in a lab at scale 0.1, and passes as 1gbit).

    - {id: wan-delay, kind: qdisc, node: h1, link: wan, delay: 10ms, loss: 0%}
    - {id: member1, kind: qdisc, node: h1, link: bond, member: 1, rate: 1gbit}
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from linklab import units
from linklab.check.kinds.base import ABSENT, FAIL, PASS, Context, Judgement, Kind, Negatable, find, link_problem, node_problem
from linklab.model.resolved import Lab

NOT_A_LIMIT_BPS = 25e9  # netem's order-keeping rate (linklab/model/resolve.py) is no shaping
FIELDS = ("rate", "delay", "jitter", "loss", "reorder")


def _conv(parse):
    return BeforeValidator(lambda v: None if v is None else parse(v))


class Params(Negatable):
    node: str
    link: str
    member: Annotated[int, Field(ge=0, le=15)] | None = None  # one bond member's (default: every one)
    rate: Annotated[float, _conv(units.parse_rate), Field(gt=0)] | None = None
    delay: Annotated[float, _conv(units.parse_time), Field(ge=0)] | None = None
    jitter: Annotated[float, _conv(units.parse_time), Field(ge=0)] | None = None
    loss: Annotated[float, _conv(units.parse_percent)] | None = None
    reorder: Annotated[float, _conv(units.parse_percent)] | None = None
    tolerance: Annotated[float, Field(ge=0, le=0.5)] = 0.02  # relative, for rate, delay and jitter

    @model_validator(mode="after")
    def _something(self):
        if all(getattr(self, f) is None for f in FIELDS):
            raise ValueError(f"give at least one of {', '.join(FIELDS)} (as a topology writes it: 1gbit, 10ms, 0.5%)")
        return self


def egress_ifaces(lab: Lab, p: Params) -> list[str]:
    """The interfaces `p.node` sends on, on this link: one per veth (a bond's members)."""
    pairs = lab.link(p.link).veths
    if p.member is not None:
        pairs = pairs[p.member:p.member + 1]
    return [end.ifname for pair in pairs for end in (pair.a, pair.b) if end.node == p.node]


def live_values(qdiscs: list[dict[str, Any]]) -> dict[str, float]:
    """What an interface's qdiscs do, in base units (bit/s, s, %); nothing: not impaired."""
    out = {"rate": None, "delay": 0.0, "jitter": 0.0, "loss": 0.0, "reorder": 0.0}
    rates = [q["rate_bps"] for q in qdiscs if q.get("rate_bps") and q["rate_bps"] < NOT_A_LIMIT_BPS]
    out["rate"] = min(rates) if rates else None
    for q in qdiscs:
        if q.get("kind") == "netem":
            out["delay"] = (q.get("delay_ms") or 0) / 1e3
            out["jitter"] = (q.get("jitter_ms") or 0) / 1e3
            out["loss"] = q.get("loss_pct") or 0.0
            out["reorder"] = q.get("reorder_pct") or 0.0
    return out


def _show(field: str, v: float | None) -> str:
    if v is None:
        return "no limit" if field == "rate" else "none"
    if field == "rate":
        return units.format_rate(v)
    if field in ("delay", "jitter"):
        return units.format_time(v)
    return f"{v:g}%"


class Qdisc(Kind):
    name = "qdisc"
    Params = Params
    negation = ABSENT
    summary = "rate, delay, jitter, loss, reordering a node's end of a link applies (as written, before scale)"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = node_problem(lab, p.node, ("node",)) or link_problem(lab, p.link, ("link",), p.node)
        if not out and p.member is not None and p.member >= len(lab.link(p.link).veths):
            out.append((("member",), f"link {p.link!r} has {len(lab.link(p.link).veths)} member(s): 0-{len(lab.link(p.link).veths) - 1}"))
        return out

    def _want(self, p: Params, lab: Lab) -> dict[str, float]:
        want = {f: getattr(p, f) for f in FIELDS if getattr(p, f) is not None}
        if "rate" in want:
            want["rate"] *= lab.scale
        return want

    def expected(self, p: Params, lab: Lab) -> str:
        scaled = f" (x{lab.scale:g}: {units.format_rate(p.rate * lab.scale)})" if p.rate and lab.scale != 1 else ""
        parts = [f"{f} {_show(f, getattr(p, f))}" + (scaled if f == "rate" else "") for f in FIELDS if getattr(p, f) is not None]
        who = f"{p.node} on {p.link}" + (f" member {p.member}" if p.member is not None else "")
        return f"{who}: " + ", ".join(parts)

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        return ctx.interfaces([p.node])

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        want = self._want(p, lab)
        seen: dict[str, dict[str, Any]] = {}
        wrong = []
        for ifname in egress_ifaces(lab, p):
            it = find(raw.get(p.node) or [], ifname)
            if it is None:
                wrong.append(f"{ifname} missing")
                continue
            have = live_values(it.get("qdiscs") or [])
            seen[ifname] = have
            for f, w in want.items():
                h = have[f]
                ok = (h is not None and abs(h - w) <= p.tolerance * w + (1e-6 if f in ("delay", "jitter") else 0)) \
                    if f in ("rate", "delay", "jitter") else (h is not None and abs(h - w) <= 0.01)
                if not ok:
                    wrong.append(f"{ifname} {f} {_show(f, h)}")
        shown = "; ".join(f"{i}: " + ", ".join(f"{f} {_show(f, v[f])}" for f in want) for i, v in seen.items())
        return Judgement(FAIL if wrong else PASS, shown or "no interface", "; ".join(wrong), {"live": seen})
