"""The verdict of run B against run A (docs/verdicts.md): steps 3-5 per point and judged metric,
each metric over every point at once, then the structure; `judge` puts them together."""

from __future__ import annotations

import math

from linklab.measure.stats import t_quantile
from linklab.results.points import Point, group
from linklab.results.runs import Run
from linklab.verdict import metrics
from linklab.verdict.aa import Spread
from linklab.verdict.effect import Cell, cells, min_effect, own_spread, scaled
from linklab.verdict.model import ALPHA, EVERY_POINT, FAIL, HARMLESS, INCONCLUSIVE, WITHIN, Judgment, Result
from linklab.verdict.structure import flag_judgment, flag_counts, state_judgments, structure_judgments

NOISE_RATIO = "/noise_ratio"  # "<metric>/noise_ratio": the run's noise against the A/A runs' (run_noise)


def run_noise(cs, aa: Spread | None) -> dict[str, tuple[float, int]]:
    """Per metric, this run's noise over every point, with its degrees of freedom. Where an A/A
    spread was recorded ("<metric>/noise_ratio"): how many times noisier this run's repetitions were than
    the A/A runs' at the same points, sqrt(sum of df * own**2 / sum of df * sigma_within**2) (a
    ratio of pooled variances: a point the A/A runs found perfectly steady cannot blow it up);
    where not ("<metric>"): the run's own spread pooled over every point, on the metric's scale."""
    acc: dict[str, list[float]] = {}
    for p, m, va, vb, *_ in cs:
        own, df = own_spread(m, va, vb)
        if df <= 0:
            continue
        shape = aa.of(p, m) if aa else None
        a = acc.setdefault(m.key + NOISE_RATIO if shape else m.key, [0.0, 0.0, 0])
        a[0] += df * own ** 2
        a[1] += df * (shape[1] ** 2 if shape else 1.0)
        a[2] += df
    return {k: (math.sqrt(num / den), int(n)) for k, (num, den, n) in acc.items() if n and den > 0}


def estimate(p: Point, m: metrics.Metric, va: list[float], vb: list[float],
             noise: dict[str, tuple[float, int]], aa: Spread | None) -> tuple[float, float, int]:
    """The effect d at one point (steps 1-2), its standard error and degrees of freedom (step 3)."""
    ya, yb = scaled(m, va), scaled(m, vb)
    d = sum(yb) / len(yb) - sum(ya) / len(ya)
    own, _ = own_spread(m, va, vb)
    shape = aa.of(p, m) if aa else None
    ratio, df = noise.get(m.key + NOISE_RATIO if shape else m.key, (0.0, 0))
    # The point's spread: its own, never below what this run's noise gives it (its A/A spread
    # times the run's noise ratio, at least the A/A runs' own; or the run's pooled spread). Degrees of
    # freedom: those of the estimate the interval's width rests on. With an A/A spread, that is
    # the point's A/A runs (one d each): the noise ratio only ever widens it, so its own uncertainty
    # cannot make an interval too narrow, while a point's spread from three runs can be half the
    # truth, and the run's df added to them would make it look sure.
    s = max(own, max(shape[0], shape[1]) * max(1.0, ratio) if shape else ratio)
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


def busy_only(c: Cell, verdict: str, noise_all: dict[str, tuple[float, int]], alpha: float, aa: Spread | None) -> bool:
    """Whether a difference shows here only where the busy host's repetitions count: every
    repetition of an arm was busy and the point fails, or the quiet ones left too few to show
    what all of them fail on (a hypervisor stealing for minutes can leave one quiet repetition
    of five). Either way the busy host may be what moved it: inconclusive, never a pass.
    The second only where the interval rests on the run's own repetitions: an A/A spread at the
    point sets its degrees of freedom however many of them are left. `noise_all`: run_noise with
    every repetition counted."""
    own_width = not (aa and aa.of(c.point, c.metric))
    if verdict != FAIL and own_width and (c.a_all, c.b_all) != (c.a, c.b):
        d, se, df = estimate(c.point, c.metric, c.a_all, c.b_all, noise_all, aa)
        return decide(c.metric, d, se, df, alpha)[0] == FAIL
    return c.busy and verdict == FAIL


