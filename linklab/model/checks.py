"""Checks that relate several parts of a topology: names, endpoints, bond modes vs options.

Each check yields (path, message). All of them run, so a user sees every problem at once.
"""

from __future__ import annotations

import ipaddress
from typing import Iterator

from linklab.model import aqm
from linklab.model.resolve import direction_fields, link_name, node_kinds, ovs_bond_kind, ovs_switch, segments
from linklab.model.routes import Graph, Port
from linklab.model.topology import (
    CONTAINER_ONLY, IFNAME_RE, MIN_IPV6_MTU, NAME_RE, OPTION_MODES, OVS_ONLY, Impairment, Link, Service, Topology,
)

Problem = tuple[tuple, str]

BACK_TO_BACK_BROKEN = ("balance-tlb", "balance-alb")


def check_topology(t: Topology, indices: list[int] | None = None, complete: bool = True) -> list[Problem]:
    """`indices[j]` is the position in the file of t.links[j] (links that failed structural
    validation are absent from t.links but keep their numbering in messages). `complete`: every
    link validated; else what depends on all of them (a router's links, the subnets routing
    reaches, link names) is not judged from the part that did."""
    numbered = list(zip(indices or range(len(t.links)), t.links))
    return [*_names(t, numbered), *_hosts(t), *_switches(t), *_default_aqm(t), *_services(t),
            *(p for i, link in numbered for p in _link(t, i, link)), *_routing(t, numbered, complete)]


def _services(t: Topology) -> Iterator[Problem]:
    """A node's background services need names of their own (the log file, `set --restart`)."""
    for section in ("hosts", "switches", "routers"):
        for node, spec in getattr(t, section).items():
            seen: dict[str, int] = {}
            for i, item in enumerate(spec.exec if spec else []):
                if not (isinstance(item, Service) and item.background):
                    continue
                name = item.service_name()
                if name in seen:
                    yield ((section, node, "exec", i, "name"),
                           f"service {name!r} is also {section}.{node}.exec[{seen[name]}]: give each background "
                           "service of a node a name of its own (name: ...)")
                seen.setdefault(name, i)


def _default_aqm(t: Topology) -> Iterator[Problem]:
    imp = t.defaults.impair
    if imp is not None and imp.aqm_params:
        for loc, msg in aqm.problems(imp.aqm, imp.aqm_params):
            yield ("defaults", "impair", "aqm_params", *loc), msg


def _hosts(t: Topology) -> Iterator[Problem]:
    for name, host in t.hosts.items():
        if host is None:
            continue
        here = ("hosts", name)
        if host.kind == "container" and not host.image:
            yield here + ("image",), ("a container node needs an image (e.g. image: linklab/base, which "
                                      "`make images` builds; or any image you can pull)")
        if host.kind != "container":
            for field in CONTAINER_ONLY:
                if getattr(host, field):
                    yield here + (field,), f"{field} applies to container nodes only (write kind: container)"


def _switches(t: Topology) -> Iterator[Problem]:
    from linklab.controllers import app_problem
    for name, sw in t.switches.items():
        if sw is None:
            continue
        here = ("switches", name)
        if sw.kind != "ovs":
            for field in OVS_ONLY:
                if getattr(sw, field) is not None:
                    yield here + (field,), f"{field} applies to Open vSwitch switches only (write kind: ovs)"
            if sw.datapath != "kernel":
                yield here + ("datapath",), "datapath applies to Open vSwitch switches only (write kind: ovs)"
        if sw.controller is not None:
            problem = app_problem(sw.controller.app)
            if problem:
                yield here + ("controller",), problem
        if sw.kind == "ovs" and sw.stp:
            yield here + ("stp",), "stp is built for Linux bridges only (kind: bridge)"


