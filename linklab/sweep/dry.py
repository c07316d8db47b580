"""The dry-run workload (`linklab sweep EXP --dry-run [SECONDS]`): every repetition sleeps
instead of measuring, with no lab. It exercises what surrounds a measurement — the matrix,
shards, resuming, recording, a cluster's scheduling — at a known cost per point: the tests and
bench/ray_overhead.py use it to see the scheduler's own overhead.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
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


@dataclass
class DryExecutor:
    """The session's executor (session.Executor) with no lab: each repetition sleeps `seconds`."""

    store: ResultsStore
    seconds: float
    repetitions: int  # the experiment's, for the progress line
    at_once: int = 1

    def measure(self, points: list[Point], todo: dict[str, list[int]], progress) -> None:
        for point in points:
            for rep in todo[point.id]:
                progress.start_unit(f"{point.key} rep {rep}/{self.repetitions}")
                raw, row = measure(point, rep, self.seconds)
                self.store.record(point, rep, raw, row)
                progress.finish_unit()

    def finish(self) -> dict[str, Any]:
        return {}


def run(exp_path: str | Path, opts, say=print, loaded=None) -> ResultsStore:
    """A dry sweep into the results store, resumable like a measured one (`loaded`: as engine.run)."""
    from linklab.sweep import session
    started = time.monotonic()
    exp = session.load_for(exp_path, opts, loaded)
    points = session.select_points(exp, opts)
    parts = fingerprint_parts(exp_path, exp, opts)
    store, complete = session.open_results(exp, parts, lambda fp: manifest(exp_path, exp, points, fp, opts, parts),
                                           opts, say)
    if complete:
        return store
    with store.lock():
        session.fill(store, exp, points, opts, DryExecutor(store, opts.dry_run, exp.repetitions), started, say)
    say(f"linklab: {exp.name}: dry run of {len(points)} points recorded in {store.path}")
    return store
