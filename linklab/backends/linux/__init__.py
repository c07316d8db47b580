"""The Linux backend: one network namespace per node, veth pairs, Linux bonds and bridges,
tc qdiscs, all through netlink (pyroute2).

Every object lives inside a namespace the lab owns; veth pairs are created directly inside
them, so nothing ever appears in the host's own namespace. `apply` reconciles: it compares the
live kernel with the resolved lab and changes only what differs, which is what lets a sweep
change an MTU, a bond mode or an impairment without rebuilding the lab.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute, netns
from pyroute2.netlink.exceptions import NetlinkError

from linklab import fsutil, procs, runner
from linklab.backends.base import Backend
from linklab.backends.linux import bond as bondopt
from linklab.backends.linux import daemons, kinds, ovsd
from linklab.backends.linux import sysctl
from linklab.backends.linux.names import Mark, current_home, hosts_dir, mark, netns_name, parse_mark
from linklab.errors import LinklabError, StateError
from linklab.linux import netlink, tc
from linklab.linux.ovs import parse_dump_flows
from linklab.model.resolved import Lab

BRIDGE = kinds.bridge.BRIDGE
LOOPBACK_IFINDEX = 1  # the kernel gives every namespace's loopback this index
LEARNED_FLOWS = "cookie=0x1/-1"  # the cookie the bundled controller apps put on what they learn
RESET_ATTEMPTS = 5
RESET_SETTLE_S = 0.3  # long enough for a packet-in already at the controller to come back as a flow
netns_pids = daemons.netns_pids


class LinuxBackend(Backend):
    name = "linux"

    # ---- checks -------------------------------------------------------------------------
    def problems(self, lab: Lab) -> list[str]:
        out = []
        for n in lab.nodes:
            for kind in kinds.kinds_of(n):
                out += kinds.module(kind).check(lab, n)
        out += sysctl.problems(lab)
        return out

    # ---- ownership ---------------------------------------------------------------------------
    def claim(self, lab: Lab, owned: dict[str, Any]) -> dict[str, Any]:
        """Refuse, before anything is recorded or changed, to build over namespaces that are not
        this lab's; returns `owned` with the namespaces apply is about to make or keep. Only what
        passed this check is ever listed in the state file, so `down` never removes a user's own
        namespace that happened to carry a lab's name."""
        lab_id = owned.get("id") or uuid.uuid4().hex[:8]
        want = [netns_name(lab.name, n.name) for n in lab.nodes]
        existing = set(netns.listnetns())
        listed = set(owned.get("namespaces", []))
        for ns in want:
            found = parse_mark(_read_mark(ns)) if ns in existing else None
            # Unmarked and already listed: this lab made it and was killed before marking it.
            if ns in existing and not (is_ours(found, Mark(lab.name, lab_id, current_home()))
                                       or (found is None and ns in listed)):
                raise StateError(f"namespace {ns} exists but is not this lab's (mark {_read_mark(ns)!r}); nothing was changed",
                                 hint="another lab, another checkout or a crashed run owns it: `linklab clean "
                                      "--dry-run` shows what linklab can prove abandoned; a namespace without a "
                                      "linklab mark is not linklab's to remove")
        return {**owned, "id": lab_id, "namespaces": sorted(set(owned.get("namespaces", [])) | set(want))}

    # ---- build / reconcile ---------------------------------------------------------------
    def apply(self, lab: Lab, owned: dict[str, Any], say=print) -> dict[str, Any]:
        owned = self.claim(lab, owned)
        lab_id = owned["id"]
        the_mark = mark(lab.name, lab_id)
        want_ns = {n.name: netns_name(lab.name, n.name) for n in lab.nodes}
        for ns in set(owned.get("namespaces", [])) - set(want_ns.values()):
            self._remove_if_ours(ns, Mark(lab.name, lab_id, current_home()))
        existing = set(netns.listnetns())
        made = set()
        for node, ns in want_ns.items():
            if ns in existing and netlink.is_placeholder(ns):
                netlink.remove_placeholder(ns)  # a kill between the file and its mount: claimed above
                existing.discard(ns)
            if ns not in existing:
                netlink.create(ns)
                # Marked at once: an unmarked namespace is only ever one `claim` just vouched for.
                _mark_loopback(ns, the_mark)
                made.add(ns)
        new = {"id": lab_id, "home": current_home(), "namespaces": list(want_ns.values()), "interfaces": [],
               "qdiscs": {}, "hosts_files": [], "sysctl_originals": {},
               "processes": []}
        with ExitStack() as stack:
            # A node's pyroute2 handle is opened when a step first needs it (~6 ms each under
            # emulation; a fresh lab without bonds or impairments needs none).
            ipr = {node: functools.partial(lambda ns: stack.enter_context(netlink.iproute(ns)), ns)
                   for node, ns in want_ns.items()}
            for node, ns in want_ns.items():
                if ns not in made:  # a namespace made above is marked and up already
                    _mark_loopback(ns, the_mark)
                # IPv6 duplicate address detection would delay every lab address by ~1-2 s.
                sysctl.set_in_netns(ns, {"net.ipv6.conf.all.accept_dad": "0",
                                         "net.ipv6.conf.default.accept_dad": "0"})
            b = _Build(lab, ipr, want_ns, the_mark, owned, new)
            b.interfaces()
            b.remove_stale()
            b.bonds()
            b.bridges()
            b.mtu_and_up()
            b.addresses()
            b.qdiscs()
            b.iface_settings()
            for node in self.lab_nodes_with("controller", lab):
                kinds.module("controller").configure(b, node)
            # Controllers no longer wanted (a switch lost its controller) are stopped.
            wanted = {(p["node"], p["pid"]) for p in new["processes"]}
            daemons.stop([p for p in owned.get("processes", []) if (p["node"], p["pid"]) not in wanted
                          and p["role"] == "controller"])
        new["sysctl_originals"] = sysctl.apply(lab, want_ns, owned.get("sysctl_originals", {}))
        new["hosts_files"] = _write_hosts(lab, want_ns, the_mark)
        return new

    @staticmethod
    def lab_nodes_with(kind: str, lab: Lab) -> list:
        return [n for n in lab.nodes if kind in kinds.kinds_of(n)]

    # ---- teardown ------------------------------------------------------------------------
    def destroy(self, lab_name: str, owned: dict[str, Any], say=print) -> list[str]:
        """Remove what `owned` lists and still carries this lab's mark (name, id and checkout);
        an unmarked listed namespace is one `claim` vouched for and a crash left unmarked."""
        removed = []
        me = Mark(lab_name, owned.get("id"), owned.get("home") or current_home())
        # Processes the lab started (controllers, then each switch's OVS), exactly those.
        for node in sorted({p["node"] for p in owned.get("processes", [])}):
            ns = netns_name(lab_name, node)
            for kind in ("controller", "ovs"):
                removed += kinds.module(kind).remove(lab_name, node, ns, owned)
        present = set(netns.listnetns())
        table = daemons.processes_by_netns()  # one walk of /proc for every namespace
        for ns in owned.get("namespaces", []):
            if ns in present:
                if not self._remove_if_ours(ns, me, say, table):
                    continue
                removed.append(f"netns {ns}")
        for d in owned.get("hosts_files", []):
            if _remove_hosts_dir(Path(d), lab_name):
                removed.append(f"hosts {d}")
        return removed

    def _remove_if_ours(self, ns: str, me: Mark, say=print, table: dict | None = None) -> bool:
        found = parse_mark(_read_mark(ns))
        if found is not None and not is_ours(found, me):
            say(f"  leaving {ns}: it belongs to {found.lab}/{found.id} of checkout {found.home}")
            return False
        _remove_netns(ns, table)
        return True

    def marked(self) -> dict[str, Mark]:
        """Every namespace carrying a linklab mark, with its mark."""
        out = {}
        for ns in netns.listnetns():
            found = parse_mark(_read_mark(ns))
            if found:
                out[ns] = found
        return out

    def orphans(self, lab_name: str | None, lab_id: str | None = None, home: str | None = None) -> list[str]:
        """Namespaces marked for this lab (any lab if None), of this id and checkout when given."""
        return sorted(ns for ns, m in self.marked().items()
                      if (lab_name is None or m.lab == lab_name) and (lab_id is None or m.id == lab_id)
                      and (home is None or m.home == home))

    def remove_orphans(self, names: list[str], say=print) -> list[str]:
        removed = []
        for ns in names:
            found = parse_mark(_read_mark(ns))
            _remove_netns(ns)
            removed.append(f"netns {ns}")
            if found and _remove_hosts_dir(Path(hosts_dir(ns)), found[0]):
                removed.append(f"hosts {hosts_dir(ns)}")
        return removed

    # ---- read back -----------------------------------------------------------------------
    def inspect(self, lab: Lab) -> dict[str, Any]:
        from linklab.backends.linux.inspect import inspect_lab
        return inspect_lab(lab)

    def exec_argv(self, lab: Lab, node: str, argv: list[str]) -> list[str]:
        lab.node(node)  # KeyError for unknown nodes; the CLI turns it into a usage error
        return runner.netns_argv(argv, netns_name(lab.name, node))

    def node_netns(self, lab: Lab, node: str) -> str:
        return netns_name(lab.name, node)

    def node_pids(self, lab: Lab, node: str) -> list[int]:
        return netns_pids(netns_name(lab.name, node))

    def read_sysctls(self, lab: Lab, node: str, keys: list[str]) -> dict[str, str | None]:
        return sysctl.read(netns_name(lab.name, node), keys)

    def switch_tool_argv(self, lab: Lab, node: str, argv: list[str]) -> list[str]:
        n = lab.node(node)
        if n.switch_kind != "ovs":
            raise LinklabError(f"{node} is not an Open vSwitch switch (kind {n.switch_kind or n.kind})")
        tool, args = _ovs_tool(argv, node)
        d = ovsd.OvsDirs(ns=netns_name(lab.name, node), lab=lab.name, node=node)
        return runner.netns_argv(d.argv(tool, *args), d.ns)

    def switch_counters(self, lab: Lab) -> dict[str, Any]:
        out: dict[str, Any] = {"switches": {}}
        for n in self.lab_nodes_with("ovs", lab):
            out["switches"][n.name] = kinds.ovs.inspect(lab, n, netns_name(lab.name, n.name))
        if out["switches"]:
            from linklab.linux.ovs import over_mtu_lines
            res = runner.run(["dmesg"], check=False, timeout=10)
            out["kernel_over_mtu_lines"] = len(over_mtu_lines(res.stdout)) if res.ok else None
        return out

    def set_member_state(self, lab: Lab, link: str, member: int, up: bool) -> str:
        from linklab.backends.linux import faults
        return faults.set_member_state(lab, link, member, up)

    def set_active_member(self, lab: Lab, link: str, member: int) -> str:
        from linklab.backends.linux import faults
        return faults.set_active_member(lab, link, member)

    def change_impairments(self, old: Lab, new: Lab) -> list[str]:
        from linklab.backends.linux import faults
        return faults.change_impairments(old, new)

    def reset_forwarding(self, lab: Lab) -> None:
        """Forget what switches and hosts learned (flows an app installed with the learned
        cookie, neighbour caches), so the next packet crosses the controller again.

        A TCP run that collapsed (hosts' MTU above the switch ports') leaves orphaned connections
        retransmitting their FIN for minutes; their packets re-learned everything between the
        reset and the measurement (measured: the next repetition saw 0 packet-ins). They are
        aborted first, and the reset repeats until no learned flow comes back (a packet-in the
        controller was still handling when the flows went installs its flow afterwards)."""
        ovs_nodes = self.lab_nodes_with("controller", lab)
        if not ovs_nodes:
            return
        hosts = [netns_name(lab.name, n.name) for n in lab.nodes if n.kind == "host"]
        for ns in hosts:
            # ss -K (sock_diag SOCK_DESTROY): pyroute2 can list sockets but not destroy them.
            # Only connections already closing: a user's own sessions and listeners stay.
            runner.run(["ss", "-K", "-t", "state", "fin-wait-1", "state", "last-ack", "state", "closing"],
                       netns=ns, check=False, timeout=10)
        dirs = [ovsd.OvsDirs(ns=netns_name(lab.name, n.name), lab=lab.name, node=n.name) for n in ovs_nodes]
        for _ in range(RESET_ATTEMPTS):
            for d in dirs:
                ovsd.ofctl(d, "del-flows", d.node, LEARNED_FLOWS, check=False)
            for ns in hosts:
                runner.run(["ip", "neigh", "flush", "all"], netns=ns, check=False, timeout=10)
            time.sleep(RESET_SETTLE_S)
            if not any(_learned_flows(d) for d in dirs):
                return


