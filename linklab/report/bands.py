"""Where a new run's mean may land if nothing changed: one metric, one point. Pure arithmetic.

Everything is computed on the metric's scale (metrics.SCALES): the value itself ("rel", "abs")
or log(value + offset) ("log": skewed counts such as retransmits, whose band is then
multiplicative). On that scale the band's half-width is the widest of

  prediction   t(1 - PREDICTION_ALPHA/2, n-1) · sd · sqrt(1/n + 1/m): where the mean of m new
               repetitions falls given the baseline's n (a prediction interval; its own spread,
               so a point noisier than the rest gets a wider band). n < 2: none.
  noise floor  what quiet reruns on this machine kind moved by (linklab/report/noise.py:
               measured, stored beside the baseline); without one, the metric's declared floors
               (metrics.py), said so in the output
  tolerance    --tolerance: at least this fraction of the baseline mean (another machine)
  resolution   the smallest difference the figure expresses

PREDICTION_ALPHA is per point and metric and deliberately not corrected for the number of pairs
a comparison judges: the noise floor carries that correction (noise.py), and a value must leave
both to fail, so the floor bounds the false alarms and the prediction interval only widens the
band where the baseline's own repetitions were noisier than the floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from linklab.measure.stats import mean, std, t_quantile
from linklab.report.metrics import Metric

PREDICTION_ALPHA = 0.01
TINY = 1e-12  # log scale: log(max(value + offset, TINY)) for a value that is (or rounds to) zero


def to_scale(metric: Metric, value: float) -> float:
    if metric.scale == "log":
        return math.log(max(value + metric.offset, TINY))
    return value


def from_scale(metric: Metric, y: float) -> float:
    if metric.scale == "log":
        return math.exp(y) - metric.offset
    return y


@dataclass(frozen=True)
class Sample:
    """One side's repetitions of a metric at a point, and their summary on the metric's scale."""

    values: tuple[float, ...]
    y: float          # mean on the metric's scale
    sd_y: float       # sample sd on the metric's scale (nan for one value)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return mean(self.values)

    @property
    def sd(self) -> float:
        """Spread in the metric's unit (nan for one value)."""
        return std(self.values)


def sample(metric: Metric, values: Sequence[float]) -> Sample | None:
    vals = tuple(float(v) for v in values)
    if not vals:
        return None
    ys = [to_scale(metric, v) for v in vals]
    return Sample(vals, mean(ys), std(ys))


@dataclass(frozen=True)
class Floor:
    """A noise floor on the metric's scale: a fraction of the mean ("rel"), log units ("log") or
    the metric's unit ("abs"), and where it came from."""

    value: float
    source: str  # "measured" or "declared"


def declared_floor(metric: Metric, base_mean: float) -> Floor:
    """The metric's declared floors (metrics.py), as a floor on its scale."""
    raw = max(metric.rel_floor * abs(base_mean), metric.abs_floor)
    if metric.scale == "rel":
        return Floor(raw / abs(base_mean) if base_mean else raw, "declared")
    if metric.scale == "log":
        centre = max(abs(base_mean) + metric.offset, TINY)
        return Floor(math.log((centre + raw) / centre), "declared")
    return Floor(raw, "declared")


@dataclass(frozen=True)
class Band:
    centre: float     # the baseline's mean on the metric's scale
    half: float       # half-width on the metric's scale
    source: str       # which part set it: prediction, noise floor (measured|declared), tolerance, resolution
    parts: dict[str, float]
    # Extra room on one side only, on the metric's scale: what another machine's speed moves the
    # metric by in one direction (linklab/report/machine.py).
    below: float = 0.0
    above: float = 0.0

    def bounds(self, metric: Metric) -> tuple[float, float]:
        """(low, high) in the metric's unit."""
        return (from_scale(metric, self.centre - self.half - self.below),
                from_scale(metric, self.centre + self.half + self.above))


def prediction_half(base: Sample, m: int, alpha: float = PREDICTION_ALPHA) -> float:
    if base.n < 2 or math.isnan(base.sd_y):
        return 0.0
    return t_quantile(1 - alpha / 2, base.n - 1) * base.sd_y * math.sqrt(1 / base.n + 1 / max(m, 1))


def band(metric: Metric, base: Sample, m: int, floor: Floor, tolerance: float = 0.0,
         below: float = 0.0, above: float = 0.0, on_top: bool = False) -> Band:
    """The band for the mean of m new repetitions around the baseline's, on the metric's scale;
    `below`/`above`: on that side only, the noise floor widened by this fraction of the baseline
    mean (another machine's speed: linklab/report/machine.py); `on_top`: the whole band widened
    by it instead (a machine that moves the value itself, whatever the baseline's spread)."""
    level = abs(from_scale(metric, base.y))  # the baseline's centre in the metric's unit
    parts = {"prediction": prediction_half(base, m)}
    if metric.scale == "rel":
        parts[f"noise floor ({floor.source})"] = floor.value * level
        parts["tolerance"] = tolerance * level
        parts["resolution"] = metric.resolution
    elif metric.scale == "log":
        parts[f"noise floor ({floor.source})"] = floor.value
        parts["tolerance"] = math.log1p(tolerance)
        centre = max(level + metric.offset, TINY)
        parts["resolution"] = math.log((centre + metric.resolution) / centre)
    else:
        parts[f"noise floor ({floor.source})"] = floor.value
        parts["tolerance"] = tolerance * level
        parts["resolution"] = metric.resolution
    source = max(parts, key=lambda k: parts[k])
    half = parts[source]
    # The extra room widens the noise floor (what reruns elsewhere move by), not the rest: a band
    # the baseline's own spread already made wider gets none.
    noise = parts[f"noise floor ({floor.source})"]

    def extra(fraction: float) -> float:
        if not fraction:
            return 0.0
        return _room(metric, level, fraction) if on_top else max(0.0, noise + _room(metric, level, fraction) - half)

    return Band(base.y, half, source, parts, extra(below), extra(above))


def _room(metric: Metric, level: float, fraction: float) -> float:
    """A fraction of the baseline mean as a distance on the metric's scale."""
    if metric.scale == "log":
        return math.log1p(fraction)
    return fraction * level


def side(metric: Metric, base: Sample, new: Sample, b: Band) -> str | None:
    """None inside the band, else "up" or "down" (the new mean's side of it)."""
    d = new.y - base.y
    # A hair of slack for floating point: a value exactly on the edge is inside.
    if abs(d) <= (b.half + (b.below if d < 0 else b.above)) * (1 + 1e-9) + 1e-12:
        return None
    return "up" if d > 0 else "down"


def fails(metric: Metric, direction: str | None) -> bool:
    return direction is not None and (metric.sides == "both" or (metric.sides == "upper") == (direction == "up"))
