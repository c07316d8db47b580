"""address: a node carries an address, on the interface of one of its links or anywhere.

    - {id: h1-addr, kind: address, node: h1, link: lan, ipv4: 192.0.2.1/24}
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pydantic import field_validator, model_validator

from linklab.check.kinds.base import ABSENT, FAIL, PASS, Context, Judgement, Kind, Negatable, end_of, link_problem, node_problem
from linklab.model.resolved import Lab


class Params(Negatable):
    node: str
    link: str | None = None  # the node's interface on this link (default: any of its interfaces)
    ipv4: str | None = None  # with its prefix length: 192.0.2.1/24
    ipv6: str | None = None

    @field_validator("ipv4", "ipv6")
    @classmethod
    def _address(cls, v):
        if v is not None:
            try:
                ipaddress.ip_interface(v)
            except ValueError:
                raise ValueError(f"not an address with its prefix length: {v!r} (e.g. 192.0.2.1/24)") from None
        return v

    @model_validator(mode="after")
    def _something(self):
        if self.ipv4 is None and self.ipv6 is None:
            raise ValueError("give ipv4:, ipv6: or both (the address the node must carry, with its prefix length)")
        return self


def _wanted(p: Params) -> list[str]:
    return [str(ipaddress.ip_interface(a)) for a in (p.ipv4, p.ipv6) if a]


class Address(Kind):
    name = "address"
    Params = Params
    negation = ABSENT
    summary = "a node carries an address (on one link's interface, or any)"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = node_problem(lab, p.node, ("node",))
        if not out and p.link is not None:
            out += link_problem(lab, p.link, ("link",), p.node)
        return out

    def expected(self, p: Params, lab: Lab) -> str:
        where = f"{p.node}:{end_of(lab.link(p.link), p.node).ifname}" if p.link else p.node
        return f"{where} has {' and '.join(_wanted(p))}"

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        return ctx.interfaces([p.node])

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        ifaces = raw.get(p.node) or []
        if p.link is not None:
            ifname = end_of(lab.link(p.link), p.node).ifname
            ifaces = [i for i in ifaces if i["ifname"] == ifname]
        have = {str(ipaddress.ip_interface(a)): i["ifname"] for i in ifaces for a in i.get("addresses", [])}
        missing = [a for a in _wanted(p) if a not in have]
        shown = ", ".join(f"{i['ifname']} {' '.join(i.get('addresses') or ['-'])}" for i in ifaces) or "no interface"
        return Judgement(FAIL if missing else PASS, shown,
                         f"missing {', '.join(missing)}" if missing else "", {"addresses": sorted(have)})
