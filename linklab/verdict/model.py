"""What a verdict is made of (docs/verdicts.md): one judgment per point and judged metric, or per
structural item, each within, FAIL, harmless or inconclusive; and the run's result, which
`linklab ab` prints last and exits by."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from linklab.errors import result_exit_code
from linklab.results.runs import Run
from linklab.verdict import metrics

ALPHA = 0.05  # the chance that a run where nothing changed fails any judgment that is a test

WITHIN, FAIL, HARMLESS, INCONCLUSIVE = "within", "FAIL", "harmless", "inconclusive"
EVERY_POINT = "(every point)"  # the point of a judgment over the whole run


@dataclass
class Judgment:
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
    judgments: list[Judgment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    alpha: float = ALPHA          # each test's share of ALPHA (Bonferroni)
    # this run's noise per metric: "<metric>" -> its spread pooled over every point (no A/A spread),
    # or "<metric>/noise_ratio" -> how many times noisier its repetitions were than the A/A runs'
    noise: dict[str, float] = field(default_factory=dict)

    @property
    def failures(self) -> list[Judgment]:
        return [c for c in self.judgments if c.verdict == FAIL]

    @property
    def inconclusive(self) -> list[Judgment]:
        return [c for c in self.judgments if c.verdict == INCONCLUSIVE]

    @property
    def ok(self) -> bool:
        return not self.failures

    def words(self) -> str:
        """The result in words: what `linklab ab` prints last and exits by (exit_code)."""
        if self.failures:
            return f"DIFFERS ({len(self.failures)} judgments)"
        if self.inconclusive:
            return (f"inconclusive ({len(self.inconclusive)} judgments differ where an arm was measured on a busy host "
                    "only; measure again on a quieter machine)")
        return "no difference found"

    def exit_code(self) -> int:
        """How `linklab ab` and `compare` exit for this result (linklab.errors decides the numbers)."""
        return result_exit_code(bool(self.failures), bool(self.inconclusive))