def _names(t: Topology, numbered: list[tuple[int, Link]]) -> Iterator[Problem]:
    for section in ("hosts", "switches", "routers"):
        for name in getattr(t, section):
            if not NAME_RE.match(name):
                yield (section, name), (f"bad node name {name!r}: lower-case letters, digits and _, "
                                        "starting with a letter, at most 12 (it becomes part of namespace names)")
    for first, second in (("hosts", "switches"), ("hosts", "routers"), ("switches", "routers")):
        for name in sorted(set(getattr(t, first)) & set(getattr(t, second))):
            yield (second, name), f"{name!r} is both a {first[:-1]} and a {second[:-1]}"
    if not t.hosts:
        yield ("hosts",), "a lab needs at least one host"
    for i, link in numbered:
        if link.name is not None and not IFNAME_RE.match(link.name):
            yield ("links", i, "name"), f"bad link name {link.name!r} (letters, digits, _ and -, at most 15)"
    seen: dict[str, int] = {}
    for i, link in numbered:
        if link.name:
            if link.name in seen:
                yield ("links", i, "name"), f"link name {link.name!r} is already used by links[{seen[link.name]}]"
            seen.setdefault(link.name, i)
    ifnames: dict[tuple[str, str], int] = {}
    for i, link in numbered:
        for j, ep in enumerate(link.endpoints):
            if ep.ifname:
                key = (ep.node, ep.ifname)
                if key in ifnames:
                    yield ("links", i, "endpoints", j), f"interface {ep} is already used by links[{ifnames[key]}]"
                ifnames.setdefault(key, i)


def _link(t: Topology, i: int, link: Link) -> Iterator[Problem]:
    nodes = node_kinds(t)
    here = ("links", i)
    ends = [ep.node for ep in link.endpoints]
    for j, node in enumerate(ends):
        if node not in nodes:
            yield here + ("endpoints", j), f"unknown node {node!r} (valid: {', '.join(nodes) or 'none defined'})"
    if ends[0] == ends[1]:
        yield here + ("endpoints",), f"both ends are on {ends[0]!r}; a link joins two different nodes"
    for key in link.addresses:
        if key not in ends:
            yield here + ("addresses", key), f"{key!r} is not an end of this link (ends: {', '.join(ends)})"
        elif nodes.get(key) == "switch":
            yield here + ("addresses", key), f"{key!r} is a switch; switch ports carry no addresses"
    for key in link.interfaces:
        if key not in ends:
            yield here + ("interfaces", key), f"{key!r} is not an end of this link (ends: {', '.join(ends)})"
    mtu = link.mtu or t.defaults.mtu
    if mtu < MIN_IPV6_MTU:
        for key, a in link.addresses.items():
            if a.ipv6 is not None:
                yield (here + ("addresses", key, "ipv6"),
                       f"IPv6 needs MTU >= {MIN_IPV6_MTU}, this link has MTU {mtu}; remove the address or raise the MTU")
    yield from _impair(link.impair, here + ("impair",), ends)
    if link.bond:
        yield from _bond(t, link, here + ("bond",), ends, nodes)
    yield from _aqm(t, link, here, ends)


def _aqm(t: Topology, link: Link, here: tuple, ends: list[str]) -> Iterator[Problem]:
    """Each `aqm_params:` against the discipline it is for: its own block's `aqm`, else the nearest
    written above it (defaults, link, its `from:`, a bond member, the member's `from:`); then each
    direction's discipline against its shaper."""
    top = t.defaults.impair.aqm if t.defaults.impair else None
    blocks = [(here + ("impair",), link.impair, top)]
    if link.bond:
        link_aqm = (link.impair.aqm if link.impair else None) or top  # what a member's block inherits
        blocks += [(here + ("bond", "member", k, "impair"), m.impair, link_aqm)
                   for k, m in enumerate(link.bond.member_impair)]
    for path, imp, above in blocks:
        if imp is None:
            continue
        own = imp.aqm or above
        if imp.aqm_params:
            for loc, msg in aqm.problems(own, imp.aqm_params):
                yield path + ("aqm_params", *loc), msg
        for sender, f in imp.from_.items():
            if f.aqm_params:
                for loc, msg in aqm.problems(f.aqm or own, f.aqm_params):
                    yield path + ("from", sender, "aqm_params", *loc), msg
    members = [None] if not link.bond else list(range(link.bond.members))
    seen = set()
    for sender in ends:
        for member in members:
            fields = direction_fields(t, link, sender, member)
            name = fields.get("aqm") or "fifo"
            problem = aqm.rate_problem(name, fields.get("aqm_params") or {}, fields.get("shaper"), bool(fields.get("rate")))
            if problem and problem not in seen:
                seen.add(problem)
                yield here + ("impair", "aqm"), problem


