"""What every exporter shares: the resolved lab they start from, and facts about it.

Exporters work from the resolved model (load_topology -> resolve), never from the file as
written, so addresses, MTUs, qdiscs and bond members are exactly what `linklab up` builds.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab import controllers
from linklab.errors import UsageError
from linklab.linux import ovs
from linklab.model.resolved import Lab, Link, Route, Service


def resolved_lab(topology: str | Path, overrides: list[tuple[str, Any]] = (), scale: float | None = None) -> Lab:
    from linklab import lab
    return lab.build_lab(topology, list(overrides), scale=scale)


MAX_IFNAME = 15  # Linux


def route_argv(route: Route) -> list[str]:
    """A resolved route as the `ip route` command that installs it: one next hop (`via GW dev
    IF`), or several as one multipath route (`nexthop via GW dev IF` each: the kernel hashes each
    flow onto one). `replace`, not `add`: a container's own default route (Docker's, through its
    management interface) is replaced, and running it twice changes nothing."""
    family = ["-6"] if ipaddress.ip_network(route.to).version == 6 else []
    if len(route.nexthops) == 1:
        hop = route.nexthops[0]
        return ["ip", *family, "route", "replace", route.to, "via", hop.via, "dev", hop.dev]
    return ["ip", *family, "route", "replace", route.to,
            *(w for hop in route.nexthops for w in ("nexthop", "via", hop.via, "dev", hop.dev))]


def node_routes(lab: Lab) -> dict[str, list[list[str]]]:
    """node -> the `ip route` commands of its routes (the resolved lab's: computed by routing:
    static, or written by `routes:`), in the order linklab shows them."""
    return {n.name: [route_argv(r) for r in n.routes] for n in lab.nodes if n.routes}


def refuse_services(lab: Lab, target: str) -> None:
    """Background services (`exec:` items with `background: true`) are not exported: the target
    runs each exec command to its end, with no readiness wait and nothing that owns or stops a
    service, so an export that ran them as commands would hang or leave them unowned. Refused,
    naming each, rather than dropped."""
    found = [f"{n.name}/{item.name}" for n in lab.nodes for item in n.exec if isinstance(item, Service)]
    if found:
        raise UsageError(f"lab {lab.name} has background services ({', '.join(found)}): the {target} export does "
                         "not map services (started, waited for until ready, stopped by linklab) yet",
                         hint="`linklab up` runs them; export a lab without exec: items that have background: true")


def ovs_switches(lab: Lab) -> list[str]:
    """The lab's Open vSwitch switches, in node order."""
    return [n.name for n in lab.nodes if n.switch_kind == "ovs"]


def switch_ifname(switch: str, ifname: str, target: str = "mininet") -> str:
    """A switch port's name where switches share the root namespace (Mininet's switches,
    containerlab's bridges): lab-wide, and containing the switch's name (Mininet's LinuxBridge
    only enslaves such ports: mininet/nodelib.py)."""
    name = f"{switch}-{ifname}"
    if len(name) > MAX_IFNAME:
        raise UsageError(f"export to {target}: switch port {name!r} is longer than {MAX_IFNAME} characters",
                         hint=f"give switch {switch!r} a shorter name")
    return name


def controller_ports(lab: Lab) -> dict[str, int]:
    """Each OVS switch's controller port once every controller shares one namespace (Mininet's
    root, the Docker host): the topology's port, or the next free one when two switches ask
    for the same."""
    out: dict[str, int] = {}
    for n in lab.nodes:
        if n.switch_kind == "ovs" and n.controller:
            port = n.controller_port or 6653
            while port in out.values():
                port += 1
            out[n.name] = port
    return out


@dataclass(frozen=True)
class OvsPlan:
    """How an exporter rebuilds one of linklab's OVS switches: ovs-vsctl argument lists, in
    order: the bridge's columns (the first, which needs no port), then, once the ports exist,
    OpenFlow port numbers, bonds made of their members, port MTUs, the controller; and the
    controller app to run beside it."""

    switch: str
    vsctl: list[list[str]]
    controller: dict[str, Any] | None


