"""A lab's state file: what it was built from and everything it owns.

`.linklab/labs/<lab>.json` under the state directory (LINKLAB_STATE_DIR, default ./.linklab,
shared with the lab VM, which sees the project directory). Written atomically, and written
*before* the kernel is touched (status 'building', with the namespaces about to be made), so
that `down` after a crash still knows what to remove.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from linklab import fsutil
from linklab.errors import LinklabError, NoLabUp, StateError, UsageError

FORMAT = 1


def state_dir() -> Path:
    return Path(os.environ.get("LINKLAB_STATE_DIR") or Path.cwd() / ".linklab")


def home_of(directory: str | Path) -> str:
    """A short, stable name for a checkout's state directory (the same inside the lab VM, which
    is handed the host's path): part of every ownership mark, so labs of two checkouts never
    claim each other's objects."""
    return _home_of(str(directory))


@functools.lru_cache(maxsize=16)
def _home_of(directory: str) -> str:
    # Cached: resolving the path walks it over 9p in the lab VM (~7 ms), and a sweep point's
    # reconfiguration asks for the marks several times.
    return hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:12]


def home() -> str:
    """This checkout's name in ownership marks."""
    return home_of(state_dir())


def labs_dir() -> Path:
    return state_dir() / "labs"


def path_for(lab: str) -> Path:
    return labs_dir() / f"{lab}.json"


class DamagedState(UsageError):
    """A state file that is not what linklab wrote (truncated, edited, binary): bad input, exit 2."""


def load(lab: str) -> dict[str, Any] | None:
    p = path_for(lab)
    if not p.exists():
        return None
    from linklab.fsutil import read_text_input
    try:
        data = json.loads(read_text_input(p, limit=16 << 20))
    except (json.JSONDecodeError, LinklabError) as e:
        raise DamagedState(f"state file {p} is damaged: {e}", hint="`linklab clean` removes the lab by its marks") from None
    if not isinstance(data, dict) or not isinstance(data.get("owned", {}), dict):
        raise DamagedState(f"state file {p} is damaged: not a lab's state", hint="`linklab clean` removes the lab by its marks")
    if data.get("format") != FORMAT:
        raise StateError(f"state file {p} has format {data.get('format')}, this linklab reads {FORMAT}")
    return data


def require(lab: str) -> dict[str, Any]:
    data = load(lab)
    if data is None:
        known = ", ".join(all_labs()) or "none"
        raise NoLabUp(f"no lab named {lab!r} is up (labs: {known})", hint="start one with `linklab up TOPOLOGY`")
    return data


def unknown_node(lab: str, node: str, valid: list[str]) -> UsageError:
    return UsageError(f"unknown node {node!r} in lab {lab} (valid: {', '.join(valid)})")


def node_netns(lab: str, node: str) -> str | None:
    """The network namespace a running lab's node lives in, from its state file alone (no model,
    no backend: what a host needs to forward `linklab exec` into the lab VM in ~0.15 s). None
    when the state predates the record (the caller then asks linklab in the guest)."""
    spaces = require(lab).get("netns")
    if not isinstance(spaces, dict):
        return None
    if node not in spaces:
        raise unknown_node(lab, node, list(spaces))
    return str(spaces[node])


def save(data: dict[str, Any]) -> None:
    data = {**data, "format": FORMAT, "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    fsutil.write_json_atomic(path_for(data["lab"]), data)


def remove(lab: str) -> None:
    try:
        path_for(lab).unlink()
    except FileNotFoundError:
        pass


def all_labs() -> list[str]:
    d = labs_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def lock_path(lab: str) -> Path:
    return labs_dir() / f".{lab}.lock"


def remove_lock(lab: str) -> None:
    try:
        lock_path(lab).unlink()
    except FileNotFoundError:
        pass


@contextmanager
def try_locked(lab: str) -> Iterator[bool]:
    """Like `locked`, but yields False instead of raising when another command holds the lab."""
    labs_dir().mkdir(parents=True, exist_ok=True)
    with fsutil.flocked(lock_path(lab)) as held:
        if held:
            remove_stale_temps(lab)
        yield held


def remove_stale_temps(lab: str) -> None:
    """A lab's state is only written under its lock, so a temp file of it found by the lock's
    holder was left by a writer killed between write and rename (kill -9). Judged by the lock,
    not by the pid in its name: the host and the lab VM share this directory, not their pids."""
    for p in labs_dir().glob(fsutil.tmp_glob(path_for(lab))):
        p.unlink(missing_ok=True)


def remove_stale_locks() -> list[str]:
    """Lock files of labs without a state file that no command holds (left by a killed command),
    and temp files of any lab whose lock is free (a writer killed mid-write)."""
    removed = []
    d = labs_dir()
    for p in (list(d.iterdir()) if d.is_dir() else []):  # try_locked may add lock files meanwhile
        target = fsutil.tmp_target(p.name)
        if not (target and target.endswith(".json")):
            continue
        # Taking the lab's lock removes its temp files; the lock file this may create is
        # removed with the other stale locks below when the lab has no state.
        with try_locked(target[:-len(".json")]) as free:
            if free:
                removed.append(str(p))
    for p in (d.glob(".*.lock") if d.is_dir() else []):
        lab = p.name[1:-len(".lock")]
        if path_for(lab).exists():
            continue
        with fsutil.flocked(p) as held:
            if held and not path_for(lab).exists():
                p.unlink(missing_ok=True)
                removed.append(str(p))
    return removed


@contextmanager
def locked(lab: str) -> Iterator[None]:
    """One command at a time changes a lab (a sweep and a `set` must not interleave)."""
    with try_locked(lab) as got:
        if not got:
            raise StateError(f"lab {lab!r} is busy: another linklab command is changing it")
        yield


def default_lab() -> str:
    """The one lab that is up (a command without --lab means it); in this light module so a
    command forwarded into the lab VM names its lab without importing the lab machinery."""
    labs = all_labs()
    if len(labs) == 1:
        return labs[0]
    if not labs:
        raise NoLabUp("no lab is up", hint="start one with `make lab-up` or `linklab up TOPOLOGY`")
    raise UsageError(f"several labs are up ({', '.join(labs)}): name one with --lab")
