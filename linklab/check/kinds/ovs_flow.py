"""ovs_flow: an Open vSwitch switch has (at least `min`, at most `max`) flows whose line in
`ovs-ofctl dump-flows` matches a pattern (a regular expression), optionally of one cookie: a
learning controller installed its flows, a hub installed none.

    - {id: learned, kind: ovs_flow, switch: s1, match: "dl_dst=", cookie: 0x1, min: 2}
    - {id: no-drop, kind: ovs_flow, switch: s1, match: "actions=drop", max: 0}
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from linklab.check.kinds.base import ABSENT, FAIL, PASS, Context, Judgement, Kind, Negatable, Regex, node_problem
from linklab.linux import ovs as ovsparse
from linklab.model.resolved import Lab


def _cookie(v):
    return int(v, 16) if isinstance(v, str) else v


class Params(Negatable):
    switch: str
    match: Regex = ""  # a regular expression searched for in each flow's line (empty: every flow)
    cookie: Annotated[int, BeforeValidator(_cookie), Field(ge=0)] | None = None
    min: Annotated[int, Field(ge=0)] | None = None
    max: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _bounds(self):
        if self.min is None and self.max is None:
            object.__setattr__(self, "min", 1)
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


def matching(text: str, p: Params) -> list[str]:
    """The dump-flows lines that match (statistics left out of the line matched: they change)."""
    out = []
    for line, flow in zip([ln.strip() for ln in text.splitlines() if ln.strip().startswith("cookie=")],
                          ovsparse.parse_dump_flows(text)):
        if p.cookie is not None and flow["cookie"] != p.cookie:
            continue
        bare = re.sub(r"\b(duration|n_packets|n_bytes|idle_age|hard_age)=[^,\s]+,?\s*", "", line)
        if re.search(p.match, bare):
            out.append(bare)
    return out


class OvsFlow(Kind):
    name = "ovs_flow"
    Params = Params
    negation = ABSENT
    summary = "an Open vSwitch switch has flows matching a pattern (at least min, at most max)"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        return node_problem(lab, p.switch, ("switch",), "ovs")

    def expected(self, p: Params, lab: Lab) -> str:
        n = (f"{p.min}-{p.max}" if p.min and p.max is not None else f"at least {p.min}" if p.max is None
             else f"at most {p.max}")
        what = f"/{p.match}/" if p.match else "any"
        return f"{p.switch}: {n} flows matching {what}" + (f", cookie {p.cookie:#x}" if p.cookie is not None else "")

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        res = ctx.switch_tool(p.switch, ["dump-flows"])
        return {"stdout": res.stdout, "stderr": res.stderr, "returncode": res.returncode}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        if raw.get("returncode"):
            return Judgement(FAIL, f"OVS did not answer: {raw.get('stderr', '').strip()[:200]}")
        hits = matching(raw.get("stdout", ""), p)
        total = len(ovsparse.parse_dump_flows(raw.get("stdout", "")))
        ok = (p.min is None or len(hits) >= p.min) and (p.max is None or len(hits) <= p.max)
        return Judgement(PASS if ok else FAIL, f"{len(hits)} of {total} flows match",
                         "; ".join(hits[:3]) + (" ..." if len(hits) > 3 else ""), {"matching": hits, "flows": total})
