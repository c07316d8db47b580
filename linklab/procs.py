"""The one way linklab stops processes, and how a lab records the processes it owns.

A pid alone is not an identity: after a crash and a reboot (or just time) the number can belong
to someone else's process. A lab therefore records `{"pid", "start", "comm"}` (start = the
kernel's start time in clock ticks, /proc/<pid>/stat field 22) and `stop_recorded` stops only a
process whose pid, start time and name all still match. This machine's init may never reap
orphans, so "alive" means "exists and is not a zombie".
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterable, Iterator

GRACE_S = 2.0


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces and parentheses: the fields after the last ')' are fixed.
    return text.rsplit(")", 1)[-1].split()


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def identity(pid: int) -> dict | None:
    """What a lab records about a process it started, to recognise it later."""
    fields = _stat(pid)
    if not fields:
        return None
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None
    return {"pid": pid, "start": int(fields[19]), "comm": comm}


def cmdline(pid: int) -> list[str]:
    """A process's arguments ([] when it is gone, or a kernel thread)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").rstrip("\0").split("\0") if raw else []


def carrying(argument: str, comm: str) -> list[int]:
    """Live processes named `comm` one of whose arguments is exactly `argument` (a zombie's
    command line is empty: none is among them)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and argument in cmdline(int(d.name)):
            found = identity(int(d.name))
            if found and found["comm"] == comm[:15]:
                out.append(int(d.name))
    return sorted(out)


def is_same(record: dict, *, check_comm: bool = True) -> bool:
    """Whether the recorded process still runs (not a later process that reused its pid).
    pid and start time identify it; `check_comm=False` for a process recorded before it exec'd
    its real program (a daemon started through `ip netns exec` is recorded while still `ip`)."""
    pid = record.get("pid")
    now = identity(pid) if isinstance(pid, int) else None
    return (bool(now) and alive(pid) and now["start"] == record.get("start")
            and (not check_comm or now["comm"] == record.get("comm")))


def stop(pids: Iterable[int] = (), *, grace: float = GRACE_S, group: int | None = None,
         group_is_ours: bool = False) -> list[int]:
    """TERM, wait up to `grace`, then KILL what is left; returns pids still alive after that
    (none, unless the kernel could not kill them). With `group`, the process group is signalled
    too: always if `group_is_ours` (we made it: start_new_session), otherwise only while one of
    `pids` is still in it (a stale group id may have been reused by someone else)."""
    pids = [p for p in pids if isinstance(p, int) and p > 0 and p != os.getpid()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        targets = [p for p in pids if alive(p)]
        hit_group = bool(group) and ((group_is_ours and _group_exists(group))
                                     or any(_pgid(p) == group for p in targets))
        if not targets and not hit_group:
            return []
        if hit_group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, sig)
        for p in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, sig)
        end = time.monotonic() + (grace if sig == signal.SIGTERM else max(grace, 1.0))
        while time.monotonic() < end and any(alive(p) for p in targets):
            time.sleep(0.05)
    return [p for p in pids if alive(p)]


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """While inside: SIGTERM and SIGHUP raise SystemExit(128 + signal) in the main thread, as
    Ctrl-C raises KeyboardInterrupt, so the caller's cleanup runs (a lab VM killed mid-boot by
    `kill` or a closed terminal must not leave its QEMU booting on). Elsewhere a no-op: Python
    only lets the main thread set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, _frame):
        raise SystemExit(128 + signum)

    before = {sig: signal.signal(sig, _raise) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _group_exists(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_popen(procs: Iterable[subprocess.Popen], *, grace: float = GRACE_S) -> None:
    """Stop processes we started ourselves, and reap them (no zombies left by us)."""
    procs = list(procs)
    stop([p.pid for p in procs if p.poll() is None], grace=grace)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5)


def communicate(proc: subprocess.Popen, timeout: float) -> tuple[bytes, bytes]:
    """A process we started, waited for: its output once it exits, or, if it has not within
    `timeout` seconds, killed and what it printed until then."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return out or b"", err or b""


def stop_recorded(records: Iterable[dict], *, grace: float = GRACE_S) -> list[dict]:
    """Stop the recorded processes that are still the same processes; returns those stopped."""
    mine = [r for r in records if isinstance(r, dict) and is_same(r)]
    stop([r["pid"] for r in mine], grace=grace)
    return mine


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
