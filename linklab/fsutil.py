"""The one way linklab writes a file that must never be seen half-written: write a temp file
beside it, fsync, rename over the target, fsync the directory (so the rename survives a power
cut). A crash, even `kill -9`, leaves the old file or the new one, plus at worst a
`.<name>.tmp-<pid>` leftover that readers ignore and `clean_partial`/`linklab clean` remove.

And the one way it reads a file given to it as input (read_text_input): bounded, text only, with
an error naming the file. Here, not beside the YAML loader: reading a state file must not import
pydantic (a forwarded command's host side would pay 0.1 s for it).

And the one way it holds a lock file without waiting (try_flock, flocked).
"""

from __future__ import annotations

import fcntl
import glob
import json
from json.encoder import encode_basestring_ascii
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from linklab.errors import UsageError, ValidationFailed

TMP_MARK = ".tmp-"


def tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}")


def is_tmp_name(name: str) -> bool:
    return name.startswith(".") and TMP_MARK in name


def tmp_glob(path: Path) -> str:
    """tmp_name(path) for any pid, as a glob in path's directory: write_atomic's leftovers of it."""
    return f".{glob.escape(Path(path).name)}{TMP_MARK}*"


def tmp_target(name: str) -> str | None:
    """The file name a temp file was being written for (tmp_name's reverse), or None."""
    return name[1:name.rindex(TMP_MARK)] if is_tmp_name(name) else None


def write_bytes_synced(path: Path, content: bytes | str) -> None:
    if isinstance(content, str):
        data = content.encode()
    elif isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
    else:  # bytes(5) would quietly write five NULs
        raise TypeError(f"{path.name}: content must be str or bytes, got {type(content).__name__}")
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, content: bytes | str) -> None:
    """Write-then-rename, fsynced, in the target's directory (so the rename is atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_name(path)
    try:
        write_bytes_synced(tmp, content)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


# One encoder, built once: json.dumps with options builds a new one per call, which was most of
# the time of a repetition's files (bench/README.md#netlink-and-files).
_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def _json_value(v: Any) -> str:
    """json.dumps(v, sort_keys=True, default=str), with the common scalars written directly."""
    t = type(v)
    if t is int:
        return int.__repr__(v)
    if t is str:
        return encode_basestring_ascii(v)
    return _ENCODER.encode(v)


def json_text(data: Any) -> str:
    """JSON as linklab writes its files: an object one top-level key per line (readable and
    diffable), each value compact on its line. Why not indent=1: only unindented dumps use json's
    C encoder, several times faster on a large lab's state (bench/README.md#netlink-and-files)."""
    if not isinstance(data, dict) or not data:
        return _ENCODER.encode(data) + "\n"
    lines = (f" {encode_basestring_ascii(str(k))}: {_json_value(v)}"
             for k, v in sorted(data.items(), key=lambda kv: str(kv[0])))
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(Path(path), json_text(data))


def read_json_record(path: Path, kind: type = dict) -> Any:
    """What write_json_atomic wrote for linklab's own bookkeeping (a VM's, a daemon's, a
    process's record), or None when it is missing, unreadable, not JSON or not a `kind`."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, kind) else None


def read_json_written_by(path: Path, fmt: str, section: str, what: str, command: str, args: str) -> dict[str, Any]:
    """A JSON file a linklab command wrote with `"format": fmt` and a dict under `section` (an
    experiment's A/A spread): the whole document, or UsageError naming `what` it should have been
    and the `command` (with its `args`) that makes one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: not a readable {what} ({e})", hint=f"measure one with `{command} {args}`") from None
    if not isinstance(data, dict) or data.get("format") != fmt or not isinstance(data.get(section), dict):
        raise UsageError(f"{path}: not a {what} written by `{command}` (format {fmt})")
    return data


# Real topologies and experiments are a few KiB: a multi-GiB log passed by mistake is refused
# with an error instead of exhausting memory (the YAML loader bounds nesting and aliases too).
MAX_INPUT_BYTES = 1 << 20


def read_text_input(path: Path, limit: int = MAX_INPUT_BYTES) -> str:
    """A file linklab reads as input, as text: missing, unreadable, too big, binary or not
    UTF-8 are each a clear error naming the file (exit 2), raised before anything changes."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a file") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > limit:
        raise ValidationFailed(str(path), [f"(file): larger than {limit // 1024} KiB: not a linklab input file"])
    nul = data.find(b"\0")
    if nul >= 0:
        raise ValidationFailed(str(path), [f"(file): binary data (a NUL byte at offset {nul}): not a text file"])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ValidationFailed(str(path), [f"(file): not UTF-8 text (byte 0x{data[e.start]:02x} on line {line})"]) from None


def try_flock(path: Path) -> int | None:
    """An exclusive flock on `path` (created if missing), without waiting: the descriptor that
    holds it until closed (or the process ends, even by kill -9); None: another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextmanager
def flocked(path: Path) -> Iterator[bool]:
    """try_flock for a block: yields whether this process holds the lock."""
    fd = try_flock(path)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)
