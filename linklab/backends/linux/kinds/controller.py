"""An os-ken OpenFlow controller beside an OVS switch, in the switch's namespace, listening
on 127.0.0.1:<port>. Started with the lab, logs kept with the lab, ready when the switch
reports itself connected (never a fixed sleep: under software emulation os-ken takes ~20 s
to import and listen, the switch ~4 s more to connect)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from linklab import controllers, runner
from linklab.backends.linux import daemons, ovsd
from linklab.backends.linux.kinds import ovs
from linklab.errors import CommandFailed, EnvironmentProblem, LinklabError

# Measured ~20 s in a quiet VM; over 5 min while four VMs shared two cores. A controller still
# importing when this passes is adopted by the next `up`, not restarted.
LISTEN_DEADLINE_S = 900.0
CONNECT_DEADLINE_S = 60.0


def manager() -> str:
    beside = Path(sys.executable).parent / "osken-manager"  # the project venv's, pinned in requirements.txt
    found = str(beside) if beside.exists() else shutil.which("osken-manager")
    if not found:
        raise EnvironmentProblem("osken-manager not found", hint="`make setup` installs os-ken (requirements.txt)")
    return found


def check(lab, node) -> list[str]:
    problem = controllers.app_problem(node.controller)
    return [f"switches.{node.name}.controller: {problem}"] if problem else []


def argv(app: str, port: int, layout: dict[str, Any], dpid: int) -> list[str]:
    """The app learns the switch's port layout from the environment (see controllers/_grouped.py)."""
    return ["env", f"LINKLAB_SWITCH={json.dumps(layout, separators=(',', ':'))}", f"LINKLAB_DPID={dpid}",
            manager(), "--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", str(port),
            str(controllers.app_path(app))]


def configure(b, node) -> None:
    d = ovsd.OvsDirs(ns=b.ns[node.name], lab=b.lab.name, node=node.name)
    mine = [r for r in b.owned.get("processes", []) if r["node"] == node.name and r["role"] == "controller"]
    keep = [r for r in mine if daemons.alive(r) and r.get("app") == node.controller and r.get("port") == node.controller_port]
    if not keep:
        daemons.stop(mine)
        # A controller an interrupted `up` started but never recorded lives in this lab's own
        # namespace, so it is this lab's: adopt it if it runs this app on this port (starting
        # one costs ~20 s of imports under emulation), else stop it (it would hold the port).
        found = daemons.netns_pids_running(d.ns, "osken-manager")
        same = [pid for pid in found if _runs(pid, node.controller, node.controller_port)]
        daemons.stop([daemons.record(node.name, "controller", pid) for pid in found if pid not in same[:1]])
        if same:
            keep = [{**daemons.record(node.name, "controller", same[0]), "app": node.controller,
                     "port": node.controller_port}]
    if keep:
        b.new.setdefault("processes", []).extend(keep)
        rec = keep[0]
        log = d.logs / "controller.log"
    else:
        # What an earlier app installed (flows, groups) is not this app's: start from an empty table.
        for what in ("del-flows", "del-groups"):
            ovsd.ofctl(d, what, node.name, check=False)
        d.logs.mkdir(parents=True, exist_ok=True)
        log = d.logs / "controller.log"
        with open(log, "ab") as f:
            cmd = argv(node.controller, node.controller_port, ovs.openflow_layout(b.lab, node), ovs.dpid(b.lab, node))
            p = runner.start(cmd, netns=d.ns, stdout=f, stderr=f)
        rec = {**daemons.record(node.name, "controller", p.pid), "app": node.controller, "port": node.controller_port}
        b.new.setdefault("processes", []).append(rec)

    def listening() -> bool:
        if not daemons.alive(rec):
            raise LinklabError(f"controller {node.controller} for {node.name} exited",
                               hint=f"its log: {log}\n" + _tail(log))
        try:
            out = runner.run(["ss", "-Hltn"], netns=d.ns, check=False, timeout=30).stdout
        except CommandFailed:  # timed out: a loaded machine, try again
            return False
        return re.search(rf":{node.controller_port}\s", out) is not None
    ovsd.wait_for(listening, LISTEN_DEADLINE_S, f"controller {node.controller} listening on {node.name}",
                  interval=0.3, why=lambda: _tail(log))
    ovsd.wait_for(lambda: connected(d, node.name), CONNECT_DEADLINE_S,
                  f"switch {node.name} connecting to controller {node.controller}", interval=0.2,
                  why=lambda: _tail(d.logs / "ovs-vswitchd.log"))


def _runs(pid: int, app: str, port: int) -> bool:
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return False
    return str(controllers.app_path(app)) in args and str(port) in args


def connected(d: ovsd.OvsDirs, bridge: str) -> bool:
    res = ovsd.vsctl(d, "get", "controller", bridge, "is_connected", check=False)
    return res.ok and res.stdout.strip() == "true"


def _tail(path: Path, n: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def inspect(lab, node, ns: str) -> dict[str, Any]:
    return {}  # the OVS kind reports whether its controller is connected


def remove(lab_name: str, node: str, ns: str, owned: dict[str, Any]) -> list[str]:
    mine = [r for r in owned.get("processes", []) if r["node"] == node and r["role"] == "controller"]
    return [f"controller {r.get('app')} {r['pid']} ({node})" for r in daemons.stop(mine)]
