"""A container node: a Docker container (its own root filesystem from an image) whose network
namespace is named like a host's (`ip netns attach`), so every later build step (veth pairs,
bonds, MTUs, queues, addresses, sysctls) joins it to the lab exactly as it does a host.

The container has no Docker network (NetworkMode none: only its loopback), carries Docker labels
naming the lab, its id and checkout (what `down` and `clean` go by, also after a crash), and is
named like the node's namespace (ll-<lab>-<node>). Its commands (`exec`, `cli`, a sweep's
iperf3 and ping) run inside it, with the image's programs (runner: "ns@pid").
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable

from pyroute2.netlink.exceptions import NetlinkError

from linklab import runner
from linklab.backends.linux import hostsfile, sysctl
from linklab.backends.linux.kinds.base import Build
from linklab.backends.linux.kinds.host import Host
from linklab.backends.linux.names import Mark, current_home
from linklab.backends.linux.ownership import is_ours, mark_loopback, remove_netns
from linklab.docker import engine, images
from linklab.docker.api import Api
from linklab.errors import LinklabError, StateError
from linklab.linux import netlink
from linklab.model.resolved import Lab, Node

LAB, ID, HOME, NODE, SPEC = "linklab.lab", "linklab.id", "linklab.home", "linklab.node", "linklab.spec"
# Containers started side by side: dockerd handles them concurrently (each start is ~1 s of
# runc and mounts under emulation); more threads than this only queue inside dockerd.
PARALLEL = 4
# How long Docker may take to notice that a container's first process exited (under emulation
# the namespace can be gone before Docker says so).
EXIT_NOTICE_S = 10.0


def labels(lab_name: str, lab_id: str, home: str, node: Node) -> dict[str, str]:
    return {LAB: lab_name, ID: lab_id, HOME: home, NODE: node.name, SPEC: spec_hash(node)}


def spec_hash(node: Node) -> str:
    """What the container runs, hashed: a node whose image, cmd, env or binds changed gets a new one."""
    text = json.dumps(node.container.model_dump(mode="json"), sort_keys=True) if node.container else ""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def config(lab_name: str, lab_id: str, home: str, node: Node) -> dict[str, Any]:
    """The Engine API's container config for `node` (POST /containers/create)."""
    c = node.container
    assert c is not None
    out: dict[str, Any] = {
        "Image": c.image, "Hostname": node.name, "Env": [f"{k}={v}" for k, v in sorted(c.env.items())],
        "Labels": labels(lab_name, lab_id, home, node),
        "HostConfig": {"NetworkMode": "none", "Binds": list(c.binds),
                       # A routing daemon or a user's tool configures its own interfaces.
                       "CapAdd": ["NET_ADMIN", "NET_RAW"], "LogConfig": {"Type": "json-file"},
                       # Docker's own AppArmor profile needs apparmor_parser, which the lab VM
                       # lacks (its kernel has AppArmor on); a lab node is as confined as a host.
                       "SecurityOpt": ["apparmor=unconfined"]},
    }
    if c.cmd:
        out["Cmd"] = list(c.cmd)
    return out


def bind_problems(node: Node) -> list[str]:
    """Binds whose host path does not exist where the lab runs: Docker would make an empty
    directory there (a missing config file would become a directory), so they are refused, as
    containerlab refuses them."""
    out = []
    for bind in node.container.binds if node.container else []:
        host = bind.split(":", 1)[0]
        if not os.path.lexists(host):
            out.append(f"hosts.{node.name}.binds: {host} does not exist (bind {bind}; a relative path is from the "
                       "topology file's directory)")
    return out


def mark_of(labels_: dict[str, str] | None) -> Mark | None:
    labels_ = labels_ or {}
    if labels_.get(LAB) and labels_.get(ID):
        return Mark(labels_[LAB], labels_[ID], labels_.get(HOME) or None)
    return None


def started_problem(name: str, info: dict[str, Any] | None, logs: str) -> str | None:
    """Why a container just started is not running (None: it runs), with its last log lines."""
    state = (info or {}).get("State") or {}
    if state.get("Running") and state.get("Pid"):
        return None
    why = f"container {name} exited at once (exit code {state.get('ExitCode')}"
    why += f", {state['Error']})" if state.get("Error") else ")"
    return why + (":\n" + logs.rstrip() if logs.strip() else " and printed nothing")


