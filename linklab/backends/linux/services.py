"""A node's background services (`exec:` items with `background: true`): started in the node in
exec order, waited for until ready, recorded as processes the lab owns, stopped through
linklab.procs (daemons.stop: the package's one way to stop a process).

A service runs in a session of its own (runner.start), so stopping it signals its process group
too: a service that forks (`sh -c 'a & b'`) leaves no child behind. After a crash that lost the
state file, `clean` finds it by its node's namespace, which carries the lab's mark: removing the
namespace stops every process in it (ownership.remove_netns).

Its output (stdout and stderr) goes to `<state dir>/logs/<lab>/<node>/<name>.log`, beside an
OVS switch's own logs; the previous run's log is kept as `<name>.log.1` when it starts again.
`down` keeps the logs.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from linklab import runner, state
from linklab.backends.linux import daemons
from linklab.ready import NotReady, ready_now, tail, wait_ready
from linklab.model.resolved import Lab, Service

ROLE = "service"


def log_path(lab_name: str, node: str, name: str) -> Path:
    return state.state_dir() / "logs" / lab_name / node / f"{name}.log"


def records(processes: list[dict[str, Any]], node: str | None = None) -> list[dict[str, Any]]:
    """The service records among a lab's owned processes (of one node, when given)."""
    return [r for r in processes if r.get("role") == ROLE and node in (None, r.get("node"))]


def start(lab_name: str, node: str, svc: Service, where: str, env: dict[str, str]) -> tuple[dict[str, Any], subprocess.Popen]:
    """Start `svc` in the node (`where`: runner's netns=), its output to its log; returns its record
    (recorded at once: a crash while it readies leaves it owned) and the process."""
    log = log_path(lab_name, node, svc.name)
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists():
        os.replace(log, log.with_name(log.name + ".1"))
    with open(log, "wb") as f:
        proc = runner.start(svc.run, netns=where, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env or None)
    # start_new_session: the service leads its own process group, stopped with it.
    rec = {**daemons.record(node, ROLE, proc.pid), "name": svc.name, "argv": list(svc.run), "log": str(log),
           "group": proc.pid, "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    return rec, proc


def wait(svc: Service, proc: subprocess.Popen, where: str, rec: dict[str, Any]) -> None:
    """Until the service is ready (its record gets `ready_s`, the seconds it took); NotReady, with
    its output's tail, when it is not within its timeout or exits first. A service without
    `ready:` is ready once started."""
    ready = svc.ready.model_dump() if svc.ready else None
    rec["ready_s"] = round(wait_ready(ready, proc, netns=where, workdir=Path.cwd(), log=Path(rec["log"]),
                                      what="the service"), 3)


def running(rec: dict[str, Any]) -> bool:
    """Whether the recorded service still runs (pid and start time: not a later process that
    reused its pid; not its name, which is `ip` until `ip netns exec` execs the program)."""
    return daemons.alive(rec)


def same(rec: dict[str, Any], svc: Service) -> bool:
    """Whether a recorded service is `svc` as written now and still runs."""
    return rec.get("argv") == list(svc.run) and running(rec)


def stop(recs: list[dict[str, Any]]) -> list[str]:
    """Stop the recorded services that are still ours; returns what was stopped."""
    return [f"service {r['name']} {r['pid']} ({r['node']})" for r in daemons.stop(recs)]


def log_tail(rec: dict[str, Any]) -> str:
    try:
        return tail(Path(rec["log"]).read_text(errors="replace"))
    except OSError:
        return ""


def status(lab: Lab, processes: list[dict[str, Any]], where_of) -> list[dict[str, Any]]:
    """Each service the lab's nodes declare, as it is now: pid, running or exited, ready (its sign
    checked again while it runs), its log."""
    recs = {(r["node"], r["name"]): r for r in records(processes)}
    out = []
    for n in lab.nodes:
        for svc in (x for x in n.exec if isinstance(x, Service)):
            rec = recs.get((n.name, svc.name))
            live = bool(rec) and running(rec)
            ready = None
            if live:
                ready = True if svc.ready is None else _ready_now(svc, where_of(n.name), rec)
            out.append({"node": n.name, "name": svc.name, "run": list(svc.run), "pid": rec["pid"] if rec else None,
                        "state": "running" if live else ("exited" if rec else "not started"),
                        "ready": ready, "ready_s": (rec or {}).get("ready_s"),
                        "log": (rec or {}).get("log") or str(log_path(lab.name, n.name, svc.name))})
    return out


def _ready_now(svc: Service, where: str, rec: dict[str, Any]) -> bool:
    try:
        return ready_now(svc.ready.model_dump(), netns=where, workdir=Path.cwd(), log=Path(rec["log"]))
    except (OSError, NotReady):
        return False

