"""A lab's state file: what it was built from and everything it owns.

`.linklab/labs/<lab>.json` under the state directory (LINKLAB_STATE_DIR, default ./.linklab,
shared with the lab VM, which sees the project directory). Written atomically, and written
*before* the kernel is touched (status 'building', with the namespaces about to be made), so
that `down` after a crash still knows what to remove.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from linklab.errors import StateError

FORMAT = 1


def state_dir() -> Path:
    return Path(os.environ.get("LINKLAB_STATE_DIR") or Path.cwd() / ".linklab")


def labs_dir() -> Path:
    return state_dir() / "labs"


def path_for(lab: str) -> Path:
    return labs_dir() / f"{lab}.json"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write-then-rename, fsynced: a reader sees the old file or the new one, never half."""
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(lab: str) -> dict[str, Any] | None:
    p = path_for(lab)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as e:
        raise StateError(f"state file {p} is damaged: {e}", hint="`linklab clean` removes the lab by its marks") from None
    if data.get("format") != FORMAT:
        raise StateError(f"state file {p} has format {data.get('format')}, this linklab reads {FORMAT}")
    return data


def require(lab: str) -> dict[str, Any]:
    data = load(lab)
    if data is None:
        known = ", ".join(all_labs()) or "none"
        raise StateError(f"no lab named {lab!r} is up (labs: {known})", hint="start one with `linklab up TOPOLOGY`")
    return data


def save(data: dict[str, Any]) -> None:
    data = {**data, "format": FORMAT, "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    write_json_atomic(path_for(data["lab"]), data)


def remove(lab: str) -> None:
    try:
        path_for(lab).unlink()
    except FileNotFoundError:
        pass


def all_labs() -> list[str]:
    d = labs_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


@contextmanager
def locked(lab: str) -> Iterator[None]:
    """One command at a time changes a lab (a sweep and a `set` must not interleave)."""
    labs_dir().mkdir(parents=True, exist_ok=True)
    with open(labs_dir() / f".{lab}.lock", "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StateError(f"lab {lab!r} is busy: another linklab command is changing it") from None
        yield
