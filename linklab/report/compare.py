"""`linklab compare BASELINE NEW`: did NEW move outside what BASELINE's own spread allows?

Points are matched by their parameters (axis values), never by their order. Per point and
metric the band around the baseline mean is the widest of
  - t(0.975, n-1) · sd · sqrt(1/n + 1/m)  (n baseline and m new repetitions: the spread one
    expects between two means of this many repetitions, from the baseline's own variation),
  - the metric's relative floor × |baseline mean|, and its absolute floor (metrics.py),
so a baseline of one repetition still gets a band. A metric with a direction regresses only
one way (lower throughput, higher retransmits); moving the other way is an improvement, and a
metric without a direction (CPU %, cwnd) is reported as changed but never fails the gate.

A point whose repetitions (in either run) were measured while other work on the host took its
CPU (`host_disturbed`) is not judged: its figure says how busy the machine was, not how the
link behaved. It is listed as "disturbed" and never fails the gate.

`tolerance` widens every relative floor to at least that fraction: for a baseline recorded on
another machine, whose emulated CPU is faster or slower (CI vs the machine that recorded it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from linklab.errors import UsageError
from linklab.measure.stats import t_quantile
from linklab.report import metrics
from linklab.report.points import Point, group, row_flags
from linklab.report.runs import Run
from linklab.report.stats import Stats, describe

REGRESSED, IMPROVED, CHANGED, WITHIN, DISTURBED = "regressed", "improved", "changed", "within", "disturbed"
UNJUDGED_FLAGS = ("host_disturbed",)
CHECKS = ("experiment", "scale", "placement")


@dataclass
class Delta:
    point: str
    metric: metrics.Metric
    base: Stats
    new: Stats
    band: float
    verdict: str

    @property
    def change(self) -> float:
        return self.new.mean - self.base.mean

    @property
    def change_pct(self) -> float | None:
        return 100 * self.change / abs(self.base.mean) if self.base.mean else None


@dataclass
class Result:
    base: Run
    new: Run
    deltas: list[Delta] = field(default_factory=list)
    only_base: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.verdict == REGRESSED]

    @property
    def ok(self) -> bool:
        return not self.regressions


def identity(run: Run) -> dict[str, str]:
    return {"experiment": f"{run.experiment}{' (quick)' if run.manifest.get('quick') else ''}",
            "scale": f"{run.scale:g}", "placement": run.placement}


def check_comparable(base: Run, new: Run, allow: set[str]) -> list[str]:
    """Raise UsageError for runs that measure different things; notes for what was allowed."""
    bad = set(allow) - set(CHECKS)
    if bad:
        raise UsageError(f"unknown --allow-different value(s) {sorted(bad)} (valid: {', '.join(CHECKS)})")
    a, b = identity(base), identity(new)
    problems, notes = [], []
    for k in CHECKS:
        if a[k] != b[k]:
            (notes if k in allow else problems).append(f"{k}: baseline {a[k]}, new {b[k]}")
    if problems:
        raise UsageError("the runs are not comparable: " + "; ".join(problems),
                         hint="compare runs of the same experiment, scale and placement, or say which difference "
                              "is intended with --allow-different " + ",".join(k for k in CHECKS if a[k] != b[k]))
    ob, on = base.manifest.get("lab_overrides") or [], new.manifest.get("lab_overrides") or []
    if ob != on:
        notes.append(f"lab overrides differ: baseline {ob or 'none'}, new {on or 'none'}")
    return [f"allowed difference: {n}" if not n.startswith("lab ") else n for n in notes]


def spread(base: Stats, m: int) -> float:
    if base.n < 2 or math.isnan(base.sd):
        return 0.0
    return t_quantile(0.975, base.n - 1) * base.sd * math.sqrt(1 / base.n + 1 / max(m, 1))


def rel_floor(metric: metrics.Metric, tolerance: float = 0.0) -> float:
    return max(metric.rel_floor, tolerance) if metric.rel_floor else 0.0


def band(metric: metrics.Metric, base: Stats, m: int, tolerance: float = 0.0) -> float:
    return max(spread(base, m), rel_floor(metric, tolerance) * abs(base.mean), metric.abs_floor)


def bounds(metric: metrics.Metric, base: Stats, m: int, tolerance: float = 0.0) -> tuple[float, float]:
    """(low, high) for the new mean. A lower-is-better metric (counts, delays) falls by the
    same factor it may rise by: up to (1+f)·mean and down to mean/(1+f), so with a 100 % floor
    a halved count is an improvement, not noise."""
    half = band(metric, base, m, tolerance)
    lo, hi = base.mean - half, base.mean + half
    if metric.better == "lower" and base.mean > 0:
        lo = min(base.mean - spread(base, m), base.mean / (1 + rel_floor(metric, tolerance)) - metric.abs_floor)
    return lo, hi


def judge(metric: metrics.Metric, base: Stats, new: Stats, tolerance: float = 0.0) -> str:
    diff = new.mean - base.mean
    lo, hi = bounds(metric, base, new.n, tolerance)
    if lo <= new.mean <= hi:
        return WITHIN
    if metric.better is None:
        return CHANGED
    worse = diff < 0 if metric.better == "higher" else diff > 0
    return REGRESSED if worse else IMPROVED


def compare(base: Run, new: Run, allow: set[str] = frozenset(), tolerance: float = 0.0) -> Result:
    res = Result(base, new, notes=check_comparable(base, new, set(allow)))
    if tolerance:
        res.notes.append(f"relative bands widened to at least ±{100 * tolerance:g} % (--tolerance)")
    bp, np_ = group(base), group(new)
    if not base.ok_rows():
        raise UsageError(f"{base.path}: the baseline has no successful repetition to compare against")
    new_by_key = {p.key(): p for p in np_}
    base_keys = {p.key() for p in bp}
    res.only_base = [p.label for p in bp if p.key() not in new_by_key]
    res.only_new = [p.label for p in np_ if p.key() not in base_keys]
    scale_ratio = base.scale / new.scale if new.scale else 1.0
    for p in bp:
        q = new_by_key.get(p.key())
        if q is None:
            continue
        disturbed = _disturbed(p) or _disturbed(q)
        for m in metrics.METRICS:
            if not m.table:
                continue  # derived from another metric (packets/s from throughput): counted once
            b = _stats(p, m, 1.0)
            n = _stats(q, m, scale_ratio if m.scaled else 1.0)
            if b is None or n is None:
                continue
            half = band(m, b, n.n, tolerance)
            verdict = judge(m, b, n, tolerance)
            if disturbed and verdict != WITHIN:
                verdict = DISTURBED
            res.deltas.append(Delta(p.label, m, b, n, half, verdict))
    if not res.deltas:
        raise UsageError("no point of the new run matches a point of the baseline",
                         hint="points are matched by their axis values; the runs have different matrices")
    return res


def _disturbed(p: Point) -> bool:
    return any(flag in row_flags(r) for r in p.ok for flag in UNJUDGED_FLAGS)


def _stats(p: Point, m: metrics.Metric, factor: float) -> Stats | None:
    return describe([v * factor for r in p.ok if (v := m.get(r)) is not None])


def render(res: Result, show_all: bool = False) -> str:
    lines = [f"baseline {res.base.path} ({res.base.name})", f"new      {res.new.path} ({res.new.name})"]
    lines += [f"note: {n}" for n in res.notes]
    if res.only_base:
        lines.append(f"only in the baseline (not compared): {', '.join(res.only_base)}")
    if res.only_new:
        lines.append(f"only in the new run (not compared): {', '.join(res.only_new)}")
    # By default the table lists what moved with a direction; --all adds the rest.
    shown = [d for d in res.deltas if show_all or d.verdict in (REGRESSED, IMPROVED, DISTURBED)]
    if shown:
        rows = [["point", "metric", "baseline", "band ±", "new", "change", "verdict"]]
        for d in shown:
            f = d.metric.fmt
            pct = f"{d.change_pct:+.0f} %" if d.change_pct is not None else "-"
            rows.append([d.point, d.metric.title, format(d.base.mean, f) + f" (n={d.base.n})", format(d.band, f),
                         format(d.new.mean, f) + f" (n={d.new.n})", pct, d.verdict.upper() if d.verdict == REGRESSED
                         else d.verdict])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines.append("")
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    counts = {v: sum(1 for d in res.deltas if d.verdict == v) for v in (WITHIN, IMPROVED, CHANGED, REGRESSED, DISTURBED)}
    lines.append("")
    lines.append(f"{len(res.deltas)} point×metric pairs compared: {counts[WITHIN]} within their band, "
                 f"{counts[IMPROVED]} improved, {counts[CHANGED]} changed (no direction{'' if show_all else '; --all lists them'}), "
                 f"{counts[REGRESSED]} regressed" + (f", {counts[DISTURBED]} not judged (measured on a busy host: "
                                                     "host_disturbed)" if counts[DISTURBED] else ""))
    lines.append("result: " + ("within tolerance" if res.ok else "REGRESSION (outside tolerance)"))
    return "\n".join(lines)


def as_json(res: Result) -> dict[str, Any]:
    return {"ok": res.ok, "baseline": str(res.base.path), "new": str(res.new.path), "notes": res.notes,
            "only_baseline": res.only_base, "only_new": res.only_new,
            "deltas": [{"point": d.point, "metric": d.metric.key, "baseline_mean": d.base.mean, "baseline_n": d.base.n,
                        "band": d.band, "new_mean": d.new.mean, "new_n": d.new.n, "verdict": d.verdict}
                       for d in res.deltas]}
