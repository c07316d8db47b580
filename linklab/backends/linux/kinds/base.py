"""What every kind of lab node is: a few verbs, each with a default that does nothing (or, for
`create`, what most kinds need), so a kind writes only what differs (containerlab's
DefaultNode). The backend calls these; a kind never calls the backend.

  check(lab, node)        what cannot be built on this machine (empty: buildable)
  create(build, node)     the node's network namespace, made if missing and marked as the lab's
                          (default: a plain named namespace). A kind whose node lives elsewhere (a
                          container) makes that instead and gives its namespace the same name, so
                          everything after it (veth pairs, addresses, queues) works unchanged
  begin(build, node)      start what is slow to become ready (a controller's ~20 s of imports
                          under emulation) as soon as the namespaces exist, so it readies while
                          the rest of the lab is built; `configure` waits for it (default: nothing)
  configure(build, node)  make the node match the resolved lab, idempotently, in the build phase
                          the kind names in `phase` (linklab/backends/linux/build.py: PHASES)
  inspect(lab, node, ns)  live state beyond interfaces, for `status`, pre-flight and a switch's
                          counters ({}: none)
  remove(lab_name, node, ns, owned)  stop or remove what the node owns beyond its namespace;
                          returns what was removed

Verbs over all of a kind's nodes at once (defaults: nothing, or the one-node verb for each):

  claim(lab, nodes, owned, me)  refuse (StateError) to build over what is not this lab's; returns
                          `owned` with what apply is about to make, recorded before it is made
  create_all(build, nodes)      `create` for each node (a kind may start them side by side)
  remove_all(lab_name, nodes, owned)  `remove` for each node
  where(lab, node, ns)    where the node's commands run (runner's netns=): its namespace by default
  exec_env(lab, node, ns) what the node's `exec:` commands find in their environment beside the
                          caller's ({}: nothing; an OVS switch's name its own OVS)
  marked()                what of this kind carries a linklab mark, anywhere: name -> Mark (what
                          `clean` judges after a crash)
  remove_marked(names)    remove those (names from `marked`); returns what was removed
  release_idle()          stop what the kind started for all labs once no lab uses it (`clean`)

Only the first kind of a node creates its namespace; a kind that runs beside another in the same
node (a controller beside its switch's OVS) configures and removes only what is its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from linklab.backends.linux.names import Mark
from linklab.backends.linux.ownership import mark_loopback
from linklab.linux import netlink
from linklab.model.resolved import Lab, Node

if TYPE_CHECKING:
    from linklab.backends.linux.build import Build


class Kind:
    name: ClassVar[str]
    # The build phase `configure` runs in; None: the kind has nothing to configure.
    phase: ClassVar[str | None] = None
    # Interfaces the kind makes in its node's namespace besides the link ends (a Linux bridge's
    # br0): reconciling keeps them, and they take the node's MTU.
    interfaces: ClassVar[tuple[str, ...]] = ()

    def check(self, lab: Lab, node: Node) -> list[str]:
        return []

    def create(self, b: Build, node: Node) -> None:
        ns = b.ns[node.name]
        if ns in b.present and netlink.is_placeholder(ns):
            netlink.remove_placeholder(ns)  # a kill between the file and its mount: claimed before the build
            b.present.discard(ns)
        if ns not in b.present:
            netlink.create(ns)
            b.fresh.add(node.name)
        # Marked at once: an unmarked namespace is only ever one `claim` just vouched for.
        mark_loopback(ns, b.mark)

    def begin(self, b: Build, node: Node) -> None:
        pass

    def configure(self, b: Build, node: Node) -> None:
        pass

    def inspect(self, lab: Lab, node: Node, ns: str) -> dict[str, Any]:
        return {}

    def remove(self, lab_name: str, node: str, ns: str, owned: dict[str, Any]) -> list[str]:
        return []

    # ---- verbs over a kind's nodes ---------------------------------------------------------
    def claim(self, lab: Lab, nodes: list[Node], owned: dict[str, Any], me: Mark) -> dict[str, Any]:
        return owned

    def create_all(self, b: Build, nodes: list[Node]) -> None:
        for node in nodes:
            self.create(b, node)

    def remove_all(self, lab_name: str, nodes: Iterable[str], owned: dict[str, Any], ns_of) -> list[str]:
        return [x for node in nodes for x in self.remove(lab_name, node, ns_of(node), owned)]

    def where(self, lab: Lab, node: Node, ns: str) -> str:
        return ns

    def exec_env(self, lab: Lab, node: Node, ns: str) -> dict[str, str]:
        return {}

    def marked(self) -> dict[str, Mark]:
        return {}

    def remove_marked(self, names: list[str]) -> list[str]:
        return []

    def release_idle(self) -> list[str]:
        return []
