"""An Open vSwitch switch: its own ovsdb-server and ovs-vswitchd inside the switch's namespace
(linklab/backends/linux/ovsd.py), one bridge named after the node, the link ends as ports
(OpenFlow 1.3, fail mode, per-port MTU via mtu_request, OVS bonds for host bonds)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from linklab import runner
from linklab.backends.linux import daemons, ovsd
from linklab.backends.linux.kinds.base import Build, Kind
from linklab.errors import LinklabError
from linklab.linux import ovs as parse
from linklab.model.resolved import Lab, Node


def dirs(lab_name: str, node: str, ns: str) -> ovsd.OvsDirs:
    return ovsd.OvsDirs(ns=ns, lab=lab_name, node=node)


OFCTL_BRIDGE_COMMANDS = ("show", "dump-flows", "dump-ports", "dump-ports-desc", "dump-tables", "dump-groups",
                         "dump-group-stats", "add-flow", "del-flows", "mod-flows", "add-group", "dump-meters")


def tool_argv(lab: Lab, node: str, argv: list[str], ns: str) -> list[str]:
    """argv running an OVS tool against `node`'s own OVS (`linklab ovs`), whose daemons run in
    namespace `ns`."""
    n = lab.node(node)
    if n.switch_kind != "ovs":
        raise LinklabError(f"{node} is not an Open vSwitch switch (kind {n.switch_kind or n.kind})")
    tool, args = tool_args(argv, node)
    d = dirs(lab.name, node, ns)
    return runner.netns_argv(d.argv(tool, *args), d.where(tool))


def tool_args(argv: list[str], bridge: str) -> tuple[str, list[str]]:
    """`linklab ovs s1 -- dump-flows` -> ovs-ofctl -O OpenFlow13 dump-flows s1; `vsctl ...`,
    `ofctl ...`, `appctl ...`, `dpctl ...` reach the other tools as they are."""
    if not argv:
        raise LinklabError("no OVS command given", hint="e.g. linklab ovs s1 -- dump-flows  |  vsctl show  |  appctl dpctl/show")
    head, rest = argv[0], list(argv[1:])
    if head in ("vsctl", "appctl", "dpctl"):
        return f"ovs-{head}", rest
    if head == "ofctl":
        return "ovs-ofctl", ["-O", "OpenFlow13", *rest]
    if head.startswith("ovs-"):
        return head, rest
    if head in OFCTL_BRIDGE_COMMANDS:
        return "ovs-ofctl", ["-O", "OpenFlow13", head, bridge, *rest]
    raise LinklabError(f"unknown OVS command {head!r}",
                       hint="valid: vsctl ARGS, ofctl ARGS, appctl ARGS, dpctl ARGS, or an ovs-ofctl bridge command "
                            f"({', '.join(OFCTL_BRIDGE_COMMANDS)})")


def _checksum_offload_off(b: Build, node: Node, ports) -> None:
    """The userspace datapath forwards what the veths hand it as is: TCP needs checksums filled
    in by the sender (measured: with tx offload on, TCP through a netdev bridge stalls).
    ethtool, not pyroute2: pyroute2's ethtool module cannot reach a namespace."""
    for e in b.lab.egress_queues():
        runner.run(["ethtool", "-K", e.end.ifname, "tx", "off"], netns=b.ns[e.end.node], timeout=10)


