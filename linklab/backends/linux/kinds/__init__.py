"""What each kind of lab node is made of, one module a kind (as containerlab keeps one package
per kind). Every module offers the same verbs:

  check(lab, node)        what cannot be built on this machine (empty: buildable)
  configure(build, node)  make the node match the resolved lab, idempotently
  inspect(lab, node, ns)  extra live state for `status` and pre-flight ({} if none)
  remove(lab, node, ns, owned)  stop/remove what the node owns beyond its namespace

The namespace itself (one per node), veth pairs, bonds, MTUs and qdiscs are common to every
kind and stay in linklab/backends/linux/build.py.
"""

from __future__ import annotations

from types import ModuleType

from linklab.backends.linux.kinds import bridge, controller, host, ovs
from linklab.errors import UsageError
from linklab.model.resolved import Node

REGISTRY: dict[str, ModuleType] = {
    "host": host,              # a namespace with addresses, sysctls and /etc/hosts names
    "bridge": bridge,          # a Linux bridge switch
    "ovs": ovs,                # an Open vSwitch switch with its own ovsdb-server/ovs-vswitchd
    "controller": controller,  # an os-ken OpenFlow controller beside an OVS switch
}


def kind_of(node: Node) -> str:
    return node.kind if node.kind == "host" else (node.switch_kind or "bridge")


def module(kind: str) -> ModuleType:
    try:
        return REGISTRY[kind]
    except KeyError:
        raise UsageError(f"unknown node kind {kind!r} (valid: {', '.join(REGISTRY)})") from None


def kinds_of(node: Node) -> list[str]:
    """The kinds a node is built from, in order: an OVS switch with a controller is both."""
    out = [kind_of(node)]
    if node.controller:
        out.append("controller")
    return out
