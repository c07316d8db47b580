"""`linklab compare BASELINE NEW`: a stored run against another, by the one verdict model
(docs/verdicts.md), labelled advisory: the two were not measured side by side, so whatever differed
between their times or machines (the machine's speed, its load, the lab VM's boot) differs in
the verdict too. `linklab ab` measures both interleaved; that is the gate.

Runs of different experiments, scale or placement are refused (bad input) unless the user says
the difference is intended (--allow-different); what else differs between their labs is noted.
"""

from __future__ import annotations

from linklab.errors import UsageError
from linklab.results.points import group
from linklab.results.runs import Run
from linklab.verdict import aa, judging
from linklab.verdict.model import Result

COMPARABLE = ("experiment", "scale", "placement")


def identity(run: Run) -> dict[str, str]:
    return {"experiment": f"{run.experiment}{' (quick)' if run.manifest.get('quick') else ''}",
            "scale": f"{run.scale:g}", "placement": run.placement}


def check_comparable(base: Run, new: Run, allow: set[str]) -> list[str]:
    """Raise UsageError for runs that measure different things; notes for what was allowed."""
    bad = set(allow) - set(COMPARABLE)
    if bad:
        raise UsageError(f"unknown --allow-different value(s) {sorted(bad)} (valid: {', '.join(COMPARABLE)})")
    a, b = identity(base), identity(new)
    problems, notes = [], []
    for k in COMPARABLE:
        if a[k] != b[k]:
            (notes if k in allow else problems).append(f"{k}: baseline {a[k]}, new {b[k]}")
    if problems:
        raise UsageError("the runs are not comparable: " + "; ".join(problems),
                         hint="compare runs of the same experiment, scale and placement, or say which difference "
                              "is intended with --allow-different " + ",".join(k for k in COMPARABLE if a[k] != b[k]))
    for what in ("lab_overrides", "sweep_overrides"):
        ob, on = base.manifest.get(what) or [], new.manifest.get(what) or []
        if ob != on:
            notes.append(f"{what.replace('_', ' ')} differ: baseline {ob or 'none'}, new {on or 'none'}")
    return [n if "overrides" in n else f"allowed difference: {n}" for n in notes]


def compare(base: Run, new: Run, allow: set[str] = frozenset()) -> Result:
    """NEW judged against BASELINE (advisory), with the experiment's A/A spread where one is recorded."""
    notes = check_comparable(base, new, set(allow))
    if not base.rows:
        raise UsageError(f"{base.path}: the baseline has no repetition to compare against")
    if not {p.key() for p in group(base)} & {p.key() for p in group(new)}:
        raise UsageError("no point of the new run matches a point of the baseline",
                         hint="points are matched by their axis values; the runs have different matrices")
    res = judging.judge(base, new, paired=False, aa=aa.for_run(base))
    res.notes[:0] = notes
    return res