class Ovs(Kind):
    name = "ovs"
    phase = "switches"  # after the veth pairs and bonds it takes as ports, before MTUs

    def begin(self, b: Build, node: Node) -> None:
        """Start the switch's OVS (unless it runs from an earlier build) as soon as its namespace
        exists, in the background: four process starts, ~3.5 s a switch in the lab VM, overlap the
        links being made and the other switches starting. `configure` waits for it."""
        d = dirs(b.lab.name, node.name, b.ns[node.name])
        recs = ovsd.running(d, b.previous_processes(node.name))
        if len(recs) < 2:
            daemons.stop(recs)
            b.begun[(self.name, node.name)] = b.background(ovsd.start, d, node.datapath or "kernel")
        else:
            b.begun[(self.name, node.name)] = recs

    def configure(self, b: Build, node: Node) -> None:
        d = dirs(b.lab.name, node.name, b.ns[node.name])
        begun = b.begun.pop((self.name, node.name))
        fresh = isinstance(begun, Future)  # a new database: no bridge, no port yet
        recs = begun.result() if fresh else begun
        b.keep_processes(recs)
        br = node.name
        dp_type = "netdev" if node.datapath == "netdev" else "system"
        ports = b.lab.switch_ports(br)
        bonds = b.lab.ovs_bonds(br)
        in_bond = {m for bond in bonds for m in bond.members}
        want_ports = [p.name for p in ports if p.name not in in_bond] + [bond.name for bond in bonds]
        # The whole switch in one ovs-vsctl transaction: each call starts a process and waits for
        # ovs-vswitchd to apply it, most of a switched lab's `up` call by call
        # (bench/README.md#start-up-times).
        args = ["--may-exist", "add-br", br, "--", "set", "bridge", br, f"datapath_type={dp_type}",
                *parse.bridge_columns(node, b.lab.dpid(br))]
        have = [] if fresh else ovsd.vsctl(d, "list-ports", br).stdout.split()
        for p in have:
            if p not in want_ports:
                args += ["--", "--if-exists", "del-port", br, p]
        for k, port in enumerate(ports, start=1):
            if port.name not in in_bond:
                # Stable OpenFlow port numbers (eth1 -> 1...): apps and flow dumps read the same way each time.
                args += ["--", "--may-exist", "add-port", br, port.name,
                         "--", "set", "interface", port.name, f"ofport_request={k}"]
        for bond in bonds:
            args += parse.bond_args(br, bond)
        for port in ports:
            args += ["--", "set", "interface", port.name, f"mtu_request={port.mtu}"]
        args += ["--", *parse.set_controller_args(br, node.controller_port)] if node.controller else ["--", "del-controller", br]
        ovsd.vsctl(d, *args)
        if node.datapath == "netdev":
            _checksum_offload_off(b, node, ports)

    def exec_env(self, lab: Lab, node: Node, ns: str) -> dict[str, str]:
        # ovs-vsctl, ovs-ofctl... in the switch's `exec:` reach its own OVS (no other is there).
        return dirs(lab.name, node.name, ns).env()

    def inspect(self, lab: Lab, node: Node, ns: str) -> dict[str, Any]:
        d = dirs(lab.name, node.name, ns)
        out: dict[str, Any] = {"bridge": node.name}
        calls = [(*ovsd.OFCTL, "dump-flows", node.name), (*ovsd.OFCTL, "dump-ports", node.name),
                 ("ovs-appctl", "dpctl/show"),
                 ("ovs-vsctl", *parse.INTERFACE_COLUMNS, "list", "interface")]
        if node.controller:
            calls.append(("ovs-vsctl", *parse.controller_connected_args(node.name)))
        flows, ports, dp, ifaces, *ctl = ovsd.tools_at_once(d, calls)
        out["controller"] = node.controller
        out["controller_connected"] = parse.controller_connected(ctl[0].stdout) if ctl and ctl[0].ok else None
        if not (flows.ok and ports.ok):
            out["error"] = (flows.stderr or ports.stderr).strip()
            return out
        fl = parse.parse_dump_flows(flows.stdout)
        out["flows"] = len(fl)
        out["packet_ins"] = parse.packet_in_count(fl)
        names = parse.parse_interfaces_csv(ifaces.stdout) if ifaces.ok else {}
        out["ports"] = [{**p, **names.get(p["port"], {"name": p["port"], "mtu": None})}
                        for p in parse.parse_dump_ports(ports.stdout)]
        out["datapath"] = parse.parse_dpctl_show(dp.stdout) if dp.ok else {}
        return out

    def remove(self, lab_name: str, node: str, ns: str, owned: dict[str, Any]) -> list[str]:
        mine = [r for r in owned.get("processes", []) if r["node"] == node and r["role"] != "controller"]
        out = [f"{r['role']} {r['pid']} ({node})" for r in ovsd.stop(mine)]
        if ovsd.remove_rundir(ns):
            out.append(f"ovs db {ovsd.RUN_ROOT / ns}")
        return out
