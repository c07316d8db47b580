"""Grading a class: one row per student, with points, the ids of the checks they failed and those
to measure again.

A roster directory holds, per student, either
  NAME.json     a saved `linklab check --json` result (self-reported): graded only when it was made
                by the roster's checks file (the sha256 of its bytes), for the student's seed
                (NAME/seed, else NAME; compared when the checks have variables) and not with
                --student; otherwise refused, the reason in the row. Or
  NAME/         a directory with `steps` (their solution: one `linklab set|exec|ovs` line a
                step, # comments) and optionally `seed` (their variant; default: the name):
                the lab is built for that seed, the steps applied, the checks run (rebuilt), the
                lab removed.
An inconclusive check is neither earned nor lost: the percentage is over the points judged.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

from linklab import fsutil
from linklab import lab as lablib
from linklab import state
from linklab.check.exercise import apply_steps, parse_step
from linklab.check.output import SCHEMA, upgraded
from linklab.check.kinds.base import FAIL, INCONCLUSIVE
from linklab.check.run import SKIP, WARN, Report, run_checks
from linklab.check.spec import load_checks
from linklab.errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE, LinklabError, StateError, UsageError
from linklab.model import variables


# Seconds between a student's last step and the checks: LACP aggregates ~2.5 s after a bond
# changes, a controller restarted by `set` reconnects within a second or two.
SETTLE_S = 4.0


SELF_REPORTED, REBUILT = "self-reported", "rebuilt"


@dataclass
class Row:
    """A student's grade: points over the points judged (an inconclusive check, and one skipped
    because it required an inconclusive one, is neither earned nor lost: `remeasure` lists them);
    `percent` is None when there is no grade (refused, or not graded: `note` says why)."""
    student: str
    seed: str | None
    graded: str  # self-reported (a saved result handed in) or rebuilt (the lab built from their steps)
    points: float
    max_points: float  # of the checks judged
    percent: float | None
    passed: int
    failed: int
    inconclusive: int
    failed_ids: str
    remeasure: str  # the checks to measure again, space-separated
    exit_code: int
    source: str
    note: str = ""


@dataclass(frozen=True)
class Expected:
    """What a saved result must have been made for: the roster's checks file (its bytes' sha256)
    and the student's seed (compared only when the checks or their topology declare variables:
    without any, every seed is the same lab)."""
    checks_file: str
    sha256: str
    seeded: bool


def expected_for(checks: str | Path) -> Expected:
    from linklab.check.spec import file_sha256, with_topology_vars
    return Expected(str(checks), file_sha256(checks), bool(with_topology_vars(checks, None)))


def student_seed(entry: Path) -> str:
    """A student's variant: NAME/seed when there is one, else their name."""
    d = entry.with_suffix("") if entry.suffix == ".json" else entry
    return (d / "seed").read_text().strip() if (d / "seed").is_file() else d.name


def refusals(doc: dict[str, Any], want: Expected, seed: str) -> list[str]:
    """Why a saved result cannot be graded against the roster's checks for this student (none:
    it can). Pure."""
    why = []
    if doc.get("mode") == "student" or doc.get("student"):
        why.append("made with --student (hidden checks not run)")
    got = doc.get("checks_sha256")
    if not got:
        why.append(f"no checks file hash in it (saved by linklab {doc.get('linklab', '?')}): its checks cannot "
                   "be told from the roster's")
    elif got != want.sha256:
        why.append(f"made for another checks file ({doc.get('checks_file')}, sha256 {got[:12]}; "
                   f"{want.checks_file} is {want.sha256[:12]})")
    if want.seeded and str(doc.get("seed")) != seed:
        why.append(f"made for seed {doc.get('seed')!r}, not this student's {seed!r}")
    return why


def unjudged(checks: list[dict[str, Any]]) -> list[str]:
    """The ids neither earned nor lost: inconclusive checks, and those skipped because a check
    they require is unjudged. In the order given. Pure."""
    out = {c["id"] for c in checks if c["verdict"] == INCONCLUSIVE}
    grew = True
    while grew:
        more = {c["id"] for c in checks if c["verdict"] == SKIP and c["id"] not in out
                and any(r in out for r in c.get("requires") or [])}
        out |= more
        grew = bool(more)
    return [c["id"] for c in checks if c["id"] in out]


