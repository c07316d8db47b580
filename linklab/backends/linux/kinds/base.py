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

`Build`, what one reconcile pass knows and keeps, is what `create`, `begin` and `configure` are
handed: it is defined here with the verbs, so the pass (build.py) imports the kinds' interface
and no kind imports the pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar

from pyroute2 import IPRoute

from linklab.backends.linux.names import Mark
from linklab.backends.linux.ownership import mark_loopback
from linklab.linux import netlink
from linklab.model.resolved import Lab, Node


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


class Build:
    """What one reconcile pass knows and keeps, handed to every kind's `create` and `configure`.

    lab       the resolved lab being built
    ns        node name -> its network namespace
    mark      the ownership mark every interface and namespace of the lab carries
    kinds     node name -> the kinds it is built from, in order (an OVS switch with a controller: two)
    registry  every kind there is, in the registry's order
    previous  what the previous build recorded that the lab owns (empty on the first `up`)
    owned     what the lab owns after this build, filled as it goes (recorded in the state file)
    present   the namespaces that existed when the build started
    say       what tells the user of slow steps (a kind starting a daemon or pulling an image)
    created   (node, ifname) of the interfaces this build creates: they have no address and the
              kernel's default qdisc, so nothing needs to be read back to reconcile them
    fresh     the nodes whose namespace this build made (a new node, a container made anew): they
              run their whole `exec:` list (linklab/backends/linux/node_exec.py)
    begun     (kind name, node) -> what the kind's `begin` started, for its `configure`
    ipr       node -> its pyroute2 handle, opened on first use
    """

    def __init__(self, lab: Lab, ipr: dict[str, Callable[[], IPRoute]], ns: dict[str, str], mark: str,
                 kinds: dict[str, list[Kind]], previous: dict[str, Any], owned: dict[str, Any],
                 present: Iterable[str], say: Callable[[str], None] = print, registry: Iterable[Kind] = ()):
        self.lab, self.ns, self.mark, self.kinds, self.say = lab, ns, mark, kinds, say
        # Every kind there is, in order: each makes its nodes at once, and one with none in this
        # lab still removes what an earlier build made of it (a node that changed kind).
        self.registry = list(registry) or list(dict.fromkeys(k for ks in kinds.values() for k in ks))
        self.previous, self.owned, self.present = previous, owned, set(present)
        self._batches: dict[str, netlink.Batch] = {}
        # Interface indexes, asked for hundreds of times per build (each ask a netlink round
        # trip, slow under emulation); forgotten whenever a link is removed anywhere (removing
        # a veth end removes its peer in another namespace). Adding one changes no index.
        self._indexes: dict[tuple[str, str], int] = {}
        self._link_kinds: dict[tuple[str, str], str | None] = {}  # the same dumps' IFLA_INFO_KIND
        # Nodes whose interfaces were all read with one dump since the last change: a name
        # missing there does not exist (no request per name asked for).
        self._dumped: set[str] = set()
        self.ipr = {node: _IndexKeeping(h, self._indexes, self._dumped, self._link_kinds) for node, h in ipr.items()}
        self.created: set[tuple[str, str]] = set()
        self.fresh: set[str] = set()
        self.begun: dict[tuple[str, str], Any] = {}
        self._background: list[Future] = []
        self._mtus: dict[tuple[str, int], int] = {}

    def idx(self, node: str, ifname: str) -> int | None:
        """The index of `node`'s interface `ifname` (None: there is none)."""
        key = (node, ifname)
        if key not in self._indexes and node not in self._dumped:
            for x in netlink.links(self.ns[node]):
                self._indexes[(node, x["ifname"])] = x["index"]
                self._link_kinds[(node, x["ifname"])] = x["kind"]
            self._dumped.add(node)
        return self._indexes.get(key)

    def link_kind(self, node: str, ifname: str) -> str | None:
        """What kind of interface `node`'s `ifname` is (veth, bond...), as its namespace's dump
        said; asked of the kernel when the dump is older than the interface."""
        i = self.idx(node, ifname)
        if i is None:
            return None
        if (node, ifname) not in self._link_kinds:
            info = self.ipr[node].get_links(i)[0].get_attr("IFLA_LINKINFO")
            self._link_kinds[(node, ifname)] = info.get_attr("IFLA_INFO_KIND") if info is not None else None
        return self._link_kinds[(node, ifname)]

    def batch(self, node: str) -> netlink.Batch:
        """Requests for `node`'s namespace sent back to back by `send_batches` (see netlink.Batch)."""
        if node not in self._batches:
            self._batches[node] = netlink.Batch(self.ns[node])
        return self._batches[node]

    def send_batches(self) -> None:
        """Send every node's batched requests. The index cache stays true: batches create
        interfaces only with indexes chosen by `new_index` and learned at once."""
        batches, self._batches = self._batches, {}
        for b in batches.values():
            b.send()

    def new_index(self, node: str, ifname: str) -> int:
        """An interface index free in `node`'s namespace for `ifname`, learned now (the kernel
        creates it with that index or fails): nothing to ask after creating it."""
        self.idx(node, ifname)  # the namespace's interfaces dumped once, if not yet
        i = max([1] + [v for (n, _), v in self._indexes.items() if n == node]) + 1
        self._indexes[(node, ifname)] = i
        self.created.add((node, ifname))
        return i

    def own(self, node: str, ifname: str) -> None:
        """Record `node`'s interface `ifname` as the lab's (a later build removes it when the
        lab no longer has it)."""
        self.owned["interfaces"].append(f"{node}/{ifname}")

    def background(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run fn(*args) in a thread of its own (a `begin` whose work is mostly waiting on process
        starts); the build waits for it before it ends, also when it fails, so nothing it starts
        outlives a failed build unseen."""
        pool = ThreadPoolExecutor(max_workers=1)
        future = pool.submit(fn, *args)
        pool.shutdown(wait=False)
        self._background.append(future)
        return future

    def previous_processes(self, node: str) -> list[dict[str, Any]]:
        """The process records (linklab/backends/linux/daemons.py) the previous build left on `node`."""
        return [r for r in self.previous.get("processes", []) if r["node"] == node]

    def keep_processes(self, records: Iterable[dict[str, Any]]) -> None:
        """Processes the lab owns after this build; any earlier one not kept is stopped at the end."""
        self.owned["processes"].extend(records)


class _IndexKeeping:
    """A node's IPRoute, opened on first use, that empties the build's index cache when it
    removes a link."""

    def __init__(self, open_ipr: Callable[[], IPRoute], indexes: dict, dumped: set, kinds: dict):
        self._open, self._handle, self._indexes, self._dumped, self._kinds = open_ipr, None, indexes, dumped, kinds

    @property
    def _ipr(self) -> IPRoute:
        if self._handle is None:
            self._handle = self._open()
        return self._handle

    def link(self, command: str, **kwargs):
        if command in ("del", "delete", "remove"):
            self._indexes.clear()
        if command in ("del", "delete", "remove", "add"):
            self._dumped.clear()  # a dump no longer lists every interface there is
            self._kinds.clear()  # nor says what each name is
        return self._ipr.link(command, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._ipr, name)