def _impair(imp: Impairment | None, path: tuple, ends: list[str]) -> Iterator[Problem]:
    if imp is None:
        return
    for key in imp.from_:
        if key not in ends:
            yield path + ("from", key), f"{key!r} is not an end of this link (ends: {', '.join(ends)})"
    for part, fields in [((), imp), *((("from", k), v) for k, v in imp.from_.items())]:
        if fields.jitter and not fields.delay:
            yield path + part + ("jitter",), "jitter needs a delay to vary around (set delay too)"
        if fields.burst and fields.shaper == "netem":
            yield path + part + ("burst",), "burst applies to the tbf and htb shapers, not netem"


def _bond(t: Topology, link: Link, path: tuple, ends: list[str], nodes: dict[str, str]) -> Iterator[Problem]:
    bond = link.bond
    mode = bond.mode
    opts = bond.options
    kinds = [nodes.get(e) for e in ends]
    for name, modes in OPTION_MODES.items():
        if getattr(opts, name) is not None and mode not in modes:
            yield (path + ("options", name),
                   f"the kernel accepts {name} only in mode {', '.join(modes)} (this bond is {mode})")
    if (opts.miimon or 0) > 0 and (opts.arp_interval or 0) > 0:
        yield path + ("options",), "miimon and arp_interval exclude each other: choose one link monitor"
    if (opts.arp_interval or 0) > 0 and not opts.arp_ip_target:
        yield path + ("options", "arp_ip_target"), "arp_interval needs arp_ip_target (addresses to probe)"
    miimon = 100 if opts.miimon is None else opts.miimon
    for name in ("updelay", "downdelay"):
        v = getattr(opts, name)
        if v and miimon and v % miimon:
            yield path + ("options", name), f"{name} {v} is not a multiple of miimon {miimon} (the kernel rounds it down)"
        if v and not miimon:
            yield path + ("options", name), f"{name} needs miimon > 0"
    if isinstance(opts.primary, int) and not 0 <= opts.primary < bond.members:
        yield path + ("options", "primary"), f"member index {opts.primary} out of range 0-{bond.members - 1}"
    if len(bond.member_impair) > bond.members:
        yield path + ("member",), f"{len(bond.member_impair)} member entries for a bond of {bond.members} members"
    for k, m in enumerate(bond.member_impair):
        yield from _impair(m.impair, path + ("member", k, "impair"), ends)
    if mode in BACK_TO_BACK_BROKEN and "switch" not in kinds:
        yield (path + ("mode",),
               f"{mode} bonds back to back lose traffic: each side sends to a member the other side "
               "does not receive on (measured: 100 % ping loss). Put a switch between them: "
               "see topologies/bond_switch.yaml")
    far_ovs = {ovs_bond_kind(bond, sw) for e in ends if (sw := ovs_switch(t, e))}
    if ("active-backup", "off") in far_ovs and mode != "active-backup":
        yield (path + ("ovs_bond_mode",),
               f"an OVS active-backup bond without LACP drops what arrives on its backup member, and a {mode} "
               "host bond sends on every member: use mode: active-backup, or ovs_bond_mode: balance-slb")
    if bond.switch_lag != "auto" and "switch" not in kinds:
        yield path + ("switch_lag",), "switch_lag applies only to a bond whose far end is a switch"
    if mode == "802.3ad" and "switch" in kinds and bond.switch_lag in ("none", "static"):
        yield (path + ("switch_lag",),
               f"802.3ad needs an LACP partner; with switch_lag {bond.switch_lag} no aggregator forms "
               "and only one member carries traffic (use switch_lag: lacp or auto)")


