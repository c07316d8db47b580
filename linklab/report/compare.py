"""`linklab compare BASELINE NEW`: the regression gate. Did NEW change anything BASELINE's own
repetitions and the machine's measured noise cannot explain?

Points are matched by their parameters (axis values), never by their order. Every point of the
baseline is judged by these rules; any one failing fails the gate (exit 1):

  band        a metric's new mean outside its band (bands.py: prediction interval from the
              baseline's repetitions, never narrower than the noise floor measured for the
              baseline, noise.py). Two-sided unless the metric says which side is harmless
              (metrics.py: CPU may fall)
  missing     the baseline's point is not in the new run
  failed      a repetition of the point failed in the new run (not in the baseline)
  preflight   the point's pre-flight state changed: it failed where the baseline's passed, or passed
              where the baseline's failed
  disturbed   a repetition was measured while other work held the host's CPU (host_disturbed),
              even after the sweep measured it once more
  stolen      never fails: repetitions measured while the hypervisor under the host took its
              CPU (host_stolen) are listed with the steal they saw; their point's throughput
              may be lower by that share (machine.stolen_room), the machine's CPU level covers
              what a slower machine moves, and the bands judge the rest
  members     a bond's traffic on one member where the baseline (and the quiet reruns) spread it
              over several, or the other way round (per side and direction:
              {client,server}_member_{tx,rx}_active)
  path_mtu    the path MTU pre-flight found is not the baseline's
  flag        a flag the baseline's point never carried (emulator_rtt, queue_dropped, ...)
              nor did the quiet reruns its noise floor was measured on (noise.py); a share flag
              within FLAG_MARGIN of its threshold is listed as marginal, not failed
  baseline    the baseline's point has no repetition to judge against (all failed or disturbed)
  cpu_level   the run's CPU at every point moved by more than machines of this kind differ by
              (machine.py: CPU is judged relative to the run's level, since a slower machine
              costs more CPU per packet everywhere; the level itself must stay within x3)

--allow-missing turns missing, failed, disturbed and baseline into "not judged" (listed, never
failing) for those who mean it. Points only in the new run are listed and not judged.
Metrics are judged on the repetitions that measured on a quiet host (the baseline's disturbed
ones are left out of its band; the new run's fail `disturbed` and are left out too).

`tolerance` widens every band to at least that fraction of the baseline mean: for a baseline
recorded on another machine, whose emulated CPU is faster or slower.

confirm(): a run that repeats an earlier one of the same code (CI's second sweep after a failed
gate) fails only the checks that failed in both, matched by point, rule and item. A regression
moves the same points the same way every time; an emulator stall on a busy or stolen host lands
on whichever point was measuring. The other failures are listed as "not confirmed". The repeat
need only measure the points that failed (failed_point_ids(), `linklab sweep --points`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from linklab.errors import UsageError
from linklab.measure.disturbance import CORE_BUSY_PCT, QUEUE_DROP_PCT
from linklab.report import bands, machine, metrics
from linklab.report.noise import NoiseFloor, point_key
from linklab.report.points import DISTURBED, HOST_FLAGS, STOLEN, Point, group, row_flags
from linklab.report.runs import Run, row_ok
from linklab.report.speed import SpeedResponse

CHECKS = ("experiment", "scale", "placement")
RULES = ("band", "missing", "failed", "preflight", "disturbed", "stolen", "members", "path_mtu", "flag", "baseline",
         "cpu_level")
MISSING_RULES = ("missing", "failed", "disturbed", "baseline")  # what --allow-missing lets pass
# Verdicts of one check
WITHIN, FAIL, HARMLESS, NOT_JUDGED, UNCONFIRMED = "within", "FAIL", "harmless", "not judged", "not confirmed"
# Flags set when a share crosses a threshold (measure/disturbance.py), and that threshold in %. A
# new one within FLAG_MARGIN of it is listed, not failed: a queue that dropped 9 of 8000 packets
# (0.11 %) where quiet reruns dropped 0-7 is the threshold's edge (CI, 2026-11-25), while a queue
# too small for its flow drops percents at every point; the point's throughput and retransmits
# are judged by their bands either way.
SHARE_FLAGS = {"queue_dropped": QUEUE_DROP_PCT, "emulator_burst": QUEUE_DROP_PCT}
FLAG_MARGIN = 3.0
EVERY_POINT = "(every point)"  # the point of a check on the whole run
MEMBER_COLUMNS = {f"{side}_member_{d}_active": f"{side} {d}" for side in ("client", "server") for d in ("tx", "rx")}


@dataclass
class Check:
    """One rule applied to one point: a metric's band, or a structural comparison."""

    point: str
    rule: str
    what: str                         # metric title, or the structural item
    verdict: str
    metric: metrics.Metric | None = None
    base: bands.Sample | None = None
    new: bands.Sample | None = None
    band: bands.Band | None = None
    direction: str | None = None      # band: "up"/"down" outside it
    base_text: str = ""               # structural: what the baseline had
    new_text: str = ""                # structural: what the new run has
    level: float = 1.0                # band: what the new CPU values were divided by (the run's level, per point: speed.py)

    @property
    def change_pct(self) -> float | None:
        if self.base is None or self.new is None or not self.base.mean:
            return None
        return 100 * (self.new.mean - self.base.mean) / abs(self.base.mean)

    def bounds(self) -> tuple[float, float] | None:
        return self.band.bounds(self.metric) if self.band is not None and self.metric is not None else None

    def rule_text(self) -> str:
        """"band", or "band (up fails)" for a one-sided metric."""
        if self.rule != "band" or self.metric is None or self.metric.sides == "both":
            return self.rule
        return f"band ({'up' if self.metric.sides == 'upper' else 'down'} fails)"


