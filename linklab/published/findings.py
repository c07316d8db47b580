"""Published findings as checkable statements, evaluated on a run's data.

Each reference file lists its findings:

    findings:
      - id: rr-above-one-link
        says: balance-rr peaks above one link's rate
        check: {kind: threshold, metric: link_fraction, where: {bond_mode: balance-rr}, stat: max, op: ">", value: 1.05}
        published: "balance-rr 1390 Mbit/s on 2 x 1 Gbit/s"   # optional: the figure as published
        mechanism: bound          # optional, measured on the run: bound (link- or CPU-bound),
                                  # emulator (the emulator's own RTT), frame_time (jitter vs one frame's time)
        variant:                  # optional: the experiment's variant that removes what differs
          where: {sysctl_profile: fixed_dupthresh}
          cause: the paper's kernel took three duplicate ACKs for a loss; Linux 6.1 adapts (E2)
        tried: ...                # optional, for a finding that differs with no variant to explain it:
                                  # the causes measured and ruled out

    variants:                     # axis values that exist to explain a finding, not to repeat one
      sysctl_profile: [fixed_dupthresh]

Points of a variant (an axis value listed under `variants`) are left out of every finding's own
check. A finding that differs and names a variant is checked again on the variant's points (its
`where` added to the check's; for a ratio, `top: {...}` or `bottom: {...}` puts the variant on
that side only, e.g. the defaults replaced by the paper's kernel behaviour): if it agrees there, the verdict is "explained" — the variant was
measured in the same run and removes the cause, which `cause` states; if it still differs, or the
run has no point of the variant, the verdict stays "differs" and says so.

Kinds (each a small evaluator registered in KINDS):
  threshold  a metric over the selected points (mean per point), reduced by `stat`
             (max, min, mean, all, any), against `value` with `op` (> >= < <= between approx)
  ratio      the metric at `top` over the metric at `bottom` (axis: value, or max/min of the
             axis), paired over the other axes; reduced by `stat`, against `value` with `op`
  saturates  along `axis`: rises from the smallest value to `from`, and stays within
             `within` (a fraction) of the series' maximum from `from` up; per series

The verdict is "agrees", "differs" or "explained", or "not measured" when the run has no point the check
selects (a quick variant leaves some out). Verdicts are computed here, never written by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from linklab.errors import UsageError
from linklab.measure.flags import row_flags
from linklab.model.paths import frame_bytes, goodput_bps
from linklab.published.figures import same
from linklab.results.points import Point, axis_value, canonical, value_text
from linklab.verdict import metrics

AGREES, DIFFERS, EXPLAINED, NOT_MEASURED = "agrees", "differs", "explained", "not measured"
# How a differing finding's variant fared, in words in its `measured` text
VARIANT_NOT_RUN, VARIANT_NO_EFFECT = "not measured in this run", "does not remove it"


@dataclass
class Verdict:
    id: str
    says: str
    verdict: str
    measured: str  # what the run gave (and its variant, where one was checked)
    mechanism: str = ""
    expected: str = ""   # what the check asks of it, e.g. "max > 1.05"
    published: str = ""  # the published figure, as the reference file quotes it
    tried: str = ""      # a differing finding's causes tested and ruled out, as the reference file states them
    variant: str = ""    # the verdict of the finding's variant, where it was checked (a finding that differed)


@dataclass
class Context:
    points: list[Point]
    scale: float
    link_bps: float | None
    members: int | None


# -- metrics a finding can name: the report's, plus link_fraction ----------------------------

def metric_of(name: str, ctx: Context) -> Callable[[dict[str, Any]], float | None]:
    if name == "link_fraction":
        if not ctx.link_bps:
            raise UsageError("finding uses link_fraction but the reference has no link_rate_bps")

        def frac(row: dict[str, Any]) -> float | None:
            bps = metrics.num(row.get("throughput_bps"))
            return bps / (ctx.link_bps * ctx.scale) if bps is not None else None
        return frac
    if name not in metrics.BY_KEY:
        raise UsageError(f"unknown metric {name!r} in a finding (valid: link_fraction, {', '.join(metrics.BY_KEY)})")
    return metrics.BY_KEY[name].get


def point_mean(p: Point, get: Callable[[dict[str, Any]], float | None]) -> float | None:
    vals = [v for r in p.ok if (v := get(r)) is not None]
    return sum(vals) / len(vals) if vals else None


def selected(ctx: Context, where: dict[str, Any] | None) -> list[Point]:
    where = where or {}
    return [p for p in ctx.points if p.ok and all(same(axis_value(p.ok[0], k), v) for k, v in where.items())]


def check_op(x: float, op: str, value: Any) -> bool:
    if op == ">":
        return x > value
    if op == ">=":
        return x >= value
    if op == "<":
        return x < value
    if op == "<=":
        return x <= value
    if op == "between":
        return value[0] <= x <= value[1]
    if op == "approx":  # value: [target, relative tolerance]
        return abs(x - value[0]) <= value[1] * abs(value[0])
    raise UsageError(f"unknown op {op!r} in a finding (valid: > >= < <= between approx)")


def expect_text(op: str, value: Any) -> str:
    if op == "between":
        return f"between {value[0]:g} and {value[1]:g}"
    if op == "approx":
        return f"≈ {value[0]:g} ± {value[1] * 100:g} %"
    return f"{op} {value:g}"


def reduce(values: list[tuple[str, float]], stat: str, op: str, value: Any) -> tuple[bool, str]:
    """(passes, what was measured) for (label, value) pairs reduced by stat."""
    if stat in ("all", "any"):
        results = [check_op(v, op, value) for _, v in values]
        ok = all(results) if stat == "all" else any(results)
        return ok, ", ".join(f"{lbl}: {v:.3g}" for lbl, v in values)
    pick = {"max": max, "min": min}.get(stat)
    if pick:
        lbl, v = pick(values, key=lambda t: t[1])
        return check_op(v, op, value), f"{stat} {v:.3g} ({lbl})"
    if stat == "mean":
        v = sum(x for _, x in values) / len(values)
        return check_op(v, op, value), f"mean {v:.3g} over {len(values)}"
    raise UsageError(f"unknown stat {stat!r} in a finding (valid: max min mean all any)")


# -- evaluators ------------------------------------------------------------------------------

def _threshold(check: dict[str, Any], ctx: Context) -> tuple[str, str, str, list[Point]]:
    get = metric_of(check["metric"], ctx)
    pts = selected(ctx, check.get("where"))
    vals = [(p.label, v) for p in pts if (v := point_mean(p, get)) is not None]
    if not vals:
        return NOT_MEASURED, "no point of this run is selected", "", []
    ok, text = reduce(vals, check.get("stat", "all"), check["op"], check["value"])
    return (AGREES if ok else DIFFERS), f"{check['metric']} {text}", _expected(check), pts


def _expected(check: dict[str, Any]) -> str:
    return f"{check.get('stat', 'all')} {expect_text(check['op'], check['value'])}"


_MISSING = object()  # a `max`/`min` selection on an axis with no numeric value (null is a value)


def _pick_axis_value(pts: list[Point], axis: str, want: Any) -> Any:
    values = [axis_value(p.ok[0], axis) for p in pts]
    if want in ("max", "min"):
        nums = [metrics.num(v) for v in values if metrics.num(v) is not None]
        if not nums:
            return _MISSING
        return max(nums) if want == "max" else min(nums)
    return want


def _ratio(check: dict[str, Any], ctx: Context) -> tuple[str, str, str, list[Point]]:
    get = metric_of(check["metric"], ctx)
    pts = selected(ctx, check.get("where"))
    top, bottom = dict(check["top"]), dict(check["bottom"])
    for sel in (top, bottom):
        for axis, want in list(sel.items()):
            sel[axis] = _pick_axis_value(pts, axis, want)
    varied = set(top) | set(bottom)
    # A derived key varies its axis too: `bond_mode` is a field of the `bond` axis.
    varied |= {k.partition("_")[0] for k in varied}

    def rest(p: Point) -> tuple:
        return tuple(sorted((a, canonical(v)) for a, v in p.axes.items() if a not in varied))

    def matches(p: Point, sel: dict[str, Any]) -> bool:
        return all(v is not _MISSING and same(axis_value(p.ok[0], a), v) for a, v in sel.items())

    pairs = []
    used: list[Point] = []
    for p in pts:
        if not matches(p, top):
            continue
        for q in pts:
            if q is not p and matches(q, bottom) and rest(q) == rest(p):
                a, b = point_mean(p, get), point_mean(q, get)
                if a is not None and b:
                    label = " ".join(f"{k}={value_text(v)}" for k, v in rest(p)
                                     if len({str(x.axes.get(k)) for x in pts}) > 1)
                    pairs.append((label or "all", a / b))
                    used += [p, q]
    if not pairs:
        return NOT_MEASURED, "this run has no pair of points to divide", "", []
    ok, text = reduce(pairs, check.get("stat", "all"), check["op"], check["value"])
    what = f"{check['metric']} {_sel(top)} ÷ {_sel(bottom)}"
    return (AGREES if ok else DIFFERS), f"{what}: {text}", _expected(check), used


def _sel(sel: dict[str, Any]) -> str:
    return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sel.items())


def _saturates(check: dict[str, Any], ctx: Context) -> tuple[str, str, str, list[Point]]:
    get = metric_of(check["metric"], ctx)
    axis, start, within = check["axis"], float(check["from"]), float(check.get("within", 0.1))
    pts = selected(ctx, check.get("where"))
    series: dict[tuple, list[tuple[float, float, Point]]] = {}
    for p in pts:
        x, y = metrics.num(axis_value(p.ok[0], axis)), point_mean(p, get)
        if x is None or y is None:
            continue
        key = tuple(sorted((a, str(v)) for a, v in p.axes.items() if a != axis))
        series.setdefault(key, []).append((x, y, p))
    parts, ok_all, used = [], True, []
    for key, s in series.items():
        s.sort(key=lambda t: t[0])
        above = [t for t in s if t[0] >= start]
        if len(s) < 2 or not above or s[0][0] >= start:
            continue
        top = max(t[1] for t in s)
        rises = s[0][1] < above[0][1]
        flat = all(t[1] >= (1 - within) * top for t in above)
        ok_all &= rises and flat
        label = " ".join(v for a, v in key if len({str(p.axes.get(a)) for p in pts}) > 1) or "all"
        parts.append(f"{label}: {s[0][1]:.3g} at {s[0][0]:g} → " + ", ".join(f"{t[1]:.3g} at {t[0]:g}" for t in above)
                     + ("" if rises else " (does not rise)") + ("" if flat else " (not flat)"))
        used += [t[2] for t in s]
    if not parts:
        return NOT_MEASURED, f"no series with {axis} below and from {start:g}", "", []
    return (AGREES if ok_all else DIFFERS), "; ".join(parts), f"rises, then flat from {start:g} (within {within * 100:g} % of the maximum)", used


# Each gives (verdict, what the run measured, what the check expects of it, the points it used).
KINDS: dict[str, Callable[[dict[str, Any], Context], tuple[str, str, str, list[Point]]]] = {
    "threshold": _threshold, "ratio": _ratio, "saturates": _saturates}


# -- mechanisms ------------------------------------------------------------------------------

def _distinct(points: list[Point]) -> list[Point]:
    """The points a check used, each once (a ratio uses a point once per pair), in run order."""
    return sorted({id(p): p for p in points}.values(), key=lambda p: p.index)


def _busiest_direction_bps(row: dict[str, Any]) -> float | None:
    """What one direction of the links carried: flows both ways (flows:, RRUL) each have the
    link's rate, so their sum (throughput_bps) is set against the busier direction's goodput."""
    each = [v for k in ("goodput_up_bps", "goodput_down_bps") if (v := metrics.num(row.get(k)))]
    return max(each) if len(each) == 2 else metrics.num(row.get("throughput_bps"))


def bound(points: list[Point], ctx: Context) -> str:
    """Per point: the share of what the links could carry, and the busiest core -> link-bound,
    CPU-bound or neither."""
    if not ctx.link_bps:
        return ""
    parts = []
    for p in _distinct(points)[:6]:
        r = p.ok
        bps = point_mean(p, _busiest_direction_bps)
        core = point_mean(p, metrics.BY_KEY["busiest_core_pct"].get)
        active = point_mean(p, lambda row: metrics.num(row.get("client_member_tx_active"))) or 1
        if bps is None or not r:
            continue
        # The interfaces' MTU sets the wire overhead (a write length -l does not change it).
        mtu = point_mean(p, lambda row: metrics.num(axis_value(row, "mtu"))) or 1500
        capacity = goodput_bps(ctx.link_bps * ctx.scale * max(1, round(active)), mtu)
        share = bps / capacity if capacity else math.nan
        what = ("link-bound" if share >= 0.9 else "CPU-bound" if core is not None and core >= 90
                else "neither link- nor CPU-bound")
        parts.append(f"{p.label}: {share * 100:.0f} % of {max(1, round(active))} member(s)' goodput"
                     + (f", busiest core {core:.0f} %" if core is not None else "") + f" → {what}")
    return "; ".join(parts)


def _span(values: list[float], fmt: str = ".2g") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"


def emulator(points: list[Point], ctx: Context) -> str:
    """Whether the delay measured is the emulator's: the points' idle ping RTT against the round
    trip their path asks for, and how many repetitions carry the emulator_rtt flag."""
    pts = _distinct(points)
    idle = [v for p in pts if (v := point_mean(p, lambda r: metrics.num(r.get("ping_rtt_p50_ms")))) is not None]
    asked = [v for p in pts if (v := point_mean(p, lambda r: metrics.num(r.get("path_asked_rtt_ms")))) is not None]
    rows = [r for p in pts for r in p.ok]
    flagged = sum(1 for r in rows if "emulator_rtt" in row_flags(r))
    if not idle or not asked:
        return ""
    verdict = ("→ the delay measured is the emulator's own round trip" if flagged * 2 > len(rows)
               else "→ the path's own delay dominates")
    return (f"idle ping RTT {_span(idle)} ms where the path asks {_span(asked)} ms, emulator_rtt on {flagged} of "
            f"{len(rows)} repetitions {verdict}")


def frame_time(points: list[Point], ctx: Context) -> str:
    """Jitter against one frame's time on the wire at the rate the lab ran and at the rate written:
    a shaper releases frames one frame time apart, so jitter of about a frame time is the link's
    pacing at that rate (10 times longer at scale 0.1 than on the original link)."""
    if not ctx.link_bps:
        return ""
    by_mtu: dict[float, list[float]] = {}
    for p in _distinct(points):
        jitter = point_mean(p, lambda r: metrics.num(r.get("jitter_ms")))
        mtu = point_mean(p, lambda r: metrics.num(axis_value(r, "mtu")))
        if jitter is not None and mtu:
            by_mtu.setdefault(mtu, []).append(jitter)
    parts = []
    for mtu, jitters in sorted(by_mtu.items()):
        run_ms = frame_bytes(mtu) * 8 / (ctx.link_bps * ctx.scale) * 1e3
        parts.append(f"MTU {mtu:g}: jitter {_span(jitters)} ms, {_span([j / run_ms for j in jitters])} frame times "
                     f"({run_ms:.2g} ms at {ctx.link_bps * ctx.scale / 1e6:g} Mbit/s; {run_ms * ctx.scale:.2g} ms at the "
                     f"written {ctx.link_bps / 1e6:g})")
    return "; ".join(parts) + " → jitter of about a frame time: the link's pacing at the rate run" if parts else ""


def one_member(points: list[Point], ctx: Context) -> str:
    """Repetitions of a flow of several streams that all left by one bond member (a transmit hash
    put them together, so the flow had one link): where, how many, and what they carried against
    the point's other repetitions. The bond's sender counts each member's frames (bond_counters)."""
    parts, alone_n = [], 0
    for p in _distinct(points):
        streams = metrics.num(axis_value(p.ok[0], "streams")) if p.ok else None
        if not streams or streams < 2:
            continue
        alone = [r for r in p.ok if metrics.num(r.get("client_member_tx_active")) == 1]
        if not alone:
            continue
        alone_n += len(alone)
        shared = [r for r in p.ok if r not in alone]
        mbps = [sum(float(r.get("throughput_bps") or 0) for r in rs) / len(rs) / 1e6 for rs in (alone, shared) if rs]
        parts.append(f"{p.label}: {len(alone)} of {len(p.ok)} repetitions on one member ({mbps[0]:.3g} Mbit/s"
                     + (f"; the others on two: {mbps[1]:.3g}" if shared else "") + ")")
    if not parts:
        return "every repetition of several streams left by more than one member"
    return "; ".join(parts) + (f" → {alone_n} repetition{'s' if alone_n > 1 else ''} whose streams all hashed onto one "
                               "member carried one link: the published runs where that happened were discarded")


