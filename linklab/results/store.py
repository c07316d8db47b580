"""One sweep run on disk: a manifest, every tool's raw output, and a tidy table.

    results/<experiment>/<YYYYmmdd-HHMMSS>[-N]/
        manifest.json                   what was run (and `complete` once it all was)
        points/<point_id>/point.json    the point's axes and key
        points/<point_id>/rep<k>/       raw output of every tool + row.json
        points/<point_id>/rep<k>.failed-<n>/   a failed attempt, kept when a resume retries it
        points/<point_id>/rep<k>.disturbed-<n>/   an attempt flagged host_disturbed, kept when it was measured again
        results.csv                     one row per point x rep, regenerated from row.json

What is done is read from the filesystem, never from a counter: a rep is recorded iff its final
directory exists with row.json in it, and done iff that row has no `error` (a failed rep is
retried by a resume, its directory kept aside as `rep<k>.failed-<n>`).

A row keeps what was chosen apart from what was measured: the identity columns, then each
matrix axis under its own name, then the tool's settings as `tool.<name>`, then the measured
fields under their own names; a measured field whose name an axis or identity column already
uses is kept as `measured.<name>` (iperf3 reports its own `parallel`, and `parallel` can be an
axis). A rep is written into a temp directory and renamed
into place, so a crash (even SIGKILL) leaves either nothing or a `*.tmp-<pid>` leftover that
`clean_partial` removes; never half a result.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Protocol

from linklab import fsutil, procs
from linklab.errors import LinklabError, StateError, UsageError
from linklab.results import manifest as manifest_format

MANIFEST = "manifest.json"
TABLE = "results.csv"
ROW = "row.json"
POINT = "point.json"
IDENTITY = ("point_index", "point_id", "rep")
WRITE_THREADS = 8

_RUN_NAME = re.compile(r"^(\d{8}-\d{6})(?:-(\d+))?$")
_REP_DIR = re.compile(r"^rep(\d+)$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$")


class Point(Protocol):
    """What the store records of a point (a sweep's are linklab/sweep/matrix.py's Point)."""

    index: int
    id: str
    key: str
    axes: Mapping[str, Any]


class AlreadyRecorded(StateError):
    """This (point, rep) already has a result; results are never overwritten."""


class RunLocked(StateError):
    """Another process holds this run (two sweeps must not fill one run at once)."""


class ResultsStore:
    def __init__(self, path: Path, manifest: dict[str, Any]):
        self.path = Path(path)
        self.manifest = manifest
        # What this store has read or written, so results.csv is rewritten after every
        # repetition without reading every earlier row.json back over the VM's shared directory
        # (280 of them by the end of E3). Only this store writes the run (the sweep holds its
        # lock), so the copies stay true; None until first needed.
        self._rows_cache: dict[tuple[str, int], dict[str, Any]] | None = None
        # point id -> its point.json (index, key, axis order), likewise
        self._points_cache: dict[str, dict[str, Any]] | None = None

    # -- finding and making runs ---------------------------------------------------------

    @classmethod
    def create(cls, root: Path, experiment: str, manifest: dict[str, Any], *, now: datetime | None = None) -> ResultsStore:
        """A new run directory, never an existing one (same second -> `-2`, `-3`, ...)."""
        now = now or datetime.now().astimezone()
        base = experiment_dir(root, experiment)
        base.mkdir(parents=True, exist_ok=True)
        stamp = now.strftime("%Y%m%d-%H%M%S")
        # Made whole in a temp dir, then renamed into place: a run directory always has its
        # manifest (a kill -9 in between leaves a `.tmp-` dir that clean_partial removes).
        tmp = base / f".run{fsutil.TMP_MARK}{os.getpid()}"
        for stale in base.glob(f".run{fsutil.TMP_MARK}*"):  # runs being made by killed sweeps
            pid = stale.name.rpartition("-")[2]
            if stale == tmp or not (pid.isdigit() and procs.alive(int(pid))):
                shutil.rmtree(stale, ignore_errors=True)
        tmp.mkdir()
        n = 1
        while True:
            name = stamp if n == 1 else f"{stamp}-{n}"
            data = {**manifest, "format": manifest_format.FORMAT, "experiment": experiment, "run": name,
                    "created_at": now.isoformat(timespec="seconds"), "complete": False}
            fsutil.write_json_atomic(tmp / MANIFEST, data)
            if not (base / name).exists():
                try:
                    # rename(2) onto an existing non-empty dir fails: two racing processes cannot both win.
                    os.rename(tmp, base / name)
                    break
                except OSError as e:
                    if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise
            n += 1
        path = base / name
        fsutil.fsync_dir(base)
        return cls.open(path)  # what is on disk (JSON-normalised), not what we were handed

    @classmethod
    @contextmanager
    def building(cls, path: Path, manifest: dict[str, Any]) -> Iterator[ResultsStore]:
        """A new run made whole at `path` (`linklab merge --out`): filled in a temp dir beside it
        and renamed into place when the block ends; on an error nothing is left at `path`."""
        path = Path(path)
        if path.exists():
            raise UsageError(f"{path} exists: a run is never written over", hint="name a new directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = fsutil.tmp_name(path)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            fsutil.write_json_atomic(tmp / MANIFEST, {**manifest, "format": manifest_format.FORMAT, "complete": False})
            yield cls.open(tmp)
            os.rename(tmp, path)  # fails onto a non-empty directory: never over a run made meanwhile
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        fsutil.fsync_dir(path.parent)

    @classmethod
    def open(cls, path: Path) -> ResultsStore:
        return cls(Path(path), read_manifest(Path(path)))

    @classmethod
    def runs(cls, root: Path, experiment: str) -> list[ResultsStore]:
        """Every run of `experiment` with a readable manifest, oldest first."""
        base = experiment_dir(root, experiment)
        if not base.is_dir():
            return []
        found = []
        for d in base.iterdir():
            m = _RUN_NAME.match(d.name)
            if not m or not d.is_dir():
                continue
            try:
                store = cls.open(d)
            except (OSError, ValueError, LinklabError):
                continue  # crashed before its manifest was written (or it was damaged): nothing to resume
            found.append(((m.group(1), int(m.group(2) or 1)), store))
        return [s for _, s in sorted(found, key=lambda t: t[0])]

    @classmethod
    def latest(cls, root: Path, experiment: str) -> ResultsStore | None:
        runs = cls.runs(root, experiment)
        return runs[-1] if runs else None

    @classmethod
    def find_resumable(cls, root: Path, experiment: str, fingerprint: str) -> ResultsStore | None:
        """The newest run with this fingerprint, if it is not complete.

        Only the newest matching run is a candidate: once a later run (say one made with
        --force) exists, an older unfinished one is superseded and never resumed.
        """
        matching = [r for r in cls.runs(root, experiment) if r.manifest.get("fingerprint") == fingerprint]
        if matching and not matching[-1].manifest.get("complete"):
            return matching[-1]
        return None

    # -- the manifest --------------------------------------------------------------------

    def update_manifest(self, **fields: Any) -> None:
        data = {**self.manifest, **fields}
        fsutil.write_json_atomic(self.path / MANIFEST, data)
        self.manifest = json.loads((self.path / MANIFEST).read_text())

    def mark_complete(self) -> None:
        self.update_manifest(complete=True, finished_at=datetime.now().astimezone().isoformat(timespec="seconds"))

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run for this process; raises RunLocked if another sweep holds it.

        clean_partial deletes in-flight temp dirs, so it is only safe under this lock.
        """
        with fsutil.flocked(self.path / ".lock") as held:
            if not held:
                raise RunLocked(f"another process is running {self.path}",
                                hint="wait for that sweep to end (or stop it); a rerun then resumes")
            yield

    # -- results -------------------------------------------------------------------------

    @property
    def points_dir(self) -> Path:
        return self.path / "points"

    def rep_dir(self, point_id: str, rep: int) -> Path:
        return self.points_dir / point_id / f"rep{rep}"

    def done(self, point_id: str, rep: int) -> bool:
        return (self.rep_dir(point_id, rep) / ROW).is_file()

    def completed(self, *, include_failed: bool = True) -> set[tuple[str, int]]:
        """(point id, rep) of every recorded rep; without the failed ones if not include_failed."""
        return {(pdir.name, rep) for pdir, rep, rdir in self._rep_dirs()
                if include_failed or not _failed(rdir)}

    def failed(self) -> set[tuple[str, int]]:
        if self._rows_cache is not None:  # every row read already (and each readable), kept true
            return {key for key, row in self._rows_cache.items() if row.get("error")}
        return {(pdir.name, rep) for pdir, rep, rdir in self._rep_dirs() if _failed(rdir)}

    def set_aside_failed(self, point_id: str, rep: int, why: str = "failed") -> Path:
        """Move a failed (or disturbed) rep out of the way so it can be measured again; its raw
        output and error stay on disk as rep<k>.<why>-<n>. Returns where it went."""
        _check_name(why, "reason")
        src = self.rep_dir(point_id, rep)
        n = 1
        while True:
            dst = src.with_name(f"{src.name}.{why}-{n}")
            try:
                os.rename(src, dst)  # fails on an existing non-empty target: never overwrites
                break
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                n += 1
        fsutil.fsync_dir(src.parent)
        if self._rows_cache is not None:
            self._rows_cache.pop((point_id, rep), None)
        return dst

    def record(self, point: Point, rep: int, raw: Mapping[str, bytes | str], row: Mapping[str, Any],
               tool: Mapping[str, Any] | None = None) -> Path:
        """Store one rep's raw outputs and row, all or nothing; returns the rep directory.

        `row` is what was measured (and the point's context); `tool` the tool settings asked for.
        """
        _check_rep(rep)
        _check_name(point.id, "point id")
        for name in raw:
            _check_name(name, "raw file name")
            if name == ROW:
                raise ValueError(f"raw file name {ROW!r} is reserved for the row")
        full = _full_row(point, rep, row, tool or {})
        pdir = self.points_dir / point.id
        final = self.rep_dir(point.id, rep)
        if final.exists():
            raise AlreadyRecorded(f"{point.key} rep {rep} is already recorded in {final}")
        pdir.mkdir(parents=True, exist_ok=True)
        self._write_point(point)

        tmp = pdir / f".rep{rep}{fsutil.TMP_MARK}{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)  # our own earlier attempt in this process that failed midway
        tmp.mkdir()
        try:
            row_text = fsutil.json_text(full)
            files = [*raw.items(), (ROW, row_text)]
            # Side by side: in the lab VM each write and fsync is a round trip to the host over
            # 9p, and a repetition has about ten files.
            with ThreadPoolExecutor(WRITE_THREADS) as pool:
                for _ in pool.map(lambda item: fsutil.write_bytes_synced(tmp / item[0], item[1]), files):
                    pass
            fsutil.fsync_dir(tmp)
            try:
                # rename(2) of a directory fails if the target exists and is non-empty, so two
                # writers racing for one rep cannot both succeed.
                os.rename(tmp, final)
            except OSError as e:
                if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    raise AlreadyRecorded(f"{point.key} rep {rep} is already recorded in {final}") from None
                raise
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        fsutil.fsync_dir(pdir)
        if self._rows_cache is not None:
            self._rows_cache[(point.id, rep)] = json.loads(row_text)  # as a reader would get it back
        return final

    def read_rep(self, point_id: str, rep: int) -> tuple[dict[str, bytes], dict[str, Any], dict[str, Any]]:
        """A recorded rep as record() was given it: (raw files, measured row, tool settings), to
        record it again in another run (`linklab merge`, a cluster's driver)."""
        rdir = self.rep_dir(point_id, rep)
        raw = {f.name: f.read_bytes() for f in sorted(rdir.iterdir()) if f.is_file() and f.name != ROW}
        axes = _read_json_input(self.points_dir / point_id / POINT).get("axes") or {}
        return raw, *split_row(_read_json_input(rdir / ROW), axes)

    def point_info(self, point_id: str) -> dict[str, Any]:
        """points/<id>/point.json: the point's index, id, key and axes."""
        return _read_json_input(self.points_dir / point_id / POINT)

    def attempts_aside(self, point_id: str, rep: int) -> list[Path]:
        """The attempts of a rep kept aside (rep<k>.failed-<n>, rep<k>.disturbed-<n>), oldest first."""
        pdir = self.points_dir / point_id
        return sorted(pdir.glob(f"rep{rep}.*-*")) if pdir.is_dir() else []

    def keep_attempt(self, point_id: str, src: Path) -> Path:
        """A copy of another run's attempt kept aside (`linklab merge`), made whole under a temp
        name and renamed into place; never over an existing one."""
        _check_name(src.name, "attempt directory")
        dst = self.points_dir / point_id / src.name
        tmp = fsutil.tmp_name(dst)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        try:
            os.rename(tmp, dst)  # fails onto an existing non-empty directory
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        fsutil.fsync_dir(dst.parent)
        return dst

    def clean_partial(self) -> list[Path]:
        """Remove what a crashed run left half-written; returns what was removed."""
        removed: list[Path] = []
        dirs = [self.path]
        if self.points_dir.is_dir():
            dirs += [d for d in self.points_dir.iterdir() if d.is_dir()]
        for d in dirs:
            for entry in d.iterdir():
                # Every temp file and dir of linklab is named by fsutil (`.<name>.tmp-<pid>`).
                is_tmp = fsutil.is_tmp_name(entry.name)
                # A rep dir without row.json is not a result (we never make one) but would block
                # re-measuring that rep, so it goes too.
                is_hollow = d != self.path and _REP_DIR.match(entry.name) and not (entry / ROW).is_file()
                if is_tmp or is_hollow:
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
                    removed.append(entry)
        return sorted(removed)

    def rows(self) -> list[dict[str, Any]]:
        if self._rows_cache is None:
            self._rows_cache = {(pdir.name, rep): _read_json_input(rdir / ROW) for pdir, rep, rdir in self._rep_dirs()}
        return sorted((dict(r) for r in self._rows_cache.values()), key=lambda r: (r["point_index"], r["rep"]))

    def write_table(self) -> Path:
        """Regenerate results.csv from every row.json: one row per (point, rep)."""
        rows = self.rows()
        axes = self._axis_order()
        columns = list(IDENTITY) + [a for a in axes if a not in IDENTITY]
        rest = sorted({k for r in rows for k in r} - set(columns))
        columns += rest
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            writer.writerow([_cell(r.get(c)) for c in columns])
        path = self.path / TABLE
        fsutil.write_atomic(path, buf.getvalue())
        return path

    # -- internals -----------------------------------------------------------------------

    def _rep_dirs(self) -> Iterator[tuple[Path, int, Path]]:
        if not self.points_dir.is_dir():
            return
        for pdir in self.points_dir.iterdir():
            if not pdir.is_dir() or pdir.name.startswith("."):
                continue
            for rdir in pdir.iterdir():
                m = _REP_DIR.match(rdir.name)
                if m and (rdir / ROW).is_file():
                    yield pdir, int(m.group(1)), rdir

    def _write_point(self, point: Point) -> None:
        path = self.points_dir / point.id / POINT
        have = self._point_infos().get(point.id)
        if have is not None:
            if have.get("key") != point.key:
                # Same id, different point: the matrix changed under a resumed run.
                raise ValueError(f"{path} is for {have.get('key')!r}, not {point.key!r}")
            return
        # fsutil.write_json_atomic sorts keys, so the axis order is kept separately.
        info = {"index": point.index, "id": point.id, "key": point.key, "axes": point.axes,
                "axis_order": list(point.axes)}
        fsutil.write_json_atomic(path, info)
        self._point_infos()[point.id] = info

    def _point_infos(self) -> dict[str, dict[str, Any]]:
        """Every point.json of the run, read once (then kept as _write_point adds to them): each
        read is a round trip over the lab VM's shared directory, and results.csv, rewritten
        after every repetition, orders its columns by them."""
        if self._points_cache is None:
            self._points_cache = {}
            if self.points_dir.is_dir():
                for p in self.points_dir.glob(f"*/{POINT}"):
                    try:
                        self._points_cache[p.parent.name] = json.loads(p.read_text())
                    except (OSError, ValueError):
                        continue
        return self._points_cache

    def _axis_order(self) -> list[str]:
        """Axis names in matrix order, as recorded with the points (first point first)."""
        order: list[str] = []
        for info in sorted(self._point_infos().values(), key=lambda i: i.get("index", 0)):
            for name in info.get("axis_order", []):
                if name not in order:
                    order.append(name)
        return order