def ovs_plan(lab: Lab, switch: str, port_name, ctl_port: int | None) -> OvsPlan:
    """`port_name(ifname)`: what the exporter calls the switch's port `ifname`."""
    node = lab.node(switch)
    ports = lab.switch_ports(switch)
    bonds = lab.ovs_bonds(switch)
    in_bond = {m for b in bonds for m in b.members}
    cmds = [["set", "bridge", switch, *ovs.bridge_columns(node, lab.dpid(switch))]]
    # The OpenFlow port numbers linklab gives (eth1 -> 1...): the controller app's layout uses them.
    cmds.append([x for k, p in enumerate(ports, start=1) if p.name not in in_bond
                 for x in ("--", "set", "interface", port_name(p.name), f"ofport_request={k}")][1:])
    for b in bonds:
        members = [port_name(m) for m in b.members]
        # The members joined the bridge as ports of their own: they leave it for the bond.
        cmds.append([x for m in members for x in ("--", "--if-exists", "del-port", switch, m)][1:])
        cmds.append(ovs.bond_args(switch, b.model_copy(update={"members": members}))[1:])
    cmds.append([x for p in ports for x in ("--", "set", "interface", port_name(p.name), f"mtu_request={p.mtu}")][1:])
    ctl = None
    if node.controller and ctl_port:
        cmds.append(ovs.set_controller_args(switch, ctl_port))
        ctl = {"app": node.controller, "port": ctl_port,
               "env": controllers.app_env(lab.openflow_layout(switch), lab.dpid(switch)),
               # as linklab runs it; the exporter's runtime puts its own paths for the program and the app
               "argv": controllers.manager_argv(f"{node.controller}.py", ctl_port, "osken-manager")}
    return OvsPlan(switch, [c for c in cmds if c], ctl)


def bond_ip_args(options: dict[str, Any]) -> list[str]:
    """Bond options as `ip link add NAME type bond …` arguments (names as in sysfs; primary is
    set once the members are enslaved, so it is left out here)."""
    args: list[str] = []
    for k, v in options.items():
        if k == "primary":
            continue
        if isinstance(v, bool):
            v = int(v)
        elif isinstance(v, list):
            v = ",".join(map(str, v))
        args += [k, str(v)]
    return args


@dataclass(frozen=True)
class PingCheck:
    src: str
    dst: str
    dst_addr: str
    mtu: int
    via: str


def ping_checks(lab: Lab) -> list[PingCheck]:
    """Every ordered pair of hosts that share an L2 segment: ping at the path MTU (the smallest
    MTU of the two hosts' links into the segment), naming the links crossed. In a routed lab also
    every pair of hosts on different segments that the routes join: ping at the smallest MTU of
    every path the routes allow (each equal-cost one: a flow may take any), both ways."""
    ends: dict[int, list[tuple[str, str, Link]]] = {}
    for link in lab.links:
        for e in link.ends:
            if lab.node(e.node).kind == "host" and e.ipv4:
                ends.setdefault(link.segment, []).append((e.node, str(ipaddress.ip_interface(e.ipv4).ip), link))
    out = []
    for seg in sorted(ends):
        for src, _, l1 in ends[seg]:
            for dst, addr, l2 in ends[seg]:
                if src == dst:
                    continue
                via = l1.name if l1 is l2 else f"{l1.name}+{l2.name}"
                out.append(PingCheck(src, dst, addr, min(l1.mtu, l2.mtu), via))
    if not any(n.kind == "router" for n in lab.nodes):
        return out
    first = {}  # host -> its first IPv4 address (the one pinged, and the replies' destination)
    for seg in sorted(ends):
        for node, addr, _ in ends[seg]:
            first.setdefault(node, (addr, seg))
    table = forwarding(lab)
    for src, (src_addr, src_seg) in first.items():
        for dst, (dst_addr, dst_seg) in first.items():
            if src == dst or src_seg == dst_seg:
                continue
            there = routed_paths(lab, table, src, dst_addr)
            back = routed_paths(lab, table, dst, src_addr)
            if not there or not back:
                continue  # no route (routing: none without one written): nothing to check
            mtu = min(_paths_mtu(lab, p) for p in (there, back))
            via = " or ".join("+".join(dict.fromkeys(link.name for link, _ in path)) for path in there)
            out.append(PingCheck(src, dst, dst_addr, mtu, via))
    return out


