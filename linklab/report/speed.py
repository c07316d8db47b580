"""How a baseline's points move on a machine of another speed, measured per point and metric.

Under software emulation the emulator's speed moves more than CPU. Measured 2026-11-26 with E1
quick against its baseline, on a machine whose CPU level (machine.py) was x1.96 the baseline's:
most points kept their throughput within 3 %, but balance-rr at MTU 450 with one stream lost
21-23 % and its window in milliseconds grew x7, while 802.3ad at MTU 450 with one stream lost
8-15 % with its busiest core at 15 % (not a saturated core: one TCP flow through a slower
emulator). A single allowance for every point is either too narrow for those points or so wide
that a real 25 % loss elsewhere passes unseen.

So `linklab speed BASELINE RUNS...` takes runs of the baseline's experiment made on a machine of
another speed (level beyond machine.OTHER_MACHINE; a slower machine of the kind, or the same one
under load) and keeps, per point and metric, the exponents e of level**e = new/baseline (on the
metric's scale: log(value + offset) for "log" metrics) — the smallest and the largest seen, so
the worst of the runs sets the room. `linklab compare` at level L then gives that point's metric
room of |L**e - 1| of the baseline mean on the side it moved (compare.py), on top of its noise
floor: for throughput in place of machine.py's general allowance (a guess for points nobody
measured), for the others where the measured room is wider. Near-zero
"abs" metrics have no ratio: they are left out. Flags the slower runs carried are kept too: on a
machine at least that far from the baseline's speed, they are not new.

CPU metrics (machine == "cost") are judged divided by the run's level already (machine.py), and
their response is what remains after that division: e with level**e = (new / level) / baseline.
It moves their centre, not their room: compare divides a point's CPU by level**(1 + e), e the
middle of those seen, and the spread of the runs' e is the room. Why: the CPU metrics do not all
follow the level. On a machine 2x faster than E1's baseline machine (2026-11-28, level x0.49)
the busiest core and the sender's iperf3 fell with it (median x0.52, x0.40) but the receiver's
iperf3 did not (x0.75; x1.23-1.33 at MTU 450 and at balance-rr MTU 1500 with 20 streams: a faster
receiver wakes for less data per read), so divided by the level it sat 2.5-2.7x above the
baseline and failed the gate at four points with nothing changed. The old baseline's machine
(x0.38) had shown the same (x1.28 at those points): its per-point response, applied at x0.49,
predicted every CPU figure of that run within 0.73-1.29x, inside the CPU room machine.py gives
another machine.

The response belongs to the baseline it was measured against (BASELINE/speed.json): re-record
one, re-measure the other. A power law measured at one level is extrapolated to others; compare
says when it does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.fsutil import read_json_written_by, write_json_atomic
from linklab.report import machine, metrics
from linklab.report.points import HOST_FLAGS, group, row_flags
from linklab.report.runs import Run

SPEED_FILE = "speed.json"
FORMAT = "linklab-speed-response/1"


@dataclass
class SpeedResponse:
    path: Path | None
    # point_key -> metric key -> {"low": e, "high": e, "n": runs}; point_key -> flags seen
    exponents: dict[str, dict[str, dict[str, float]]]
    flags: dict[str, list[str]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def levels(self) -> list[float]:
        return [float(x) for x in self.meta.get("levels", [])]

    def applies(self, lv: machine.Level) -> bool:
        """Measured on the same side of the baseline's speed as a run at `lv`, and that run is on
        another machine: a faster machine's response says nothing of a slower one's."""
        return lv.other_machine and any((x > 1) == lv.slower for x in self.levels)

    def _exponent(self, point: str, metric: metrics.Metric, lv: machine.Level) -> dict[str, float] | None:
        """This point's exponents for the metric where they apply to a run at `lv`, else None."""
        e = (self.exponents.get(point) or {}).get(metric.key)
        return e if e and self.applies(lv) else None

    def room(self, point: str, metric: metrics.Metric, lv: machine.Level) -> tuple[float, float]:
        """(below, above) as fractions of the baseline mean (bands.band's `below`/`above`) for
        this point's metric in a run at `lv`; (0, 0) where nothing was measured."""
        e = self._exponent(point, metric, lv)
        if e is None:
            return 0.0, 0.0
        shifts = [x * lv.log for x in (e["low"], e["high"])]  # on the metric's scale per unit log level
        if metric.machine == "cost":  # around the centre cost_factor() moved it to
            mid = (shifts[0] + shifts[1]) / 2
            shifts = [x - mid for x in shifts]
        down, up = max(0.0, -min(shifts)), max(0.0, max(shifts))
        if metric.scale == "log":  # bands._room: log1p(fraction) is the distance on a log scale
            return math.expm1(down), math.expm1(up)
        return -math.expm1(-down), math.expm1(up)

    def measured(self, point: str, metric: metrics.Metric, lv: machine.Level) -> bool:
        """Was this point's metric measured at a speed on `lv`'s side of the baseline's?"""
        return self._exponent(point, metric, lv) is not None

    def cost_factor(self, point: str, metric: metrics.Metric, lv: machine.Level) -> float:
        """What a CPU metric of this point is divided by in a run at `lv`: the level, times what
        the point measurably did beyond it at that speed (the middle of the exponents seen)."""
        e = self._exponent(point, metric, lv)
        return math.exp(lv.log * (1 + ((e["low"] + e["high"]) / 2 if e else 0.0)))

    def seen(self, point: str, lv: machine.Level) -> list[str]:
        return list(self.flags.get(point, [])) if self.applies(lv) else []

    def describe(self, lv: machine.Level) -> str:
        lo, hi = min(self.levels), max(self.levels)
        span = f"x{lo:.2f}" if abs(hi - lo) < 0.005 else f"x{lo:.2f}-{hi:.2f}"
        beyond = not (min(lo, hi) - 0.005 <= lv.factor <= max(lo, hi) + 0.005)
        return (f"speed response measured from {len(self.levels)} run{'s' * (len(self.levels) != 1)} at {span} "
                f"the baseline's CPU level ({self.path}, {self.meta.get('measured_at', '?')[:10]})"
                + (f"; applied at x{lv.factor:.2f} as a power law (extrapolated)" if beyond else ""))

    @classmethod
    def load(cls, path: Path) -> SpeedResponse:
        data = read_json_written_by(path, FORMAT, "points", "speed response", "linklab speed", "BASELINE RUNS...")
        return cls(Path(path), data["points"], data.get("flags") or {},
                   {k: v for k, v in data.items() if k not in ("points", "flags")})

    def save(self, path: Path) -> Path:
        write_json_atomic(path, {**self.meta, "format": FORMAT, "points": self.exponents, "flags": self.flags})
        self.path = path
        return path


