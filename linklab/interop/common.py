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
from linklab.model.resolved import Lab, Link, Service


def resolved_lab(topology: str | Path, overrides: list[tuple[str, Any]] = (), scale: float | None = None) -> Lab:
    from linklab import lab
    return lab.build_lab(topology, list(overrides), scale=scale)


MAX_IFNAME = 15  # Linux


def refuse_routers(lab: Lab, target: str) -> None:
    """Routers (and the routes of a routed lab) are not exported yet: an export that dropped them
    would build a lab whose hosts cannot reach each other, so it is refused instead."""
    routers = [n.name for n in lab.nodes if n.kind == "router"]
    if routers:
        raise UsageError(f"lab {lab.name} has routers ({', '.join(routers)}): the {target} export does not map "
                         "routers and their routes yet", hint="`linklab up` builds it; export a lab without routers")


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
    MTU of the two hosts' links into the segment), naming the links crossed."""
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
    return out


def kbit(bps: float) -> str:
    return f"{bps / 1e6:g} Mbit/s"
