"""linklab lab -> a containerlab topology (`containerlab deploy -t lab.clab.yml`).

Every node becomes a `kind: linux` container (a switch too: a Linux bridge built inside it, as
linklab builds one inside the switch's namespace), every veth (each bond member) a link given
as an endpoint pair with its MTU (containerlab's own default is 9500). What containerlab has no
field for is done by each node's `exec:` list, which containerlab runs after wiring the links,
in linklab's order: bonds (members down before enslaving), the bridge and its ports, MTU,
addresses, qdiscs (linklab's tc commands: netem rate, in-order jitter, reorder, duplicate and
per-member settings, which `containerlab tools netem` cannot express), offloads.
Host sysctls go in the node's `sysctls:` (Docker accepts only per-namespace net.* keys).
"""

from __future__ import annotations

import shlex
from typing import Any

import yaml

from linklab.linux import tc as tcplan
from linklab.interop import CLAB_DEFAULT_IMAGE
from linklab.interop.common import bond_ip_args, refuse_ovs
from linklab.model.resolved import Lab

# Has ip, tc, ethtool, ping and iperf3; any image with iproute2 works (--image).
DEFAULT_IMAGE = CLAB_DEFAULT_IMAGE
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


def topology_dict(lab: Lab, image: str = DEFAULT_IMAGE) -> dict[str, Any]:
    refuse_ovs(lab, "containerlab")
    nodes: dict[str, Any] = {}
    for n in lab.nodes:
        spec: dict[str, Any] = {"kind": "linux"}
        if n.kind == "host":
            spec["sysctls"] = {"net.ipv6.conf.all.accept_dad": 0, "net.ipv6.conf.default.accept_dad": 0,
                               **dict(n.sysctls)}
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
        cmds = node_exec(lab, n.name)
        if cmds:
            spec["exec"] = cmds
        nodes[n.name] = spec
    links = [{"endpoints": [f"{p.a.node}:{p.a.ifname}", f"{p.b.node}:{p.b.ifname}"], "mtu": link.mtu}
             for link in lab.links for p in link.veths]
    return {"name": lab.name, "topology": {"kinds": {"linux": {"image": image}}, "nodes": nodes, "links": links}}


def export(lab: Lab, source: str, image: str = DEFAULT_IMAGE) -> str:
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
    header += [f"# note: {n}" for n in lab.notes]
    body = yaml.safe_dump(topology_dict(lab, image), sort_keys=False, width=200, default_flow_style=False)
    return "\n".join(header) + "\n" + body