def _learned_flows(d: ovsd.OvsDirs) -> int:
    res = ovsd.ofctl(d, "dump-flows", d.node, LEARNED_FLOWS, check=False)
    return len(parse_dump_flows(res.stdout)) if res.ok else 0


OFCTL_BRIDGE_COMMANDS = ("show", "dump-flows", "dump-ports", "dump-ports-desc", "dump-tables", "dump-groups",
                         "dump-group-stats", "add-flow", "del-flows", "mod-flows", "add-group", "dump-meters")


def _ovs_tool(argv: list[str], bridge: str) -> tuple[str, list[str]]:
    """`linklab ovs s1 -- dump-flows` -> ovs-ofctl -O OpenFlow13 dump-flows s1; `vsctl ...`,
    `ofctl ...`, `appctl ...`, `dpctl ...` reach the other tools as they are."""
    if not argv:
        raise LinklabError("no OVS command given", hint="e.g. linklab ovs s1 -- dump-flows  |  vsctl show  |  appctl dpctl/show")
    head, rest = argv[0], list(argv[1:])
    if head in ("vsctl", "appctl", "dpctl"):
        return f"ovs-{head}", rest
    if head == "ofctl":
        return "ovs-ofctl", ["-O", "OpenFlow13", *rest]
    if head.startswith("ovs-"):
        return head, rest
    if head in OFCTL_BRIDGE_COMMANDS:
        return "ovs-ofctl", ["-O", "OpenFlow13", head, bridge, *rest]
    raise LinklabError(f"unknown OVS command {head!r}",
                       hint="valid: vsctl ARGS, ofctl ARGS, appctl ARGS, dpctl ARGS, or an ovs-ofctl bridge command "
                            f"({', '.join(OFCTL_BRIDGE_COMMANDS)})")


