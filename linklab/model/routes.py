"""Static routing: the cheapest paths from every host and router to every subnet. Pure.

A lab's layer 3 is a graph of nodes (hosts and routers) and segments: each link is a segment of
its own, and links into the same switch (or switches joined) share one (linklab/model/resolve.py:
segments); each segment is one subnet. A node reaches the other nodes on its segments directly;
beyond them, only through a router (a host does not forward). Crossing a segment costs the
sending node's link's `cost:` (1 by default: fewest hops), as OSPF counts an interface's cost.

What is computed here, by Dijkstra from each segment backwards: for each node and each segment
it is not on, the cheapest cost and every first hop of a cheapest path (a neighbour router and
the segment that leads to it), in file order, so that picking one next hop (no ECMP) is always
the same one. Addresses are not known here: resolve turns hops into gateways and interfaces.
"""

from __future__ import annotations

import heapq
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from linklab.model import resolved
from linklab.model.topology import Topology


@dataclass(frozen=True)
class Port:
    """One node's attachment to a segment, through link number `link` (its place in the file,
    which orders ties), at the cost of crossing that segment from it."""

    node: str
    segment: int
    link: int
    cost: int = 1


@dataclass(frozen=True, order=True)
class Hop:
    """A first hop: through my port on `link` (segment `segment`) to router `neighbour`."""

    link: int
    neighbour: str
    segment: int


@dataclass(frozen=True)
class Path:
    cost: int
    hops: tuple[Hop, ...]  # every first hop of a cheapest path, in file order


class Graph:
    """The ports of a lab's hosts and routers (of one IP family: segments without it left out)."""

    def __init__(self, ports: Iterable[Port], routers: Iterable[str]):
        self.ports = list(ports)
        self.routers = set(routers)
        self.by_segment: dict[int, list[Port]] = {}
        self.by_node: dict[str, list[Port]] = {}
        for p in self.ports:
            self.by_segment.setdefault(p.segment, []).append(p)
            self.by_node.setdefault(p.node, []).append(p)

    def nodes(self) -> list[str]:
        return list(self.by_node)

    def segments(self) -> list[int]:
        return sorted(self.by_segment)

    def neighbours(self, node: str) -> list[Hop]:
        """Every (router) neighbour of `node` and the ports that lead to it, in file order."""
        return sorted({Hop(p.link, q.node, p.segment) for p in self.by_node.get(node, ())
                       for q in self.by_segment[p.segment] if q.node != node and q.node in self.routers})

    def distances(self, dest: int) -> dict[str, int]:
        """node -> the cost of its cheapest path to segment `dest` (0: on it); a node missing
        cannot reach it."""
        dist = {p.node: 0 for p in self.by_segment.get(dest, ())}
        todo = [(0, n) for n in sorted(dist) if n in self.routers]
        while todo:
            d, v = heapq.heappop(todo)
            if d > dist[v]:
                continue
            for pv in self.by_node[v]:
                for pu in self.by_segment[pv.segment]:
                    c = d + pu.cost  # u sends across the segment v is on, out of its own port
                    if pu.node != v and c < dist.get(pu.node, c + 1):
                        dist[pu.node] = c
                        if pu.node in self.routers:  # only a router carries the path further
                            heapq.heappush(todo, (c, pu.node))
        return dist

    def paths(self) -> dict[str, dict[int, Path]]:
        """node -> segment it is not on but can reach -> the cheapest cost and its first hops."""
        out: dict[str, dict[int, Path]] = {n: {} for n in self.by_node}
        for dest in self.segments():
            dist = self.distances(dest)
            for node, cost in dist.items():
                if cost == 0:
                    continue
                port_cost = {(p.link, p.segment): p.cost for p in self.by_node[node]}
                hops = tuple(h for h in self.neighbours(node)
                             if h.neighbour in dist and port_cost[(h.link, h.segment)] + dist[h.neighbour] == cost)
                out[node][dest] = Path(cost, hops)
        return out

    def unreachable(self) -> dict[int, list[str]]:
        """segment -> the routers that cannot reach it (in name order); segments every router
        reaches are left out."""
        out = {}
        for dest in self.segments():
            dist = self.distances(dest)
            missing = sorted(r for r in self.routers if r in self.by_node and r not in dist)
            if missing:
                out[dest] = missing
        return out

    def gateway(self, host: str) -> tuple[Hop, ...] | None:
        """The cheapest ports to the one router a host is joined to, for its default route;
        None when it is joined to no router or to more than one (it gets a route per subnet)."""
        hops = self.neighbours(host)
        if host in self.routers or len({h.neighbour for h in hops}) != 1:
            return None
        cost = {(p.link, p.segment): p.cost for p in self.by_node[host]}
        least = min(cost[(h.link, h.segment)] for h in hops)
        return tuple(h for h in hops if cost[(h.link, h.segment)] == least)

    def shared(self, node: str, other: str) -> tuple[Hop, ...]:
        """The ports through which `node` reaches `other` directly (a written route's `via`), in
        file order; empty when they share no segment."""
        theirs = {p.segment for p in self.by_node.get(other, ())}
        return tuple(sorted({Hop(p.link, other, p.segment) for p in self.by_node.get(node, ())
                             if p.segment in theirs}))


