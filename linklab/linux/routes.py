"""Routes in a namespace's main table, through netlink (pyroute2): read back, compared with the
routes wanted, and changed where they differ.

The routes linklab installs carry their own protocol number (RTPROT_LINKLAB, `proto 77` in
`ip route`): reconciling replaces or removes only those, so a route a node's `exec:` or a routing
daemon added (proto boot, static, ospf...) stays, as the kernel's own connected routes do.
No lab knowledge here: routes are prefixes, gateways and interface indexes.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any

from pyroute2.netlink.exceptions import NetlinkError

RTPROT_LINKLAB = 77  # unassigned in iproute2's rt_protos (kernel 2, boot 3, static 4, ... bgp 186)
MAIN_TABLE = 254
RTM_F_CLONED = 0x200  # include/uapi/linux/rtnetlink.h: a cached clone (a learned path MTU), not a route
PROTOCOLS = {1: "redirect", 2: "kernel", 3: "boot", 4: "static", 9: "ra", 16: "dhcp", RTPROT_LINKLAB: "linklab",
             186: "bgp", 188: "ospf"}


@dataclass(frozen=True)
class KernelRoute:
    """A route as the kernel keeps it: a prefix, its next hops (gateway, interface index) in
    order, and who installed it."""

    to: str  # a prefix: 10.77.1.0/24, 0.0.0.0/0
    nexthops: tuple[tuple[str, int], ...]
    proto: int = RTPROT_LINKLAB

    @property
    def family(self) -> int:
        return ipaddress.ip_network(self.to).version


def read(ipr) -> list[KernelRoute]:
    """Every unicast route of the main table, both families (connected ones without a gateway)."""
    out = []
    for family in (socket.AF_INET, socket.AF_INET6):
        for msg in ipr.get_routes(family=family, table=MAIN_TABLE):
            # RTN_UNICAST only (not the kernel's multicast, anycast, unreachable), and no cached
            # clone: the kernel's dump lists a path MTU learned from ICMP "fragmentation needed"
            # as a host route (IPv6: with the protocol of the route it was cloned from; measured
            # in the lab VM after a DF ping across routed_chain's 1400-byte hop).
            if not is_route(msg):
                continue
            out.append(from_message(msg, family))
    return out


def is_route(msg) -> bool:
    """Pure: a message of a route dump that is a unicast route of the table (see `read`)."""
    return msg["type"] == 1 and not msg["flags"] & RTM_F_CLONED


def from_message(msg, family: int) -> KernelRoute:
    """Pure: a pyroute2 route message -> KernelRoute (a multipath route's hops in their order)."""
    dst = msg.get_attr("RTA_DST") or ("0.0.0.0" if family == socket.AF_INET else "::")
    hops = msg.get_attr("RTA_MULTIPATH")
    if hops:
        nexthops = tuple((_get(h, "RTA_GATEWAY"), h["oif"]) for h in hops)
    else:
        nexthops = ((msg.get_attr("RTA_GATEWAY"), msg.get_attr("RTA_OIF")),)
    return KernelRoute(f"{dst}/{msg['dst_len']}", nexthops, msg["proto"])


def _get(hop, name: str):
    if hasattr(hop, "get_attr"):
        return hop.get_attr(name)
    return dict(hop.get("attrs", [])).get(name)


def plan(have: list[KernelRoute], want: list[KernelRoute]) -> tuple[list[KernelRoute], list[KernelRoute]]:
    """Pure: (routes to put in place, linklab's routes to remove). A wanted route already there
    with the same next hops is left alone, so reconciling changes only the routes that differ;
    a route of another protocol is never removed (only replaced, if linklab wants its prefix)."""
    mine = {r.to: r for r in have if r.proto == RTPROT_LINKLAB}
    wanted = {r.to for r in want}
    put = [r for r in want if mine.get(r.to) != r]
    remove = [r for to, r in mine.items() if to not in wanted]
    return put, remove


def request(route: KernelRoute) -> dict[str, Any]:
    """pyroute2's `route()` arguments for a route (several next hops: one multipath route)."""
    args: dict[str, Any] = {"dst": route.to, "family": socket.AF_INET if route.family == 4 else socket.AF_INET6,
                            "proto": route.proto, "table": MAIN_TABLE}
    if len(route.nexthops) == 1:
        args.update(gateway=route.nexthops[0][0], oif=route.nexthops[0][1])
    else:
        args["multipath"] = [{"gateway": gw, "oif": oif} for gw, oif in route.nexthops]
    return args


def reconcile(ipr, want: list[KernelRoute]) -> list[str]:
    """Make the main table hold `want` (and no other linklab route); returns what changed."""
    put, remove = plan(read(ipr), want)
    done = []
    for r in remove:
        try:
            ipr.route("del", dst=r.to, family=socket.AF_INET if r.family == 4 else socket.AF_INET6,
                      proto=RTPROT_LINKLAB, table=MAIN_TABLE)
        except NetlinkError as e:
            if e.code != errno.ESRCH:  # gone already (its interface went)
                raise
        done.append(f"del {r.to}")
    for r in put:
        ipr.route("replace", **request(r))
        done.append(f"replace {r.to} via {', '.join(gw for gw, _ in r.nexthops)}")
    return done


def describe(route: KernelRoute, names: dict[int, str]) -> dict[str, Any]:
    """For `status`: a route with interface names and its protocol's name."""
    return {"to": "default" if ipaddress.ip_network(route.to).prefixlen == 0 else route.to,
            "nexthops": [{"via": gw, "dev": names.get(oif, oif)} for gw, oif in route.nexthops],
            "proto": PROTOCOLS.get(route.proto, str(route.proto))}
