"""Read a lab back from the kernel: what `linklab status` shows and pre-flight checks trust."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pyroute2 import IPRoute, netns

from linklab.backends.base import bond_summary  # noqa: F401  (kept importable from here)
from linklab.backends.linux import bond as bondopt
from linklab.backends.linux import kinds
from linklab.linux import netlink, routes
from linklab.linux import qdisc_report, tc
from linklab.backends.linux.names import netns_name
from linklab.model.resolved import Lab

# IFLA_BOND_SLAVE_MII_STATUS / _STATE values (include/uapi/linux/if_bonding.h)
MII = {0: "up", 1: "fail", 2: "down", 3: "back"}
SLAVE_STATE = {0: "active", 1: "backup"}


def interfaces_of(lab: Lab, names: Collection[str]) -> dict[str, list[dict[str, Any]]]:
    """The interfaces of the nodes `names` whose namespaces exist, read back from the kernel."""
    present = set(netns.listnetns())
    out = {}
    for name in names:
        ns = netns_name(lab.name, name)
        if ns in present:
            with netlink.iproute(ns) as ipr:
                out[name] = _interfaces(ipr)
            _with_disciplines(ns, out[name])
    return out


def _with_disciplines(ns: str, interfaces: list[dict[str, Any]]) -> None:
    """Queue disciplines (fq_codel, pie, ...) as the kernel reports their options and counters
    (linklab/linux/qdisc_report.py): one tc process, only in a namespace that has one."""
    mine = [(it["ifname"], q) for it in interfaces for q in it["qdiscs"] if q["kind"] in qdisc_report.AQM_KINDS]
    if not mine:
        return
    reports = {(r["dev"], r["handle"]): r for r in qdisc_report.read(ns)}
    for ifname, q in mine:
        r = reports.get((ifname, q["handle"]))
        if r is not None:
            q["report"] = r


def inspect_lab(lab: Lab) -> dict[str, Any]:
    read = interfaces_of(lab, [n.name for n in lab.nodes])
    nodes = {}
    for node in lab.nodes:
        ns = netns_name(lab.name, node.name)
        if node.name not in read:
            nodes[node.name] = {"netns": ns, "present": False}
            continue
        nodes[node.name] = {"netns": ns, "present": True, "kind": node.kind, "interfaces": read[node.name]}
        if node.kind != "switch":
            nodes[node.name]["routes"] = routes_of(ns)
        for kind in kinds.of(node):  # a router's forwarding, then its FRR's neighbours
            extra = kind.inspect(lab, node, ns)
            if extra:
                nodes[node.name][kind.name] = extra
    return {"lab": lab.name, "nodes": nodes}


def routes_of(ns: str) -> list[dict[str, Any]]:
    """The node's main routing table as the kernel reports it (IPv4, then IPv6; link-local
    fe80::/64 left out): connected subnets (proto kernel), linklab's (proto linklab) and any
    other a command or daemon added."""
    names = {x["index"]: x["ifname"] for x in netlink.links(ns)}
    with netlink.iproute(ns) as ipr:
        found = routes.read(ipr)
    return [routes.describe(r, names) for r in found if not r.to.startswith("fe80::")]


def _interfaces(ipr: IPRoute) -> list[dict[str, Any]]:
    links = ipr.get_links()
    by_index = {x["index"]: x.get_attr("IFLA_IFNAME") for x in links}
    # One dump of each per namespace, not one per interface (each costs a netlink round trip,
    # and pyroute2's per-interface qdisc query is a whole dump filtered here).
    addrs, qdiscs = list(ipr.get_addr()), list(ipr.get_qdiscs())
    out = []
    for x in links:
        name = x.get_attr("IFLA_IFNAME")
        if name == "lo":
            continue
        info = x.get_attr("IFLA_LINKINFO")
        kind = info.get_attr("IFLA_INFO_KIND") if info is not None else None
        item: dict[str, Any] = {
            "ifname": name, "kind": kind, "state": x.get_attr("IFLA_OPERSTATE"),
            "mtu": x.get_attr("IFLA_MTU"), "mac": x.get_attr("IFLA_ADDRESS"),
            "master": by_index.get(x.get_attr("IFLA_MASTER")),
            "addresses": [f"{a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}" for a in addrs
                          if a["index"] == x["index"] and a["scope"] == 0],
            "qdiscs": [q for q in tc.describe(ipr, x["index"], qdiscs) if q["kind"] not in ("noqueue",)],
        }
        if kind == "bond":
            opts = bondopt.from_netlink(info.get_attr("IFLA_INFO_DATA"))
            item["bond"] = {
                "mode": opts.get("mode"),
                "active_slave": by_index.get(opts.get("active_slave")),
                "options": {k: v for k, v in opts.items() if k not in ("mode", "active_slave", "ad_info")
                            and bondopt.applicable(k, str(opts.get("mode")))},
                "ad_info": opts.get("ad_info"),
            }
        slave = info.get_attr("IFLA_INFO_SLAVE_DATA") if info is not None else None
        if slave is not None and info.get_attr("IFLA_INFO_SLAVE_KIND") == "bond":
            attrs = dict(slave.get("attrs", []))
            item["bond_member"] = {
                "mii": MII.get(attrs.get("IFLA_BOND_SLAVE_MII_STATUS"), attrs.get("IFLA_BOND_SLAVE_MII_STATUS")),
                "state": SLAVE_STATE.get(attrs.get("IFLA_BOND_SLAVE_STATE")),
                "aggregator": attrs.get("IFLA_BOND_SLAVE_AD_AGGREGATOR_ID"),
                "link_failures": attrs.get("IFLA_BOND_SLAVE_LINK_FAILURE_COUNT"),
            }
        out.append(item)
    return out