def row(student: str, seed: str | None, graded: str, checks: list[dict[str, Any]], exit_code: int,
        source: str, note: str = "") -> Row:
    """A graded row from every check's verdict and points. Pure."""
    again = set(unjudged(checks))
    judged = [c for c in checks if c["id"] not in again]
    points = round(sum(c["points"] for c in judged), 3)
    most = round(sum(c["max_points"] for c in judged), 3)
    count = {v: sum(1 for c in checks if c["verdict"] == v) for v in ("pass", FAIL, INCONCLUSIVE)}
    return Row(student, seed, graded, points, most, _pct(points, most), count["pass"], count[FAIL],
               count[INCONCLUSIVE], " ".join(c["id"] for c in checks if c["verdict"] in (FAIL, WARN)),
               " ".join(c["id"] for c in checks if c["id"] in again), exit_code, source, note)


def ungraded(student: str, seed: str | None, graded: str, exit_code: int, source: str, note: str) -> Row:
    return Row(student, seed, graded, 0.0, 0.0, None, 0, 0, 0, "", "", exit_code, source, note)


def from_json(path: Path, want: Expected) -> Row:
    found = fsutil.read_json_record(path)
    doc = upgraded(found)
    if doc is None:
        raise UsageError(f"{path}: not a `linklab check --json` result (schema {found.get('schema')!r}, expected {SCHEMA})")
    seed = student_seed(path)
    why = refusals(doc, want, seed)
    if why:
        return ungraded(path.stem, doc.get("seed"), SELF_REPORTED, EXIT_USAGE, str(path), "refused: " + "; ".join(why))
    return row(path.stem, doc.get("seed"), SELF_REPORTED, doc["checks"], doc["summary"]["exit_code"], str(path))


def from_report(student: str, report: Report, source: str) -> Row:
    return row(student, report.seed, REBUILT, [r.public() for r in report.results], report.exit_code, source)


def _pct(points: float, most: float) -> float | None:
    return round(100.0 * points / most, 1) if most else None