def is_ours(found: Mark | None, me: Mark) -> bool:
    """A mark is this lab's when name, id and checkout match; a mark from before checkouts were
    recorded (home None) is ours when name and id match (the id came from our own state file)."""
    return found is not None and found.lab == me.lab and found.id == me.id and found.home in (None, me.home)


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


def _mark_loopback(ns: str, the_mark: str) -> None:
    """The lab's mark on the namespace's loopback (ifindex 1 in every namespace:
    LOOPBACK_IFINDEX), which is brought up too."""
    batch = netlink.Batch(ns)
    batch.set("lo", alias=the_mark, up=True)
    batch.send()


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


def _read_mark(ns: str) -> str | None:
    # netlink.read_alias opens existing namespaces only: pyroute2's own IPRoute(netns=) would
    # silently create an empty one if it vanished since it was listed (a concurrent `down`),
    # leaving an unmarked namespace nobody owns.
    try:
        return netlink.read_alias(ns, LOOPBACK_IFINDEX)
    except OSError:
        return None


def _remove_netns(ns: str, table: dict | None = None) -> None:
    """Stop every process inside (iperf3 servers, controllers, a switch's OVS), then delete the
    namespace and the OVS database/sockets directory named after it."""
    procs.stop(netns_pids(ns, table))
    try:
        netns.remove(ns)
    except FileNotFoundError:
        pass
    ovsd.remove_rundir(ns)


