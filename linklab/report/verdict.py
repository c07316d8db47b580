"""The verdict: does run B differ from run A? One model, for `linklab ab` (A and B measured side
by side, interleaved: the gate) and `linklab compare` (a stored run against a run from another
time or machine: advisory, since whatever differed between the two times differs here too).
docs/verdicts.md applies it by hand.

Points are matched by their parameters; every point of A is judged. Any check failing is a
difference (exit 1). There is nothing else: no allowance for a machine, no second run.

metric, per point and judged metric (metrics.py: its scale, harmless side, minimum effect):
  1. y = each repetition's value on the metric's scale: log(value + offset) for "rel" and "log"
     metrics (a ratio is then a difference), the value itself for "abs" ones.
  2. effect d = mean(y of B) - mean(y of A); B/A = exp(d) (B - A for "abs").
  3. spread s = the point's own (each arm's repetitions around their own mean, pooled), never
     below what the run's noise gives the point: its A/A spread (aa.py: how far d moved there over
     A/A runs, and never less than its repetitions moved there: d cannot be steadier than what it
     is the mean of) times the run's level (this run's own spreads against the A/A runs', over
     every point, at least 1); without an A/A spread, the run's own spread pooled over every point.
  4. interval d +- t * s * sqrt(1/nA + 1/nB), t Student's at 1 - alpha/2 for the degrees of
     freedom behind s (the point's A/A runs where its A/A spread sets s; else the run's own),
     alpha = ALPHA / K for the run's K tests (Bonferroni: a run where nothing changed fails any
     with probability at most ALPHA).
  5. FAIL when the interval excludes 0 (a change was measured), |d| reaches the minimum effect
     (smaller changes, however sure, are not worth a red build), and the side is not harmless
     (CPU may fall). A bond member's share is named "members": one member against spread.
     INCONCLUSIVE instead of FAIL where an arm's every repetition at the point was measured on a
     busy host (below): the difference may be the host's.
  6. the same, per metric, over every point at once: the mean of the points' d, its standard error
     sqrt(sum of theirs squared) / points (a change at every point, too small to show at one),
     over the points judged on quiet repetitions.
structure:
  missing     A's point is not in B               failed     a repetition failed in B, not in A
  preflight   pre-flight failed in B where it passed in A, or the other way round
  path_mtu    another path MTU than A's           baseline   A has nothing measured at the point
  flag        over the run, B's repetitions carry a flag more often than A's beyond chance
              (Fisher's exact test, one side, at the same alpha); a flag that went away is harmless
Flags about the host are the host's, not the lab's. A repetition measured while other work or
the hypervisor took the host's CPU (host_disturbed, host_stolen) says how busy the machine was,
not how the link behaved: a point's metrics are judged on its other repetitions, or on all of them
when every one of an arm's was so; a difference found there is INCONCLUSIVE, not FAIL (the busy
host may have slowed one arm and not the other), and the run's result says so (inconclusive:
measure again on a quieter machine). Anything else that fails still fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from linklab.errors import result_exit_code
from linklab.measure.stats import t_quantile
from linklab.report import metrics
from linklab.report.aa import Spread
from linklab.measure.flags import HOST_FLAGS, row_flags
from linklab.report.points import Point, group
from linklab.report.runs import Run, row_ok

ALPHA = 0.05  # the chance that a run where nothing changed fails any check that is a test

WITHIN, FAIL, HARMLESS, INCONCLUSIVE = "within", "FAIL", "harmless", "inconclusive"
EVERY_POINT = "(every point)"  # the point of a check over the whole run


@dataclass
class Check:
    point: str
    rule: str                     # "metric" or a structural rule
    what: str                     # metric title, or the structural item
    verdict: str
    metric: metrics.Metric | None = None
    a: tuple[float, ...] = ()     # metric: A's values, B's values (the metric's unit)
    b: tuple[float, ...] = ()
    effect: float = 0.0           # metric: d on the metric's scale
    low: float = 0.0              # metric: the interval of d
    high: float = 0.0
    a_text: str = ""              # structural: what A had, what B has
    b_text: str = ""

    @property
    def ratio(self) -> float | None:
        """B/A on a log or relative scale (None for "abs" metrics, whose effect is a difference)."""
        return math.exp(self.effect) if self.metric is not None and self.metric.scale != "abs" else None

    def interval_text(self) -> str:
        if self.metric is None:
            return "-"
        if self.metric.scale == "abs":
            return f"{self.effect:+.3g} [{self.low:+.3g}, {self.high:+.3g}]"
        return f"x{math.exp(self.effect):.3f} [{math.exp(self.low):.3f}, {math.exp(self.high):.3f}]"


@dataclass
class Result:
    a: Run
    b: Run
    paired: bool                  # measured side by side (`linklab ab`) or not (`compare`: advisory)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    alpha: float = ALPHA          # each test's share of ALPHA (Bonferroni)
    # metric -> this run's noise: its pooled spread, or "metric/level" -> its level against the A/A runs
    levels: dict[str, float] = field(default_factory=dict)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == FAIL]

    @property
    def inconclusive(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == INCONCLUSIVE]

    @property
    def ok(self) -> bool:
        return not self.failures

    def words(self) -> str:
        """The result in words: what `linklab ab` prints last and exits by (exit_code)."""
        if self.failures:
            return f"DIFFERS ({len(self.failures)} checks)"
        if self.inconclusive:
            return (f"inconclusive ({len(self.inconclusive)} checks differ where an arm was measured on a busy host "
                    "only; measure again on a quieter machine)")
        return "no difference found"

    def exit_code(self) -> int:
        """How `linklab ab` and `compare` exit for this result (linklab.errors decides the numbers)."""
        return result_exit_code(bool(self.failures), bool(self.inconclusive))


# -- the model ---------------------------------------------------------------------------------

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


def cells(pairs: list[tuple[Point, Point]]) -> list[tuple[Point, metrics.Metric, list[float], list[float], bool]]:
    """(A's point, metric, A's values, B's values, busy host) for every judged metric both arms
    measured at a point."""
    out = []
    for p, q in pairs:
        busy, ra, rb = busy_host(p, q), judged_rows(p), judged_rows(q)  # once per point, not per metric
        for m in metrics.METRICS:
            if m.judged and (va := values(m, ra)) and (vb := values(m, rb)):
                out.append((p, m, va, vb, busy))
    return out


def own_spread(m: metrics.Metric, va: list[float], vb: list[float]) -> tuple[float, int]:
    """The point's own spread (sd of one repetition, both arms pooled, on the metric's scale) and its df."""
    df = len(va) + len(vb) - 2
    return (math.sqrt((sum_of_squares(scaled(m, va)) + sum_of_squares(scaled(m, vb))) / df) if df > 0 else 0.0), df


def noise_levels(cs, aa: Spread | None) -> dict[str, tuple[float, int]]:
    """Per metric, this run's noise over every point, with its degrees of freedom. Where an A/A
    spread was recorded ("<metric>/level"): how many times noisier this run's repetitions were than
    the A/A runs' at the same points, sqrt(sum of df * own**2 / sum of df * sigma_within**2) (a
    ratio of pooled variances: a point the A/A runs found perfectly steady cannot blow it up);
    where not ("<metric>"): the run's own spread pooled over every point, on the metric's scale."""
    acc: dict[str, list[float]] = {}
    for p, m, va, vb, _busy in cs:
        own, df = own_spread(m, va, vb)
        if df <= 0:
            continue
        shape = aa.of(p, m) if aa else None
        a = acc.setdefault(m.key + "/level" if shape else m.key, [0.0, 0.0, 0])
        a[0] += df * own ** 2
        a[1] += df * (shape[1] ** 2 if shape else 1.0)
        a[2] += df
    return {k: (math.sqrt(num / den), int(n)) for k, (num, den, n) in acc.items() if n and den > 0}


def estimate(p: Point, m: metrics.Metric, va: list[float], vb: list[float],
             levels: dict[str, tuple[float, int]], aa: Spread | None) -> tuple[float, float, int]:
    """The effect d at one point (steps 1-2), its standard error and degrees of freedom (step 3)."""
    ya, yb = scaled(m, va), scaled(m, vb)
    d = sum(yb) / len(yb) - sum(ya) / len(ya)
    own, _ = own_spread(m, va, vb)
    shape = aa.of(p, m) if aa else None
    level, df = levels.get(m.key + "/level" if shape else m.key, (0.0, 0))
    # The point's spread: its own, never below what this run's noise gives it (its A/A spread
    # times the run's level, at least the A/A runs' own; or the run's pooled spread). Degrees of
    # freedom: those of the estimate the interval's width rests on. With an A/A spread, that is
    # the point's A/A runs (one d each): the level only ever widens it, so its own uncertainty
    # cannot make an interval too narrow, while a point's spread from three runs can be half the
    # truth, and the run's df added to them would make it look sure.
    s = max(own, max(shape[0], shape[1]) * max(1.0, level) if shape else level)
    return d, s * math.sqrt(1 / len(ya) + 1 / len(yb)), shape[2] if shape else df


def decide(m: metrics.Metric, d: float, se: float, df: int, alpha: float) -> tuple[str, float, float]:
    """Steps 4-5: the verdict and the interval of d."""
    if not df:  # nothing says how far it moves by chance (one repetition a side, no A/A spread)
        return WITHIN, -math.inf, math.inf
    half = t_quantile(1 - alpha / 2, df) * se  # 0 where every value was the same: any move is a change
    low, high = d - half, d + half
    changed = low > 0 or high < 0
    big = abs(d) >= min_effect(m) * (1 - 1e-9)
    harmless = m.sides != "both" and (m.sides == "upper") != (d > 0)
    return (WITHIN if not (changed and big) else HARMLESS if harmless else FAIL), low, high


def metric_checks(cs, levels: dict[str, tuple[float, int]], alpha: float, aa: Spread | None) -> list[Check]:
    """Every point and metric (module text, steps 1-5), then each metric over every point at once:
    the mean of the points' effects, its standard error from theirs (a change at every point,
    each too small to show alone, shows together)."""
    out, by_metric = [], {}
    for p, m, va, vb, busy in cs:
        d, se, df = estimate(p, m, va, vb, levels, aa)
        verdict, low, high = decide(m, d, se, df, alpha)
        out.append(Check(p.label, m.check, m.title, INCONCLUSIVE if busy and verdict == FAIL else verdict,
                         m, tuple(va), tuple(vb), d, low, high))
        if not busy:
            by_metric.setdefault(m.key, []).append((d, se, df, sum(va) / len(va), sum(vb) / len(vb)))
    for key, got in by_metric.items():
        if len(got) < 2:
            continue
        m = metrics.BY_KEY[key]
        d = sum(g[0] for g in got) / len(got)
        se = math.sqrt(sum(g[1] ** 2 for g in got)) / len(got)
        verdict, low, high = decide(m, d, se, min(g[2] for g in got), alpha)
        out.append(Check(EVERY_POINT, m.check, m.title, verdict, m, tuple(g[3] for g in got), tuple(g[4] for g in got),
                         d, low, high))
    return out


def fisher_more(a: int, n_a: int, b: int, n_b: int) -> float:
    """One-sided Fisher's exact test: the chance of B holding at least `b` of the a + b events
    if the n_a + n_b repetitions carried them at random (the same in both arms)."""
    k, n = a + b, n_a + n_b
    total = math.comb(n, k)
    return sum(math.comb(n_b, x) * math.comb(n_a, k - x) for x in range(b, min(k, n_b) + 1)) / total


def flag_counts(pairs: list[tuple[Point, Point]]) -> dict[str, list[tuple[str, int, int, int, int]]]:
    """flag -> [(point, A's reps carrying it, A's reps, B's, B's reps)] at every point where either
    arm carried it (the points that say something about it); host flags are the host's, not the lab's."""
    out: dict[str, list[tuple[str, int, int, int, int]]] = {}
    for p, q in pairs:
        a_flags = [set(row_flags(r)) - HOST_FLAGS for r in p.ok]
        b_flags = [set(row_flags(r)) - HOST_FLAGS for r in q.ok]
        for f in sorted(set().union(*a_flags, *b_flags)):
            out.setdefault(f, []).append((p.label, sum(f in x for x in a_flags), len(a_flags),
                                          sum(f in x for x in b_flags), len(b_flags)))
    return out


def flag_check(flag: str, counts: list[tuple[str, int, int, int, int]], alpha: float) -> Check:
    """A flag B carries more often than A over the run, beyond chance (Fisher, one-sided): B's new
    flags fail, a flag that went away is harmless."""
    a, n_a, b, n_b = (sum(c[i] for c in counts) for i in (1, 2, 3, 4))
    p_more, p_less = fisher_more(a, n_a, b, n_b), fisher_more(b, n_b, a, n_a)
    verdict = FAIL if p_more < alpha else HARMLESS if p_less < alpha else WITHIN
    where = "; ".join(f"{c[0]} {c[1]}/{c[2]} vs {c[3]}/{c[4]}" for c in counts[:6]) + (" ..." if len(counts) > 6 else "")
    return Check(EVERY_POINT, "flag", flag, verdict, a_text=f"in {a} of {n_a} repetitions",
                 b_text=f"in {b} of {n_b} (p = {min(p_more, p_less):.2g}, fails below {alpha:.2g}; {where})")


# -- structure ---------------------------------------------------------------------------------

def _error(row: dict[str, Any]) -> str:
    text = str(row.get("error") or row.get("preflight_problems") or "failed")
    return text if len(text) <= 120 else text[:117] + "..."


def _preflight_failed(row: dict[str, Any]) -> bool:
    return str(row.get("preflight_ok", True)).lower() == "false" or str(row.get("error") or "").startswith("pre-flight")


def state_checks(p: Point, q: Point) -> list[Check]:
    """Failed repetitions and pre-flight: B against A at one point."""
    out: list[Check] = []
    a_failed = [r for r in p.rows if not row_ok(r)]
    b_failed = [r for r in q.rows if not row_ok(r)]
    a_pf = [r for r in a_failed if _preflight_failed(r)]
    b_pf = [r for r in b_failed if _preflight_failed(r)]
    if b_pf and not a_pf:
        out.append(Check(p.label, "preflight", "pre-flight", FAIL, a_text=f"passed in {len(p.rows)} of {len(p.rows)}",
                         b_text=f"failed in {len(b_pf)} of {len(q.rows)}: {_error(b_pf[0])}"))
    elif a_pf and not p.ok and q.ok:
        out.append(Check(p.label, "preflight", "pre-flight", FAIL, a_text=f"failed: {_error(a_pf[0])}",
                         b_text=f"passed in {len(q.ok)} of {len(q.rows)}"))
    bad = [r for r in b_failed if not _preflight_failed(r)]
    if bad and (not a_failed or (not q.ok and p.ok)):
        out.append(Check(p.label, "failed", "repetitions", FAIL, a_text=f"{len(p.rows)} of {len(p.rows)} measured",
                         b_text=f"{len(bad)} of {len(q.rows)} failed: {_error(bad[0])}"))
    if not p.ok and a_failed and not a_pf and q.ok:
        out.append(Check(p.label, "baseline", "point", FAIL, a_text=f"every repetition failed: {_error(a_failed[0])}",
                         b_text="cannot be judged against it"))
    return out


def structure_checks(p: Point, q: Point) -> list[Check]:
    """The path MTU pre-flight found: B against A at one point."""
    a_mtu = {int(v) for r in p.ok if (v := metrics.num(r.get("path_mtu"))) is not None}
    b_mtu = {int(v) for r in q.ok if (v := metrics.num(r.get("path_mtu"))) is not None}
    if not (a_mtu and b_mtu):
        return []
    return [Check(p.label, "path_mtu", "path MTU", FAIL if b_mtu != a_mtu else WITHIN,
                  a_text=", ".join(map(str, sorted(a_mtu))), b_text=", ".join(map(str, sorted(b_mtu))))]


# -- the whole verdict -------------------------------------------------------------------------

def judge(a: Run, b: Run, paired: bool, aa: Spread | None = None) -> Result:
    """B judged against A: every point of A, structure and metrics; `aa`: the experiment's A/A
    spread (aa.py), whose per-point floors the intervals never go below."""
    res = Result(a, b, paired)
    ap, bp = group(a), group(b)
    b_by_key = {q.key(): q for q in bp}
    a_keys = {p.key() for p in ap}
    matched = []
    for p in ap:
        q = b_by_key.get(p.key())
        if q is None:
            res.checks.append(Check(p.label, "missing", "point", FAIL, a_text=f"{len(p.ok)} measured", b_text="not in B"))
            continue
        res.checks += state_checks(p, q)
        if p.ok and q.ok:
            res.checks += structure_checks(p, q)
            matched.append((p, q))
    cs = cells(matched)
    flags = flag_counts(matched)
    # Bonferroni over every check that is a test: a run where nothing changed fails any with chance <= ALPHA.
    tests = len(cs) + len({c[1].key for c in cs}) + len(flags)
    alpha = ALPHA / max(1, tests)
    levels = noise_levels(cs, aa)
    res.levels = {k: v[0] for k, v in levels.items()}
    res.checks += metric_checks(cs, levels, alpha, aa)
    res.checks += [flag_check(f, counts, alpha) for f, counts in flags.items()]
    res.alpha = alpha
    only_b = [q.label for q in bp if q.key() not in a_keys]
    if only_b:
        res.notes.append(f"only in B (not judged): {', '.join(only_b)}")
    res.notes.append(aa.describe() if aa else "no A/A spread recorded for this experiment: each interval rests on "
                     "this run's repetitions alone (`linklab aa EXPERIMENT` records one)")
    if cs and not levels and not aa:
        res.notes.append("one repetition per point in each run and no A/A spread: nothing says how far a metric "
                         "moves by chance, so no metric can fail; only the structure is judged (--pairs 2 or more)")
    if not paired:
        res.notes.append("advisory: A and B were not measured side by side, so whatever differed between their "
                         "times or machines (speed, load, the emulator's boot) differs here too; `linklab ab` "
                         "measures both interleaved")
    return res


# -- output ------------------------------------------------------------------------------------

def _fmt(m: metrics.Metric, vs: tuple[float, ...]) -> str:
    mean = sum(vs) / len(vs)
    return f"{format(mean, m.fmt)} (n={len(vs)})"


def row_text(c: Check) -> list[str]:
    if c.metric is not None:
        return [c.point, c.what, _fmt(c.metric, c.a), _fmt(c.metric, c.b), c.interval_text()]
    return [c.point, f"{c.rule}: {c.what}", c.a_text or "-", c.b_text or "-", "-"]


def table(checks: list[Check], verdicts: bool = True) -> list[str]:
    rows = [(["verdict"] if verdicts else []) + ["point", "what", "A", "B", "B/A [interval]"]]
    rows += [([c.verdict] if verdicts else []) + row_text(c) for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip() for r in rows]


def render(res: Result, show_all: bool = False) -> str:
    lines = [f"A  {res.a.path} ({res.a.name})", f"B  {res.b.path} ({res.b.name})"]
    lines += [f"note: {n}" for n in res.notes]
    others = [c for c in res.checks if c.verdict != FAIL and (show_all or c.verdict != WITHIN)]
    if others:
        lines += ["", "every other check:" if show_all else
                  "beyond the minimum effect on a harmless side, or where the host was busy (inconclusive):"]
        lines += ["  " + x for x in table(others)]
    if res.failures:
        lines += ["", f"DIFFERS ({len(res.failures)}):"] + ["  " + x for x in table(res.failures, verdicts=False)]
    mc = [c for c in res.checks if c.metric is not None]
    sc = [c for c in res.checks if c.metric is None]
    lines += ["", f"{len(mc)} point x metric checks (each at {res.alpha:.2g}), {sum(c.verdict == FAIL for c in mc)} failed; "
                  f"{len(sc)} structural checks, {sum(c.verdict == FAIL for c in sc)} failed"
                  + ("" if show_all else "; --all lists every check"),
              "result: " + res.words()]
    return "\n".join(lines)


def as_json(res: Result) -> dict[str, Any]:
    def one(c: Check) -> dict[str, Any]:
        d: dict[str, Any] = {"point": c.point, "rule": c.rule, "what": c.what, "verdict": c.verdict}
        if c.metric is not None:
            d.update(metric=c.metric.key, scale=c.metric.scale, sides=c.metric.sides, a=list(c.a), b=list(c.b),
                     effect=c.effect, low=c.low, high=c.high, ratio=c.ratio, min_effect=min_effect(c.metric))
        else:
            d.update(a=c.a_text, b=c.b_text)
        return d

    return {"format": 1, "ok": res.ok, "result": res.words(), "exit_code": res.exit_code(), "paired": res.paired, "a": str(res.a.path), "b": str(res.b.path),
            "alpha": ALPHA, "alpha_each": res.alpha, "levels": res.levels, "notes": res.notes,
            "failures": [one(c) for c in res.failures], "inconclusive": [one(c) for c in res.inconclusive], "checks": [one(c) for c in res.checks]}