def for_baseline(base: Run) -> SpeedResponse | None:
    p = base.path / SPEED_FILE
    return SpeedResponse.load(p) if p.is_file() else None


def responds(metric: metrics.Metric) -> bool:
    """Metrics whose move with the machine's speed is measured per point (see the module's text)."""
    return metric.judged and (metric.machine == "cost" or metric.scale in ("rel", "log"))


def exponents(base: Run, run: Run, lv: machine.Level) -> dict[str, dict[str, float]]:
    """Per point and metric: e with level**e = the run's mean / the baseline's, on the metric's scale."""
    from linklab.report.noise import paired_samples, point_key  # noise imports compare, which imports this module

    out: dict[str, dict[str, float]] = {}
    for p, m, b, n in paired_samples(base, run, responds):
        if m.scale == "log":
            d = n.y - b.y
        elif m.machine == "cost":  # CPU: what it did beyond the level (near idle, a ratio is noise)
            if min(b.y, n.y) < machine.MIN_CPU_PCT:
                continue
            d = math.log(n.y / b.y) - lv.log
        elif b.y > 0 and n.y > 0:
            d = math.log(n.y / b.y)
        else:
            continue
        out.setdefault(point_key(p), {})[m.key] = d / lv.log
    return out


def measure(base: Run, runs: list[Run]) -> SpeedResponse:
    from linklab.report.compare import check_comparable, identity, run_level  # compare imports this module
    from linklab.report.noise import point_key

    if not runs:
        raise UsageError("no runs given", hint="give runs of the baseline's experiment made on a machine of another speed")
    levels: list[float] = []
    points: dict[str, dict[str, dict[str, float]]] = {}
    flags: dict[str, set[str]] = {}
    bp = group(base)
    for r in runs:
        check_comparable(base, r, set())
        lv = run_level(bp, r)
        if not lv.other_machine:
            raise UsageError(f"{r.path}: its CPU level is {lv.words() if lv.pairs else 'unknown (no CPU figures)'}: "
                             f"the baseline's speed (within x{machine.OTHER_MACHINE:g}), nothing to learn from",
                             hint="such a run is a quiet rerun: `linklab noise` measures the noise floor from those")
        levels.append(lv.factor)
        for key, per_metric in exponents(base, r, lv).items():
            for mk, e in per_metric.items():
                cur = points.setdefault(key, {}).get(mk)
                points[key][mk] = ({"low": e, "high": e, "n": 1} if cur is None else
                                   {"low": min(cur["low"], e), "high": max(cur["high"], e), "n": cur["n"] + 1})
        for p in group(r):
            seen = {f for row in p.clean for f in row_flags(row)} - set(HOST_FLAGS)
            if seen:
                flags.setdefault(point_key(p), set()).update(seen)
    if len({x > 1 for x in levels}) > 1:
        raise UsageError("the runs were measured on machines both faster and slower than the baseline's",
                         hint="measure one side at a time (a response holds for the side it was measured on)")
    meta = {"baseline": str(base.path), "baseline_run": base.name, **identity(base),
            "runs": [r.name for r in runs], "run_paths": [str(r.path) for r in runs],
            "levels": [round(x, 3) for x in levels],
            "measured_at": datetime.now().astimezone().isoformat(timespec="seconds")}
    return SpeedResponse(None, points, {k: sorted(v) for k, v in flags.items()}, meta)