# ---- a resolved lab's routes: hops turned into gateways and interfaces ---------------------------

DEFAULT = {4: "0.0.0.0/0", 6: "::/0"}


class _Attachments:
    """Where each node sits on each segment, by family: its address there, its interface on each
    link, and each segment's subnet, read from the resolved links."""

    def __init__(self, links: list[resolved.Link], kinds: dict[str, str], costs: list[int]):
        self.ports: dict[int, list[Port]] = {4: [], 6: []}
        self.address: dict[tuple[str, int, int], str] = {}  # (node, segment, family) -> address
        self.dev: dict[tuple[str, int], str] = {}  # (node, link) -> interface
        self.subnet: dict[tuple[int, int], str] = {}  # (segment, family) -> prefix
        self.link_of: dict[int, str] = {}  # segment -> the name of its first link
        self.of_node: dict[str, list[tuple[int, str]]] = {}  # node -> (family, address) of each end
        for link in links:
            self.link_of.setdefault(link.segment, link.name)
            for end in link.ends:
                if kinds.get(end.node) == "switch":
                    continue
                self.dev[(end.node, link.index)] = end.ifname
                for family, written in ((4, end.ipv4), (6, end.ipv6)):
                    if not written:
                        continue
                    iface = ipaddress.ip_interface(written)
                    self.ports[family].append(Port(end.node, link.segment, link.index, costs[link.index]))
                    self.address.setdefault((end.node, link.segment, family), str(iface.ip))
                    self.subnet.setdefault((link.segment, family), str(iface.network))
                    self.of_node.setdefault(end.node, []).append((family, str(iface.ip)))

    def connected(self, node: str, family: int) -> set[str]:
        return {self.subnet[(p.segment, family)] for p in self.ports[family] if p.node == node}


