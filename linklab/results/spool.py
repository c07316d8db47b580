"""A sweep's results directory anywhere on the machine, when the sweep runs in the lab VM.

The VM writes through to the host only in the directories it shares (placement.shared_with_vm:
the checkout and the state directory, fixed when it boots); what it writes elsewhere lands in its
own overlay and is gone when it stops. For any other `--results DIR`, the sweep in the VM writes
into a spool in the state directory (shared), seeded with DIR's runs of the experiment (so a run
is resumed there as it would be in DIR), and the host copies each run back into DIR when the
sweep ends, however it ends (done, failed, interrupted, the VM stopped under it). Each file
the VM wrote is on the host's disk the moment it is written: a sweep killed before its copy
(kill -9) leaves the spool, and the next sweep into DIR copies it first. A run is copied as a
mirror: what the sweep moved aside in it (a failed attempt kept as rep<k>.failed-<n>) moves in
DIR too.

A file a command writes (`linklab check --json/--junit/--csv FILE`) goes the same way: written
into a spool of its own and copied to FILE when the command ends (files_through_vm).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from linklab import fsutil, placement, state
from linklab.errors import StateError
from linklab.results.store import experiment_dir


def spool_for(results: Path) -> Path:
    """Where the VM writes the runs meant for `results` (one spool per results directory)."""
    key = hashlib.sha256(str(Path(results).resolve()).encode()).hexdigest()[:16]
    return state.state_dir() / "results-spool" / key


@contextmanager
def through_vm(results: Path, experiment: str, say=print) -> Iterator[Path]:
    """The directory to give the sweep in the VM as its results root: `results` itself when the
    VM shares it, else a spool whose runs are copied into `results` when the block ends."""
    results = Path(results).resolve()
    if placement.is_shared_with_vm(results):
        yield results
        return
    spool = spool_for(results)
    spool.parent.mkdir(parents=True, exist_ok=True)
    with _locked(spool, results):
        if spool.exists():  # a sweep killed before it copied its runs back
            say(f"linklab: copying into {results} what an earlier sweep left in {spool}")
            copy_back(spool, results)
            shutil.rmtree(spool)
        src, dst = experiment_dir(results, experiment), experiment_dir(spool, experiment)
        if src.is_dir():  # earlier runs, so that one is resumed in the VM as it would be here
            shutil.copytree(src, dst, ignore=_partial)
        else:
            dst.mkdir(parents=True)
        say(f"linklab: the lab VM does not share {results}: the sweep writes into {spool}, and its runs are "
            f"copied into {results} when it ends")
        try:
            yield spool
        finally:
            copied = copy_back(spool, results)
            shutil.rmtree(spool, ignore_errors=True)
            say(f"linklab: {copied} file{'s' if copied != 1 else ''} of the sweep copied into {results}")


@contextmanager
def files_through_vm(files: list[Path], say=print) -> Iterator[list[Path]]:
    """The paths to give a command in the VM for the files it writes: each file itself when the
    VM shares its directory, else a file in a spool, copied onto the file (created or replaced
    at once) when the block ends, however it ends."""
    files = [Path(f).resolve() for f in files]
    spools = {f: spool_for(f) for f in files if not placement.is_shared_with_vm(f.parent)}
    with ExitStack() as stack:
        for f, spool in spools.items():
            spool.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(_locked(spool, f, "command"))
            if spool.exists():  # a command killed before it copied its file back
                _file_back(spool, f, say)
            spool.mkdir()
            say(f"linklab: the lab VM does not share {f.parent}: {f.name} is written into {spool} and copied "
                f"into {f} when the command ends")
        try:
            yield [spools[f] / f.name if f in spools else f for f in files]
        finally:
            for f, spool in spools.items():
                _file_back(spool, f, say)


def _file_back(spool: Path, file: Path, say) -> None:
    written = spool / file.name
    if written.is_file():
        file.parent.mkdir(parents=True, exist_ok=True)
        _copy_file(written, file)
        say(f"linklab: {file} written")
    shutil.rmtree(spool, ignore_errors=True)


@contextmanager
def _locked(spool: Path, results: Path, who: str = "sweep") -> Iterator[None]:
    with fsutil.flocked(spool.with_name(spool.name + ".lock")) as held:
        if not held:
            raise StateError(f"another {who} is writing into {results} through the lab VM",
                             hint=f"wait for it, or give this one another {'--results directory' if who == 'sweep' else 'path'}")
        yield


def _partial(directory: str, names: list[str]) -> list[str]:
    """What a run being written has that is not a result yet (`*.tmp-<pid>`, `.run.tmp-…`)."""
    return [n for n in names if fsutil.is_tmp_name(n)]


def copy_back(spool: Path, results: Path) -> int:
    """Mirror every run in `spool` into `results` (same experiment/run paths); runs only in
    `results` are left alone. Returns how many files were copied."""
    copied = 0
    for exp in sorted(p for p in spool.iterdir() if p.is_dir()):
        for run in sorted(p for p in exp.iterdir() if p.is_dir() and not fsutil.is_tmp_name(p.name)):
            copied += _mirror(run, results / exp.name / run.name)
    return copied


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns


def _mirror(src: Path, dst: Path) -> int:
    """`dst` made like `src`: files copied where missing or different (size, mtime), each into
    place by a rename (a reader never sees half a file), then what `src` no longer has removed."""
    copied = 0
    dst.mkdir(parents=True, exist_ok=True)
    names = {n for n in os.listdir(src) if not fsutil.is_tmp_name(n)}
    for name in sorted(names):
        s, d = src / name, dst / name
        if s.is_dir():
            if d.exists() and not d.is_dir():
                d.unlink()
            copied += _mirror(s, d)
        elif not (d.is_file() and _same(s.stat(), d.stat())):
            if d.is_dir():
                shutil.rmtree(d)
            _copy_file(s, d)
            copied += 1
    for name in set(os.listdir(dst)) - names:
        gone = dst / name
        shutil.rmtree(gone) if gone.is_dir() and not gone.is_symlink() else gone.unlink()
    return copied


def _copy_file(src: Path, dst: Path) -> None:
    """`src` copied onto `dst` by a rename (a reader never sees half a file)."""
    tmp = fsutil.tmp_name(dst)
    shutil.copy2(src, tmp)
    os.replace(tmp, dst)
