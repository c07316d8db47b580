"""route: a node has a route to a prefix, an address or a node (its address in the node's hosts
file, as ping reads it), optionally through next hops (`via:` addresses or neighbours' names),
an interface (`dev:`) and installed by a protocol (`proto:`); with `expect: absent`, has not.

The route judged is the one the node's kernel would choose: the longest prefix in its main table
that covers the destination (a default route covers everything; `exact: true` asks for the
prefix itself). A multipath route (ECMP) has several next hops: each `via:` must be one of them,
and `nexthops:` counts them.

    - {id: r1-to-lan2, kind: route, node: r1, to: 10.0.2.0/24, via: r2, proto: static}
    - {id: h1-ecmp, kind: route, node: h1, to: h4, via: [r1, r2]}
    - {id: no-default, kind: route, node: r3, to: 0.0.0.0/0, exact: true, expect: absent}
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from linklab import runner
from linklab.check.kinds.base import (ABSENT, FAIL, PASS, Context, Judgement, Kind, Negatable, as_list,
                                      node_addresses, node_problem)
from linklab.linux.routes import PROTOCOLS
from linklab.model.resolved import Lab

Net = ipaddress.IPv4Network | ipaddress.IPv6Network


class Params(Negatable):
    node: str
    to: str  # a prefix (10.0.2.0/24), an address, or a node's name
    via: str | list[str] | None = None  # next hops: addresses or neighbours' names
    dev: str | None = None
    proto: str | None = None  # as `ip route` names it: kernel, static, linklab (77), ospf, bgp...
    nexthops: Annotated[int, Field(ge=1, le=64)] | None = None  # how many (a multipath route's)
    exact: bool = False  # the prefix itself, not the longest one covering it
    family: Literal[4, 6] = 4  # when `to` is a node's name

    @field_validator("proto")
    @classmethod
    def _proto(cls, v):
        if v is not None and v not in PROTOCOLS.values() and not (v.isdigit() and int(v) < 256):
            raise ValueError(f"unknown protocol {v!r} (valid: {', '.join(PROTOCOLS.values())}, or a number 0-255)")
        return v


def destination(p: Params, lab: Lab) -> Net | None:
    """What the route leads to: the prefix, the address as a host prefix, or the address `p.node`'s
    hosts file gives the name (NAME, NAME-v6); None for a name it does not know."""
    if p.to in {n.name for n in lab.nodes}:
        addr = lab.node(p.node).address_of(p.to if p.family == 4 else f"{p.to}-v6")
        return ipaddress.ip_network(addr) if addr else None
    return ipaddress.ip_network(p.to, strict=False)


def gateways(lab: Lab, via: str) -> set[str]:
    """A next hop as written: an address, or every address of the node named."""
    return {via} if runner.is_address(via) else node_addresses(lab, via)


def prefix_of(route: dict[str, Any], family: int) -> Net:
    """A route's prefix; `default` is the default of the destination's family."""
    to = route.get("to", "")
    if to == "default":
        return ipaddress.ip_network("0.0.0.0/0" if family == 4 else "::/0")
    return ipaddress.ip_network(to, strict=False)


def chosen(routes: list[dict[str, Any]], dst: Net, exact: bool) -> dict[str, Any] | None:
    """The route the kernel would use for `dst`: the longest prefix covering it (the first of
    equal ones: the dump lists the lower metric first). Pure."""
    best: tuple[int, dict[str, Any]] | None = None
    for r in routes:
        if not _of_family(r, dst.version):
            continue
        net = prefix_of(r, dst.version)
        if net.version != dst.version or not (net == dst if exact else dst.subnet_of(net)):
            continue
        if best is None or net.prefixlen > best[0]:
            best = (net.prefixlen, r)
    return best[1] if best else None


def _of_family(route: dict[str, Any], family: int) -> bool:
    """A `default` route's family is its gateways' (one without any: either)."""
    if route.get("to") != "default":
        return True
    gws = [h["via"] for h in route.get("nexthops", []) if h.get("via")]
    return not gws or all(ipaddress.ip_address(g).version == family for g in gws)


def show(route: dict[str, Any]) -> str:
    """A route as `ip route` prints it: '10.0.2.0/24 proto static nexthop via 10.0.1.2 dev eth1 ...'."""
    hops = route.get("nexthops", [])
    words = [" ".join(x for x in (f"via {h['via']}" if h.get("via") else "", f"dev {h['dev']}" if h.get("dev") else "")
                      if x) for h in hops]
    how = words[0] if len(words) == 1 else " ".join(f"nexthop {w}" for w in words)
    return " ".join(x for x in (route.get("to", "?"), f"proto {route.get('proto')}", how) if x)


def mismatches(p: Params, lab: Lab, route: dict[str, Any]) -> list[str]:
    """What of via/dev/proto/nexthops the route does not have. Pure."""
    hops = route.get("nexthops", [])
    wrong = []
    for v in as_list(p.via) if p.via is not None else []:
        if not any(h.get("via") in gateways(lab, v) and (p.dev is None or h.get("dev") == p.dev) for h in hops):
            wrong.append(f"no next hop via {v}" + (f" dev {p.dev}" if p.dev else ""))
    if p.via is None and p.dev is not None and not any(h.get("dev") == p.dev for h in hops):
        wrong.append(f"not through {p.dev}")
    if p.proto is not None and str(route.get("proto")) != _proto_name(p.proto):
        wrong.append(f"proto {route.get('proto')}, not {_proto_name(p.proto)}")
    if p.nexthops is not None and len(hops) != p.nexthops:
        wrong.append(f"{len(hops)} next hop(s), not {p.nexthops}")
    return wrong


def _proto_name(proto: str) -> str:
    """linklab's routes read back name a known number (77: linklab); an unknown one stays a number."""
    return PROTOCOLS.get(int(proto), proto) if proto.isdigit() else proto