def resolve_routes(t: Topology, links: list[resolved.Link], kinds: dict[str, str], notes: list[str],
                   problems: list[str]) -> dict[str, list[resolved.Route]]:
    """node -> its routes: computed (routing: static) for every host and router (routing: ospf:
    for every host; the routers learn theirs), then those its
    `routes:` write, which replace a computed one to the same prefix. Problems found only once
    addresses are known (a `via` with no address of a prefix's family) are added to `problems`.
    `kinds`: each node's section (host, switch, router)."""
    ecmp = t.routing.ecmp if t.routing else False
    at = _Attachments(links, kinds, [link.cost for link in t.links])
    graphs = {family: Graph(at.ports[family], t.routers) for family in (4, 6)}
    out: dict[str, dict[str, resolved.Route]] = {}

    def route(node: str, to: str, hops: tuple[Hop, ...], family: int, source: str, cost: int | None = None):
        # Without ECMP one next hop: the first in file order, the same one every time.
        chosen = hops if ecmp else hops[:1]
        nexthops = [resolved.NextHop(via=at.address[(h.neighbour, h.segment, family)], dev=at.dev[(node, h.link)],
                                     node=h.neighbour) for h in chosen]
        out.setdefault(node, {})[to] = resolved.Route(to=to, nexthops=nexthops, source=source, cost=cost)

    if t.routing_protocol in ("static", "ospf"):
        for family, g in graphs.items():
            paths = g.paths()
            for node in g.nodes():
                if t.routing_protocol == "ospf" and node in t.routers:
                    continue  # its routes are learned by its ospfd, not computed here
                gateway = g.gateway(node)
                if gateway:  # a host joined to one router: everything else is behind it
                    route(node, DEFAULT[family], gateway, family, "computed")
                    continue
                for segment, path in sorted(paths[node].items()):
                    route(node, at.subnet[(segment, family)], path.hops, family, "computed", path.cost)
        for segment, routers in graphs[6].unreachable().items():
            # IPv4 reaches every subnet (checked on loading); IPv6 stops where a link carries none.
            notes.append(f"link {at.link_of[segment]}: its IPv6 subnet is unreachable from {', '.join(routers)} "
                         "(a link on the way carries no IPv6)")
    for section in ("hosts", "routers"):
        for node, spec in getattr(t, section).items():
            for k, written in enumerate(spec.routes if spec else []):
                here = f"{section}.{node}.routes[{k}]"
                for family, prefix in _targets(written.to, at, links, kinds):
                    hops = graphs[family].shared(node, written.via)
                    if not hops:
                        if _is_prefix(written.to):
                            problems.append(f"{here}: {written.via} has no IPv{family} address on a link it shares "
                                            f"with {node}, so it cannot be the next hop to {prefix}")
                        continue  # a name's other family, where the link carries none
                    if prefix in at.connected(node, family):
                        problems.append(f"{here}: {prefix} is the subnet of a link {node} is on: the kernel "
                                        "reaches it directly, a route there would replace that")
                        continue
                    route(node, prefix, hops, family, "written")
    return {node: [routes[p] for p in sorted(routes, key=_prefix_order)] for node, routes in out.items()}


def cheapest_interfaces(links: list[resolved.Link], kinds: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """node -> each subnet (both families) it is not on but reaches -> the interfaces its cheapest
    paths there leave through (every equal-cost one): what a routing protocol that counts costs as
    `cost:` does (OSPF) converges to. `kinds`: each node's section (host, switch, router)."""
    at = _Attachments(links, kinds, [link.cost for link in sorted(links, key=lambda x: x.index)])
    routers = [n for n, k in kinds.items() if k == "router"]
    out: dict[str, dict[str, set[str]]] = {}
    for family in (4, 6):
        for node, paths in Graph(at.ports[family], routers).paths().items():
            for segment, path in paths.items():
                out.setdefault(node, {})[at.subnet[(segment, family)]] = {at.dev[(node, h.link)] for h in path.hops}
    return out


def _prefix_order(prefix: str):
    net = ipaddress.ip_network(prefix)
    return net.version, net


def _is_prefix(text: str) -> bool:
    try:
        ipaddress.ip_network(text)
        return True
    except ValueError:
        return False


def _targets(to: str, at: _Attachments, links: list[resolved.Link], kinds: dict[str, str]) -> list[tuple[int, str]]:
    """What a written route's `to` stands for: (family, prefix) pairs. default: both families'
    default; a node: each of its addresses (a host route); a link: its subnet; else a prefix."""
    if to == "default":
        return list(DEFAULT.items())
    if kinds.get(to) in ("host", "router"):
        return [(family, f"{address}/{32 if family == 4 else 128}") for family, address in at.of_node.get(to, [])]
    for link in links:
        if link.name == to:
            return [(family, at.subnet[(link.segment, family)]) for family in (4, 6) if (link.segment, family) in at.subnet]
    net = ipaddress.ip_network(to)
    return [(net.version, str(net))]
