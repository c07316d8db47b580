"""An os-ken OpenFlow controller beside an OVS switch, in the switch's namespace, listening
on 127.0.0.1:<port>. Started with the lab, logs kept with the lab, ready when the switch
reports itself connected (never a fixed sleep: under software emulation os-ken takes ~20 s
to import and listen, the switch ~4 s more to connect)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from linklab import controllers, osken_warm, procs, runner
from linklab.backends.linux import daemons, ovsd
from linklab.backends.linux.kinds.base import Build, Kind
from linklab.backends.linux.names import netns_name
from linklab.errors import LinklabError
from linklab.linux import netlink, sockets
from linklab.linux.ovs import controller_connected, controller_connected_args, parse_dump_flows
from linklab.model.resolved import Lab, Node

# A controller's imports take seconds in a quiet lab VM, minutes in a loaded one
# (bench/README.md#start-up-times). One still importing when this passes is adopted by the next
# `up`, not restarted.
LISTEN_DEADLINE_S = 900.0
CONNECT_DEADLINE_S = 60.0
LEARNED_FLOWS = "cookie=0x1/-1"  # the cookie the bundled controller apps put on what they learn
RESET_ATTEMPTS = 5
RESET_SETTLE_S = 0.3  # long enough for a packet-in already at the controller to come back as a flow


def argv(app: str, port: int, layout: dict[str, Any], dpid: int) -> list[str]:
    """The app learns the switch's port layout from the environment (see controllers/_grouped.py)."""
    return ["env", *controllers.app_env(layout, dpid), *controllers.manager_argv(controllers.app_path(app), port)]


def start(app: str, port: int, layout: dict[str, Any], dpid: int, ns: str, log: Path) -> int:
    """Fork it from the warm os-ken where one runs (the lab VM: ~5 s instead of ~28 s of
    imports under emulation), else start osken-manager; returns its pid."""
    with open(log, "ab") as f:
        env = {**os.environ, **dict(w.split("=", 1) for w in controllers.app_env(layout, dpid))}
        pid = osken_warm.start(controllers.manager_argv(controllers.app_path(app), port)[1:], env, ns, f.fileno())
        if pid is None:
            pid = runner.start(argv(app, port, layout, dpid), netns=ns, stdout=f, stderr=f).pid
    return pid


def _runs(pid: int, app: str, port: int) -> bool:
    args = procs.cmdline(pid)
    return str(controllers.app_path(app)) in args and str(port) in args


def connected(d: ovsd.OvsDirs, bridge: str) -> bool:
    res = ovsd.vsctl(d, *controller_connected_args(bridge), check=False)
    return res.ok and controller_connected(res.stdout)


