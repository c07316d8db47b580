"""A Linux bridge switch: bridge `br0` in the switch's namespace, its link ends as ports."""

from __future__ import annotations

from typing import Any

from linklab.linux import netlink

BRIDGE = "br0"


def check(lab, node) -> list[str]:
    return []


def configure(b, node) -> None:
    br = b.idx(node.name, BRIDGE)
    fresh = br is None
    if fresh:
        br = b.new_index(node.name, BRIDGE)
        b.batch(node.name).bridge(BRIDGE, stp=node.stp, index=br)
    b.batch(node.name).set(BRIDGE, alias=b.mark)
    b.own(node.name, BRIDGE)
    # A new bridge has no ports yet; otherwise one dump says which ports it has, not one ask each.
    masters = {} if fresh else {x["index"]: x["master"] for x in netlink.links(b.ns[node.name])}
    for port in ports(b.lab, node.name):
        if masters.get(b.idx(node.name, port)) != br:
            b.batch(node.name).set(port, master=br)
    b.send_batches()


def ports(lab, node: str) -> list[str]:
    return [p for link in lab.links for end in link.ends if end.node == node for p in end.bridge_ports]


def inspect(lab, node, ns: str) -> dict[str, Any]:
    return {}


def remove(lab_name: str, node: str, ns: str, owned: dict[str, Any]) -> list[str]:
    return []  # the bridge goes with the namespace
