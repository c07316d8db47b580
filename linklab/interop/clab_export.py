"""linklab lab -> a containerlab topology (`containerlab deploy -t lab.clab.yml`).

Every node becomes a `kind: linux` container (a switch too: a Linux bridge built inside it, as
linklab builds one inside the switch's namespace), every veth (each bond member) a link given
as an endpoint pair with its MTU (containerlab's own default is 9500). What containerlab has no
field for is done by each node's `exec:` list, which containerlab runs after wiring the links,
in linklab's order: bonds (members down before enslaving), the bridge and its ports, MTU,
addresses, qdiscs (linklab's tc commands: netem rate, in-order jitter, reorder, duplicate and
per-member settings, which `containerlab tools netem` cannot express), offloads.
Host sysctls go in the node's `sysctls:` (Docker accepts only per-namespace net.* keys).

An Open vSwitch switch becomes a `kind: ovs-bridge` node, containerlab's own mapping: a bridge
of the Docker host's Open vSwitch, which containerlab expects to exist before `deploy`. Its
ports get lab-wide names (`s1-eth1`: they live in the host's namespace). The header lists the
commands, as linklab's OVS kind would run them: before deploy, the bridge (OpenFlow 1.3, fail
mode, dpid) and its controller (the same os-ken app, on 127.0.0.1); after deploy, once the ports
exist, OpenFlow port numbers, OVS bonds, port MTUs and the controller's address.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

from linklab.linux import tc as tcplan
from linklab.interop import CLAB_DEFAULT_IMAGE, CLAB_FRR_IMAGE
from linklab.interop.common import (bond_ip_args, controller_ports, node_routes, ovs_plan, ovs_switches,
                                    refuse_services, switch_ifname)
from linklab.model import frr as frr_config
from linklab.model.resolved import Lab, Node

# Has ip, tc, ethtool, ping and iperf3; any image with iproute2 works (--image).
DEFAULT_IMAGE = CLAB_DEFAULT_IMAGE
FRR_IMAGE = CLAB_FRR_IMAGE
# A router's sysctls that are its routing (set by its exec: list, where a reader of the file sees
# them beside its routes); the rest go in its sysctls: as a host's.
ROUTING_SYSCTLS = ("net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding", "net.ipv4.fib_multipath_hash_policy",
                   "net.ipv6.fib_multipath_hash_policy")
# FRR's daemons file for an OSPF router: which daemons the image's frrinit starts (zebra and
# staticd always run), each listening on loopback only for its TCP vty, as containerlab's frr01
# example writes it.
FRR_DAEMONS_FILE = """# FRR daemons of a linklab router (routing: ospf): OSPFv2 and OSPFv3; zebra always runs
ospfd=yes
ospf6d=yes
vtysh_enable=yes
zebra_options="  -A 127.0.0.1 -s 90000000"
ospfd_options="  -A 127.0.0.1"
ospf6d_options=" -A ::1"
"""
BRIDGE = "br0"


def _cmd(*argv: Any) -> str:
    # containerlab splits each exec string shell-like (no shell runs it): quote every word.
    return " ".join(shlex.quote(str(a)) for a in argv)


def node_exec(lab: Lab, node: str) -> list[str]:
    cmds: list[str] = []
    me = lab.node(node)
    links = [link for link in lab.links if any(e.node == node for e in link.ends)]
    for link in links:
        for b in link.bonds:
            if b.node != node:
                continue
            cmds.append(_cmd("ip", "link", "add", b.ifname, "type", "bond", "mode", b.mode, *bond_ip_args(b.options)))
            for m in b.members:
                cmds.append(_cmd("ip", "link", "set", "dev", m, "down"))
                cmds.append(_cmd("ip", "link", "set", "dev", m, "master", b.ifname))
            if b.options.get("primary"):
                cmds.append(_cmd("ip", "link", "set", "dev", b.ifname, "type", "bond", "primary", b.options["primary"]))
    if me.kind == "switch":
        cmds.append(_cmd("ip", "link", "add", BRIDGE, "type", "bridge", "stp_state", int(me.stp), "forward_delay", 0))
        for link in links:
            for e in link.ends:
                if e.node == node:
                    cmds += [_cmd("ip", "link", "set", "dev", p, "master", BRIDGE) for p in e.bridge_ports]
    for link in links:
        bonded = link.bond_members(node)
        for pair in link.veths:
            for end in (pair.a, pair.b):
                if end.node == node and end.ifname not in bonded:
                    cmds.append(_cmd("ip", "link", "set", "dev", end.ifname, "mtu", link.mtu))
        for b in link.bonds:
            if b.node == node:
                cmds.append(_cmd("ip", "link", "set", "dev", b.ifname, "mtu", link.mtu))
                cmds.append(_cmd("ip", "link", "set", "dev", b.ifname, "up"))
    if me.kind == "switch":
        if me.mtu:
            cmds.append(_cmd("ip", "link", "set", "dev", BRIDGE, "mtu", me.mtu))
        cmds.append(_cmd("ip", "link", "set", "dev", BRIDGE, "up"))
    for link in links:
        for e in link.ends:
            if e.node != node:
                continue
            if e.ipv4:
                cmds.append(_cmd("ip", "addr", "add", e.ipv4, "dev", e.ifname))
            if e.ipv6 and link.ipv6:
                cmds.append(_cmd("ip", "-6", "addr", "add", e.ipv6, "dev", e.ifname, "nodad"))
    if me.kind == "router":  # forwarding (and the multipath hash), before its routes
        cmds += [_cmd("sysctl", "-w", f"{k}={v}") for k, v in me.sysctls.items() if k in ROUTING_SYSCTLS]
    cmds += [_cmd(*argv) for argv in node_routes(lab).get(node, [])]
    for e in lab.egress_queues(node):
        cmds += [_cmd(*argv) for argv in tcplan.plan(e.queue, e.link.mtu, e.end.ifname)]
    for link in links:
        for e in link.ends:
            if e.node != node:
                continue
            for ifname in [e.ifname, *link.bond_members(node)]:
                if e.txqueuelen is not None:
                    cmds.append(_cmd("ip", "link", "set", "dev", ifname, "txqueuelen", e.txqueuelen))
                if e.offloads:
                    cmds.append(_cmd("ethtool", "-K", ifname,
                                     *[x for k, v in sorted(e.offloads.items()) for x in (k, "on" if v else "off")]))
    return cmds


def _endpoint(lab: Lab, node: str, ifname: str) -> str:
    return f"{node}:{switch_ifname(node, ifname, 'containerlab') if node in ovs_switches(lab) else ifname}"


def frr_dir(lab: Lab) -> str:
    """Where a routing: ospf lab's FRR files go, relative to the .clab.yml (containerlab resolves
    a bind's relative path from the topology file's directory)."""
    return f"{lab.name}-frr"


def frr_files(lab: Lab, node: Node) -> dict[str, str]:
    """A routing: ospf router's files for FRR's image, by path relative to the .clab.yml: its
    daemons file and its frr.conf (the generated one, or the user's frr_config)."""
    base = f"{frr_dir(lab)}/{node.name}"
    return {f"{base}/daemons": FRR_DAEMONS_FILE, f"{base}/frr.conf": frr_config.config(lab, node)}


def side_files(lab: Lab) -> dict[str, str]:
    """Every file the .clab.yml binds that the export writes beside it (empty: none)."""
    return {path: text for n in lab.nodes if n.frr is not None for path, text in frr_files(lab, n).items()}


def topology_dict(lab: Lab, image: str = DEFAULT_IMAGE, frr_image: str = FRR_IMAGE) -> dict[str, Any]:
    nodes: dict[str, Any] = {}
    for n in lab.nodes:
        if n.switch_kind == "ovs":
            nodes[n.name] = {"kind": "ovs-bridge"}  # containerlab runs no exec: on one (ovs_commands lists them)
            continue
        spec: dict[str, Any] = {"kind": "linux"}
        if n.kind in ("host", "router"):
            spec["sysctls"] = {"net.ipv6.conf.all.accept_dad": 0, "net.ipv6.conf.default.accept_dad": 0,
                               **{k: v for k, v in n.sysctls.items() if n.kind == "host" or k not in ROUTING_SYSCTLS}}
        else:
            spec["group"] = "switch"
        if n.container:  # a container node keeps its own image, command, environment and binds
            spec["image"] = n.container.image
            if n.container.cmd:
                spec["cmd"] = shlex.join(n.container.cmd)
            if n.container.env:
                spec["env"] = dict(n.container.env)
            if n.container.binds:
                spec["binds"] = list(n.container.binds)
        if n.frr is not None:  # FRR's image, started with the router's daemons file and frr.conf bound
            spec["image"] = frr_image
            spec["binds"] = [f"{path}:/etc/frr/{Path(path).name}" for path in frr_files(lab, n)]
        # linklab's own configuration first, then the node's own commands, as `linklab up` runs them
        cmds = node_exec(lab, n.name) + [shlex.join(argv) for argv in n.exec]
        if cmds:
            spec["exec"] = cmds
        nodes[n.name] = spec
    links = [{"endpoints": [_endpoint(lab, p.a.node, p.a.ifname), _endpoint(lab, p.b.node, p.b.ifname)],
              "mtu": link.mtu} for link in lab.links for p in link.veths]
    topology: dict[str, Any] = {"kinds": {"linux": {"image": image}}, "nodes": nodes}
    if links:  # containerlab's schema: links, when given, has at least one
        topology["links"] = links
    return {"name": lab.name, "topology": topology}


def ovs_commands(lab: Lab) -> tuple[list[str], list[str]]:
    """Shell lines for the Docker host: (before deploy, after deploy)."""
    before: list[str] = []
    after: list[str] = []
    ports = controller_ports(lab)
    for sw in ovs_switches(lab):
        plan = ovs_plan(lab, sw, lambda ifname, sw=sw: switch_ifname(sw, ifname, "containerlab"), ports.get(sw))
        bridge, *rest = plan.vsctl
        before.append(shlex.join(["ovs-vsctl", "--may-exist", "add-br", sw, "--", *bridge]))
        if plan.controller:
            c = plan.controller
            app = f"controllers/{c['argv'][-1]}"  # in a linklab checkout
            before.append(shlex.join(["env", *c["env"], *c["argv"][:-1], app]) + " &")
        after += [shlex.join(["ovs-vsctl", *argv]) for argv in rest]
        # The switch's own exec: commands (containerlab runs none on an ovs-bridge node): on the
        # Docker host, where its bridge is, after the rest.
        after += [shlex.join(argv) for argv in lab.node(sw).exec]
    return before, after


def export(lab: Lab, source: str, image: str = DEFAULT_IMAGE, frr_image: str = FRR_IMAGE) -> str:
    """The .clab.yml's text. A routing: ospf lab's FRR files (side_files) are bound by path
    relative to it: whoever writes the text writes them beside it."""
    refuse_services(lab, "containerlab")
    header = [
        f"# linklab lab {lab.name!r} for containerlab — exported by `linklab export --to containerlab {source}`.",
        f"# Rates are scaled by {lab.scale:g} ({lab.scale_source}); re-export with --scale to change.",
        "#   containerlab deploy -t THIS.clab.yml",
        f"# Every node is kind: linux (image {image}; it needs ip, tc and ethtool). Bonds, bridges,",
        "# MTU of bonds and bridges, addresses and impairments are built by each node's exec: list,",
        "# which needs the bonding and sch_netem modules in the Docker host's kernel.",
        "# Differences from `linklab up`: each container also has Docker's management eth0; names do not",
        "# resolve through /etc/hosts; sysctls Docker refuses (not per-namespace) are not set.",
    ]
    if any(n.kind == "router" for n in lab.nodes):
        header += [
            "# Routers are kind: linux nodes that forward: their exec: list sets net.ipv4.ip_forward and",
            "# net.ipv6.conf.all.forwarding (and the multipath hash policy), and every node's routes, as",
            "# linklab computes them (routing: static) or its routes: write them, are `ip route replace`",
            "# lines after its addresses (equal-cost paths as one multipath route). A host's default route",
            "# replaces Docker's (its management subnet on eth0 stays reachable).",
        ]
    if side_files(lab):
        header += [
            f"# routing: ospf: routers run FRR's image ({frr_image}, --frr-image; its exec: lines use the",
            "# image's iproute2), started with OSPFv2 and OSPFv3 (the daemons file) and linklab's frr.conf,",
            f"# both written to {frr_dir(lab)}/ beside this file and bound into /etc/frr/.",
        ]
    if any(n.exec for n in lab.nodes if n.switch_kind != "ovs"):
        header.append("# A node's own exec: commands (the topology's) come after linklab's, as `linklab up` runs them.")
    before, after = ovs_commands(lab)
    if before:
        header += [
            "# But Open vSwitch switches are kind: ovs-bridge, bridges of the Docker host's Open vSwitch that",
            "# containerlab expects to exist. On the Docker host, as root, in a linklab checkout (controllers/),",
            "# before `containerlab deploy` (osken-manager: os-ken 3.1.1):",
            *[f"#   {line}" for line in before],
            "# and after it, once the ports exist:",
            *[f"#   {line}" for line in after],
        ]
    header += [f"# note: {n}" for n in lab.notes]
    body = yaml.safe_dump(topology_dict(lab, image, frr_image), sort_keys=False, width=200, default_flow_style=False)
    return "\n".join(header) + "\n" + body
