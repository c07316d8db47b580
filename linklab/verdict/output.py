"""The verdict as text (what `linklab ab` and `linklab compare` print) and as verdict.json."""

from __future__ import annotations

from typing import Any

from linklab.verdict import metrics
from linklab.verdict.effect import min_effect
from linklab.verdict.model import ALPHA, FAIL, WITHIN, Judgment, Result

# verdict.json's format. 2: "noise" (was "levels"; its "<metric>/level" keys "<metric>/noise_ratio"),
# "judgments" (was "checks"), and "exit_code" in today's codes (inconclusive 6, was 4:
# docs/commands.md#exit-codes).
# linklab writes it and never reads it back: older files stay as written.
FORMAT = 2


def _fmt(m: metrics.Metric, vs: tuple[float, ...]) -> str:
    mean = sum(vs) / len(vs)
    return f"{format(mean, m.fmt)} (n={len(vs)})"


def row_text(c: Judgment) -> list[str]:
    if c.metric is not None:
        return [c.point, c.what, _fmt(c.metric, c.a), _fmt(c.metric, c.b), c.interval_text()]
    return [c.point, f"{c.rule}: {c.what}", c.a_text or "-", c.b_text or "-", "-"]


def table(judgments: list[Judgment], verdicts: bool = True) -> list[str]:
    rows = [(["verdict"] if verdicts else []) + ["point", "what", "A", "B", "B/A [interval]"]]
    rows += [([c.verdict] if verdicts else []) + row_text(c) for c in judgments]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip() for r in rows]


def render(res: Result, show_all: bool = False, last: str = "result") -> str:
    """The verdict as `linklab ab` prints it; `last`: what its last line calls the result."""
    lines = [f"A  {res.a.path} ({res.a.name})", f"B  {res.b.path} ({res.b.name})"]
    lines += [f"note: {n}" for n in res.notes]
    others = [c for c in res.judgments if c.verdict != FAIL and (show_all or c.verdict != WITHIN)]
    if others:
        lines += ["", "every other judgment:" if show_all else
                  "beyond the minimum effect on a harmless side, or where the host was busy (inconclusive):"]
        lines += ["  " + x for x in table(others)]
    if res.failures:
        lines += ["", f"DIFFERS ({len(res.failures)}):"] + ["  " + x for x in table(res.failures, verdicts=False)]
    mc = [c for c in res.judgments if c.metric is not None]
    sc = [c for c in res.judgments if c.metric is None]
    lines += ["", f"{len(mc)} point x metric judgments (each at {res.alpha:.2g}), {sum(c.verdict == FAIL for c in mc)} failed; "
                  f"{len(sc)} structural judgments, {sum(c.verdict == FAIL for c in sc)} failed"
                  + ("" if show_all else "; --all lists every judgment"),
              f"{last}: " + res.words()]
    return "\n".join(lines)


def as_json(res: Result) -> dict[str, Any]:
    def one(c: Judgment) -> dict[str, Any]:
        d: dict[str, Any] = {"point": c.point, "rule": c.rule, "what": c.what, "verdict": c.verdict}
        if c.metric is not None:
            d.update(metric=c.metric.key, scale=c.metric.scale, sides=c.metric.sides, a=list(c.a), b=list(c.b),
                     effect=c.effect, low=c.low, high=c.high, ratio=c.ratio, min_effect=min_effect(c.metric))
        else:
            d.update(a=c.a_text, b=c.b_text)
        return d

    return {"format": FORMAT, "ok": res.ok, "result": res.words(), "exit_code": res.exit_code(), "paired": res.paired, "a": str(res.a.path), "b": str(res.b.path),
            "alpha": ALPHA, "alpha_each": res.alpha, "noise": res.noise, "notes": res.notes,
            "failures": [one(c) for c in res.failures], "inconclusive": [one(c) for c in res.inconclusive], "judgments": [one(c) for c in res.judgments]}
