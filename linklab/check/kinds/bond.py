"""bond: a node's bond on a link, read back from the kernel: its mode, hash policy, other
options, how many members are up, and whether LACP aggregated them.

    - id: bond-ok
      kind: bond
      node: h1
      link: bond
      mode: 802.3ad
      xmit_hash_policy: layer3+4
      members_up: all            # or a number
      lacp_aggregated: true      # 802.3ad: every member in one aggregator with a partner, distributing
      options: {miimon: 100}     # any option as sysfs names it
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from linklab.backends.base import bond_summary
from linklab.check.kinds.base import ABSENT, FAIL, PASS, Context, Judgement, Kind, Negatable, end_of, find, link_problem, node_problem
from linklab.model.resolved import Lab
from linklab.model.topology import BOND_MODES, BondOptions


class Params(Negatable):
    node: str
    link: str
    mode: Literal[BOND_MODES] | None = None  # type: ignore[valid-type]
    xmit_hash_policy: Literal["layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"] | None = None
    members_up: Literal["all"] | Annotated[int, Field(ge=0, le=16)] | None = None
    lacp_aggregated: bool | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _something(self):
        if all(v is None for v in (self.mode, self.xmit_hash_policy, self.members_up, self.lacp_aggregated)) \
                and not self.options:
            raise ValueError("give what the bond must be: mode, xmit_hash_policy, members_up, lacp_aggregated or options")
        return self


class Bond(Kind):
    name = "bond"
    Params = Params
    negation = ABSENT
    summary = "a node's bond: mode, hash policy, options, members up, LACP aggregated"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = node_problem(lab, p.node, ("node",)) or link_problem(lab, p.link, ("link",), p.node)
        if not out and not lab.link(p.link).bond_members(p.node):
            bonded = [f"{b.node} on {link.name}" for link in lab.links for b in link.bonds if b.role == "host"]
            out.append((("link",), f"{p.node} has no bond on link {p.link!r} (bonds: {', '.join(bonded) or 'none'})"))
        for k in p.options:
            if k not in BondOptions.model_fields:
                out.append((("options", k), f"unknown bond option {k!r} (valid: {', '.join(BondOptions.model_fields)})"))
        return out

    def expected(self, p: Params, lab: Lab) -> str:
        parts = [f"mode {p.mode}"] if p.mode else []
        if p.xmit_hash_policy:
            parts.append(f"hash {p.xmit_hash_policy}")
        parts += [f"{k} {v}" for k, v in p.options.items()]
        if p.members_up is not None:
            parts.append(f"{'all' if p.members_up == 'all' else p.members_up} members up")
        if p.lacp_aggregated is not None:
            parts.append("LACP aggregated" if p.lacp_aggregated else "LACP not aggregated")
        return f"{p.node}:{end_of(lab.link(p.link), p.node).ifname} " + ", ".join(parts)

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        return ctx.interfaces([p.node])

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        ifaces = raw.get(p.node) or []
        ifname = end_of(lab.link(p.link), p.node).ifname
        it = find(ifaces, ifname)
        if it is None or not it.get("bond"):
            return Judgement(FAIL, f"no bond {ifname} on {p.node}")
        members = [m for m in ifaces if m.get("master") == ifname]
        s = bond_summary(it, members)
        opts = dict(it["bond"].get("options") or {})
        wrong, seen = [], [f"mode {s['mode']}"]
        if p.mode and s["mode"] != p.mode:
            wrong.append(f"mode is {s['mode']}")
        hash_policy = opts.get("xmit_hash_policy")
        if p.xmit_hash_policy:
            seen.append(f"hash {hash_policy}")
            if hash_policy != p.xmit_hash_policy:
                wrong.append(f"hash policy is {hash_policy}")
        for k, v in p.options.items():
            seen.append(f"{k} {opts.get(k)}")
            if str(opts.get(k)).lower() != str(v).lower():
                wrong.append(f"{k} is {opts.get(k)}")
        want_up = len(members) if p.members_up == "all" else p.members_up
        seen.append(f"{s['members_up']}/{s['members']} members up")
        if want_up is not None and (s["members_up"] != want_up or (p.members_up == "all" and not members)):
            down = [m["ifname"] for m in members if (m.get("bond_member") or {}).get("mii") != "up"]
            wrong.append(f"{s['members_up']} members up" + (f" ({', '.join(down)} not)" if down else ""))
        if p.lacp_aggregated is not None:
            agg = bool(s.get("lacp_aggregated"))
            seen.append("LACP aggregated" if agg else
                        f"LACP not aggregated ({s.get('members_distributing', 0)}/{s['members']} distributing)")
            if agg != p.lacp_aggregated:
                wrong.append("LACP " + ("not " if not agg else "") + "aggregated")
        return Judgement(FAIL if wrong else PASS, ", ".join(seen), "; ".join(wrong),
                         {"summary": s, "options": opts})