class Route(Kind):
    name = "route"
    Params = Params
    negation = ABSENT
    summary = "a node has a route to a prefix or node (via next hops, dev, proto; ECMP understood)"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = node_problem(lab, p.node, ("node",))
        names = {n.name for n in lab.nodes}
        if p.to in names:
            if not out and destination(p, lab) is None:
                out.append((("to",), f"{p.node}'s hosts file gives {p.to!r} no IPv{p.family} address"))
        else:
            try:
                ipaddress.ip_network(p.to, strict=False)
            except ValueError:
                out.append((("to",), f"{p.to!r} is neither a prefix, an address nor a node "
                                     f"(valid nodes: {', '.join(n.name for n in lab.nodes)})"))
        for i, v in enumerate(as_list(p.via) if p.via is not None else []):
            loc = ("via",) if isinstance(p.via, str) else ("via", i)
            if not runner.is_address(v):
                out += node_problem(lab, v, loc)
        return out

    def expected(self, p: Params, lab: Lab) -> str:
        dst = destination(p, lab)
        parts = [f"{p.node}: route to {p.to}" + (f" ({dst})" if str(dst) != p.to else "")]
        parts += [f"via {', '.join(as_list(p.via))}"] if p.via else []
        parts += [f"dev {p.dev}"] if p.dev else []
        parts += [f"proto {_proto_name(p.proto)}"] if p.proto else []
        parts += [f"{p.nexthops} next hop(s)"] if p.nexthops else []
        return " ".join(parts) + (" (exactly that prefix)" if p.exact else "")

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        return {"routes": ctx.handle.backend.routes(ctx.lab, p.node)}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        dst = destination(p, lab)
        assert dst is not None  # problems() refused a name without an address
        route = chosen(raw.get("routes", []), dst, p.exact)
        if route is None:
            return Judgement(FAIL, f"no route to {dst} on {p.node}", values={"route": None})
        wrong = mismatches(p, lab, route)
        return Judgement(FAIL if wrong else PASS, show(route), "; ".join(wrong), {"route": route})
