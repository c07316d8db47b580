"""linklab lab -> a self-contained Mininet 2.3 script (`sudo python3 lab_mn.py` gives Mininet's CLI).

What Mininet expresses, the script gives Mininet: hosts, Linux-bridge switches (`LinuxBridge`,
no controller), one veth link per bond member, TCLink/TCIntf parameters per interface (so
per-direction settings map too) where TCIntf builds the same qdisc linklab would (delay, loss,
queue limit). What Mininet has no API for is done after `net.start()` with `ip`/`tc`/`sysctl`,
in linklab's order: bonds (members down before enslaving), switch LAGs, the MTU of every
interface, addresses, the remaining qdiscs (linklab's own tc commands, from
linklab.linux.tc.plan), offloads and sysctls. `--mininet-shaping` shapes with
Mininet's own TCLink instead, and says on stderr what that changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from linklab.linux import tc as tcplan
from linklab import controllers
from linklab.interop.common import (bond_ip_args, controller_ports, kbit, node_routes, ovs_plan, ovs_switches,
                                    ping_checks, refuse_services, switch_ifname)
from linklab.model import frr as frr_config
from linklab.model import paths, queues
from linklab.model.paths import frame_bytes
from linklab.model.resolve import FORWARDING
from linklab.model.resolved import Lab, Qdisc

RUNTIME = Path(__file__).with_name("mininet_runtime.py")
APPS_MARK = "# ---- controller apps"
TCINTF_MAX_MBIT = 1000  # mininet/link.py TCIntf.bwParamMax: larger bw values are ignored


def faithful_tcintf(q: Qdisc | None) -> dict[str, Any] | None:
    """TCIntf parameters that build what linklab builds, or None when TCIntf cannot (then the
    script applies linklab's tc commands). TCIntf puts delay/loss/limit in one netem: faithful.
    No queue discipline (aqm) either: linklab's commands build it.
    Its bw is htb with a 15 kB burst (short of the rate: bench/README.md#queues-and-shapers), its jitter
    reorders packets, and it has no duplicate, corrupt, reorder or overhead."""
    if q is None:
        return None
    if q.shaper or q.order_rate_bps or q.duplicate_pct or q.corrupt_pct or q.reorder_pct or q.jitter_s or q.aqm:
        return None
    return _netem_params(q)


def _netem_params(q: Qdisc) -> dict[str, Any]:
    p: dict[str, Any] = {}
    if q.delay_s or q.jitter_s:
        p["delay"] = f"{round(q.delay_s * 1e6)}us"
    if q.jitter_s:
        p["jitter"] = f"{round(q.jitter_s * 1e6)}us"
    if q.loss_pct:
        p["loss"] = q.loss_pct
    if q.limit:
        p["max_queue_size"] = q.limit
    return p


def mininet_tcintf(q: Qdisc | None, where: str, notes: list[str], mtu: int) -> dict[str, Any] | None:
    """Mininet's own approximation (for --mininet-shaping), recording what it changes."""
    if q is None:
        return None
    p = _netem_params(q)
    hold = q.delay_s + q.jitter_s
    if (q.rate_bps and q.needs_netem and q.queue_bytes
            and q.limit == queues.delay_line_packets(q.queue_bytes, q.rate_bps, hold)):
        # TCLink's netem holds the queue and counts packets: the queue and the delay line in
        # frames (linklab's netem limit only keeps out of the way of its byte FIFO).
        p["max_queue_size"] = queues.frames(q.queue_bytes, frame_bytes(mtu), q.rate_bps, hold)
        notes.append(f"{where}: queue of {q.queue_bytes} bytes as TCLink's netem limit, "
                     f"{p['max_queue_size']} packets (GSO packets count as one: it can hold more)")
    if q.rate_bps:
        mbit = q.rate_bps / 1e6
        if mbit > TCINTF_MAX_MBIT:
            notes.append(f"{where}: rate {kbit(q.rate_bps)} left unshaped (TCLink ignores bw above "
                         f"{TCINTF_MAX_MBIT} Mbit/s)")
        else:
            p["bw"] = round(mbit, 6)
            notes.append(f"{where}: rate {kbit(q.rate_bps)} by TCLink's htb (15 kB burst) instead of "
                         f"{q.shaper}: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %")
    if q.jitter_s and not q.reorder_pct and (q.order_rate_bps or q.shaper == "netem"):
        notes.append(f"{where}: jitter {round(q.jitter_s * 1e6)}us reorders packets under TCLink "
                     "(linklab keeps them in order)")
    if q.aqm:  # TCLink's enable_red/enable_ecn are fixed RED settings, not the discipline asked for
        notes.append(f"{where}: aqm {q.aqm} dropped (TCLink queues in its own FIFO or RED)")
    for what, value in (("duplicate", q.duplicate_pct), ("corrupt", q.corrupt_pct), ("reorder", q.reorder_pct),
                        ("overhead", q.overhead)):
        if value:
            notes.append(f"{where}: {what} {value:g} dropped (TCLink has no such parameter)")
    return p or None


def lab_table(lab: Lab) -> dict[str, Any]:
    """Everything the runtime needs, as plain data (printed into the script)."""
    switches = {n.name for n in lab.nodes if n.kind == "switch"}
    ovs_names = set(ovs_switches(lab))

    def dev(node: str, ifname: str) -> str:
        return switch_ifname(node, ifname) if node in switches else ifname

    notes = ["names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab"]
    if switches - ovs_names:
        notes.append("switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each")
    if ovs_names:
        notes.append("OVS switches are bridges of the machine's own Open vSwitch (Mininet's OVSSwitch), their "
                      "controllers run in the root namespace, not one namespace each")
    boxed = [n.name for n in lab.nodes if n.container]
    if boxed:
        notes.append(f"container nodes ({', '.join(boxed)}) are plain Mininet hosts: Mininet runs no images")
    switch_exec = [n.name for n in lab.nodes if n.kind == "switch" and n.exec]
    if switch_exec:
        notes.append(f"the exec: commands of switches ({', '.join(switch_exec)}) run in the root namespace, "
                     "where Mininet's switches are")
    if any(k for n in lab.nodes for k in n.sysctls if not k.startswith(("net.ipv4", "net.ipv6"))):
        notes.append("sysctls outside net.ipv4/net.ipv6 may be global: Mininet hosts share one kernel")
    mn_notes: list[str] = []
    veths, qdiscs, mtu, up, bonds, addresses, settings = [], [], [], [], [], [], []
    main: dict[str, str] = {}
    for link in lab.links:
        for k, pair in enumerate(link.veths):
            row: dict[str, Any] = {"link": link.name, "a": [pair.a.node, dev(pair.a.node, pair.a.ifname)],
                                   "b": [pair.b.node, dev(pair.b.node, pair.b.ifname)]}
            for side, end, q in (("a", pair.a, pair.egress_a), ("b", pair.b, pair.egress_b)):
                where = f"link {link.name}" + (f" member {k}" if link.kind == "bond" else "") + f", {end.node} sending"
                row[f"tclink_{side}"] = faithful_tcintf(q)
                row[f"mininet_{side}"] = mininet_tcintf(q, where, mn_notes, link.mtu)
                if q is not None and row[f"tclink_{side}"] is None:
                    ifname = dev(end.node, end.ifname)
                    qdiscs.append({"node": end.node, "ifname": ifname, "tc": tcplan.plan(q, link.mtu, ifname)})
                if end.ifname not in link.bond_members(end.node) and end.node not in ovs_names:
                    # A switch's port_mtu (Mininet leaves switch ports at 1500) beats the link's;
                    # OVS ports get theirs from OVS (mtu_request, in the OVS plan).
                    mtu.append([end.node, dev(end.node, end.ifname), lab.node(end.node).port_mtu or link.mtu])
            veths.append(row)
        for b in link.bonds:
            on_switch = b.node in switches
            bonds.append({"node": b.node, "ifname": dev(b.node, b.ifname), "mode": b.mode,
                          "create_args": ["mode", b.mode, *bond_ip_args(b.options)],
                          "primary": b.options.get("primary"),
                          "members": [dev(b.node, m) for m in b.members], "switch": b.node if on_switch else None})
            mtu.append([b.node, dev(b.node, b.ifname), link.mtu])  # a bond's MTU is pushed to its members
            up.append([b.node, dev(b.node, b.ifname)])
        for e in link.ends:
            if e.ipv4:
                main.setdefault(e.node, e.ifname)
                addresses.append({"node": e.node, "ifname": e.ifname, "ipv4": e.ipv4,
                                  "ipv6": e.ipv6 if link.ipv6 else None})
            for ifname in [e.ifname, *link.bond_members(e.node)]:
                if e.txqueuelen is not None:
                    settings.append({"node": e.node, "argv": ["ip", "link", "set", "dev", dev(e.node, ifname),
                                                              "txqueuelen", str(e.txqueuelen)]})
                if e.offloads:
                    flags = [x for key, v in sorted(e.offloads.items()) for x in (key, "on" if v else "off")]
                    settings.append({"node": e.node, "argv": ["ethtool", "-K", dev(e.node, ifname), *flags]})
        if link.ipv6_note:
            notes.append(f"link {link.name}: {link.ipv6_note}")
    for n in lab.nodes:
        if n.kind == "switch" and n.mtu and n.name not in ovs_names:
            mtu.append([n.name, n.name, n.port_mtu or n.mtu])  # LinuxBridge names the bridge after the switch
    ctl_ports = controller_ports(lab)
    ovs = []
    for sw in ovs_switches(lab):
        plan = ovs_plan(lab, sw, lambda ifname, sw=sw: switch_ifname(sw, ifname), ctl_ports.get(sw))
        ovs.append({"switch": sw, "vsctl": plan.vsctl, "controller": plan.controller})
    table = {
        "name": lab.name,
        "scale": lab.scale,
        "hosts": {n.name: {"main_intf": main.get(n.name), "sysctls": dict(n.sysctls)}
                  for n in lab.nodes if n.kind == "host"},
        "switches": {n.name: _switch(lab, n) for n in lab.nodes if n.kind == "switch"},
        "veths": veths, "bonds": bonds, "mtu": mtu, "up": up, "addresses": addresses, "qdiscs": qdiscs,
        "iface_settings": settings, "ovs": ovs,
        # each node's `exec:` commands, run in the node (node.cmd) once the lab is built, in order
        "exec": {n.name: n.exec for n in lab.nodes if n.exec},
        # size: the don't-fragment ping's payload that fills the path's MTU
        "checks": [{"from": c.src, "to": c.dst, "to_addr": c.dst_addr, "mtu": c.mtu, "via": c.via,
                    "size": c.mtu - paths.headers(4, "icmp")} for c in ping_checks(lab)],
        "notes": notes, "mininet_shaping_notes": mn_notes,
    }
    if any(n.kind == "router" for n in lab.nodes):
        table.update(routed_table(lab, main, notes))
    return table


def routed_table(lab: Lab, main: dict[str, str], notes: list[str]) -> dict[str, Any]:
    """A routed lab's part of the table: its routers (Mininet hosts that forward, their other
    sysctls: the multipath hash policy, the user's), every node's routes as `ip route` commands,
    and, in a routing: ospf lab, each router's frr.conf and the subnets every router must have a
    route to before the lab is ready (linklab/model/frr.py)."""
    routers = {n.name: {"main_intf": main.get(n.name),
                        "sysctls": {k: v for k, v in n.sysctls.items() if k not in FORWARDING}}
               for n in lab.nodes if n.kind == "router"}
    frr = {n.name: frr_config.config(lab, n) for n in lab.nodes if n.frr is not None}
    if frr:
        notes.append("each router's FRR (zebra, ospfd, ospf6d) runs in the router's namespace as in linklab, "
                     "its state in /var/run/frr/<name> (FRR's -N), stopped and removed at the end")
    return {"routers": routers, "routes": node_routes(lab), "frr": frr,
            "frr_subnets": frr_config.subnets(lab) if frr else []}


def _switch(lab: Lab, n) -> dict[str, Any]:
    """Mininet's switch parameters: LinuxBridge's stp, or OVSSwitch's OpenFlow version, fail mode,
    datapath and dpid (the rest of linklab's OVS settings is the OVS plan, applied after start)."""
    if n.switch_kind != "ovs":
        return {"stp": n.stp}
    from linklab.linux.ovs import OPENFLOW
    return {"ovs": {"protocols": OPENFLOW, "failMode": n.fail_mode or "standalone",
                    "datapath": "user" if n.datapath == "netdev" else "kernel", "dpid": "%016x" % lab.dpid(n.name)}}


def _literal(table: dict[str, Any]) -> str:
    """The table as a Python literal a reader can scan: one key, or one list item, per line."""
    lines = ["{"]
    for key, value in table.items():
        if isinstance(value, list) and value:
            lines.append(f"    {key!r}: [")
            lines += [f"        {item!r}," for item in value]
            lines.append("    ],")
        elif isinstance(value, dict) and value:
            lines.append(f"    {key!r}: {{")
            lines += [f"        {k!r}: {v!r}," for k, v in value.items()]
            lines.append("    },")
        else:
            lines.append(f"    {key!r}: {value!r},")
    return "\n".join(lines + ["}"])


def apps_block(table: dict[str, Any], osken_manager: str) -> str:
    """The controller apps the script starts, carried in it (the app and the shared `_*.py` files
    it imports), and the osken-manager that runs them (--osken-manager overrides)."""
    apps = sorted({o["controller"]["app"] for o in table["ovs"] if o["controller"]})
    sources: dict[str, str] = {}
    for app in apps:
        sources.update(controllers.app_sources(app))
    lines = [f"{APPS_MARK}: copies of linklab's controllers/ (os-ken apps), written to a temporary directory",
             f"OSKEN_MANAGER = {osken_manager!r}", "CONTROLLER_APPS = {"]
    lines += [f"    {name!r}: {text!r}," for name, text in sorted(sources.items())]
    return "\n".join(lines + ["}"]) + "\n\n"


def export(lab: Lab, source: str, osken_manager: str = "osken-manager") -> str:
    refuse_services(lab, "Mininet")
    table = lab_table(lab)
    tc_where = sorted({f"{q['node']}:{q['ifname']}" for q in table["qdiscs"]})
    header = [
        "#!/usr/bin/python3",
        f"# linklab lab {lab.name!r} for Mininet 2.3 — exported by `linklab export --to mininet {source}`.",
        f"# Rates are scaled by {lab.scale:g} ({lab.scale_source}); re-export with --scale to change.",
        "#",
        "#   sudo python3 THIS.py            build it and open Mininet's CLI (pingall, h1 ping h2, iperf h1 h2)",
        "#   sudo python3 THIS.py --test     pingall + don't-fragment pings at the path MTU; exit 1 on loss",
        "#   sudo python3 THIS.py --mininet-shaping   shape with TCLink's htb instead (prints what differs)",
        "#",
        "# Mapped: hosts, Linux-bridge switches (no controller), one link per bond member, TCIntf",
        "# parameters (delay/loss/limit) per interface and direction; bonds, switch LAGs, MTU of every",
        "# interface, addresses, qdiscs TCIntf cannot build, offloads and sysctls are set after start.",
    ]
    if table.get("routers"):
        header += [
            "# Routers: Mininet hosts that forward (LinklabRouter, as Mininet's examples/linuxrouter.py:",
            "# net.ipv4.ip_forward and net.ipv6.conf.all.forwarding on). Every node's routes, as linklab",
            "# computes them (routing: static) or its routes: write them, are `ip route replace` commands",
            "# after the addresses, equal-cost paths as one multipath route (nexthop ... nexthop).",
        ]
    if table.get("frr"):
        header += [
            "# routing: ospf: each router runs FRR's zebra, ospfd and ospf6d (Debian's frr package, in",
            "# /usr/lib/frr) in its namespace, loaded with the frr.conf linklab generates (below, in LAB),",
            "# as `linklab up` runs them; the lab is ready once every router has a route to every subnet.",
        ]
    if table["exec"]:
        header.append("# Then each node's exec: commands run in it, in order; a failing one stops the script.")
    if table["ovs"]:
        header += [
            "# Open vSwitch switches: Mininet's OVSSwitch (OpenFlow 1.3, linklab's fail mode and dpid), then",
            "# linklab's own OVS settings (OpenFlow port numbers, OVS bonds, port MTUs by mtu_request); each",
            "# controller is the same os-ken app as in linklab (carried below), run with osken-manager on",
            "# 127.0.0.1 and given to Mininet as a RemoteController. Needs Open vSwitch installed: where",
            "# none runs (no database socket) the script starts its own and stops it at the end; and",
            "# os-ken 3.1.1 (--osken-manager PATH). In linklab's lab VM:",
            "#   linklab vm run -- python3 THIS.py --test",
        ]
    header += ["# Differences from `linklab up`:", *[f"#   - {n}" for n in table["notes"]]]
    if tc_where:
        header.append("# Applied with linklab's own tc commands (TCIntf would differ: netem rate, tbf, htb burst,")
        header.append("# in-order jitter, >1000 Mbit/s, duplicate/corrupt/reorder): " + ", ".join(tc_where))
    body = "LAB = " + _literal(table) + "\n\n" + apps_block(table, osken_manager)
    return "\n".join(header) + "\n\n" + body + RUNTIME.read_text()