class Container(Host):
    """A host in a container: addresses, sysctls and names like a host (Host.configure), in the
    container's own namespace, with the lab's names written into the container's /etc/hosts."""

    name = "container"

    def check(self, lab: Lab, node: Node) -> list[str]:
        missing = bind_problems(node)
        if missing:
            return missing
        # No Docker, or an image that is nowhere: EnvironmentProblem (exit 4) before anything is made.
        images.ensure(engine.connect(), node.container.image)
        return []

    def claim(self, lab: Lab, nodes: list[Node], owned: dict[str, Any], me: Mark) -> dict[str, Any]:
        listed = set(owned.get("containers", []))
        if not nodes and not listed:
            return owned
        api = engine.connect() if nodes else engine.running()
        for n in nodes:
            name = _name(lab.name, n.name)
            found = api.inspect(name)
            if found is not None and not is_ours(mark_of(found["Config"].get("Labels")), me):
                raise StateError(f"a Docker container named {name} exists in linklab's engine but is not this lab's "
                                 f"(labels {found['Config'].get('Labels')}); nothing was changed",
                                 hint="`linklab clean --dry-run` shows what linklab can prove abandoned")
        return {**owned, "containers": sorted(listed | {_name(lab.name, n.name) for n in nodes})}

    def create_all(self, b: Build, nodes: list[Node]) -> None:
        wanted = {b.ns[n.name] for n in nodes}
        # Containers of nodes that are no longer containers (or gone) go first; a node that became
        # a host keeps the namespace (the bind mount holds it) with its interfaces.
        stale = [x for x in b.previous.get("containers", []) if x not in wanted]
        if not (nodes or stale):
            return
        me = Mark(b.lab.name, b.owned["id"], current_home())
        api = engine.connect(b.say) if nodes else engine.running()
        if api is not None:
            _remove_ours(api, stale, me)
        b.owned["containers"] = sorted(wanted)
        if not nodes:
            return
        todo = [n for n in nodes if not _keep(api, b.ns[n.name], n, me)]
        b.fresh.update(n.name for n in todo)  # a container made anew: its namespace is new
        for n in todo:
            api.create(b.ns[n.name], config(b.lab.name, b.owned["id"], current_home(), n))
        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            list(pool.map(api.start, [b.ns[n.name] for n in todo]))
        for n in nodes:
            pid = _running(api, b.ns[n.name], n)
            try:
                _join(b, b.ns[n.name], pid)
            except OSError as e:  # it exited meanwhile (Docker may not know yet): its logs say why
                netlink.remove_placeholder(b.ns[n.name])
                deadline = time.monotonic() + EXIT_NOTICE_S
                while time.monotonic() < deadline and ((api.inspect(b.ns[n.name]) or {}).get("State") or {}).get("Running"):
                    time.sleep(0.2)
                _running(api, b.ns[n.name], n)
                raise LinklabError(f"node {n.name}: container {b.ns[n.name]}'s namespace could not be joined: {e}") from None

    def configure(self, b: Build, node: Node) -> None:
        # Still running after its links were built: a command that exits at once has by now.
        pid = _running(engine.connect(b.say), b.ns[node.name], node)
        super().configure(b, node)
        # Docker bind-mounts a file of its own over the container's /etc/hosts: written in place
        # (a rename cannot replace a mount point), so not through fsutil's atomic writer.
        with open(f"/proc/{pid}/root/etc/hosts", "w") as f:
            f.write(hostsfile.text(b.lab, node.name, b.mark))

    def where(self, lab: Lab, node: Node, ns: str) -> str:
        api = engine.running()
        info = api.inspect(ns) if api else None
        state = (info or {}).get("State") or {}
        return runner.container_where(ns, state["Pid"]) if state.get("Running") and state.get("Pid") else ns

    def inspect(self, lab: Lab, node: Node, ns: str) -> dict[str, Any]:
        api = engine.running()
        info = api.inspect(ns) if api else None
        if info is None:
            return {"image": node.container.image, "id": None, "state": "missing"}
        return {"image": info["Config"]["Image"], "id": info["Id"][:12], "state": info["State"]["Status"],
                "pid": info["State"].get("Pid")}

    def remove(self, lab_name: str, node: str, ns: str, owned: dict[str, Any]) -> list[str]:
        return self.remove_all(lab_name, [node], owned, lambda _: ns)

    def remove_all(self, lab_name: str, nodes: Iterable[str], owned: dict[str, Any], ns_of) -> list[str]:
        listed = set(owned.get("containers", []))
        names = [ns_of(n) for n in nodes if ns_of(n) in listed]
        api = engine.running() if names else None
        if api is None:
            return []
        return _remove_ours(api, names, Mark(lab_name, owned.get("id"), owned.get("home") or current_home()))

    def marked(self) -> dict[str, Mark]:
        api = engine.running()
        if api is None:
            return {}
        out = {}
        for c in api.containers({ID: None}):
            m = mark_of(c.get("Labels"))
            if m and c.get("Names"):
                out[f"{self.name} {c['Names'][0].lstrip('/')}"] = m
        return out

    def remove_marked(self, names: list[str]) -> list[str]:
        api = engine.running() if names else None
        if api is None:
            return []
        gone = _parallel(api.remove, [n.split(" ", 1)[1] for n in names])
        return [f"container {x}" for x, ok in gone if ok]


    def release_idle(self) -> list[str]:
        api = engine.running()
        if api is None or api.containers({}):
            return []
        return ["linklab's Docker engine (no container left)"] if engine.stop(release_storage=True) else []


