"""A lab router: a host (a namespace whose link ends carry addresses, an /etc/hosts naming the
lab's nodes) that forwards IPv4 and IPv6. Forwarding is in the resolved node's sysctls
(linklab/model/resolve.py: FORWARDING), written in its namespace with every node's sysctls
and put back if the node stops being a router; its routes are installed for every node alike
(linklab/backends/linux/build.py: node_routes). What a router adds here is what `status` shows of it: whether
the kernel forwards there."""

from __future__ import annotations

from typing import Any

from linklab.backends.linux import sysctl
from linklab.backends.linux.kinds.host import Host
from linklab.model.resolved import Lab, Node

FORWARDING_KEYS = ("net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding")


class Router(Host):
    name = "router"

    def inspect(self, lab: Lab, node: Node, ns: str) -> dict[str, Any]:
        read = sysctl.read(ns, list(FORWARDING_KEYS))
        return {"forwarding": {"ipv4": read[FORWARDING_KEYS[0]] == "1", "ipv6": read[FORWARDING_KEYS[1]] == "1"}}
