"""The Linux backend: one network namespace per node, veth pairs, Linux bonds and bridges,
tc qdiscs, all through netlink (pyroute2).

Every object lives inside a namespace the lab owns; veth pairs are created directly inside
them, so nothing ever appears in the host's own namespace. `apply` reconciles: it compares the
live kernel with the resolved lab and changes only what differs, which is what lets a sweep
change an MTU, a bond mode or an impairment without rebuilding the lab.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pyroute2 import netns

from linklab import runner
from linklab.backends.base import Backend, NodeCommandsFailed
from linklab.backends.linux import build, daemons, hostsfile, kinds, needs, node_exec, services, sysctl
from linklab.backends.linux.kinds import controller, ovs
from linklab.backends.linux.names import Mark, current_home, hosts_dir, mark, netns_name, node_of, parse_mark
from linklab.backends.linux.ownership import is_ours, read_mark, remove_netns
from linklab.errors import StateError
from linklab.linux import netlink
from linklab.model.resolved import Lab


class LinuxBackend(Backend):
    name = "linux"

    # ---- checks -------------------------------------------------------------------------
    def problems(self, lab: Lab) -> list[str]:
        out = []
        for n in lab.nodes:
            for kind in kinds.of(n):
                out += kind.check(lab, n)
        out += sysctl.problems(lab)
        return out

    def kernel_needs(self, lab: Lab) -> dict[str, str]:
        return needs.kernel_needs(lab)

    def machine_wide(self, labs: list[Lab]) -> dict[str, str]:
        return sysctl.machine_wide(labs)

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
            found = parse_mark(read_mark(ns)) if ns in existing else None
            # Unmarked and already listed: this lab made it and was killed before marking it.
            if ns in existing and not (is_ours(found, Mark(lab.name, lab_id, current_home()))
                                       or (found is None and ns in listed)):
                raise StateError(f"namespace {ns} exists but is not this lab's (mark {read_mark(ns)!r}); nothing was changed",
                                 hint="another lab, another checkout or a crashed run owns it: `linklab clean "
                                      "--dry-run` shows what linklab can prove abandoned; a namespace without a "
                                      "linklab mark is not linklab's to remove")
        owned = {**owned, "id": lab_id, "namespaces": sorted(set(owned.get("namespaces", [])) | set(want))}
        me = Mark(lab.name, lab_id, current_home())
        for kind in kinds.REGISTRY.values():  # what a kind makes beside namespaces (containers)
            owned = kind.claim(lab, [n for n in lab.nodes if kinds.of(n)[0] is kind], owned, me)
        return owned

    # ---- build / reconcile ---------------------------------------------------------------
    def apply(self, lab: Lab, owned: dict[str, Any], say=print, restart: Collection[tuple[str, str]] = ()) -> dict[str, Any]:
        owned = self.claim(lab, owned)
        want_ns = {n.name: netns_name(lab.name, n.name) for n in lab.nodes}
        for ns in set(owned.get("namespaces", [])) - set(want_ns.values()):
            self._remove_if_ours(ns, Mark(lab.name, owned["id"], current_home()))
        new = {"id": owned["id"], "home": current_home(), "namespaces": list(want_ns.values()), "interfaces": [],
               "qdiscs": {}, "hosts_files": [], "sysctl_originals": {}, "processes": [], "addresses": []}
        with ExitStack() as stack:
            # A node's pyroute2 handle is opened when a step first needs it (~6 ms each under
            # emulation; a fresh lab without bonds or impairments needs none).
            ipr = {node: functools.partial(lambda ns: stack.enter_context(netlink.iproute(ns)), ns)
                   for node, ns in want_ns.items()}
            b = build.Build(lab, ipr, want_ns, mark(lab.name, owned["id"]),
                            kinds={n.name: kinds.of(n) for n in lab.nodes}, previous=owned, owned=new,
                            present=netns.listnetns(), say=say, registry=kinds.REGISTRY.values())
            build.run(b)
        new["sysctl_originals"] = sysctl.apply(lab, want_ns, owned.get("sysctl_originals", {}))
        self._run_exec(lab, new, b.fresh, owned, say, set(restart))
        return new

    def _run_exec(self, lab: Lab, new: dict[str, Any], fresh: set[str], owned: dict[str, Any], say,
                  restart: set[tuple[str, str]]) -> None:
        """The nodes' `exec:` commands still to run, last: the lab is built around them."""
        def env_of(node: str) -> dict[str, str]:
            n = lab.node(node)
            return {k: v for kind in kinds.of(n) for k, v in kind.exec_env(lab, n, netns_name(lab.name, node)).items()}

        new["exec"], failures, running = node_exec.run(
            lab, lambda node: self.node_netns(lab, node), env_of, fresh, owned.get("exec", {}), say,
            processes=owned.get("processes", []), restart=restart)
        new["processes"] = [*new["processes"], *running]
        if failures:
            raise NodeCommandsFailed(
                "\n".join(f.text() for f in failures), new,
                hint="the lab is built and the commands before it ran; fix the command and run `linklab up` "
                     "again (what ran is not run again), or `linklab down`")

    # ---- teardown ------------------------------------------------------------------------
    def destroy(self, lab_name: str, owned: dict[str, Any], say=print) -> list[str]:
        """Remove what `owned` lists and still carries this lab's mark (name, id and checkout);
        an unmarked listed namespace is one `claim` vouched for and a crash left unmarked."""
        removed = []
        me = Mark(lab_name, owned.get("id"), owned.get("home") or current_home())
        # What nodes own beyond their namespaces (processes the lab started, exactly those):
        # each kind removes its own, in reverse order of the registry (a controller before the
        # switch's OVS it runs beside). The model is not needed: a kind finds its own in `owned`.
        nodes = {p["node"] for p in owned.get("processes", [])}
        nodes |= {n for n in (node_of(lab_name, ns) for ns in owned.get("namespaces", [])) if n}
        # Services first: they run in the nodes the kinds then take apart.
        removed += services.stop(services.records(owned.get("processes", [])))
        for kind in reversed(kinds.REGISTRY.values()):
            removed += kind.remove_all(lab_name, sorted(nodes), owned, lambda node: netns_name(lab_name, node))
        present = set(netns.listnetns())
        table = daemons.processes_by_netns()  # one walk of /proc for every namespace
        for ns in owned.get("namespaces", []):
            if ns in present:
                if not self._remove_if_ours(ns, me, say, table):
                    continue
                removed.append(f"netns {ns}")
        # The hosts files listed, and those of every namespace the lab owned or its nodes are
        # named by: a kill between writing one and saving the state leaves it listed nowhere.
        dirs = dict.fromkeys([*owned.get("hosts_files", []), *(hosts_dir(ns) for ns in owned.get("namespaces", [])),
                              *(hosts_dir(netns_name(lab_name, node)) for node in sorted(nodes))])
        for d in dirs:
            if hostsfile.remove_dir(Path(d), lab_name):
                removed.append(f"hosts {d}")
        return removed

    def _remove_if_ours(self, ns: str, me: Mark, say=print, table: dict | None = None) -> bool:
        found = parse_mark(read_mark(ns))
        if found is not None and not is_ours(found, me):
            say(f"  leaving {ns}: it belongs to {found.lab}/{found.id} of checkout {found.home}")
            return False
        remove_netns(ns, table)
        return True

    def marked(self) -> dict[str, Mark]:
        """Every namespace carrying a linklab mark, with its mark, and what kinds make beside
        namespaces that carries one ("container ll-lab-r1": its kind's name first)."""
        out = {}
        for kind in kinds.REGISTRY.values():
            out.update(kind.marked())
        for ns in netns.listnetns():
            found = parse_mark(read_mark(ns))
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
        for kind in kinds.REGISTRY.values():  # a kind's objects first: a container before its namespace
            removed += kind.remove_marked([n for n in names if n.startswith(f"{kind.name} ")])
        for name in names:
            if " " in name:
                # "container ll-lab-c1": its kind removed it above; the hosts file its node was
                # given is named after the same namespace and carries the same lab's mark (a kill
                # between writing it and saving the state leaves it listed nowhere else).
                ns = name.split(" ", 1)[1]
                found = hostsfile.mark_of(Path(hosts_dir(ns)))
            else:
                ns = name
                found = parse_mark(read_mark(ns))
                remove_netns(ns)
                removed.append(f"netns {ns}")
            if found and hostsfile.remove_dir(Path(hosts_dir(ns)), found[0]):
                removed.append(f"hosts {hosts_dir(ns)}")
        return removed

    def release_idle(self) -> list[str]:
        return [x for kind in kinds.REGISTRY.values() for x in kind.release_idle()]

    # ---- read back -----------------------------------------------------------------------
    def inspect(self, lab: Lab) -> dict[str, Any]:
        from linklab.backends.linux.inspect import inspect_lab
        return inspect_lab(lab)

    def interfaces(self, lab: Lab, nodes: Collection[str]) -> dict[str, list[dict[str, Any]]]:
        from linklab.backends.linux.inspect import interfaces_of
        return interfaces_of(lab, nodes)

    def exec_argv(self, lab: Lab, node: str, argv: list[str]) -> list[str]:
        return runner.netns_argv(argv, self.node_netns(lab, node))  # KeyError for unknown nodes: a usage error

    def node_netns(self, lab: Lab, node: str) -> str:
        n = lab.node(node)
        return kinds.of(n)[0].where(lab, n, netns_name(lab.name, node))

    def services(self, lab: Lab, owned: dict[str, Any]) -> list[dict[str, Any]]:
        return services.status(lab, owned.get("processes", []), lambda node: self.node_netns(lab, node))

    def node_pids(self, lab: Lab, node: str) -> list[int]:
        return daemons.netns_pids(netns_name(lab.name, node))

    def routes(self, lab: Lab, node: str) -> list[dict[str, Any]]:
        from linklab.backends.linux.inspect import routes_of
        ns = netns_name(lab.name, node)
        return routes_of(ns) if ns in netns.listnetns() else []

    def read_sysctls(self, lab: Lab, node: str, keys: list[str]) -> dict[str, str | None]:
        return sysctl.read(netns_name(lab.name, node), keys)

    def switch_tool_argv(self, lab: Lab, node: str, argv: list[str]) -> list[str]:
        return ovs.tool_argv(lab, node, argv, netns_name(lab.name, node))

    def switch_counters(self, lab: Lab) -> dict[str, Any]:
        from linklab.linux.ovs import over_mtu_lines
        reads = [(n.name, kind) for n in lab.nodes if n.kind == "switch" for kind in kinds.of(n)]
        if not reads:
            return {"switches": {}}
        # Every switch's snapshot and the kernel log side by side: each is a few tool processes,
        # which in the lab VM mostly wait on the emulator (a sweep takes two snapshots a repetition).
        with ThreadPoolExecutor(max_workers=len(reads) + 1) as pool:
            log = pool.submit(runner.run, ["dmesg"], check=False, timeout=10)
            got = list(pool.map(lambda r: r[1].inspect(lab, lab.node(r[0]), netns_name(lab.name, r[0])), reads))
        out: dict[str, Any] = {"switches": {name: g for (name, _), g in zip(reads, got) if g}}
        if out["switches"]:
            res = log.result()
            out["kernel_over_mtu_lines"] = len(over_mtu_lines(res.stdout)) if res.ok else None
        return out

    def set_member_state(self, lab: Lab, link: str, member: int, up: bool) -> str:
        from linklab.backends.linux import faults
        return faults.set_member_state(lab, link, member, up)

    def set_link_state(self, lab: Lab, link: str, up: bool) -> str:
        from linklab.backends.linux import faults
        return faults.set_link_state(lab, link, up)

    def set_active_member(self, lab: Lab, link: str, member: int) -> str:
        from linklab.backends.linux import faults
        return faults.set_active_member(lab, link, member)

    def change_impairments(self, old: Lab, new: Lab) -> list[str]:
        from linklab.backends.linux import faults
        return faults.change_impairments(old, new)

    def reset_forwarding(self, lab: Lab) -> None:
        controller.reset_forwarding(lab)