def _tail(path: Path, n: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


class Controller(Kind):
    """Runs beside its switch's OVS, in the switch's namespace (the OVS kind reports whether it
    is connected)."""

    name = "controller"
    phase = "daemons"  # last: the switch it serves is built, its ports up and queued

    def check(self, lab: Lab, node: Node) -> list[str]:
        problem = controllers.app_problem(node.controller)
        return [f"switches.{node.name}.controller: {problem}"] if problem else []

    def begin(self, b: Build, node: Node) -> None:
        """Start (or keep, or adopt) the controller as soon as its namespace exists: its imports
        (~20 s under emulation) then overlap the rest of the build, and `configure` waits."""
        d = ovsd.OvsDirs(ns=b.ns[node.name], lab=b.lab.name, node=node.name)
        mine = [r for r in b.previous_processes(node.name) if r["role"] == "controller"]
        keep = [r for r in mine if daemons.alive(r) and r.get("app") == node.controller and r.get("port") == node.controller_port]
        if not keep:
            daemons.stop(mine)
            # A controller an interrupted `up` started but never recorded lives in this lab's own
            # namespace, so it is this lab's: adopt it if it runs this app on this port (starting
            # one cold costs ~30 s of imports under emulation), else stop it (it would hold the
            # port). One forked by the warm os-ken has the server's command line: it is stopped,
            # and its successor forked in seconds.
            found = daemons.netns_pids_running(d.ns, "osken-manager")
            same = [pid for pid in found if _runs(pid, node.controller, node.controller_port)]
            daemons.stop([daemons.record(node.name, "controller", pid) for pid in found if pid not in same[:1]])
            if same:
                keep = [{**daemons.record(node.name, "controller", same[0]), "app": node.controller,
                         "port": node.controller_port}]
        if keep:
            b.keep_processes(keep)
            b.begun[(self.name, node.name)] = keep[0]
            return
        # What an earlier app installed (flows, groups) is not this app's: start from an empty
        # table. The switch's OVS runs here only if an earlier build started it (a new lab's
        # has nothing to delete: the commands fail harmlessly); the old controller is stopped,
        # so nothing installs flows again before the new one connects.
        for what in ("del-flows", "del-groups"):
            ovsd.ofctl(d, what, node.name, check=False)
        d.logs.mkdir(parents=True, exist_ok=True)
        pid = start(node.controller, node.controller_port, b.lab.openflow_layout(node.name), b.lab.dpid(node.name),
                    d.ns, d.logs / "controller.log")
        rec = {**daemons.record(node.name, "controller", pid), "app": node.controller, "port": node.controller_port}
        b.keep_processes([rec])
        b.begun[(self.name, node.name)] = rec

    def configure(self, b: Build, node: Node) -> None:
        """Wait until the controller `begin` started listens and the switch, built meanwhile, is
        connected to it."""
        d = ovsd.OvsDirs(ns=b.ns[node.name], lab=b.lab.name, node=node.name)
        rec, log = b.begun[(self.name, node.name)], d.logs / "controller.log"

        def listening() -> bool:
            if not daemons.alive(rec):
                raise LinklabError(f"controller {node.controller} for {node.name} exited",
                                   hint=f"its log: {log}\n" + _tail(log))
            return sockets.listens(rec["pid"], node.controller_port, d.ns)
        ovsd.wait_for(listening, LISTEN_DEADLINE_S, f"controller {node.controller} listening on {node.name}",
                      interval=0.2, why=lambda: _tail(log))
        ovsd.wait_for(lambda: connected(d, node.name), CONNECT_DEADLINE_S,
                      f"switch {node.name} connecting to controller {node.controller}", interval=0.2,
                      why=lambda: _tail(d.logs / "ovs-vswitchd.log"))

    def remove(self, lab_name: str, node: str, ns: str, owned: dict[str, Any]) -> list[str]:
        mine = [r for r in owned.get("processes", []) if r["node"] == node and r["role"] == "controller"]
        return [f"controller {r.get('app')} {r['pid']} ({node})" for r in daemons.stop(mine)]


def reset_forwarding(lab: Lab) -> None:
    """Forget what switches and hosts learned (flows an app installed with the learned cookie,
    neighbour caches), so the next packet crosses the controller again.

    A TCP run that collapsed (hosts' MTU above the switch ports') leaves orphaned connections
    retransmitting their FIN for minutes; their packets re-learned everything between the
    reset and the measurement, which then saw no packet-in at all. They are
    aborted first, and the reset repeats until no learned flow comes back (a packet-in the
    controller was still handling when the flows went installs its flow afterwards)."""
    switches = [n for n in lab.nodes if n.controller]
    if not switches:
        return
    hosts = [netns_name(lab.name, n.name) for n in lab.nodes if n.kind == "host"]
    for ns in hosts:
        # ss -K (sock_diag SOCK_DESTROY): pyroute2 can list sockets but not destroy them.
        # Only connections already closing: a user's own sessions and listeners stay.
        runner.run(["ss", "-K", "-t", "state", "fin-wait-1", "state", "last-ack", "state", "closing"],
                   netns=ns, check=False, timeout=10)
    dirs = [ovsd.OvsDirs(ns=netns_name(lab.name, n.name), lab=lab.name, node=n.name) for n in switches]
    for _ in range(RESET_ATTEMPTS):
        for d in dirs:
            ovsd.ofctl(d, "del-flows", d.node, LEARNED_FLOWS, check=False)
        for ns in hosts:
            netlink.flush_neighbours(ns)
        time.sleep(RESET_SETTLE_S)
        if not any(_learned_flows(d) for d in dirs):
            return


def _learned_flows(d: ovsd.OvsDirs) -> int:
    res = ovsd.ofctl(d, "dump-flows", d.node, LEARNED_FLOWS, check=False)
    return len(parse_dump_flows(res.stdout)) if res.ok else 0