def experiment_dir(root: Path, experiment: str) -> Path:
    _check_name(experiment, "experiment name")
    return Path(root) / experiment


TOOL_PREFIX = "tool."
MEASURED_PREFIX = "measured."


def _full_row(point: Point, rep: int, row: Mapping[str, Any], tool: Mapping[str, Any] = {}) -> dict[str, Any]:
    """identity, axes, `tool.<setting>`, measured fields (as `measured.<name>` where an axis or
    identity column has that name): what was chosen never overwrites what was measured."""
    full: dict[str, Any] = {"point_index": point.index, "point_id": point.id, "rep": rep}
    for name, value in point.axes.items():
        if name in full:
            raise ValueError(f"axis {name!r} clashes with the identity column of that name")
        full[name] = value
    chosen = set(full)
    for name, value in tool.items():
        full[TOOL_PREFIX + name] = value
    for name, value in row.items():
        key = MEASURED_PREFIX + name if name in chosen else name
        if key in full:
            raise ValueError(f"row field {name!r} given twice")
        full[key] = value
    return full


def split_row(full: Mapping[str, Any], axes: Iterable[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A stored row back into (measured row, tool settings): _full_row's inverse. The identity
    and axis columns come back from the point when it is recorded again."""
    axes = set(axes)
    row: dict[str, Any] = {}
    tool: dict[str, Any] = {}
    for name, value in full.items():
        if name in IDENTITY or name in axes:
            continue
        if name.startswith(TOOL_PREFIX):
            tool[name[len(TOOL_PREFIX):]] = value
        elif name.startswith(MEASURED_PREFIX):
            row[name[len(MEASURED_PREFIX):]] = value
        else:
            row[name] = value
    return row, tool


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """A run's manifest, upgraded to the current format (linklab/results/manifest.py)."""
    path = run_dir / MANIFEST
    return manifest_format.upgrade(_read_json_input(path), path)


def _read_json_input(path: Path) -> dict[str, Any]:
    """A results file read back (to resume or report): damaged is a clear error with its path."""
    from linklab.fsutil import read_text_input
    try:
        data = json.loads(read_text_input(path, limit=64 << 20))
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: damaged results file: {e}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: damaged results file: not a JSON object")
    return data


def _failed(rdir: Path) -> bool:
    try:
        return bool(json.loads((rdir / ROW).read_text()).get("error"))
    except (OSError, ValueError):
        return True  # an unreadable row is no result


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (dict, list, tuple, bool)):
        return json.dumps(value, sort_keys=True)
    return value


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not _SAFE_NAME.match(name) or len(name) > 200:
        raise ValueError(f"{what} {name!r} is not a safe file name (letters, digits, . _ + -)")


def _check_rep(rep: int) -> None:
    if isinstance(rep, bool) or not isinstance(rep, int) or rep < 0:
        raise ValueError(f"rep must be a non-negative integer, got {rep!r}")
