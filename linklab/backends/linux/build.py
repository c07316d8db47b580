"""One reconcile pass of the Linux backend over a lab's nodes (see backend.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from linklab import runner
from linklab.backends.linux import bond as bondopt
from linklab.backends.linux import kinds
from linklab.errors import LinklabError
from linklab.linux import netlink, tc
from linklab.model.resolved import Lab

BRIDGE = kinds.bridge.BRIDGE


class _Build:
    """One reconcile pass over all nodes' netlink handles."""

    def __init__(self, lab: Lab, ipr: dict[str, Callable[[], IPRoute]], ns: dict[str, str], the_mark: str,
                 owned: dict[str, Any], new: dict[str, Any]):
        self.lab, self.ns, self.mark, self.owned, self.new = lab, ns, the_mark, owned, new
        self._batches: dict[str, netlink.Batch] = {}
        # Interface indexes, asked for hundreds of times per build (each ask a netlink round
        # trip, slow under emulation); forgotten whenever a link is removed anywhere (removing
        # a veth end removes its peer in another namespace). Adding one changes no index.
        self._indexes: dict[tuple[str, str], int] = {}
        # Nodes whose interfaces were all read with one dump since the last change: a name
        # missing there does not exist (no request per name asked for).
        self._dumped: set[str] = set()
        self.ipr = {node: _IndexKeeping(h, self._indexes, self._dumped) for node, h in ipr.items()}
        # (node, ifname) of interfaces this build creates: they have no address and the kernel's
        # default qdisc, so nothing needs to be read back to reconcile them.
        self.created: set[tuple[str, str]] = set()

    def idx(self, node: str, ifname: str) -> int | None:
        key = (node, ifname)
        if key not in self._indexes and node not in self._dumped:
            for x in netlink.links(self.ns[node]):
                self._indexes[(node, x["ifname"])] = x["index"]
            self._dumped.add(node)
        return self._indexes.get(key)

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
        self.new["interfaces"].append(f"{node}/{ifname}")

    def interfaces(self) -> None:
        marks: list[tuple[str, str]] = []
        for link in self.lab.links:
            for pair in link.veths:
                ia, ib = self.idx(pair.a.node, pair.a.ifname), self.idx(pair.b.node, pair.b.ifname)
                if not (ia is not None and ib is not None and self._peers(pair, ia)):
                    for node, ifname, i in ((pair.a.node, pair.a.ifname, ia), (pair.b.node, pair.b.ifname, ib)):
                        if i is not None:  # half of a pair from an interrupted build
                            self.ipr[node].link("del", index=i)
                    # The first end made up at once (a bond member is downed before it is enslaved).
                    self.batch(pair.a.node).veth(pair.a.ifname, pair.b.ifname, self.ns[pair.b.node],
                                                 index=self.new_index(pair.a.node, pair.a.ifname),
                                                 peer_index=self.new_index(pair.b.node, pair.b.ifname))
                marks += [(end.node, end.ifname) for end in (pair.a, pair.b)]
        self.send_batches()  # every pair exists before its ends are marked
        for node, ifname in marks:
            self.batch(node).set(ifname, alias=self.mark)
            self.own(node, ifname)
        self.send_batches()

    def _peers(self, pair, ia: int) -> bool:
        link = self.ipr[pair.a.node].get_links(ia)[0]
        info = link.get_attr("IFLA_LINKINFO")
        return info is not None and info.get_attr("IFLA_INFO_KIND") == "veth"

    def remove_stale(self) -> None:
        """Interfaces an earlier apply made that the lab no longer has (fewer bond members...)."""
        keep = set(self.new["interfaces"])
        keep |= {f"{b.node}/{b.ifname}" for link in self.lab.links for b in link.bonds}
        keep |= {f"{n.name}/{BRIDGE}" for n in self.lab.nodes if kinds.kind_of(n) == "bridge"}
        for item in self.owned.get("interfaces", []):
            node, _, ifname = item.partition("/")
            if item not in keep and node in self.ipr:
                i = self.idx(node, ifname)
                if i is not None:
                    self.ipr[node].link("del", index=i)

    def bonds(self) -> None:
        for link in self.lab.links:
            for b in link.bonds:
                ipr = self.ipr[b.node]
                bi = self.idx(b.node, b.ifname)
                if bi is None:
                    ipr.link("add", ifname=b.ifname, kind="bond", bond_mode=bondopt.mode_number(b.mode))
                    bi = self.idx(b.node, b.ifname)
                self.own(b.node, b.ifname)
                members = {m: self.idx(b.node, m) for m in b.members}
                actual = bondopt.from_netlink(_info_data(ipr.get_links(bi)[0]))
                wanted = bondopt.desired_options(b.mode, b.options)
                names = {i: n for n, i in members.items()}
                diff = bondopt.differs(actual, b.mode, wanted, names)
                enslaved = {x["index"] for x in ipr.get_links() if x.get_attr("IFLA_MASTER") == bi}
                if diff:
                    # Mode and many options can change only on a downed bond without members.
                    for m in enslaved:
                        ipr.link("set", index=m, master=0)
                    enslaved = set()
                    ipr.link("set", index=bi, state="down")
                    nl = bondopt.to_netlink({k: v for k, v in wanted.items() if k != "primary"}, members)
                    ipr.link("set", index=bi, kind="bond", bond_mode=bondopt.mode_number(b.mode), **nl)
                for m, mi in members.items():
                    if mi not in enslaved:
                        ipr.link("set", index=mi, state="down")
                        ipr.link("set", index=mi, master=bi)
                if "primary" in wanted and ("primary" in diff or not enslaved):
                    ipr.link("set", index=bi, kind="bond", **bondopt.to_netlink({"primary": wanted["primary"]}, members))
                ipr.link("set", index=bi, ifalias=self.mark)

    def bridges(self) -> None:
        for node in self.lab.nodes:
            if node.kind == "switch":
                kinds.module(kinds.kind_of(node)).configure(self, node)

    def mtu_and_up(self) -> None:
        # Every interface's MTU and state, one dump per namespace (not one request per interface;
        # setting an MTU changes no interface's state, so the same dump says which to bring up).
        dump = {node: netlink.links(self.ns[node]) for node in self.ipr}
        self._mtus = {(node, x["index"]): x["mtu"] for node, links in dump.items() for x in links}
        for link in self.lab.links:
            for pair in link.veths:
                for end in (pair.a, pair.b):
                    if end.ifname not in link.bond_members(end.node):
                        # A switch's port_mtu (Mininet leaves switch ports at 1500) beats the link's.
                        self._set_mtu(end.node, end.ifname, self.lab.node(end.node).port_mtu or link.mtu)
            for b in link.bonds:
                self._set_mtu(b.node, b.ifname, link.mtu)  # a bond's MTU is pushed to its members
        for node in self.lab.nodes:
            if kinds.kind_of(node) == "bridge" and node.mtu:
                # Set, not compared: a bridge's MTU follows its ports' until set, so the dump may
                # be stale, and setting the MTU it has changes nothing.
                self.batch(node.name).set(BRIDGE, mtu=node.port_mtu or node.mtu)
        for node, links in dump.items():
            for x in links:
                if x["ifname"] != "lo" and not x["up"]:
                    self.batch(node).set(x["ifname"], up=True)
        self.send_batches()

    def _set_mtu(self, node: str, ifname: str, mtu: int) -> None:
        i = self.idx(node, ifname)
        have = self._mtus.get((node, i))
        if have != mtu:
            try:
                self.ipr[node].link("set", index=i, mtu=mtu)
            except NetlinkError as e:
                raise LinklabError(f"{node}:{ifname}: the kernel refused MTU {mtu}: {e.args[1] if len(e.args) > 1 else e}") from None

    def addresses(self) -> None:
        for node in self.lab.nodes:
            if node.kind == "host":
                kinds.module("host").configure(self, node)

    def qdiscs(self) -> None:
        changes: dict[str, list] = {}  # node -> its interfaces' changes, one tc process per namespace
        roots: dict[str, dict[int, list]] = {}  # node -> index -> its root qdiscs: one dump per namespace
        for link, end, _, q in self.lab.egress_queues():
            key = f"{end.node}/{end.ifname}"
            sig = json.dumps([q.model_dump() if q else None, link.mtu], sort_keys=True)
            created = (end.node, end.ifname) in self.created
            if created:
                mine = []  # the kernel's default: nothing to dump
            else:
                if end.node not in roots:
                    roots[end.node] = _root_qdiscs(self.ipr[end.node])
                mine = roots[end.node].get(self.idx(end.node, end.ifname), [])
            if created or self.owned.get("qdiscs", {}).get(key) != sig or not _root_kind_matches(mine, q):
                has_root = any(x["handle"] != 0 for x in mine)  # the kernel's default has handle 0
                if q is not None or has_root:  # None on the kernel's default: nothing to do
                    changes.setdefault(end.node, []).append((end.ifname, q, link.mtu, has_root))
            self.new["qdiscs"][key] = sig
        for node, node_changes in changes.items():
            tc.apply_many(self.ns[node], node_changes)

    def iface_settings(self) -> None:
        for link in self.lab.links:
            for end in link.ends:
                ipr, i = self.ipr[end.node], self.idx(end.node, end.ifname)
                if end.txqueuelen is not None:
                    ipr.link("set", index=i, txqlen=end.txqueuelen)
                    for m in link.bond_members(end.node):
                        ipr.link("set", index=self.idx(end.node, m), txqlen=end.txqueuelen)
                if end.offloads:
                    # Offload features: pyroute2's ethtool module cannot reach a namespace, so this
                    # is one of the few shell-outs (argv list, in the node's namespace).
                    args = [x for k, v in sorted(end.offloads.items()) for x in (k, "on" if v else "off")]
                    for ifname in [end.ifname, *link.bond_members(end.node)]:
                        runner.run(["ethtool", "-K", ifname, *args], netns=self.ns[end.node], timeout=10)


class _IndexKeeping:
    """A node's IPRoute, opened on first use, that empties the build's index cache when it
    removes a link."""

    def __init__(self, open_ipr: Callable[[], IPRoute], indexes: dict, dumped: set):
        self._open, self._handle, self._indexes, self._dumped = open_ipr, None, indexes, dumped

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
        return self._ipr.link(command, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._ipr, name)


def _info_data(link_msg):
    info = link_msg.get_attr("IFLA_LINKINFO")
    return info.get_attr("IFLA_INFO_DATA") if info is not None else None


def _root_qdiscs(ipr: IPRoute) -> dict[int, list]:
    """Every interface's root qdisc(s) in a namespace, by interface index (one dump)."""
    out: dict[int, list] = {}
    for x in ipr.get_qdiscs():
        if x["parent"] == 0xFFFFFFFF:
            out.setdefault(x["index"], []).append(x)
    return out


def _root_kind_matches(root_qdiscs: list, q) -> bool:
    want = None if q is None else (q.shaper if q.shaper in ("tbf", "htb") else "netem")
    roots = [x.get_attr("TCA_KIND") for x in root_qdiscs]
    have = roots[0] if roots and roots[0] in ("netem", "tbf", "htb") else None
    return have == want
