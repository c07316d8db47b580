"""`linklab merge RUN… --out DIR`: one run made of the shards of a sweep (`linklab sweep
--shard K/N` on several machines: a Kubernetes Indexed Job, a Slurm array, a CI matrix).

Refused, with nothing written, when the shards are not parts of one sweep: runs `compare` would
refuse to compare (experiment, scale, placement; --allow-different as there), or made from other
files or settings (the fingerprint's experiment, topology, quick, overrides, repetitions); and
when a point is missing from every shard or recorded in two, named. Each repetition is
recorded again through the results store, raw files included; the merged run is written whole
or not at all (ResultsStore.building).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.verdict.compare import check_comparable
from linklab.results.runs import Run
from linklab.results.store import ResultsStore
from linklab.sweep.session import fingerprint_text
from linklab.sweep.matrix import Point, expand

# Fingerprint parts every shard must share; the rest (kernel, tool versions) may differ between
# machines and is kept in the merged manifest's `shards`.
SAME = ("experiment", "topology", "quick", "overrides", "repetitions", "dry_run_s")


def merge(paths: list[Path], out: Path, allow: set[str] = frozenset()) -> tuple[ResultsStore, list[str]]:
    """The merged run at `out`, and notes on what was allowed to differ."""
    if len(paths) < 1:
        raise UsageError("merge needs at least one run")
    runs = [Run.load(p) for p in paths]
    stores = [ResultsStore.open(p) for p in paths]
    notes = _check_same_sweep(runs, allow)
    points = expected_points(stores)
    sources = _sources(stores, {p.id for p in points})
    reps = int(runs[0].manifest.get("repetitions") or 1)
    missing = [f"{p.key} rep {r}" for p in points for r in range(1, reps + 1) if (p.id, r) not in sources]
    keys = {p.id: p.key for p in points}
    dup = [f"{keys[pid]} rep {r} (in {' and '.join(str(s.path) for s in where)})"
           for (pid, r), where in sorted(sources.items()) if len(where) > 1]
    if missing or dup:
        raise UsageError("the runs are not the shards of one complete sweep: "
                         + "; ".join(([f"missing from every run: {', '.join(missing)}"] if missing else [])
                                     + ([f"recorded twice: {', '.join(dup)}"] if dup else [])),
                         hint="run the missing shards (`linklab sweep EXP --shard K/N`) or leave out a run given twice")
    with ResultsStore.building(out, _manifest(runs, len(points))) as store:
        for point in points:
            for rep in range(1, reps + 1):
                src = sources[(point.id, rep)][0]
                raw, row, tool = src.read_rep(point.id, rep)
                store.record(point, rep, raw, row, tool)
                for attempt in src.attempts_aside(point.id, rep):  # failed or disturbed attempts: evidence too
                    store.keep_attempt(point.id, attempt)
        store.write_table()
        if not store.failed():
            store.mark_complete()
    return ResultsStore.open(out), notes


def _check_same_sweep(runs: list[Run], allow: set[str]) -> list[str]:
    notes: list[str] = []
    first = runs[0]
    have = first.manifest.get("fingerprint_parts") or {}
    for run in runs[1:]:
        notes += check_comparable(first, run, allow)
        parts = run.manifest.get("fingerprint_parts") or {}
        diff = [f"{k}: {have.get(k)!r} in {first.path}, {parts.get(k)!r} in {run.path}"
                for k in SAME if have.get(k) != parts.get(k)]
        if diff:
            raise UsageError("the runs are not shards of one sweep (their fingerprints differ): " + "; ".join(diff),
                             hint="merge shards made from the same experiment and topology files, with the same options")
    return sorted(set(notes))


def expected_points(stores: list[ResultsStore]) -> list[Point]:
    """Every point of the whole sweep, expanded again from a shard's manifest (its matrix and
    exclusions; the axis order is the points' own, as the manifest's JSON keys are sorted)."""
    manifest = stores[0].manifest
    matrix = manifest.get("matrix") or {}
    order: list[str] = []
    for store in stores:
        for pdir in sorted(store.points_dir.iterdir()) if store.points_dir.is_dir() else []:
            order = store.point_info(pdir.name).get("axis_order") or []
            break
        if order:
            break
    return expand({a: matrix[a] for a in order + [a for a in matrix if a not in order]},
                  exclude=manifest.get("exclude") or [])


def _sources(stores: list[ResultsStore], ids: set[str]) -> dict[tuple[str, int], list[ResultsStore]]:
    found: dict[tuple[str, int], list[ResultsStore]] = {}
    for store in stores:
        for pid, rep in store.completed():
            if pid not in ids:
                raise UsageError(f"{store.path}: point {pid} is not a point of the sweep its manifest describes")
            found.setdefault((pid, rep), []).append(store)
    return found


def _manifest(runs: list[Run], n_points: int) -> dict[str, Any]:
    first = runs[0].manifest
    drop = ("shard", "point_ids", "points_total", "run", "created_at", "complete", "finished_at", "timing")
    out = {k: v for k, v in first.items() if k not in drop}
    parts = {k: v for k, v in (first.get("fingerprint_parts") or {}).items() if k not in ("shard", "points")}
    out.update(points=n_points, fingerprint_parts=parts, fingerprint=fingerprint_text(parts),
               run=f"merged-{datetime.now():%Y%m%d-%H%M%S}", created_at=datetime.now().astimezone().isoformat(timespec="seconds"),
               shards=[{"run": str(r.path), "shard": r.manifest.get("shard"), "kernel": r.manifest.get("kernel"),
                        "placement": r.manifest.get("placement"), "scale": r.manifest.get("scale"),
                        "tool_versions": r.manifest.get("tool_versions")} for r in runs])
    return out
