"""Running a checks file against a running lab: each check after those it requires, one
verdict each, points, and the exit code the verdicts add up to (linklab/errors.py decides it).

Verdicts:
  pass          the lab is as the check asks
  fail          it is not (a check of severity warn: `warn` instead)
  inconclusive  a measured check whose measurement the emulator or a busy host limited
  skip          a check it requires did not pass (the reason names it); or not run at this stage
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from linklab.check.kinds import get
from linklab.check.kinds.base import FAIL, INCONCLUSIVE, PASS, Check, Context, Judgement
from linklab.check.spec import ChecksFile, order
from linklab.errors import CommandFailed, StateError, check_exit_code
from linklab.handle import LabHandle
from linklab.measure.base import MeasurementError

WARN, SKIP = "warn", "skip"
VERDICTS = (PASS, FAIL, WARN, INCONCLUSIVE, SKIP)


@dataclass
class Result:
    id: str
    kind: str
    title: str | None
    stage: int
    verdict: str
    expected: str
    observed: str
    hint: str | None
    points: float  # earned
    max_points: float
    hidden: bool
    severity: str
    requires: list[str]
    detail: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    raw: Any = None  # what the tools said (kept with --raw)

    def public(self, raw: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not raw:
            out.pop("raw")
        return out


@dataclass
class Report:
    lab: str
    checks_file: str
    topology: str
    seed: str | None
    results: list[Result]
    started_at: str
    seconds: float
    stage: int | None = None
    student: bool = False
    overrides: list = field(default_factory=list)  # the lab's settings beyond its topology (`linklab set`)
    scale: float | None = None
    checks_sha256: str | None = None

    @property
    def exit_code(self) -> int:
        return check_exit_code(r.verdict for r in self.results)

    def summary(self) -> dict[str, Any]:
        counts = {v: sum(1 for r in self.results if r.verdict == v) for v in VERDICTS}
        return {"checks": len(self.results), **{_plural(v): n for v, n in counts.items()},
                "points": round(sum(r.points for r in self.results), 3),
                "max_points": round(sum(r.max_points for r in self.results), 3),
                "exit_code": self.exit_code}

    def failed_ids(self) -> list[str]:
        return [r.id for r in self.results if r.verdict == FAIL]


def _plural(v: str) -> str:
    return {PASS: "passed", FAIL: "failed", WARN: "warnings", INCONCLUSIVE: "inconclusive", SKIP: "skipped"}[v]


def selected(spec: ChecksFile, stage: int | None = None, student: bool = False,
             only: list[str] | None = None) -> list[Check]:
    """The checks a run includes: up to `stage`, without hidden ones for a student, only `only`
    (and what they require) when given; in run order."""
    checks = list(spec.checks)
    if only:
        want = set(only)
        grew = True
        while grew:
            extra = {r for c in checks if c.id in want for r in c.requires} - want
            want |= extra
            grew = bool(extra)
        checks = [c for c in checks if c.id in want]
    if stage is not None:
        checks = [c for c in checks if c.stage <= stage]
    if student:
        checks = [c for c in checks if not c.hidden]
    return order(checks)


def run_checks(spec: ChecksFile, handle: LabHandle, *, stage: int | None = None, student: bool = False,
               only: list[str] | None = None, say: Callable[[str], None] = lambda _m: None,
               keep_raw: bool = False) -> Report:
    started, t0 = time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.monotonic()
    ctx = Context(handle, say)
    results: dict[str, Result] = {}
    checks = selected(spec, stage, student, only)
    if checks:
        _settle_lacp(handle, say)
    for c in checks:
        results[c.id] = _one(c, ctx, results, keep_raw)
        r = results[c.id]
        say(f"  {r.verdict:<12} {c.id}" + (f" ({r.seconds:.1f} s)" if r.seconds >= 1 else ""))
    ordered = [results[c.id] for c in spec.checks if c.id in results]
    record = handle.record or {}
    return Report(handle.name, spec.source, spec.topology, spec.seed, ordered, started,
                  round(time.monotonic() - t0, 2), stage, student,
                  [list(o) for o in (record.get("topology") or {}).get("overrides", [])], handle.lab.scale,
                  spec.sha256)


def _settle_lacp(handle: LabHandle, say: Callable[[str], None]) -> None:
    """Until LACP has aggregated every 802.3ad bond whose members are all up (the sweep's
    pre-flight waits alike), up to LACP_CONVERGE_S: a lab just built or changed is still
    negotiating, and a check then would find the bond unaggregated or measure one member."""
    from linklab.sweep import preflight
    if not any(b.mode == "802.3ad" for link in handle.lab.links for b in link.bonds):
        return
    _, summaries, waited = preflight.wait_for_bonds(
        handle, preflight.LACP_CONVERGE_S, lambda _p, s: not preflight.lacp_converging(s))
    late = preflight.lacp_converging(summaries)
    if late:
        say(f"  LACP had not aggregated {', '.join(late)} after {waited:.0f} s: checking as it is")
    elif waited >= 0.5:
        say(f"  waited {waited:.1f} s for LACP to aggregate the lab's 802.3ad bonds")


def _one(c: Check, ctx: Context, done: dict[str, Result], keep_raw: bool) -> Result:
    kind = get(c.kind)
    expected = kind.expectation(c, ctx.lab)
    blocked = [r for r in c.requires if r in done and done[r].verdict != PASS]
    base = dict(id=c.id, kind=c.kind, title=c.title, stage=c.stage, expected=expected, hint=c.hint,
                max_points=c.points, hidden=c.hidden, severity=c.severity, requires=list(c.requires))
    if blocked:
        why = ", ".join(f"{r} ({done[r].verdict})" for r in blocked)
        return Result(**base, verdict=SKIP, observed=f"not run: requires {why}", points=0.0)
    t0 = time.monotonic()
    raw: Any = None
    try:
        raw = kind.observe(c, ctx)
        j = kind.verdict(c, raw, ctx.lab)
    except (MeasurementError, CommandFailed, StateError) as e:
        # What the lab did to the tools (a namespace gone, a command that failed in it) is what
        # the student's lab does: a failure of the check, with the tool's words.
        j = Judgement(FAIL, f"could not observe: {e}")
    verdict = WARN if j.verdict == FAIL and c.severity == "warn" else j.verdict
    return Result(**base, verdict=verdict, observed=j.observed, detail=j.detail, values=j.values,
                  points=c.points if verdict == PASS else 0.0, seconds=round(time.monotonic() - t0, 2),
                  raw=raw if keep_raw else None)
