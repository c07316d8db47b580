"""E1's CPU model: CPU% = alpha * R + beta, with R = throughput / (MTU * 8) packets/s.

Ordinary least squares over every repetition, with each coefficient's standard error and 95 %
confidence interval (Student's t, n-2 degrees of freedom) and R². The CPU% is the busiest
core's, as in the published per-core figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from linklab.measure.stats import t_quantile
from linklab.verdict import metrics


@dataclass(frozen=True)
class Fit:
    n: int
    alpha: float
    beta: float
    alpha_se: float
    beta_se: float
    alpha_ci: tuple[float, float]
    beta_ci: tuple[float, float]
    r2: float

    def predict(self, x: float) -> float:
        return self.alpha * x + self.beta


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> Fit | None:
    """y = alpha*x + beta; None when fewer than 3 points or x does not vary (no uncertainty)."""
    n = len(xs)
    if n != len(ys) or n < 3:
        return None
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys))
    alpha = sxy / sxx
    beta = my - alpha * mx
    sse = math.fsum((y - (alpha * x + beta)) ** 2 for x, y in zip(xs, ys))
    sst = math.fsum((y - my) ** 2 for y in ys)
    s2 = sse / (n - 2)
    alpha_se = math.sqrt(s2 / sxx)
    beta_se = math.sqrt(s2 * (1 / n + mx * mx / sxx))
    t = t_quantile(0.975, n - 2)
    return Fit(n, alpha, beta, alpha_se, beta_se, (alpha - t * alpha_se, alpha + t * alpha_se),
               (beta - t * beta_se, beta + t * beta_se), 1 - sse / sst if sst > 0 else 1.0)


def points(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(packets/s, busiest core %) per repetition that has both."""
    out = []
    for r in rows:
        x, y = metrics.packets_per_s(r), metrics.get("busiest_core_pct", r)
        if x is not None and y is not None:
            out.append((x, y))
    return out


def fit_rows(rows: list[dict[str, Any]]) -> Fit | None:
    pts = points(rows)
    return fit_line([p[0] for p in pts], [p[1] for p in pts])
