"""The statistics every table shows: n, mean, standard deviation, variance and the 95 %
confidence interval (Student's t), over a point's repetitions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from linklab.measure.stats import summarize


@dataclass(frozen=True)
class Stats:
    n: int
    mean: float
    sd: float          # sample standard deviation (n-1); nan for one value
    variance: float
    ci_low: float      # nan for one value: no spread to estimate
    ci_high: float

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2

    def text(self, fmt: str = ".3g") -> str:
        """"92.0 ±25.4" (mean ± CI half-width), or the value alone for one repetition."""
        if self.n < 2 or math.isnan(self.half_width):
            return format(self.mean, fmt)
        return f"{format(self.mean, fmt)} ±{format(self.half_width, fmt)}"


def describe(values: Sequence[float], confidence: float = 0.95) -> Stats | None:
    vals = [float(v) for v in values]
    if not vals:
        return None
    s = summarize(vals, confidence)
    return Stats(n=s.n, mean=s.mean, sd=s.std, variance=s.std ** 2, ci_low=s.low, ci_high=s.high)
