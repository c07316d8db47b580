"""The Linux backend: one network namespace per node, veth pairs, Linux bonds and bridges,
tc qdiscs, all through netlink (pyroute2).

Every object lives inside a namespace the lab owns; veth pairs are created directly inside
them, so nothing ever appears in the host's own namespace. `apply` reconciles: it compares the
live kernel with the resolved lab and changes only what differs, which is what lets a sweep
change an MTU, a bond mode or an impairment without rebuilding the lab.
"""

from __future__ import annotations

import functools
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pyroute2 import netns

from linklab import runner
from linklab.backends.base import Backend
from linklab.backends.linux import daemons, kinds, ovsd
from linklab.backends.linux import sysctl
from linklab.backends.linux.build import _Build
from linklab.backends.linux.hostsfile import _remove_hosts_dir, _write_hosts
from linklab.backends.linux.names import Mark, current_home, hosts_dir, mark, netns_name, parse_mark
from linklab.backends.linux.ownership import _mark_loopback, _read_mark, _remove_netns, is_ours
from linklab.errors import LinklabError, StateError
from linklab.linux import netlink
from linklab.linux.ovs import parse_dump_flows
from linklab.model.resolved import Lab

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
