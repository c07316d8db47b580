"""A baseline's noise floor: how far quiet reruns on the same machine kind moved from it with
nothing changed, per metric. Measured, not guessed: `linklab noise BASELINE RERUNS...` writes it
as BASELINE/noise.json, and `linklab compare` reads it from there.

Per rerun, point and metric the score is how far the rerun's mean lies from the baseline's, on
the metric's scale (bands.py): |new/baseline - 1| for "rel", |log ratio| for "log", the plain
difference for "abs". Per metric the floor is the wider of
  - the largest score seen: distribution-free, a quiet rerun lies beyond the largest of N
    exchangeable scores with probability at most 1/(N+1), whatever the distribution;
  - z(1 - a/2) · RMS(scores) with a = FAMILY_ALPHA / pairs (Bonferroni over the point x metric
    pairs the baseline has): under normal noise, a quiet rerun then fails the gate in at most
    FAMILY_ALPHA of the runs, however many pairs it judges.
Scores come only from repetitions measured on a quiet host (no host_disturbed flag) that did not
fail. A metric with fewer than MIN_SCORES scores gets no measured floor (its declared one stays).

Structure seen in the quiet reruns is kept too, per point: the flags they carried and how a bond
spread their traffic (one member or several). A flag such as core_saturated that comes and goes
between quiet runs of a point is then not "new" when a later run carries it (compare.py).
The floor belongs to the baseline it was measured against: re-record one, re-measure the other.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from statistics import NormalDist
from typing import Any

from linklab.errors import UsageError
from linklab.report import metrics
from linklab.report.bands import Floor, sample
from linklab.report.points import Point, group
from linklab.report.runs import Run
from linklab.fsutil import read_json_written_by, write_json_atomic

NOISE_FILE = "noise.json"
FORMAT = "linklab-noise-floor/1"
FAMILY_ALPHA = 0.05
MIN_SCORES = 10
MIN_RERUNS = 3
ASKED_RERUNS = 10  # what a noise floor should rest on (fewer: measured, but said so)


@dataclass
class NoiseFloor:
    path: Path | None
    floors: dict[str, dict[str, Any]]          # metric key -> {"scale", "floor", "n", "max", "rms", ...}
    meta: dict[str, Any] = field(default_factory=dict)

    def floor(self, metric: metrics.Metric) -> Floor | None:
        f = self.floors.get(metric.key)
        if not f or f.get("scale") != metric.scale:  # measured on a scale metrics.py no longer uses
            return None
        return Floor(float(f["floor"]), "measured")

    def seen(self, key: str) -> dict[str, Any]:
        """Structure the quiet reruns showed at a point (point_key()): {"flags": [...], "members": {col: [...]}}."""
        return (self.meta.get("structure_seen") or {}).get(key) or {}

    def describe(self) -> str:
        reruns = len(self.meta.get("reruns") or [])
        return (f"noise floor measured from {reruns} quiet rerun{'s' * (reruns != 1)} of "
                f"{self.meta.get('experiment')} ({self.path}, {self.meta.get('measured_at', '?')[:10]})")

    @classmethod
    def load(cls, path: Path) -> NoiseFloor:
        data = read_json_written_by(path, FORMAT, "metrics", "noise floor", "linklab noise", "BASELINE RERUNS...")
        return cls(Path(path), data["metrics"], {k: v for k, v in data.items() if k != "metrics"})

    def save(self, path: Path) -> Path:
        write_json_atomic(path, {**self.meta, "format": FORMAT, "metrics": self.floors})
        self.path = path
        return path


def for_baseline(base: Run) -> NoiseFloor | None:
    """The noise floor stored beside a baseline, if one was measured."""
    p = base.path / NOISE_FILE
    return NoiseFloor.load(p) if p.is_file() else None


def judged_pairs(base: Run) -> int:
    """How many point x metric pairs a comparison with this baseline judges."""
    return sum(1 for p in group(base) for m in metrics.METRICS
               if m.judged and any(m.get(r) is not None for r in p.clean))


def paired_samples(base: Run, run: Run, want=lambda m: m.judged):
    """(point, metric, baseline's sample, run's sample) for each point both runs measured on a
    quiet host and each metric `want` keeps that both have; the run's rates brought to the
    baseline's scale."""
    ratio = base.scale / run.scale if run.scale else 1.0
    by_key = {p.key(): p for p in group(run)}
    for p in group(base):
        q = by_key.get(p.key())
        if q is None:
            continue
        for m in metrics.METRICS:
            if not want(m):
                continue
            b = sample(m, [v for r in p.clean if (v := m.get(r)) is not None])
            n = sample(m, [v * (ratio if m.scaled else 1.0) for r in q.clean if (v := m.get(r)) is not None])
            if b is not None and n is not None:
                yield p, m, b, n


def scores(base: Run, rerun: Run) -> dict[str, list[float]]:
    """Per metric, how far each of the rerun's points lies from the baseline's, on the metric's scale."""
    out: dict[str, list[float]] = {}
    for _, m, b, n in paired_samples(base, rerun):
        if m.scale == "rel":
            if b.y == 0:
                continue
            s = abs(n.y / b.y - 1)
        else:
            s = abs(n.y - b.y)
        out.setdefault(m.key, []).append(s)
    return out


