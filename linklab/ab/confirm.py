"""A difference at a point measured twice before `linklab ab` believes it (docs/verdicts.md,
"Measured again").

The first measurement judges every point and metric at once, each at ALPHA over their number
(Bonferroni), at the pairs asked for (two by default). That holds for noise the verdict models;
a hypervisor stealing for a minute between one arm's repetitions at one point is not, and at two
pairs a side nothing in the run shows it. So where B differs from A at a point or two, and only
in metrics, both arms measure those points again (--confirm pairs each, interleaved as before)
and the new repetitions alone are judged, as a run of their own. Only what they say counts at
those points: a chance difference of the first has to happen again, and a real one is measured
with more repetitions than it was found with.

Not measured again (the first verdict stands): a structural difference (a point missing or
failed, a pre-flight, a flag B carries more often), a metric over every point unless the run has
no more points than are measured again (the whole run again would be a run of its own, not a look
at what was found), and differences at more than MAX_POINTS points (chance moves one; B that
differs at three is what it looks like).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from linklab import fsutil
from linklab.ab import manifest as ab_manifest
from linklab.ab.arms import Arm
from linklab.results.points import Point, group, key_of
from linklab.results.runs import Run
from linklab.verdict.model import EVERY_POINT, Result

DIR = "confirm"  # the second measurement: an A/B run of its own inside the first's directory
MAX_POINTS = 2
AGAIN = "(every point measured again)"  # the second run's judgment over its points, in the verdict


def points(res: Result) -> list[Point]:
    """The first run's points to measure again: where a metric differs, when nothing else does
    and at MAX_POINTS points at most (empty: nothing to measure again)."""
    failures = res.failures
    labels = {j.point for j in failures if j.point != EVERY_POINT}
    if not labels or len(labels) > MAX_POINTS or any(j.metric is None for j in failures):
        return []
    points = group(res.a)
    if any(j.point == EVERY_POINT for j in failures) and len(labels) < len(points):
        return []  # a metric over every point: measured again only where that is every point
    return [p for p in points if p.label in labels]


def keeps(again: list[Point]) -> Callable[[dict[str, Any]], bool]:
    """Whether a point of an arm's sweep (its axes) is one of these."""
    keys = {p.key() for p in again}
    return lambda axes: key_of(axes) in keys


def prepare(run_dir: Path, arms: list[Arm], again: list[Point], pairs: int) -> tuple[Path, list[Arm]]:
    """The second measurement's run directory (its ab.json written) and the arms writing into it."""
    first = ab_manifest.read(run_dir)
    cdir = run_dir / DIR
    cdir.mkdir(exist_ok=False)  # a first run is measured again once
    manifest = {k: v for k, v in first.items() if k not in ("runs", "points", "unmatched", "wall_s", "finished_at")}
    manifest.update(kind="ab-confirm", pairs=pairs, complete=False, confirms=str(run_dir),
                    again=[p.label for p in again], subset={})
    fsutil.write_json_atomic(cdir / ab_manifest.AB_FILE, manifest)
    return cdir, [replace(arm, results=cdir / arm.name) for arm in arms]


def second(run_dir: Path) -> tuple[Run, Run, dict[str, Any]] | None:
    """The arms' runs of the second measurement and its ab.json, when one was made and is complete."""
    cdir = run_dir / DIR
    if not (cdir / ab_manifest.AB_FILE).is_file():
        return None
    m = ab_manifest.read(cdir)
    runs = m.get("runs") or {}
    if not m.get("complete") or set(runs) != {"a", "b"}:
        return None
    return Run.load(runs["a"]), Run.load(runs["b"]), m


def combine(first: Result, again: Result, pairs: int) -> Result:
    """The verdict: the first run's judgments at the points not measured again, the second's
    (under the first run's point labels) at those that were."""
    label = {q.key(): q.label for q in group(first.a)}
    relabel = {q.label: label.get(q.key(), q.label) for q in group(again.a)}
    measured = set(relabel.values())
    every = measured >= set(label.values())  # every point measured again: its judgments over them too
    kept = [j for j in first.judgments if j.point not in measured and not (every and j.point == EVERY_POINT)]
    over = EVERY_POINT if every else AGAIN
    redone = [replace(j, point=over if j.point == EVERY_POINT else relabel.get(j.point, j.point)) for j in again.judgments]
    note = (f"measured again ({DIR}/): {', '.join(sorted(measured))}, {pairs} pairs a side; the judgments there "
            "are the second measurement's alone (docs/verdicts.md, \"Measured again\")")
    return Result(first.a, first.b, first.paired, kept + redone, [*first.notes, note], first.alpha, first.noise)