@dataclass
class Result:
    base: Run
    new: Run
    checks: list[Check] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    noise: NoiseFloor | None = None

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == FAIL]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def deltas(self) -> list[Check]:
        """The metric checks (one per point and metric both runs measured)."""
        return [c for c in self.checks if c.rule == "band" and c.metric is not None]


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


def compare(base: Run, new: Run, allow: set[str] = frozenset(), tolerance: float = 0.0,
            noise: NoiseFloor | None = None, allow_missing: bool = False,
            speed: SpeedResponse | None = None, level: machine.Level | None = None) -> Result:
    """`level`: the new run's CPU level when its own points cannot give it (repeat_level())."""
    res = Result(base, new, notes=check_comparable(base, new, set(allow)), noise=noise)
    if tolerance:
        res.notes.append(f"bands widened to at least ±{100 * tolerance:g} % of the baseline mean (--tolerance)")
    if not base.rows:
        raise UsageError(f"{base.path}: the baseline has no repetition to compare against")
    bp, np_ = group(base), group(new)
    new_by_key = {p.key(): p for p in np_}
    base_keys = {p.key() for p in bp}
    if not any(p.key() in new_by_key for p in bp):
        raise UsageError("no point of the new run matches a point of the baseline",
                         hint="points are matched by their axis values; the runs have different matrices")
    res.only_new = [p.label for p in np_ if p.key() not in base_keys]
    scale_ratio = base.scale / new.scale if new.scale else 1.0
    lenient = NOT_JUDGED if allow_missing else FAIL
    level = cpu_level(bp, new_by_key) if level is None else level
    if level.pairs:
        res.checks.append(Check(EVERY_POINT, "cpu_level", "CPU level", FAIL if level.beyond_machines else WITHIN,
                                base_text="x1.00", new_text=level.words()))
    if level.other_machine:
        res.notes.append(f"another machine: its CPU is {level.words()}; CPU is judged relative to that level "
                         f"with {100 * machine.CPU_ROOM:g} % more room upwards, and throughput may be "
                         f"{100 * machine.rate_allowance(level):.0f} % {'lower' if level.slower else 'higher'} "
                         + ("(more where a point's busiest core saturates at this speed), TCP's RTT and window "
                            f"{level.factor ** 2:.1f}x (the emulator's queueing), a new core_saturated judged by "
                            "the CPU bands " if level.slower else
                            f"and TCP's RTT and window {level.factor ** 2:.2f}x ")
                         + "(linklab/report/machine.py)")
        if speed is not None and speed.applies(level):
            res.notes.append(speed.describe(level) + ": where a point's metric moved more at that speed, "
                             "its band has that room (in place of the general allowance for its throughput), and its CPU is "
                             "divided by what it measurably did there "
                             "(linklab/report/speed.py)")
    for p in bp:
        q = new_by_key.get(p.key())
        if q is None:
            res.checks.append(Check(p.label, "missing", "point", lenient, base_text=_reps(p), new_text="not in the run"))
            continue
        res.checks += _state_checks(p, q, lenient)
        if not p.ok or not q.ok:
            continue  # nothing measured on one side: the state checks said what
        if not p.clean:
            res.checks.append(Check(p.label, "baseline", "point", lenient,
                                    base_text=f"all {len(p.ok)} measured repetitions flagged {DISTURBED}",
                                    new_text="cannot be judged against it: re-record the baseline on a quiet host"))
            continue
        seen = dict(noise.seen(point_key(p))) if noise else {}
        if speed is not None and (slow_flags := speed.seen(point_key(p), level)):
            seen["flags"] = sorted(set(seen.get("flags") or []) | set(slow_flags))
        res.checks += _structure_checks(p, q, seen, level)
        if q.clean:
            res.checks += _metric_checks(p, q, scale_ratio, tolerance, noise, level, speed)
    if noise is None:
        res.notes.append("no noise floor measured for this baseline: bands use the metrics' declared floors "
                         "(`linklab noise` measures one from quiet reruns)")
    else:
        res.notes.append(noise.describe())
    if res.only_new:
        res.notes.append(f"only in the new run (not judged): {', '.join(res.only_new)}")
    return res