def _hosts_text(lab: Lab, node: str, the_mark: str) -> str:
    lines = [f"# {the_mark}: written by linklab, removed by `linklab down`",
             "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback", f"127.0.1.1\t{node}"]
    lines += [f"{addr}\t{name}" for addr, name in lab.node(node).hosts]
    return "\n".join(lines) + "\n"


def _write_hosts(lab: Lab, want_ns: dict[str, str], the_mark: str) -> list[str]:
    written = []
    for node, ns in want_ns.items():
        if lab.node(node).kind != "host":
            continue
        d = Path(hosts_dir(ns))
        d.mkdir(parents=True, exist_ok=True)
        fsutil.write_atomic(d / "hosts", _hosts_text(lab, node, the_mark))
        written.append(str(d))
    return written


def _our_tmp(name: str) -> bool:
    """A temp file linklab's atomic writer leaves beside a hosts file it was writing."""
    return name == ".hosts.tmp" or fsutil.is_tmp_name(name)


def _remove_hosts_dir(d: Path, lab_name: str) -> bool:
    hosts = d / "hosts"
    if not hosts.exists() and d.is_dir():
        # A `down` killed between removing the hosts file and its directory: what is left is an
        # empty directory (or our temp files), nothing of anyone's to lose.
        rest = [x for x in d.iterdir() if not _our_tmp(x.name)]
        if rest:
            return False
        for leftover in d.iterdir():
            leftover.unlink()
        d.rmdir()
        return True
    try:
        first = hosts.read_text().splitlines()[0]
    except (OSError, IndexError):
        return False
    found = parse_mark(first.lstrip("# ").split(" ")[0].rstrip(":"))
    if not found or found[0] != lab_name:
        return False
    hosts.unlink()
    for leftover in d.iterdir():
        if _our_tmp(leftover.name):
            leftover.unlink()
    try:
        d.rmdir()
    except OSError:
        pass
    return True
