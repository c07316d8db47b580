"""Records of the long-lived processes a lab's switches own (ovsdb-server, ovs-vswitchd,
controllers), and how the Linux backend finds them in a lab namespace.

A record is linklab.procs' identity ({pid, start, comm}: a recycled pid is never mistaken for
ours) plus the node and role it serves (and `group`, for one that leads a process group); stopping goes through linklab.procs, the package's one
way to stop a process.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from pyroute2 import netns

from linklab import procs as _procs


def record(node: str, role: str, pid: int) -> dict[str, Any]:
    return {**(_procs.identity(pid) or {"pid": pid, "start": None, "comm": None}), "node": node, "role": role}


def alive(rec: dict[str, Any]) -> bool:
    """pid and start time identify the process; its name does not: a daemon started through
    `ip netns exec` is recorded before the exec, while its name is still `ip`."""
    return _procs.is_same(rec, check_comm=False)


def stop(recs: list[dict[str, Any]], grace_s: float = 3.0) -> list[dict[str, Any]]:
    """Stop the recorded processes that are still ours; returns those stopped."""
    mine = [r for r in recs if alive(r)]
    _procs.stop([r["pid"] for r in mine if not r.get("group")], grace=grace_s)
    for r in mine:
        if r.get("group"):  # a process that leads a group of its own (a service): its children go with it
            _procs.stop([r["pid"]], grace=grace_s, group=r["group"])
    for r in mine:  # reap children of ours (controllers are started by this process)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(r["pid"], os.WNOHANG)
    return mine


def read_pidfile(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def netns_pids_running(ns: str, word: str) -> list[int]:
    """Processes in the lab namespace `ns` whose command line contains `word`, or which are
    named `word` (a controller forked by the warm os-ken has its server's command line)."""
    out = []
    for p in netns_pids(ns):
        try:
            if word in "\0".join(_procs.cmdline(int(p))) or Path(f"/proc/{p}/comm").read_text().strip() == word[:15]:
                out.append(int(p))
        except OSError:
            pass
    return out


def netns_pids(ns: str, table: dict | None = None) -> list[int]:
    """Processes running inside a lab namespace: those whose /proc/<pid>/ns/net is the
    namespace's file (what `ip netns pids` does, without a process per namespace). `table`
    (from `processes_by_netns`) saves a walk of /proc per namespace when there are many."""
    try:
        want = os.stat(os.path.join(netns.NETNS_RUN_DIR, ns))
    except OSError:
        return []
    key = (want.st_dev, want.st_ino)
    if table is None:
        return processes_by_netns().get(key, [])
    # From an earlier walk: checked again, so a pid reused since is never taken for one inside.
    return [p for p in table.get(key, []) if _netns_of(p) == key]


def _netns_of(pid: int) -> tuple[int, int] | None:
    try:
        st = os.stat(f"/proc/{pid}/ns/net")
    except OSError:
        return None
    return st.st_dev, st.st_ino


def processes_by_netns() -> dict[tuple[int, int], list[int]]:
    """Every process, by the (device, inode) of its network namespace: one walk of /proc."""
    out: dict[tuple[int, int], list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        key = _netns_of(int(entry.name))  # None: gone meanwhile, or not ours to look at
        if key is not None:
            out.setdefault(key, []).append(int(entry.name))
    return out