def render(sr: SpeedResponse, limit: int = 12) -> str:
    """The points and metrics that moved most, in words."""
    moves = sorted(((max(abs(e["low"]), abs(e["high"])), key, mk, e) for key, per in sr.exponents.items()
                    for mk, e in per.items()), reverse=True)
    lv = machine.Level(math.log(max(sr.levels)) if max(sr.levels) > 1 else math.log(min(sr.levels)), 1)
    runs = len(sr.levels)
    lines = [f"speed response of {sr.meta.get('baseline')} from {runs} run{'s' * (runs != 1)} at CPU level "
             + ", ".join(f"x{x:.2f}" for x in sr.levels)]
    for _, key, mk, e in moves[:limit]:
        m = metrics.BY_KEY[mk]
        # What the metric did at that level, as a factor (log metrics: of value + offset; CPU:
        # beyond the level); a percentage of room reads wrongly for a log metric's x0.1.
        lo, hi = sorted(math.exp(x * lv.log) for x in (e["low"], e["high"]))
        moved = f"x{lo:.2f}" if hi - lo < 0.005 else f"x{lo:.2f}-{hi:.2f}"
        point = " ".join(f"{a}={v}" for a, v in json.loads(key))
        lines.append(f"  {point:40s} {m.title:34s} exponent {e['low']:+.2f}..{e['high']:+.2f}"
                     f"  at x{lv.factor:.2f}: {moved}{' beyond the level' if m.machine == 'cost' else ''}")
    return "\n".join(lines)