def confirm(res: Result, earlier: Result) -> Result:
    """`res` judged as a repeat of `earlier`: its failures that `earlier` did not have too become
    UNCONFIRMED (see the module's text). Both must judge against the same baseline. The repeat
    may hold only the points that failed before (`failed_point_ids`, `sweep --points`): a point
    it left out that passed before is not judged ("not repeated"), not missing."""
    if earlier.base.path != res.base.path or earlier.base.name != res.base.name:
        raise UsageError(f"--confirms: {earlier.new.path} was not judged against {res.base.path}")
    if earlier.new.path == res.new.path:
        raise UsageError(f"--confirms {earlier.new.path}: that is the run being judged; give the earlier run")
    failed_before = {(c.point, c.rule, c.what) for c in earlier.failures}
    points_failed_before = {c.point for c in earlier.failures}
    for c in res.checks:
        if c.rule == "missing":
            if c.point not in points_failed_before:
                c.verdict, c.new_text = NOT_JUDGED, "not repeated (it passed in the run confirmed)"
            # else it stays failed: a repeat that did not measure a failed point cannot clear it
        elif c.verdict == FAIL and (c.point, c.rule, c.what) not in failed_before:
            c.verdict = UNCONFIRMED
    res.notes.append(f"confirming {earlier.new.path} ({len(earlier.failures)} failed there): a check fails only "
                     "where it failed in both runs; the others are listed as not confirmed")
    return res


def failed_point_ids(res: Result) -> list[str]:
    """The ids of the points with a failed check, as the new run names them (for `sweep --points`,
    which measures them again); every point when a check of the whole run failed (cpu_level)."""
    labels = {c.point for c in res.failures}
    base_points = group(res.base)
    if EVERY_POINT in labels:
        labels = {p.label for p in base_points}
    new_ids = {p.key(): p.id for p in group(res.new)}
    return [new_ids.get(p.key(), p.id) for p in base_points if p.label in labels]


def _reps(p: Point) -> str:
    return f"{len(p.ok)} of {len(p.rows)} repetitions measured"