def _routing(t: Topology, numbered: list[tuple[int, Link]], complete: bool) -> Iterator[Problem]:
    """Routers, written routes and static routing's reach: a router joins two or more links, a
    route's `via` is a neighbour and its `to` something with an address, with routing: static or
    ospf every router reaches every link's subnet, and only an ospf lab's routers take frr_config."""
    for name, router in t.routers.items():
        if router is not None and router.frr_config and t.routing_protocol != "ospf":
            yield (("routers", name, "frr_config"),
                   f"frr_config applies only with routing: ospf (this lab's routing is {t.routing_protocol})")
    if not complete:
        return  # judged from a part of the links, each of these would mislead
    kinds = node_kinds(t)
    ends = {name: [i for i, link in numbered if any(ep.node == name for ep in link.endpoints)] for name in kinds}
    for name in t.routers:
        if len(ends[name]) < 2:
            # An error, not a warning: every link is a subnet of its own, so a router on one link
            # has nothing to forward between; a node that only ends traffic is a host.
            yield ("routers", name), (f"router {name!r} is on {len(ends[name])} link{'s' * (len(ends[name]) != 1)}: "
                                      "a router forwards between links (each its own subnet), so it needs two or "
                                      "more; a node on one link is a host")
    seg = segments(t)
    ports = [Port(ep.node, seg[j], j, link.cost) for j, (_, link) in enumerate(numbered)
             for ep in link.endpoints if kinds.get(ep.node) in ("host", "router")]
    graph = Graph(ports, t.routers)
    link_names = [link_name(t, j) for j in range(len(numbered))]
    l3 = [n for n, k in kinds.items() if k != "switch"]
    for section in ("hosts", "routers"):
        for node, spec in getattr(t, section).items():
            seen: dict[str, int] = {}
            for k, route in enumerate(spec.routes if spec else []):
                here = (section, node, "routes", k)
                yield from _route_to(route.to, node, here + ("to",), kinds, link_names, l3)
                if route.to in seen:
                    yield here + ("to",), f"routes[{seen[route.to]}] already goes to {route.to!r}"
                seen.setdefault(route.to, k)
                yield from _route_via(route.via, node, here + ("via",), kinds, graph, l3)
    if t.routing_protocol not in ("static", "ospf"):
        return
    # OSPF would never learn such a subnet either: `up` would wait for it in vain.
    for segment, routers in graph.unreachable().items():
        j = min(j for j, (_, link) in enumerate(numbered) if seg[j] == segment)
        yield ("links", numbered[j][0]), (f"the subnet of link {link_names[j]} cannot be reached from "
                                          f"{', '.join(routers)}: no chain of routers joins it to theirs "
                                          "(join it to a router, or write routing: none)")


def _route_to(to: str, node: str, here: tuple, kinds: dict[str, str], link_names: list[str],
              l3: list[str]) -> Iterator[Problem]:
    if to == "default" or kinds.get(to) in ("host", "router") or to in link_names:
        if to == node:
            yield here, f"{node!r} is this node: a route goes elsewhere"
        return
    if kinds.get(to) == "switch":
        yield here, f"{to!r} is a switch and has no address: route to a link's subnet (write the link's name)"
        return
    if any(c in to for c in "./:"):
        try:
            ipaddress.ip_network(to)
        except ValueError as e:
            yield here, f"bad prefix {to!r}: {e}"
        return
    yield here, (f"unknown destination {to!r} (valid: default, a node ({', '.join(l3)}), a link "
                 f"({', '.join(link_names) or 'none'}), or a prefix such as 10.9.0.0/16)")


def _route_via(via: str, node: str, here: tuple, kinds: dict[str, str], graph: Graph,
               l3: list[str]) -> Iterator[Problem]:
    if via not in kinds:
        yield here, f"unknown node {via!r} (valid: {', '.join(n for n in l3 if n != node)})"
    elif kinds[via] == "switch":
        yield here, f"{via!r} is a switch: a route's next hop is the host or router beyond it"
    elif via == node:
        yield here, f"{via!r} is this node: a route's next hop is a neighbour"
    elif not graph.shared(node, via):
        near = sorted({p.node for mine in graph.by_node.get(node, ()) for p in graph.by_segment[mine.segment]} - {node})
        yield here, (f"{via!r} is not a neighbour of {node!r}: a next hop shares a link or a switch with it "
                     f"({node}'s neighbours: {', '.join(near) or 'none'})")
