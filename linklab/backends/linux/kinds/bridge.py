"""A Linux bridge switch: bridge `br0` in the switch's namespace, its link ends as ports."""

from __future__ import annotations

from linklab.backends.linux.kinds.base import Build, Kind
from linklab.linux import netlink
from linklab.model.resolved import Lab, Node

BRIDGE = "br0"


class Bridge(Kind):
    name = "bridge"
    phase = "switches"  # after the veth pairs and bonds it takes as ports, before MTUs
    interfaces = (BRIDGE,)  # goes with the namespace: nothing to remove

    def configure(self, b: Build, node: Node) -> None:
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


def ports(lab: Lab, node: str) -> list[str]:
    return [p for link in lab.links for end in link.ends if end.node == node for p in end.bridge_ports]
