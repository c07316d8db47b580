"""Descriptive statistics over repetitions, stdlib only (no numpy/scipy on purpose).

Percentiles use linear interpolation between closest ranks (numpy's default, "type 7").
Confidence intervals use Student's t with the quantile computed exactly (regularised incomplete
beta + bisection), so n=2..5 repetitions get the right, wide intervals instead of 1.96.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def std(values: Sequence[float]) -> float:
    """Sample standard deviation (n-1). One value has no spread to estimate: nan."""
    n = len(values)
    if n == 0:
        raise ValueError("std of no values")
    if n == 1:
        return math.nan
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


def percentile(values: Sequence[float], p: float) -> float:
    """p in [0, 100]; linear interpolation at rank p/100*(n-1) of the sorted values."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile out of range 0-100: {p}")
    xs = sorted(values)
    rank = p / 100 * (len(xs) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


def _betacf(a: float, b: float, x: float) -> float:
    # Continued fraction for the incomplete beta (modified Lentz), as in Numerical Recipes 6.4.
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c if abs(1 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c if abs(1 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            return h
    raise ArithmeticError("incomplete beta did not converge")


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(lbeta)
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2, 0.5, x)
    return 1 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Inverse of t_cdf: the t with P(T <= t) = p. t_quantile(0.975, 4) = 2.7764..."""
    if not 0 < p < 1:
        raise ValueError(f"probability out of range (0, 1): {p}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:  # df=1, p=0.9995 needs ~637: grow the bracket first
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2


@dataclass(frozen=True)
class Summary:
    """Mean over n repetitions with a two-sided confidence interval (nan when n < 2)."""

    n: int
    mean: float
    std: float
    half_width: float
    level: float

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def row(self, prefix: str) -> dict[str, float | int]:
        return {f"{prefix}_n": self.n, f"{prefix}_mean": self.mean, f"{prefix}_std": self.std,
                f"{prefix}_ci_low": self.low, f"{prefix}_ci_high": self.high}


def confidence_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    s = summarize(values, level)
    return s.low, s.high


def summarize(values: Sequence[float], level: float = 0.95) -> Summary:
    if not 0 < level < 1:
        raise ValueError(f"confidence level out of range (0, 1): {level}")
    vals = [float(v) for v in values]
    m, s, n = mean(vals), std(vals), len(vals)
    hw = t_quantile(1 - (1 - level) / 2, n - 1) * s / math.sqrt(n) if n >= 2 else math.nan
    return Summary(n=n, mean=m, std=s, half_width=hw, level=level)


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index of shares (R. Jain, D. Chiu, W. Hawe, DEC-TR-301, 1984):
    (sum x)^2 / (n * sum x^2); 1 when all are equal, 1/n when one has everything. Shares that are
    all zero are equal: 1."""
    if not values:
        raise ValueError("fairness of no values")
    if any(v < 0 for v in values):
        raise ValueError(f"fairness of negative shares: {list(values)}")
    squares = math.fsum(v * v for v in values)
    if squares == 0:
        return 1.0
    return math.fsum(values) ** 2 / (len(values) * squares)
