"""Records of the long-lived processes a lab's switches own (ovsdb-server, ovs-vswitchd,
controllers), and how the Linux backend finds them in a lab namespace.

A record is linklab.procs' identity ({pid, start, comm}: a recycled pid is never mistaken for
ours) plus the node and role it serves; stopping goes through linklab.procs, the package's one
way to stop a process.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from linklab import procs as _procs
from linklab import runner


def record(node: str, role: str, pid: int) -> dict[str, Any]:
    return {**(_procs.identity(pid) or {"pid": pid, "start": None, "comm": None}), "node": node, "role": role}


def alive(rec: dict[str, Any]) -> bool:
    """pid and start time identify the process; its name does not: a daemon started through
    `ip netns exec` is recorded before the exec, while its name is still `ip`."""
    now = _procs.identity(rec["pid"]) if isinstance(rec.get("pid"), int) else None
    return bool(now) and _procs.alive(rec["pid"]) and now["start"] == rec.get("start")


def stop(recs: list[dict[str, Any]], grace_s: float = 3.0) -> list[dict[str, Any]]:
    """Stop the recorded processes that are still ours; returns those stopped."""
    mine = [r for r in recs if alive(r)]
    _procs.stop([r["pid"] for r in mine], grace=grace_s)
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
    """Processes in the lab namespace `ns` whose command line contains `word`."""
    res = runner.run(["ip", "netns", "pids", ns], check=False, timeout=30)
    out = []
    for p in res.stdout.split():
        try:
            if word in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace"):
                out.append(int(p))
        except OSError:
            pass
    return out
