"""When a started program is ready, waited for: a command tool's server (linklab/sweep/kinds/
command.py) and a node's background service (linklab/backends/linux/services.py) both wait
here, for the sign their `ready:` names (linklab/model/ready.py: a port, a file, a line of the
program's log, a command that exits 0), until a deadline, or until the program ends first.

Below both on purpose: the backend starts services, the sweep starts servers, and neither
reaches into the other's layer for the wait. Running goes through linklab.runner (an argv list,
never a shell).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from linklab import runner
from linklab.errors import LinklabError

TAIL_LINES = 15  # of a program's output, in the error that says it failed
CMD_TIMEOUT_S = 10.0  # one run of a `ready: {cmd: ...}` check: a check that hangs is a no
SIGNS = ("port", "file", "log", "cmd")


class NotReady(LinklabError):
    """The program did not become ready in time (or ended first)."""


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """A program's output's last lines: what an error about it shows."""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def listening_ports(ss_output: str) -> set[int]:
    """The ports `ss -Hltnu` shows listening: each line's local address (its first ADDRESS:PORT;
    the peer's is ADDRESS:*)."""
    ports = set()
    for line in ss_output.splitlines():
        for f in line.split():
            m = re.search(r":(\d+)$", f)
            if m:
                ports.add(int(m[1]))
                break
    return ports


def sign(ready: Mapping[str, Any]) -> str:
    """What a wait waits for, as a user reads it: "port 8000", "cmd curl -sf http://h1/" (the
    Ready model's sign, linklab/model/ready.py)."""
    k = next(k for k in SIGNS if ready.get(k) is not None)
    v = ready[k]
    return f"{k} {v if isinstance(v, (str, int)) else shlex.join(v)}"


def ready_now(ready: Mapping[str, Any], *, netns: str | None, workdir: Path, log: Path | None) -> bool:
    """Whether the program shows the sign `ready` names, once. A `cmd` is its words (the Ready
    model splits one written as a string)."""
    if ready.get("port") is not None:
        out = runner.run(["ss", "-Hltnu"], netns=runner.netns_of(netns) if netns else None, check=False,
                         timeout=10).stdout
        return int(ready["port"]) in listening_ports(out)
    if ready.get("file") is not None:
        return (workdir / ready["file"]).exists()
    if ready.get("log") is not None and log is not None:
        try:
            return re.search(ready["log"], log.read_text(errors="replace"), re.MULTILINE) is not None
        except OSError:
            return False
    if ready.get("cmd") is not None:
        return runner.run([str(w) for w in ready["cmd"]], netns=netns, check=False, timeout=CMD_TIMEOUT_S).ok
    return True


def wait_ready(ready: Mapping[str, Any] | None, proc: subprocess.Popen | None, *, netns: str | None,
               workdir: Path, log: Path | None, poll_s: float = 0.05, what: str = "the server") -> float:
    """Until the program (`what`: a command tool's server, a node's service) is ready (seconds
    waited); NotReady past ready["timeout"] or when it ends first, with its output's tail."""
    if not ready:
        return 0.0
    t0 = time.monotonic()
    timeout = float(ready.get("timeout") or 30.0)
    waits_for = sign(ready)
    while True:
        if ready_now(ready, netns=netns, workdir=workdir, log=log):
            return time.monotonic() - t0
        if proc is not None and proc.poll() is not None:
            raise NotReady(f"{what} exited {proc.returncode} before it was ready ({waits_for})" + _log_tail(log))
        if time.monotonic() - t0 > timeout:
            raise NotReady(f"{what} was not ready ({waits_for}) within {timeout:g} s" + _log_tail(log))
        time.sleep(poll_s)


def _log_tail(log: Path | None) -> str:
    try:
        text = tail(log.read_text(errors="replace")) if log else ""
    except OSError:
        text = ""
    return f"; its output's last lines:\n{text}" if text else "; it printed nothing"
