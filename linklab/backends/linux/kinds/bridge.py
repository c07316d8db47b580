"""A Linux bridge switch: bridge `br0` in the switch's namespace, its link ends as ports."""

from __future__ import annotations

from typing import Any

BRIDGE = "br0"


def check(lab, node) -> list[str]:
    return []


def configure(b, node) -> None:
    ipr = b.ipr[node.name]
    if b.idx(node.name, BRIDGE) is None:
        b.batch(node.name).bridge(BRIDGE, stp=node.stp)
    b.batch(node.name).set(BRIDGE, alias=b.mark)
    b.send_batches()
    br = b.idx(node.name, BRIDGE)
    b.own(node.name, BRIDGE)
    masters = {x["index"]: x.get_attr("IFLA_MASTER") for x in ipr.get_links()}  # one dump, not one ask per port
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
