"""The dry-run workload (`linklab sweep EXP --dry-run [SECONDS]`): every repetition sleeps
instead of measuring, with no lab. It exercises what surrounds a measurement — the matrix,
shards, resuming, recording, a cluster's scheduling — at a known cost per point: the tests and
bench/ray_overhead.py use it to see the scheduler's own overhead.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # measure() is what a cluster's worker imports this for: nothing more
    from linklab.results.store import ResultsStore
    from linklab.sweep.experiment import Experiment
    from linklab.sweep.matrix import Point

PLACEMENT = {"kind": "dry-run"}


def measure(point: Point, rep: int, seconds: float) -> tuple[dict[str, str], dict[str, Any]]:
    """One dry repetition: (raw files, row), as a measured one gives them to the store."""
    t0 = time.monotonic()
    time.sleep(seconds)
    slept = time.monotonic() - t0
    raw = {"dry_run.txt": f"{point.key} rep {rep}: slept {slept:.3f} s in pid {os.getpid()} on {socket.gethostname()}\n"}
    return raw, {"point_key": point.key, "dry_run_s": seconds, "slept_s": round(slept, 4),
                 "started_at": time.strftime("%Y-%m-%dT%H:%M:%S")}


def fingerprint_parts(exp_path, exp: Experiment, opts) -> dict[str, Any]:
    """No lab: its seconds stand where a lab's settings would."""
    from linklab.sweep import session  # here: a cluster's worker imports this module for measure() alone
    from linklab.sweep.experiment import topology_path
    return session.fingerprint_parts(exp_path, topology_path(exp_path, exp), opts, {"overrides": [], "scale": None,
                                                          "placement": PLACEMENT["kind"], "dry_run_s": opts.dry_run})


def manifest(exp_path, exp: Experiment, points: list[Point], fingerprint: str, opts, parts: dict) -> dict[str, Any]:
    from linklab.sweep import session
    return session.manifest(exp_path, exp, points, fingerprint, opts, parts,
                            {"scale": None, "placement": PLACEMENT, "dry_run_s": opts.dry_run})


def run(exp_path: str | Path, opts, say=print) -> ResultsStore:
    """A dry sweep into the results store, resumable like a measured one."""
    from linklab.sweep import session
    from linklab.sweep.progress import Progress
    started = time.monotonic()
    exp = session.load_for(exp_path, opts)
    points = session.select_points(exp, opts)
    parts = fingerprint_parts(exp_path, exp, opts)
    store, complete = session.open_results(exp, parts, lambda fp: manifest(exp_path, exp, points, fp, opts, parts),
                                           opts, say)
    if complete:
        return store
    with store.lock():
        store.clean_partial()
        done = store.completed()
        todo = [(p, r) for p in points for r in range(1, exp.repetitions + 1) if (p.id, r) not in done]
        progress = Progress(len(points) * exp.repetitions, already_done=len(points) * exp.repetitions - len(todo))
        try:
            for point, rep in todo:
                progress.start_unit(f"{point.key} rep {rep}/{exp.repetitions}")
                raw, row = measure(point, rep, opts.dry_run)
                store.record(point, rep, raw, row)
                progress.finish_unit()
        finally:
            progress.close()
            store.write_table()
            store.update_manifest(timing={"sweep_wall_s": round(time.monotonic() - started, 3)})
        store.mark_complete()
    say(f"linklab: {exp.name}: dry run of {len(points)} points recorded in {store.path}")
    return store