Hops = list[tuple[str, list[str]]]  # (interface, the neighbours it leads to) of one route


def forwarding(lab: Lab) -> dict[str, list[tuple[ipaddress.IPv4Network, Hops]]]:
    """node -> its IPv4 routes as (prefix, next hops): the resolved routes (routing: static,
    `routes:`); a routing: ospf router's, what OSPF converges to (the cheapest paths by `cost:`,
    linklab/model/routes.py: cheapest_interfaces), each interface leading to the other routers
    on its segment."""
    from linklab.model.routes import cheapest_interfaces
    out: dict[str, list[tuple[ipaddress.IPv4Network, Hops]]] = {}
    kinds = {n.name: n.kind for n in lab.nodes}
    learned = cheapest_interfaces(lab.links, kinds) if any(n.frr for n in lab.nodes) else {}
    for n in lab.nodes:
        rows = []
        for r in n.routes:
            net = ipaddress.ip_network(r.to)
            if net.version == 4:
                rows.append((net, [(h.dev, [h.node]) for h in r.nexthops]))
        if n.frr is not None:
            for prefix, ifnames in learned.get(n.name, {}).items():
                net = ipaddress.ip_network(prefix)
                if net.version == 4:
                    rows.append((net, [(i, _segment_routers(lab, n.name, i)) for i in sorted(ifnames)]))
        out[n.name] = rows
    return out


def _segment_routers(lab: Lab, node: str, ifname: str) -> list[str]:
    seg = next(link.segment for link in lab.links for e in link.ends if (e.node, e.ifname) == (node, ifname))
    return sorted({e.node for link in lab.links if link.segment == seg for e in link.ends
                   if e.node != node and lab.node(e.node).kind == "router"})


def routed_paths(lab: Lab, table, src: str, addr: str, seen: tuple[str, ...] = ()) -> list[list[tuple[Link, str]]]:
    """Every path the routes give from `src` to the node that has `addr`: lists of (link crossed,
    the node sending into it); empty when there is none (no route, or a loop)."""
    target = ipaddress.ip_address(addr)
    if src in seen or len(seen) > 32:
        return []
    mine = [(link, e) for link in lab.links for e in link.ends if e.node == src and e.ipv4]
    for link, e in mine:  # on a segment of mine: delivered across it
        if target in ipaddress.ip_interface(e.ipv4).network:
            owner = next((f.node for x in lab.links for f in x.ends if x.segment == link.segment and f.ipv4
                          and ipaddress.ip_interface(f.ipv4).ip == target), None)
            return [_crossing(lab, src, owner, link)] if owner else []
    matches = [(net, hops) for net, hops in table.get(src, []) if target in net]
    if not matches:
        return []
    _, hops = max(matches, key=lambda m: m[0].prefixlen)
    out = []
    for ifname, neighbours in hops:
        link = next(x for x in lab.links for e in x.ends if (e.node, e.ifname) == (src, ifname))
        for n in neighbours:
            for rest in routed_paths(lab, table, n, addr, (*seen, src)):
                out.append(_crossing(lab, src, n, link) + rest)
    return out


def _crossing(lab: Lab, a: str, b: str, link: Link) -> list[tuple[Link, str]]:
    """The links `a` crosses to reach `b` over the segment of `link` (`a`'s own): its link, and
    `b`'s when a switch joins them."""
    theirs = [x for x in lab.links if x.segment == link.segment and x is not link and any(e.node == b for e in x.ends)]
    return [(link, a), *((x, a) for x in theirs[:1])]


def _paths_mtu(lab: Lab, paths: list[list[tuple[Link, str]]]) -> int:
    """The smallest MTU on any of the paths: their links', and their switches' ports' (port_mtu)."""
    mtus = [link.mtu for path in paths for link, _ in path]
    mtus += [lab.node(e.node).port_mtu for path in paths for link, _ in path for e in link.ends
             if lab.node(e.node).port_mtu]
    return min(mtus)


def kbit(bps: float) -> str:
    return f"{bps / 1e6:g} Mbit/s"
