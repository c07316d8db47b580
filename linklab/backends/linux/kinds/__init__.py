"""What each kind of lab node is made of, one module a kind (as containerlab keeps one package
per kind), each a subclass of Kind (base.py: the verbs, with their defaults).

The namespace every node has, veth pairs, bonds, MTUs and queues are common to every kind and
are built by linklab/backends/linux/build.py; a kind adds what is its own in the build phase it
names. Add a kind by writing its module and listing it here.
"""

from __future__ import annotations

from linklab.backends.linux.kinds.base import Kind
from linklab.backends.linux.kinds.bridge import Bridge
from linklab.backends.linux.kinds.container import Container
from linklab.backends.linux.kinds.controller import Controller
from linklab.backends.linux.kinds.frr import Frr
from linklab.backends.linux.kinds.host import Host
from linklab.backends.linux.kinds.ovs import Ovs
from linklab.backends.linux.kinds.router import Router
from linklab.errors import UsageError
from linklab.model.resolved import Node

# In order: a kind that runs beside another in the same node comes after it (it is built after
# it, and removed before it).
REGISTRY: dict[str, Kind] = {k.name: k for k in (
    Host(),        # a namespace with addresses, sysctls and /etc/hosts names
    Container(),   # a host in a Docker container: the container's namespace, joined like a host's
    Router(),      # a host that forwards IPv4 and IPv6 between its links
    Frr(),         # FRR (zebra, ospfd, ospf6d) beside a router of a routing: ospf lab
    Bridge(),      # a Linux bridge switch
    Ovs(),         # an Open vSwitch switch with its own ovsdb-server/ovs-vswitchd
    Controller(),  # an os-ken OpenFlow controller beside an OVS switch
)}


def kind_of(node: Node) -> str:
    if node.kind == "host":
        return "container" if node.container else "host"
    if node.kind == "router":
        return "router"
    return node.switch_kind or "bridge"


def get(name: str) -> Kind:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown node kind {name!r} (valid: {', '.join(REGISTRY)})") from None


def of(node: Node) -> list[Kind]:
    """The kinds a node is built from, in order: an OVS switch with a controller is both, a
    router of a routing: ospf lab runs FRR beside."""
    return [get(kind_of(node))] + ([get("controller")] if node.controller else []) + ([get("frr")] if node.frr else [])