MECHANISMS = {"bound": bound, "emulator": emulator, "frame_time": frame_time, "one_member": one_member}


def evaluate(ref: dict[str, Any], points: list[Point], scale: float) -> list[Verdict]:
    variants = _variants(ref)
    own = [p for p in points if not _of_variant(p, variants)]
    ctx = Context(own, scale, metrics.num(ref.get("link_rate_bps")), ref.get("members"))
    every = Context(points, ctx.scale, ctx.link_bps, ctx.members)
    out = []
    for i, f in enumerate(ref.get("findings") or []):
        fid = str(f.get("id") or f"finding-{i + 1}")
        check = f.get("check") or {}
        verdict, measured, expected, used = _judge(check, ctx, i, fid)
        mech, v_verdict = "", ""
        if f.get("mechanism") and used:
            fn = MECHANISMS.get(f["mechanism"])
            if fn is None:
                raise UsageError(f"findings[{i}] ({fid}): unknown mechanism {f['mechanism']!r} (valid: {', '.join(MECHANISMS)})")
            mech = fn(used, ctx)
        if f.get("variant") is not None and verdict == DIFFERS:
            verdict, measured, mech, v_verdict = _with_variant(f["variant"], check, every, variants, i, fid, measured, mech)
        out.append(Verdict(fid, str(f.get("says", fid)), verdict, measured, mech, expected,
                           str(f.get("published") or ""), str(f.get("tried") or ""), v_verdict))
    return out