def _state_checks(p: Point, q: Point, lenient: str) -> list[Check]:
    """Failed repetitions, pre-flight state, and disturbance in the new run."""
    out: list[Check] = []
    b_failed = [r for r in p.rows if not row_ok(r)]
    n_failed = [r for r in q.rows if not row_ok(r)]
    b_pf = [r for r in b_failed if _preflight_failed(r)]
    n_pf = [r for r in n_failed if _preflight_failed(r)]
    if n_pf and not b_pf:
        out.append(Check(p.label, "preflight", "pre-flight", FAIL, base_text=f"passed in {len(p.rows)} of {len(p.rows)}",
                         new_text=f"failed in {len(n_pf)} of {len(q.rows)}: {_error(n_pf[0])}"))
    elif b_pf and not p.ok and q.ok:
        out.append(Check(p.label, "preflight", "pre-flight", FAIL, base_text=f"failed: {_error(b_pf[0])}",
                         new_text=f"passed in {len(q.ok)} of {len(q.rows)}"))
    bad = [r for r in n_failed if not _preflight_failed(r)]
    # Failures the baseline never had, or a point left with nothing measured at all.
    if bad and (not b_failed or (not q.ok and p.ok)):
        out.append(Check(p.label, "failed", "repetitions", lenient, base_text=f"{len(p.rows)} of {len(p.rows)} measured",
                         new_text=f"{len(bad)} of {len(q.rows)} failed: {_error(bad[0])}"))
    if not p.ok and b_failed and not b_pf and q.ok:
        out.append(Check(p.label, "baseline", "point", lenient, base_text=f"every repetition failed: {_error(b_failed[0])}",
                         new_text="cannot be judged against it"))
    if b_pf and n_pf and not p.ok and not q.ok:
        out.append(Check(p.label, "preflight", "pre-flight", WITHIN, base_text=f"failed: {_error(b_pf[0])}",
                         new_text=f"failed: {_error(n_pf[0])}"))
    disturbed = [r for r in q.ok if DISTURBED in row_flags(r)]
    if disturbed:
        out.append(Check(p.label, "disturbed", "repetitions", lenient, base_text="",
                         new_text=f"{len(disturbed)} of {len(q.ok)} flagged {DISTURBED}: "
                                  f"{row_flags(disturbed[0]).get(DISTURBED) or 'other work held the host'}"))
    stolen = [r for r in q.ok if STOLEN in row_flags(r)]
    if stolen:
        out.append(Check(p.label, "stolen", "repetitions", HARMLESS, base_text="",
                         new_text=f"{len(stolen)} of {len(q.ok)} flagged {STOLEN}: {row_flags(stolen[0]).get(STOLEN)}"))
    return out


def _preflight_failed(row: dict[str, Any]) -> bool:
    return str(row.get("preflight_ok", True)).lower() == "false" or str(row.get("error") or "").startswith("pre-flight")


def _error(row: dict[str, Any]) -> str:
    text = str(row.get("error") or row.get("preflight_problems") or "failed")
    return text if len(text) <= 120 else text[:117] + "..."


def _structure_checks(p: Point, q: Point, seen: dict[str, Any], level: machine.Level = machine.NONE) -> list[Check]:
    """Bond members, path MTU and flags; `seen`: what the quiet reruns showed at this point."""
    out: list[Check] = []
    for col, side in MEMBER_COLUMNS.items():
        b, n = member_classes(p.ok, col), member_classes(q.ok, col)
        if not b or not n:
            continue
        new_kinds = set(n) - set(b) - set((seen.get("members") or {}).get(col, []))
        out.append(Check(p.label, "members", f"bond members ({side})", FAIL if new_kinds else WITHIN,
                         base_text=_classes_text(b), new_text=_classes_text(n)))
    b_mtu = {int(v) for r in p.ok if (v := metrics.num(r.get("path_mtu"))) is not None}
    n_mtu = {int(v) for r in q.ok if (v := metrics.num(r.get("path_mtu"))) is not None}
    if b_mtu and n_mtu:
        out.append(Check(p.label, "path_mtu", "path MTU", FAIL if n_mtu - b_mtu else WITHIN,
                         base_text=", ".join(map(str, sorted(b_mtu))), new_text=", ".join(map(str, sorted(n_mtu)))))
    b_flags = ({f for r in p.ok for f in row_flags(r)} | set(seen.get("flags") or [])) - set(HOST_FLAGS)
    n_flags = {f for r in q.ok for f in row_flags(r)} - set(HOST_FLAGS)
    for f in sorted(n_flags - b_flags):
        carriers = [r for r in q.ok if f in row_flags(r)]
        evidence = next((row_flags(r)[f] for r in carriers if row_flags(r)[f]), "")
        worst = _worst_share(row_flags(r)[f] for r in carriers)
        marginal = f in SHARE_FLAGS and worst is not None and worst < FLAG_MARGIN * SHARE_FLAGS[f]
        # A slower machine's saturation (machine.py): the CPU bands, relative to the level, judge it.
        busiest = _mean(BUSIEST, q.ok) if f == "core_saturated" else None
        slow_machine = busiest is not None and machine.saturated_here_only(level, busiest, CORE_BUSY_PCT)
        out.append(Check(p.label, "flag", f, HARMLESS if marginal or slow_machine else FAIL,
                         base_text=f"never in {len(p.ok)} repetitions" + (" nor in the quiet reruns" if seen else ""),
                         new_text=f"in {len(carriers)} of {len(q.ok)}" + (f": {evidence}" if evidence else "")
                         + (f" (marginal: at most {worst:g} % where the flag starts at {SHARE_FLAGS[f]:g} %; "
                            f"fails from {FLAG_MARGIN * SHARE_FLAGS[f]:g} %)" if marginal else "")
                         + (f" (this machine's: busiest core {busiest:.0f} % / {level.factor:.2f} "
                            f"< {CORE_BUSY_PCT:g} % at the baseline's speed)" if slow_machine else "")))
    return out


