"""mtu: every interface of a link (both ends, bond members, a switch's ports) has one MTU, the
one asked for if given.

    - {id: core-mtu, kind: mtu, link: core, mtu: 9000}
    - {id: same-mtu, kind: mtu, link: core}          # both ends agree, whatever the value
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from linklab.check.kinds.base import ABSENT, FAIL, PASS, Context, Judgement, Kind, Negatable, find, link_interfaces, link_problem
from linklab.model.resolved import Lab


class Params(Negatable):
    link: str
    mtu: Annotated[int, Field(ge=68, le=65535)] | None = None


class Mtu(Kind):
    name = "mtu"
    Params = Params
    negation = ABSENT
    summary = "every interface of a link has one MTU (the one given)"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        return link_problem(lab, p.link, ("link",))

    def expected(self, p: Params, lab: Lab) -> str:
        return f"MTU {p.mtu} on both ends of {p.link}" if p.mtu else f"one MTU on both ends of {p.link}"

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        return ctx.interfaces(sorted({n for n, _ in link_interfaces(ctx.lab.link(p.link))}))

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        seen: dict[str, int | None] = {}
        for node, ifname in link_interfaces(lab.link(p.link)):
            it = find(raw.get(node) or [], ifname)
            seen[f"{node}:{ifname}"] = it.get("mtu") if it else None
        values = {v for v in seen.values()}
        wrong = [k for k, v in seen.items() if v is None or (p.mtu is not None and v != p.mtu)]
        if p.mtu is None and len(values) > 1:
            wrong = list(seen)
        shown = _compact(seen)
        return Judgement(FAIL if wrong else PASS, shown,
                         ("differs: " + ", ".join(f"{k} {seen[k] if seen[k] is not None else 'missing'}" for k in wrong))
                         if wrong else "", {"mtu": seen})


def _compact(seen: dict[str, int | None]) -> str:
    """'9000 on 4 interfaces' or '9000 on h1:eth1, s1:eth1; 1500 on s2:eth2'."""
    by: dict[Any, list[str]] = {}
    for k, v in seen.items():
        by.setdefault(v, []).append(k)
    if len(by) == 1:
        (v, ks), = by.items()
        return f"{v if v is not None else 'missing'} on all {len(ks)} interfaces"
    return "; ".join(f"{v if v is not None else 'missing'} on {', '.join(ks)}" for v, ks in by.items())