def _judge(check: dict[str, Any], ctx: Context, i: int, fid: str) -> tuple[str, str, str, list[Point]]:
    kind = KINDS.get(check.get("kind"))
    if kind is None:
        raise UsageError(f"findings[{i}] ({fid}): unknown check kind {check.get('kind')!r} (valid: {', '.join(KINDS)})")
    try:
        return kind(check, ctx)
    except KeyError as e:
        raise UsageError(f"findings[{i}] ({fid}): check lacks {e}") from None


def _variants(ref: dict[str, Any]) -> dict[str, list[Any]]:
    v = ref.get("variants") or {}
    if not isinstance(v, dict) or not all(isinstance(x, list) for x in v.values()):
        raise UsageError("variants: give each axis the list of its values that are variants, e.g. "
                         "{sysctl_profile: [fixed_dupthresh]}")
    return v


def _listed(axis: str, value: Any, variants: dict[str, list[Any]]) -> bool:
    """Whether axis=value is one of the reference's variants."""
    return any(same(value, v) for v in variants.get(axis, []))


def _of_variant(p: Point, variants: dict[str, list[Any]]) -> bool:
    return bool(p.ok) and any(_listed(axis, axis_value(p.ok[0], axis), variants) for axis in variants)


def _with_variant(variant: Any, check: dict[str, Any], every: Context, variants: dict[str, list[Any]],
                  i: int, fid: str, measured: str, mech: str) -> tuple[str, str, str, str]:
    """A differing finding checked again on its variant's points: (verdict, measured, mechanism,
    the variant's own verdict)."""
    given = {k: variant.get(k) for k in ("where", "top", "bottom")} if isinstance(variant, dict) else {}
    given = {k: v for k, v in given.items() if v is not None}
    if not given or not all(isinstance(v, dict) and v for v in given.values()):
        raise UsageError(f"findings[{i}] ({fid}): variant needs `where`, the axis values of its points "
                         "(e.g. {sysctl_profile: fixed_dupthresh}), or `top`/`bottom` for one side of a ratio")
    if ("top" in given or "bottom" in given) and check.get("kind") != "ratio":
        raise UsageError(f"findings[{i}] ({fid}): a variant's top/bottom applies to a ratio check; "
                         f"this check is {check.get('kind')!r}: give `where`")
    chosen = {axis: value for sel in given.values() for axis, value in sel.items()}
    if not any(_listed(axis, value, variants) for axis, value in chosen.items()):
        raise UsageError(f"findings[{i}] ({fid}): variant {_sel(chosen)} is not listed under `variants:` "
                         f"(listed: {', '.join(f'{a}={v}' for a, vs in variants.items() for v in vs) or 'none'})")
    again = _varied(check, given)
    v_verdict, v_measured, _, _ = _judge(again, every, i, fid)
    cause = str(variant.get("cause") or "")
    name = "; ".join(f"{_sel(sel)}" if k == "where" else f"{k} {_sel(sel)}" for k, sel in given.items())
    if v_verdict == AGREES:
        return EXPLAINED, f"{measured}; with variant {name}: {v_measured}", \
            "; ".join(x for x in (f"{cause} (measured: variant {name} agrees)" if cause else "", mech) if x), v_verdict
    if v_verdict == NOT_MEASURED:
        return DIFFERS, f"{measured}; variant {name} {VARIANT_NOT_RUN}", mech, v_verdict
    return DIFFERS, f"{measured}; variant {name} {VARIANT_NO_EFFECT}: {v_measured}", mech, v_verdict


def _varied(check: dict[str, Any], given: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The check with its variant in: `where` added to the check's; `top` or `bottom` merged into
    that side of a ratio, and an axis the check's `where` fixed for both sides kept on the other
    side only (the variant changes one side of the comparison, not both)."""
    again = {**check, "where": {**(check.get("where") or {}), **given.get("where", {})}}
    for side, other in (("top", "bottom"), ("bottom", "top")):
        if side not in given:
            continue
        where = dict(again["where"])
        moved = {axis: where.pop(axis) for axis in list(where) if axis in given[side]}
        again["where"] = where
        again[side] = {**check[side], **given[side]}
        again[other] = {**moved, **again[other]}
    return again