def measure(base: Run, reruns: list[Run], family_alpha: float = FAMILY_ALPHA) -> NoiseFloor:
    from linklab.report import machine
    from linklab.report.compare import check_comparable, identity, run_level  # compare imports this module

    if len(reruns) < MIN_RERUNS:
        raise UsageError(f"a noise floor needs at least {MIN_RERUNS} quiet reruns (got {len(reruns)}; "
                         f"{ASKED_RERUNS} or more make a floor worth gating on)")
    bp = group(base)
    for r in reruns:
        check_comparable(base, r, set())
        # A rerun on a machine of another speed moves by what the speed does, not by noise: it
        # would widen every band by the machines' difference (speed.py measures that per point).
        lv = run_level(bp, r)
        if lv.other_machine:
            raise UsageError(f"{r.path}: its CPU level is {lv.words()}: not a quiet rerun on the baseline's "
                             f"machine kind (beyond x{machine.OTHER_MACHINE:g})",
                             hint="rerun on a machine of the baseline's speed; runs on another speed make a speed "
                                  "response (`linklab speed BASELINE RUNS...`)")
    pairs = judged_pairs(base)
    if not pairs:
        raise UsageError(f"{base.path}: the baseline has no measured repetition to compare against")
    z = NormalDist().inv_cdf(1 - family_alpha / pairs / 2)
    all_scores: dict[str, list[float]] = {}
    for r in reruns:
        for k, v in scores(base, r).items():
            all_scores.setdefault(k, []).extend(v)
    floors: dict[str, dict[str, Any]] = {}
    too_few: dict[str, int] = {}
    for m in metrics.METRICS:
        got = sorted(all_scores.get(m.key, []))
        if not got:
            continue
        if len(got) < MIN_SCORES:
            too_few[m.key] = len(got)
            continue
        rms = math.sqrt(math.fsum(s * s for s in got) / len(got))
        floors[m.key] = {"scale": m.scale, "floor": max(got[-1], z * rms), "n": len(got), "max": got[-1],
                         "rms": rms, "median": got[len(got) // 2]}
    disturbed = sum(1 for r in reruns for row in r.ok_rows() if "host_disturbed" in str(row.get("flags") or ""))
    seen = structure_seen(reruns)
    meta = {"baseline": str(base.path), "baseline_run": base.name, **identity(base),
            "reruns": [r.name for r in reruns], "rerun_paths": [str(r.path) for r in reruns],
            "rows_left_out_disturbed": disturbed, "family_alpha": family_alpha, "pairs": pairs, "z": z,
            "measured_at": datetime.now().astimezone().isoformat(timespec="seconds"),
            "too_few_scores": too_few, "structure_seen": seen}
    return NoiseFloor(None, floors, meta)


def structure_seen(reruns: list[Run]) -> dict[str, dict[str, Any]]:
    """Per point (point_key()): the flags quiet repetitions carried and the bond member classes
    ("one member" / "spread") they showed."""
    from linklab.report.compare import MEMBER_COLUMNS, member_classes  # compare imports this module
    from linklab.report.points import row_flags

    out: dict[str, dict[str, Any]] = {}
    for run in reruns:
        for p in group(run):
            entry = out.setdefault(point_key(p), {"flags": [], "members": {}})
            entry["flags"] = sorted(set(entry["flags"]) | {f for r in p.clean for f in row_flags(r)})
            for col in MEMBER_COLUMNS:
                kinds = set(member_classes(p.clean, col))
                if kinds:
                    entry["members"][col] = sorted(set(entry["members"].get(col, [])) | kinds)
    return out


def point_key(p: Point) -> str:
    """A point's identity (its parameters) as text: the key noise.json keeps structure under."""
    return json.dumps(p.key())


def load_reruns(targets: list[str]) -> list[Run]:
    """Runs from what users type: run directories, or directories holding runs (every complete run
    in them, e.g. results-noise/e1_bonding_mtu)."""
    from linklab.results.store import MANIFEST, ResultsStore

    runs: list[Run] = []
    for t in targets:
        p = Path(t)
        if (p / MANIFEST).is_file():
            runs.append(Run.load(p))
        elif p.is_dir():
            found = [s for s in ResultsStore.runs(p.parent, p.name) if s.manifest.get("complete")]
            if not found:
                raise UsageError(f"{p}: no complete run in it", hint="give run directories or a directory of runs")
            runs += [Run.load(s.path) for s in found]
        else:
            raise UsageError(f"{t}: not a run directory nor a directory of runs")
    return runs


def render(nf: NoiseFloor) -> str:
    lines = [f"noise floor of {nf.meta.get('baseline')} ({nf.meta.get('experiment')}, {nf.meta.get('placement')}) "
             f"from {len(nf.meta.get('reruns') or [])} reruns; {nf.meta.get('pairs')} pairs judged, "
             f"z = {nf.meta.get('z', 0):.2f} (family false-alarm rate {nf.meta.get('family_alpha')})"]
    rows = [["metric", "scale", "scores", "median", "largest", "RMS", "floor"]]
    for key, f in nf.floors.items():
        m = metrics.BY_KEY.get(key)
        unit = {"rel": "of the mean", "log": "log ratio", "abs": m.unit if m else ""}[f["scale"]]
        fmt = (lambda v: f"{100 * v:.1f} %") if f["scale"] == "rel" else (lambda v: f"{v:.3g}")
        rows.append([m.title if m else key, unit, str(f["n"]), fmt(f["median"]), fmt(f["max"]), fmt(f["rms"]),
                     fmt(f["floor"])])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if nf.meta.get("too_few_scores"):
        lines.append(f"too few scores for a floor (declared floors stay): {nf.meta['too_few_scores']}")
    if nf.meta.get("rows_left_out_disturbed"):
        lines.append(f"{nf.meta['rows_left_out_disturbed']} repetitions left out: measured on a busy host")
    if len(nf.meta.get("reruns") or []) < ASKED_RERUNS:
        lines.append(f"warning: fewer than {ASKED_RERUNS} reruns: the floor's tail rests on few samples")
    return "\n".join(lines)