def metric_judgments(cs: list[Cell], noise: dict[str, tuple[float, int]], alpha: float,
                     aa: Spread | None) -> list[Judgment]:
    """Every point and metric (docs/verdicts.md, steps 1-5), then each metric over every point at once:
    the mean of the points' effects, its standard error from theirs (a change at every point,
    each too small to show alone, shows together)."""
    out, by_metric = [], {}
    noise_all = run_noise([c._replace(a=c.a_all, b=c.b_all) for c in cs], aa)
    for c in cs:
        p, m, va, vb, busy = c.point, c.metric, c.a, c.b, c.busy
        d, se, df = estimate(p, m, va, vb, noise, aa)
        verdict, low, high = decide(m, d, se, df, alpha)
        out.append(Judgment(p.label, m.rule, m.title, INCONCLUSIVE if busy_only(c, verdict, noise_all, alpha, aa) else verdict,
                         m, tuple(va), tuple(vb), d, low, high))
        if not busy:
            by_metric.setdefault(m, []).append((d, se, df, sum(va) / len(va), sum(vb) / len(vb)))
    for m, got in by_metric.items():
        if len(got) < 2:
            continue
        d = sum(g[0] for g in got) / len(got)
        se = math.sqrt(sum(g[1] ** 2 for g in got)) / len(got)
        verdict, low, high = decide(m, d, se, min(g[2] for g in got), alpha)
        out.append(Judgment(EVERY_POINT, m.rule, m.title, verdict, m, tuple(g[3] for g in got), tuple(g[4] for g in got),
                         d, low, high))
    return out


def judge(a: Run, b: Run, paired: bool, aa: Spread | None = None) -> Result:
    """B judged against A: every point of A, structure and metrics; `aa`: the experiment's A/A
    spread (aa.py): no point's interval is narrower than what that point moved there."""
    res = Result(a, b, paired)
    ap, bp = group(a), group(b)
    b_by_key = {q.key(): q for q in bp}
    a_keys = {p.key() for p in ap}
    matched = []
    for p in ap:
        q = b_by_key.get(p.key())
        if q is None:
            res.judgments.append(Judgment(p.label, "missing", "point", FAIL, a_text=f"{len(p.ok)} measured", b_text="not in B"))
            continue
        res.judgments += state_judgments(p, q)
        if p.ok and q.ok:
            res.judgments += structure_judgments(p, q)
            matched.append((p, q))
    cs = cells(matched, metrics.table_of(a.manifest, b.manifest))  # the declared metrics judged as the built-in
    flags = flag_counts(matched)
    # Bonferroni over every judgment that is a test: a run where nothing changed fails any with chance <= ALPHA.
    tests = len(cs) + len({c[1].key for c in cs}) + len(flags)
    alpha = ALPHA / max(1, tests)
    noise = run_noise(cs, aa)
    res.noise = {k: v[0] for k, v in noise.items()}
    res.judgments += metric_judgments(cs, noise, alpha, aa)
    res.judgments += [flag_judgment(f, counts, alpha) for f, counts in flags.items()]
    res.alpha = alpha
    unmatched_b = [q.label for q in bp if q.key() not in a_keys]
    if unmatched_b:
        res.notes.append(f"only in B (not judged): {', '.join(unmatched_b)}")
    res.notes.append(aa.describe() if aa else "no A/A spread recorded for this experiment: each interval rests on "
                     "this run's repetitions alone (`linklab aa EXPERIMENT` records one)")
    if cs and not noise and not aa:
        res.notes.append("one repetition per point in each run and no A/A spread: nothing says how far a metric "
                         "moves by chance, so no metric can fail; only the structure is judged (--pairs 2 or more)")
    if not paired:
        res.notes.append("advisory: A and B were not measured side by side, so whatever differed between their "
                         "times or machines (speed, load, the emulator's boot) differs here too; `linklab ab` "
                         "measures both interleaved")
    return res