BUSIEST = "busiest_core_pct"


def _mean(key: str, rows: list[dict[str, Any]]) -> float | None:
    values = _values(metrics.BY_KEY[key], rows)
    return sum(values) / len(values) if values else None


def _worst_share(evidences) -> float | None:
    """The largest "(0.11%)" share a flag's evidence quotes (measure/disturbance.py), if any."""
    shares = [float(x) for e in evidences for x in re.findall(r"\(([\d.]+)%\)", e or "")]
    return max(shares) if shares else None


def member_classes(rows: list[dict[str, Any]], col: str) -> dict[str, int]:
    """"one member" / "spread" -> how many repetitions carried their traffic that way."""
    out: dict[str, int] = {}
    for r in rows:
        v = metrics.num(r.get(col))
        if v is None or v < 1:
            continue
        kind = "one member" if v == 1 else "spread"
        out[kind] = out.get(kind, 0) + 1
    return out


def _classes_text(c: dict[str, int]) -> str:
    total = sum(c.values())
    return ", ".join(f"{k} in {v} of {total}" for k, v in sorted(c.items()))


def run_level(bp: list[Point], run: Run) -> machine.Level:
    """cpu_level of a whole run against the baseline's points."""
    return cpu_level(bp, {p.key(): p for p in group(run)})


def repeat_level(base: Run, first: Run, repeat: Run) -> tuple[machine.Level | None, str]:
    """The CPU level of `repeat`, a run that measured again some of `first`'s points (confirm()),
    and a note saying how it was found; (None, "") when it measured every point `first` did (its
    own level holds). Why: the points a failed gate names are those whose CPU or rate sat apart
    from the others, so a level from them alone is biased (fc29, 2026-11-28: x0.49 from the
    whole run, x0.80 from the 4 points it repeated; divided by x0.80 their CPU passed). Measured
    on the same points, the repeat next to `first` is not: `first`'s level times that ratio."""
    first_by_key = {p.key(): p for p in group(first)}
    repeat_by_key = {p.key(): p for p in group(repeat)}
    if set(first_by_key) <= set(repeat_by_key):
        return None, ""
    whole = cpu_level(group(base), first_by_key)
    ratio = cpu_level([first_by_key[k] for k in repeat_by_key if k in first_by_key], repeat_by_key)
    if not whole.pairs or not ratio.pairs:
        return None, (f"CPU level of this repeat from its own {len(repeat_by_key)} points: they have no CPU figure "
                      f"measured on a quiet host in {first.path} to chain from")
    lv = machine.Level(whole.log + ratio.log, ratio.pairs)
    return lv, (f"CPU level x{lv.factor:.2f}: {first.path}'s x{whole.factor:.2f} over all its points, times this "
                f"repeat's x{ratio.factor:.2f} against it at the {len(repeat_by_key)} points it measured again")


