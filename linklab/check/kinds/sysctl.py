"""sysctl: a kernel setting of a node, read back from inside its namespace.

    - {id: reordering, kind: sysctl, node: h1, key: net.ipv4.tcp_reordering, value: 127}
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import field_validator

from linklab.check.kinds.base import ABSENT, FAIL, PASS, Context, Judgement, Kind, Negatable, node_problem
from linklab.model.resolved import Lab


class Params(Negatable):
    node: str
    key: str
    value: str | int

    @field_validator("key")
    @classmethod
    def _key(cls, v):
        if not re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", v):
            raise ValueError(f"bad sysctl name {v!r} (write it dotted, e.g. net.ipv4.tcp_reordering)")
        return v


def same(have: str | None, want: str | int) -> bool:
    """Values as the kernel prints them: words separated by whitespace (tcp_rmem's three numbers)."""
    return have is not None and str(have).split() == str(want).split()


class Sysctl(Kind):
    name = "sysctl"
    Params = Params
    negation = ABSENT
    summary = "a node's sysctl has a value"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        return node_problem(lab, p.node, ("node",))

    def expected(self, p: Params, lab: Lab) -> str:
        return f"{p.node} {p.key} = {p.value}"

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        return ctx.handle.backend.read_sysctls(ctx.lab, p.node, [p.key])

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        have = raw.get(p.key)
        return Judgement(PASS if same(have, p.value) else FAIL,
                         f"{p.node} {p.key} = {' '.join(str(have).split())}" if have is not None else f"{p.key} absent on {p.node}",
                         values={"value": have})
