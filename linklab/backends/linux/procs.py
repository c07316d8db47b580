"""The one way the Linux backend starts and stops the long-lived processes a lab owns
(ovsdb-server, ovs-vswitchd, controllers).

Each is recorded as {node, role, pid, start}: `start` is the process's start time in clock
ticks (/proc/<pid>/stat field 22), so a recycled pid is never mistaken for ours and `down`
stops exactly the processes the lab started.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any


def start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) may contain spaces: split after its closing parenthesis.
    return int(stat.rsplit(")", 1)[1].split()[19])


def record(node: str, role: str, pid: int) -> dict[str, Any]:
    return {"node": node, "role": role, "pid": pid, "start": start_time(pid)}


def alive(rec: dict[str, Any]) -> bool:
    st = start_time(rec["pid"])
    return st is not None and st == rec.get("start") and not _zombie(rec["pid"])


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def stop(recs: list[dict[str, Any]], grace_s: float = 3.0) -> list[dict[str, Any]]:
    """SIGTERM each live recorded process, SIGKILL what is left after `grace_s`; returns those stopped."""
    mine = [r for r in recs if alive(r)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for r in mine:
            if alive(r):
                try:
                    os.kill(r["pid"], sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(alive(r) for r in mine):
            time.sleep(0.05)
        if not any(alive(r) for r in mine):
            break
    for r in mine:  # reap children of ours (controllers are started by this process)
        try:
            os.waitpid(r["pid"], os.WNOHANG)
        except ChildProcessError:
            pass
    return mine


def read_pidfile(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def netns_pids_running(ns: str, word: str) -> list[int]:
    """Processes in the lab namespace `ns` whose command line contains `word`."""
    from linklab import runner
    res = runner.run(["ip", "netns", "pids", ns], check=False, timeout=30)
    out = []
    for p in res.stdout.split():
        try:
            if word in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace"):
                out.append(int(p))
        except OSError:
            pass
    return out