def cpu_level(bp: list[Point], new_by_key: dict[Any, Point]) -> machine.Level:
    """The new run's CPU next to the baseline's over every point both measured (machine.py)."""
    pairs = []
    for p in bp:
        q = new_by_key.get(p.key())
        if q is None or not p.clean or not q.clean:
            continue
        for m in metrics.METRICS:
            if m.machine == "cost":
                b, n = _values(m, p.clean), _values(m, q.clean)
                if b and n:
                    pairs.append((sum(b) / len(b), sum(n) / len(n)))
    return machine.level(pairs)


def _values(m: metrics.Metric, rows: list[dict[str, Any]]) -> list[float]:
    """The metric's value in each row that has one."""
    return [v for r in rows if (v := m.get(r)) is not None]


def _metric_checks(p: Point, q: Point, scale_ratio: float, tolerance: float, noise: NoiseFloor | None,
                   level: machine.Level = machine.NONE, speed: SpeedResponse | None = None) -> list[Check]:
    out: list[Check] = []
    for m in metrics.METRICS:
        if not m.judged:
            continue
        # CPU at the baseline machine's speed (the level, refined per point by a measured speed
        # response: speed.py); a rate scaled back to the baseline's scale.
        cost = 1.0
        if m.machine == "cost":
            cost = speed.cost_factor(point_key(p), m, level) if speed is not None else level.factor
        k = (1 / cost) * (scale_ratio if m.scaled else 1.0)
        b = bands.sample(m, _values(m, p.clean))
        n = bands.sample(m, [v * k for v in _values(m, q.clean)])
        if b is None or n is None:
            continue
        floor = (noise.floor(m) if noise else None) or bands.declared_floor(m, b.mean)
        # A rate's general allowance is for points whose move with speed nobody measured; where
        # this one's was (speed.room below), that is the room. On a machine at x0.49-0.56 (8 runs,
        # 2026-11-28) the allowance gave 802.3ad's link-bound points 14 % more room upwards, and
        # +20 % at one such point passed in 56 of 96 trials; with the measured room, 0 of 96, and
        # still no false alarm in 8 runs (bench/gate_power.py --as-ci).
        measured_rate = m.machine == "rate" and speed is not None and speed.measured(point_key(p), m, level)
        below, above = (0.0, 0.0) if measured_rate else machine.room(m.machine, level)
        if m.machine == "rate":  # a point whose core saturates at this machine's speed (machine.py)
            below = max(below, machine.cpu_bound_room(level, _mean(BUSIEST, p.clean)),
                        max(map(machine.row_stolen_room, q.clean), default=0.0))
        if speed is not None:  # what this point's metric measurably did at another speed (speed.py)
            s_below, s_above = speed.room(point_key(p), m, level)
            below, above = max(below, s_below), max(above, s_above)
        bd = bands.band(m, b, n.n, floor, tolerance, below=below, above=above, on_top=m.machine == "queue")
        direction = bands.side(m, b, n, bd)
        verdict = WITHIN if direction is None else FAIL if bands.fails(m, direction) else HARMLESS
        out.append(Check(p.label, "band", m.title, verdict, metric=m, base=b, new=n, band=bd, direction=direction,
                         level=cost))
    return out


# -- output ------------------------------------------------------------------------------------

# Which part set a band's width (bands.band), in the table's words.
SOURCE_WORDS = {"prediction": "prediction", "noise floor (measured)": "measured floor",
                "noise floor (declared)": "declared floor", "tolerance": "tolerance", "resolution": "resolution"}


def _num(v: float, fmt: str) -> str:
    return format(v, fmt)


