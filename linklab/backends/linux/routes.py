"""Each node's routes (the resolved lab's: computed by routing: static, or written), installed
through netlink and reconciled: a build changes only the routes that differ from the lab's
(`linklab set 'links[core].cost=5'` replaces the routes the new costs move, nothing else). They
live in the nodes' namespaces, so `down` removes them with them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from linklab.errors import LinklabError
from linklab.linux import routes as kernel
from linklab.model.resolved import Node
from pyroute2.netlink.exceptions import NetlinkError

if TYPE_CHECKING:
    from linklab.backends.linux.build import Build


def wanted(b: Build, node: Node) -> list[kernel.KernelRoute]:
    return [kernel.KernelRoute(r.to, tuple((h.via, b.idx(node.name, h.dev)) for h in r.nexthops)) for r in node.routes]


def install(b: Build) -> None:
    """Every node's routes, after its addresses (a gateway must be on a subnet the node is on).
    A node that had routes in the previous build and has none now loses linklab's; a lab that
    never had any asks the kernel nothing."""
    before = set(b.previous.get("routed", []))
    routed = [n.name for n in b.lab.nodes if n.routes]
    for node in b.lab.nodes:
        if node.name not in before and not node.routes:
            continue
        try:
            kernel.reconcile(b.ipr[node.name], wanted(b, node))
        except NetlinkError as e:
            raise LinklabError(f"{node.name}: the kernel refused its routes: {e.args[1] if len(e.args) > 1 else e}",
                               hint="`linklab show` lists each node's routes") from None
    if routed or before:
        b.owned["routed"] = routed