def _name(lab: str, node: str) -> str:
    from linklab.backends.linux.names import netns_name
    return netns_name(lab, node)


def _running(api: Api, name: str, node: Node) -> int:
    """The pid of the container's first process; LinklabError with its logs if it is not running."""
    info = api.inspect(name)
    problem = started_problem(name, info, api.logs(name) if info else "")
    if problem:
        raise LinklabError(problem, hint=f"node {node.name}: image {node.container.image}; a node's command must keep "
                                         "running (images `make images` builds run sleep infinity)")
    return info["State"]["Pid"]


def _keep(api: Api, name: str, node: Node, me: Mark) -> bool:
    """Whether the container there is ours, running and running what the node asks for; if not,
    it is removed (claim already refused one that is not ours)."""
    info = api.inspect(name)
    if info is None:
        return False
    lbl = info["Config"].get("Labels") or {}
    if is_ours(mark_of(lbl), me) and lbl.get(SPEC) == spec_hash(node) and info["State"].get("Running"):
        return True
    api.remove(name)
    return False


def _join(b: Build, ns: str, pid: int) -> None:
    """The container's network namespace under the node's namespace name, marked as the lab's.
    Whatever had that name before (the namespace of a container now replaced, or of the host
    this node was) is ours (claimed) and goes, with whatever still runs in it."""
    if ns in b.present and not netlink.same_namespace(ns, pid):
        _delete_links(ns)
        remove_netns(ns)
        b.present.discard(ns)
    if ns not in b.present:
        netlink.attach(ns, pid)
        b.present.add(ns)
    mark_loopback(ns, b.mark)
    # Docker turns IPv6 off in a container with no Docker network (the kernel then refuses
    # IPv6 addresses: EACCES); the lab decides per link, as on a host.
    sysctl.set_in_netns(ns, {"net.ipv6.conf.all.disable_ipv6": "0", "net.ipv6.conf.default.disable_ipv6": "0",
                             "net.ipv6.conf.lo.disable_ipv6": "0"})


def _delete_links(ns: str) -> None:
    """Delete a namespace's interfaces now: the kernel removes a dropped namespace's (and their
    veth peers in other nodes) later, from a work queue, and the build about to make those
    links again must not find the old peers half gone."""
    with netlink.iproute(ns) as ipr:
        for x in ipr.get_links():
            if x["index"] != 1:  # not the loopback
                try:
                    ipr.link("del", index=x["index"])
                except NetlinkError:  # gone with a link deleted before it (a bond's member)
                    pass


def _remove_ours(api: Api, names: list[str], me: Mark) -> list[str]:
    mine = [n for n in names if (info := api.inspect(n)) is not None and is_ours(mark_of(info["Config"].get("Labels")), me)]
    return [f"container {x}" for x, ok in _parallel(api.remove, mine) if ok]


def _parallel(fn, names: list[str]) -> list[tuple[str, Any]]:
    if not names:
        return []
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        return list(zip(names, pool.map(fn, names)))