def _cells(c: Check) -> list[str]:
    if c.rule == "band" and c.metric is not None and c.base is not None and c.new is not None:
        f = c.metric.fmt
        sd = "-" if c.base.n < 2 else _num(c.base.sd, f)
        lo, hi = c.bounds()
        pct = f" ({c.change_pct:+.0f} %)" if c.change_pct is not None else ""
        # CPU judged at the run's level: the measured mean, then what the band judged.
        measured = f"{_num(c.new.mean * c.level, f)} / {c.level:.2f} = " if c.level != 1.0 else ""
        return [c.rule_text(), c.point, c.what, f"n={c.base.n} mean {_num(c.base.mean, f)} sd {sd}",
                f"{measured}{_num(c.new.mean, f)} (n={c.new.n}){pct}",
                f"[{_num(lo, f)}, {_num(hi, f)}] {SOURCE_WORDS.get(c.band.source, c.band.source)}"]
    return [c.rule, c.point, c.what, c.base_text or "-", c.new_text or "-", "-"]


def _table(checks: list[Check], verdicts: bool = False) -> list[str]:
    head = ["rule", "point", "what", "baseline", "new", "band"]
    rows = [(["verdict"] if verdicts else []) + head]
    rows += [([c.verdict] if verdicts else []) + _cells(c) for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def render(res: Result, show_all: bool = False) -> str:
    lines = [f"baseline {res.base.path} ({res.base.name})", f"new      {res.new.path} ({res.new.name})"]
    lines += [f"note: {n}" for n in res.notes]
    others = [c for c in res.checks if c.verdict != FAIL and (show_all or c.verdict in (HARMLESS, NOT_JUDGED,
                                                                                        UNCONFIRMED))]
    if others:
        title = "every other check:" if show_all else "outside a band on its harmless side, not judged or not confirmed:"
        lines += ["", title] + ["  " + line for line in _table(others, verdicts=True)]
    # The failures last, next to the verdict: a long report's (or a CI log's) end names them.
    if res.failures:
        lines += ["", f"FAILED ({len(res.failures)}):"] + ["  " + line for line in _table(res.failures)]
    metric_checks = res.deltas
    counts = {v: sum(1 for c in metric_checks if c.verdict == v) for v in (WITHIN, HARMLESS, FAIL)}
    structural = [c for c in res.checks if c.rule != "band"]
    lines.append("")
    lines.append(f"{len(metric_checks)} point×metric pairs judged: {counts[WITHIN]} within their band, "
                 f"{counts[HARMLESS]} outside on a harmless side, {counts[FAIL]} failed; "
                 f"{len(structural)} structural checks, {sum(1 for c in structural if c.verdict == FAIL)} failed"
                 + (f", {sum(1 for c in res.checks if c.verdict == NOT_JUDGED)} not judged"
                    if any(c.verdict == NOT_JUDGED for c in res.checks) else "")
                 + (f", {sum(1 for c in res.checks if c.verdict == UNCONFIRMED)} failed here only (--confirms)"
                    if any(c.verdict == UNCONFIRMED for c in res.checks) else "")
                 + ("" if show_all else "; --all lists every check"))
    lines.append("result: " + ("pass" if res.ok else f"REGRESSION ({len(res.failures)} failed)"))
    return "\n".join(lines)


def as_json(res: Result) -> dict[str, Any]:
    def one(c: Check) -> dict[str, Any]:
        d: dict[str, Any] = {"point": c.point, "rule": c.rule, "what": c.what, "verdict": c.verdict}
        if c.metric is not None and c.base is not None and c.new is not None and c.band is not None:
            lo, hi = c.bounds()
            d.update({"metric": c.metric.key, "sides": c.metric.sides, "scale": c.metric.scale,
                      "baseline_n": c.base.n, "baseline_mean": c.base.mean,
                      "baseline_sd": None if c.base.n < 2 else c.base.sd, "new_n": c.new.n, "new_mean": c.new.mean,
                      "band_low": lo, "band_high": hi, "band_from": c.band.source, "direction": c.direction,
                      "cpu_level": c.level})
        else:
            d.update({"baseline": c.base_text, "new": c.new_text})
        return d

    return {"ok": res.ok, "baseline": str(res.base.path), "new": str(res.new.path), "notes": res.notes,
            "noise_floor": str(res.noise.path) if res.noise else None, "only_new": res.only_new,
            "failures": [one(c) for c in res.failures], "failed_point_ids": failed_point_ids(res),
            "checks": [one(c) for c in res.checks]}