def entries(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise UsageError(f"--roster {directory}: not a directory")
    found = sorted(p for p in directory.iterdir() if (p.suffix == ".json" and p.is_file()) or (p / "steps").is_file())
    if not found:
        raise UsageError(f"--roster {directory}: no student in it",
                         hint="one NAME.json (a saved `linklab check --json`) or NAME/steps (a solution) per student")
    return found


def needs_labs(directory: Path) -> bool:
    return any(p.is_dir() for p in entries(directory))


def labs(checks: str) -> list:
    """The lab grading builds for `checks` (its topology as written: students' steps change its
    settings, not what it is made of), for where it runs (linklab/placement.py)."""
    spec = load_checks(checks, lab_for=lambda t, s: lablib.build_lab(t, [], seed=s))
    return [lablib.build_lab(spec.topology, [])]


def grade(directory: Path, checks: str | None, say: Callable[[str], None], lab_name: str | None = None,
          remeasure: bool = False) -> list[Row]:
    """One row per student of `directory`, against `checks`; `remeasure`: a rebuilt lab's
    inconclusive checks are measured once more before it is removed."""
    if checks is None:
        raise UsageError("a class is graded against a checks file: linklab check CHECKS --roster DIR",
                         hint="a saved result is graded only when it was made by the same checks file")
    want = expected_for(checks)
    rows = []
    for p in entries(directory):
        if p.suffix == ".json":
            rows.append(from_json(p, want))
            continue
        seed = student_seed(p)
        say(f"linklab: {p.name} (seed {seed})")
        try:
            report = _grade_solution(Path(checks), p / "steps", seed, say, lab_name, remeasure)
            rows.append(from_report(p.name, report, str(p)))
        except LinklabError as e:
            rows.append(ungraded(p.name, seed, REBUILT, e.exit_code, str(p), f"not graded: {e}"))
    return rows


def _grade_solution(checks: Path, steps_file: Path, seed: str, say, lab_name: str | None,
                    remeasure: bool = False) -> Report:
    spec = load_checks(checks, seed=seed, lab_for=lambda t, s: lablib.build_lab(t, [], seed=s))
    vals = spec.values | _topology_values(spec.topology, seed)
    lines = [ln.strip() for ln in steps_file.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    try:
        steps = [parse_step(s) for s in variables.substitute(lines, vals)[0]]
    except ValueError as e:
        raise UsageError(f"{steps_file}: {e}") from None
    name = lab_name or str(lablib.build_lab(spec.topology, [], seed=seed).name)
    if state.load(name) is not None:
        raise StateError(f"lab {name!r} is up: grading builds and removes its own", hint=f"`linklab down {name}` first")
    lablib.up(spec.topology, name=name, seed=seed, say=lambda _m: None)
    try:
        apply_steps(name, steps, say)
        time.sleep(SETTLE_S)
        report = run_checks(spec, lablib.handle(name), say=lambda m: say("  " + m))
        again = unjudged([r.public() for r in report.results])
        if remeasure and again:
            say(f"  measuring again: {', '.join(again)}")
            time.sleep(SETTLE_S)
            report = merged(report, run_checks(spec, lablib.handle(name), only=again, say=lambda m: say("  " + m)))
        return report
    finally:
        lablib.down(name, say=lambda _m: None)


def merged(first: Report, again: Report) -> Report:
    """`first` with the checks measured again replaced by their new results (in `first`'s order,
    its time the two runs'). Pure."""
    new = {r.id: r for r in again.results}
    return replace(first, results=[new.get(r.id, r) for r in first.results],
                   seconds=round(first.seconds + again.seconds, 2))


def _topology_values(topology: str, seed: str) -> dict[str, Any]:
    from linklab.model.loader import read_yaml
    data, _ = read_yaml(Path(topology))
    return variables.values(variables.declared(data)[0], seed)


# The layouts of --csv: linklab's own (every column of a row), and the grade imports of Moodle
# (Grades > Import > CSV file: a column to identify the user by, a grade column mapped to a grade
# item, a feedback column) and Canvas (Gradebook > Import: Student, ID, SIS User ID, SIS Login ID,
# Section, then one column per assignment, named by it).
LAYOUTS = ("linklab", "moodle", "canvas")
CANVAS_HEAD = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def csv_text(rows: list[Row], layout: str = "linklab", item: str = "linklab check") -> str:
    """The rows as CSV in `layout`; `item`: the grade item's (assignment's) name, for Canvas.
    Moodle and Canvas get the percentage (a grade out of 100) and no grade at all (an empty
    cell) for a row without one."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    if layout == "linklab":
        w.writerow(list(Row.__dataclass_fields__))
        w.writerows([["" if v is None else v for v in asdict(r).values()] for r in rows])
    elif layout == "moodle":
        w.writerow(["Student", "Grade", "Feedback"])
        w.writerows([[r.student, _grade(r), feedback(r)] for r in rows])
    elif layout == "canvas":
        w.writerow([*CANVAS_HEAD, item])
        w.writerows([[r.student, "", "", r.student, "", _grade(r)] for r in rows])
    else:
        raise UsageError(f"unknown CSV layout {layout!r} (valid: {', '.join(LAYOUTS)})")
    return out.getvalue()


def _grade(r: Row) -> str:
    return "" if r.percent is None else f"{r.percent:g}"


def feedback(r: Row) -> str:
    """What a student reads beside their grade: what failed, what is to be measured again, or why
    there is no grade."""
    parts = [f"{r.points:g}/{r.max_points:g} points ({r.graded})"] if r.percent is not None else []
    if r.failed_ids:
        parts.append(f"failed: {r.failed_ids}")
    if r.remeasure:
        parts.append(f"to measure again (not counted): {r.remeasure}")
    if r.note:
        parts.append(r.note)
    return "; ".join(parts)


def json_doc(rows: list[Row]) -> dict[str, Any]:
    return {"schema": "linklab-roster/2", "students": [asdict(r) for r in rows]}


def table(rows: list[Row]) -> str:
    head = ("STUDENT", "SEED", "GRADED", "POINTS", "%", "FAILED", "MEASURE AGAIN")
    body = [(r.student, str(r.seed or "-"), r.graded, f"{r.points:g}/{r.max_points:g}",
             "-" if r.percent is None else f"{r.percent:g}", (r.failed_ids or "-"),
             (r.remeasure or "-") + (f"  ({r.note})" if r.note else "")) for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in [head, *body])


def exit_code(rows: list[Row]) -> int:
    """Grading went through when every student has a row with a grade (their own results are in
    the rows, not in the exit code): a refused or ungraded row fails; checks left to measure
    again make it inconclusive."""
    if any(r.percent is None and r.note for r in rows):
        return EXIT_FAILURE
    return EXIT_INCONCLUSIVE if any(r.remeasure for r in rows) else EXIT_OK
