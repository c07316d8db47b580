"""A sweep session, whatever executes it — a lab here (engine.py, each point in turn or stepwise),
no lab (dry.py), a Ray cluster (linklab/cluster/run.py): what it was asked (Options), the
experiment and points it runs, and the run it fills, in one place: its fingerprint (what must be
the same for two sessions to fill one run), its manifest (what was run), finding or making it,
and filling it (`fill`: what is left to measure, progress, the table, the manifest's timing and
`complete`), whichever Executor measures.

Each caller says only where the lab is: `where` holds the lab's part of the fingerprint (its
settings, scale and placement, the kernel and tools it measured with; or the dry run's seconds;
or that a cluster's workers report their own), and `extra` what its manifest adds. The rest —
the files, the session's own options, which points the run holds — is the same for all.
"""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from linklab import __version__
from linklab.errors import StateError, UsageError
from linklab.results.store import ResultsStore
from linklab.sweep.experiment import Experiment, file_sha256, topology_path
from linklab.sweep.plan import load_experiment
from linklab.sweep import shard
from linklab.sweep.matrix import Point, expand
from linklab.sweep.progress import Progress


def fingerprint_text(parts: dict[str, Any]) -> str:
    return "|".join(f"{k}={v}" for k, v in parts.items())


def fingerprint_parts(exp_path, tpath: Path, opts, where: dict[str, Any]) -> dict[str, Any]:
    """The files, the lab's part (`where`, in its own order), then the session's own options."""
    return {"experiment": file_sha256(exp_path), "topology": file_sha256(tpath), "quick": opts.quick,
            **where} | session_parts(opts)


def session_parts(opts) -> dict[str, Any]:
    """What this session asked for beyond the files, in its fingerprint only when asked: runs
    made before these options keep their fingerprint."""
    parts: dict[str, Any] = {}
    if opts.repetitions:
        parts["repetitions"] = opts.repetitions
    if opts.shard:  # two shards of one experiment are two runs, merged by `linklab merge`
        parts["shard"] = shard_label(opts)
    if opts.points is not None:
        parts["points"] = sorted(opts.points)
    if opts.overrides:  # another lab setting is another run
        parts["set"] = [list(o) for o in opts.overrides]
    return parts


def shard_label(opts) -> str:
    """`K/N`, as the fingerprint and the manifest name a shard."""
    return "{}/{}".format(*opts.shard)


def selection(exp: Experiment, points: list[Point], opts) -> dict[str, Any]:
    """The manifest's account of which points this run holds (a shard's, a unit's: a part)."""
    out: dict[str, Any] = {"points": len(points), "exclude": exp.exclude}
    if opts.shard or opts.points is not None:
        out["points_total"] = len(expand(exp.matrix, exclude=exp.exclude))
        out["point_ids"] = [p.id for p in points]
    if opts.shard:
        out["shard"] = shard_label(opts)
    return out


def manifest(exp_path, exp: Experiment, points: list[Point], fingerprint: str, opts, parts: dict[str, Any],
             extra: dict[str, Any]) -> dict[str, Any]:
    """What every run records of itself, then what its way of running adds (`extra`: the lab's
    resolved model, sysctls and qdiscs; a dry run's seconds; a cluster's address)."""
    tpath = topology_path(exp_path, exp)
    return {"fingerprint": fingerprint, "fingerprint_parts": parts, "linklab": __version__, "command": sys.argv,
            "experiment_file": str(exp_path), "experiment_sha256": file_sha256(exp_path),
            "experiment": exp.name, "description": exp.description, "quick": opts.quick, "matrix": exp.matrix,
            "repetitions": exp.repetitions, **selection(exp, points, opts), "topology_file": str(tpath),
            "kernel": platform.release(), "machine": platform.machine(), **extra}


@dataclass
class Options:
    quick: bool = False
    force: bool = False
    results: Path = Path("results")
    lab_name: str | None = None
    retry_failed: bool = True  # a resume measures failed reps again (their first attempt is kept aside)
    repetitions: int | None = None  # instead of the experiment's (e.g. `linklab baseline`: >= 5 per point)
    # A repetition the policy for a busy host measures again (linklab/measure/flags.py: flagged
    # host_disturbed) is measured once more; the disturbed attempt is kept aside as
    # rep<k>.disturbed-<n>, and a second disturbed attempt stays.
    rerun_disturbed: bool = True
    shard: tuple[int, int] | None = None  # (K, N): only the K-th of N parts of the points (shard.py)
    dry_run: float | None = None  # seconds each repetition sleeps instead of measuring (no lab: dry.py)
    points: tuple[str, ...] | None = None  # only these point ids (a cluster's unit of work)
    # `--set PATH=VALUE`: lab settings applied on top of every point's own (they win over an axis
    # that sets the same path), the lab restored after the sweep; `linklab ab`'s arms.
    overrides: tuple[tuple[str, Any], ...] = ()
    # Measure what stdin asks, step by step (linklab/sweep/stepwise.py), instead of every point in
    # turn: how `linklab ab` interleaves two arms.
    stepwise: bool = False


