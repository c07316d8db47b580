"""Steps 1-3 of docs/verdicts.md at one point: each repetition's value on the metric's scale, the
repetitions a point is judged on (those measured on a quiet host), and the point's own spread."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from linklab.results.points import Point
from linklab.verdict import metrics


def scaled(m: metrics.Metric, values: list[float]) -> list[float]:
    """Values on the metric's scale: log(value + offset) for "rel" and "log", as they are for "abs"."""
    if m.scale == "abs":
        return list(values)
    return [math.log(max(v + m.offset, 1e-12)) for v in values]


def sum_of_squares(ys: list[float]) -> float:
    mu = sum(ys) / len(ys)
    return sum((y - mu) ** 2 for y in ys)


def min_effect(m: metrics.Metric) -> float:
    """The metric's minimum effect (metrics.py) on its scale: a log ratio, or a difference in its unit."""
    return m.min_effect if m.scale == "abs" else math.log1p(m.min_effect)


def values(m: metrics.Metric, rows: list[dict[str, Any]]) -> list[float]:
    return [v for r in rows if (v := m.get(r)) is not None]


def quiet(p: Point) -> list[dict[str, Any]]:
    """The repetitions measured on a quiet host (linklab/measure/flags.py: flagged neither
    host_disturbed nor host_stolen)."""
    return p.quiet


def judged_rows(p: Point) -> list[dict[str, Any]]:
    """The repetitions a point's metrics are judged on: its quiet ones, or every one if none was
    (a difference found there is then inconclusive: busy_host)."""
    return quiet(p) or p.ok


def busy_host(p: Point, q: Point) -> bool:
    """Every repetition of one arm at this point was measured on a busy host."""
    return not quiet(p) or not quiet(q)


class Cell(NamedTuple):
    """One point and judged metric: the values judged (each arm's quiet repetitions where it has
    any: judged_rows), whether an arm had none (busy_host), and every measured repetition's values
    (the same where nothing was left out), which tell whether a difference shows only with the busy
    repetitions counted (judging.metric_judgments)."""
    point: Point
    metric: metrics.Metric
    a: list[float]
    b: list[float]
    busy: bool
    a_all: list[float]
    b_all: list[float]


def cells(pairs: list[tuple[Point, Point]], table: tuple[metrics.Metric, ...] = metrics.METRICS) -> list[Cell]:
    """A Cell for every judged metric both arms measured at a point; `table`: the runs' metrics
    (metrics.table_of: the declared ones too)."""
    out = []
    for p, q in pairs:
        busy, ra, rb = busy_host(p, q), judged_rows(p), judged_rows(q)  # once per point, not per metric
        for m in table:
            if m.judged and (va := values(m, ra)) and (vb := values(m, rb)):
                out.append(Cell(p, m, va, vb, busy, values(m, p.ok), values(m, q.ok)))
    return out


def own_spread(m: metrics.Metric, va: list[float], vb: list[float]) -> tuple[float, int]:
    """The point's own spread (sd of one repetition, both arms pooled, on the metric's scale) and its df."""
    df = len(va) + len(vb) - 2
    return (math.sqrt((sum_of_squares(scaled(m, va)) + sum_of_squares(scaled(m, vb))) / df) if df > 0 else 0.0), df