def load_for(exp_path: str | Path, opts: Options, loaded: Experiment | None = None) -> Experiment:
    """The experiment as this session runs it (its quick variant, the repetitions asked for);
    `loaded`: the file as load_experiment gave it already (validating every point is not free)."""
    exp = loaded if loaded is not None else load_experiment(exp_path, quick=opts.quick)
    if opts.repetitions:
        exp = exp.model_copy(update={"repetitions": opts.repetitions})
    return exp


def select_points(exp: Experiment, opts: Options) -> list[Point]:
    """The points this session measures: all of the matrix, one shard of it, or a chosen few."""
    points = expand(exp.matrix, exclude=exp.exclude)
    if opts.shard:
        points = shard.shard(points, *opts.shard)
    if opts.points is not None:
        ids = {p.id for p in points}
        unknown = [i for i in opts.points if i not in ids]
        if unknown:
            raise UsageError(f"unknown point id(s) {', '.join(unknown)} (valid: {', '.join(sorted(ids))})")
        wanted = set(opts.points)
        points = [p for p in points if p.id in wanted]
    return points


def open_results(exp: Experiment, parts: dict[str, Any], manifest, opts: Options, say) -> tuple[ResultsStore, bool]:
    """The run to fill: the unfinished one made under the same conditions (`parts`), or a new one
    (`manifest(fingerprint)` its manifest); or the complete one made under them (said; True:
    nothing to do)."""
    fingerprint = fingerprint_text(parts)
    store = None if opts.force else ResultsStore.find_resumable(opts.results, exp.name, fingerprint)
    if store is None and not opts.force:
        # Shards may share a results directory (a volume of an Indexed Job): each sees its own runs.
        shard_name = parts.get("shard")
        latest = next((r for r in reversed(ResultsStore.runs(opts.results, exp.name))
                       if (r.manifest.get("fingerprint_parts") or {}).get("shard") == shard_name), None)
        if latest and latest.manifest.get("fingerprint") == fingerprint and latest.manifest.get("complete"):
            say(f"linklab: {exp.name} is already complete in {latest.path} (--force runs it again into a new directory)")
            return latest, True
        if latest and not latest.manifest.get("complete"):
            refuse_mismatched_resume(latest, parts)
    if store is None:
        store = ResultsStore.create(opts.results, exp.name, manifest(fingerprint))
        say(f"linklab: results go to {store.path}")
    else:
        say(f"linklab: resuming {store.path} ({len(store.completed(include_failed=not opts.retry_failed))} "
            "repetitions already recorded)")
    return store, False


def refuse_mismatched_resume(latest: ResultsStore, parts: dict[str, Any]) -> None:
    """An unfinished run made under other conditions is not resumed into (its rows would mix):
    say what differs."""
    have = latest.manifest.get("fingerprint_parts")
    if not isinstance(have, dict):
        diff = ["the run predates recorded fingerprints"]
    else:
        diff = [f"{k}: {have.get(k)!r} then, {v!r} now" for k, v in parts.items() if have.get(k) != v]
    raise StateError(f"{latest.path} is unfinished but was made under other conditions ({'; '.join(diff)}); "
                     "resuming would mix its rows with these",
                     hint="restore those conditions to resume it, or --force to start a new run")


class Executor(Protocol):
    """What measures a session's missing repetitions, a module each: the lab here, its points in
    turn or as `linklab ab` asks (engine.LabExecutor), no lab (dry.DryExecutor), a Ray cluster's
    workers (linklab/cluster/run.Driver). It records each repetition in the run itself; `fill`
    does what is the same for all around it, so a new executor needs no change here."""

    at_once: int  # how many repetitions it measures at the same time (the progress line's ETA)

    def measure(self, points: list[Point], todo: dict[str, list[int]], progress: Progress) -> None:
        """Measure `todo` ({point id: [rep, ...]}, every point of `points` listed), telling `progress`."""

    def finish(self) -> dict[str, Any]:
        """After `measure`, whatever happened: put away what it used (servers, the lab's settings,
        a cluster's labs); what the manifest adds (its `timing` joins the session's)."""


def fill(store: ResultsStore, exp: Experiment, points: list[Point], opts: Options, executor: Executor,
         started: float, say) -> None:
    """The run's missing repetitions, measured by `executor`: partial results removed, failed ones
    set aside to be measured again (unless --no-retry); after it, whatever happened, the table and
    the manifest's timing (`started`: when the session began); `complete` once nothing failed (or
    failures are accepted)."""
    for leftover in store.clean_partial():
        say(f"  removed partial result {leftover}")
    if opts.retry_failed:
        for point_id, rep in sorted(store.failed()):
            say(f"  retrying failed repetition (first attempt kept in {store.set_aside_failed(point_id, rep)})")
    done = store.completed()
    todo = {p.id: [r for r in range(1, exp.repetitions + 1) if (p.id, r) not in done] for p in points}
    total = len(points) * exp.repetitions
    progress = Progress(total, already_done=total - sum(map(len, todo.values())), workers=executor.at_once)
    try:
        executor.measure(points, todo, progress)
    finally:
        progress.close()
        extra = executor.finish()
        store.write_table()
        store.update_manifest(**{**extra, "timing": {**extra.get("timing", {}),
                                                     "sweep_wall_s": round(time.monotonic() - started, 3)}})
    if not store.failed() or not opts.retry_failed:
        store.mark_complete()
