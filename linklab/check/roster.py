"""Grading a class: one row per student, with points and the ids of the checks they failed.

A roster directory holds, per student, either
  NAME.json     a saved `linklab check --json` result (schema linklab-check/2, or /1 upgraded), or
  NAME/         a directory with `steps` (their solution: one `linklab set|exec|ovs` line a
                step, # comments) and optionally `seed` (their variant; default: the name):
                the lab is built for that seed, the steps applied, the checks run, the lab removed.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from linklab import fsutil
from linklab import lab as lablib
from linklab import state
from linklab.check.exercise import apply_steps, parse_step
from linklab.check.output import SCHEMA, upgraded
from linklab.check.run import Report, run_checks
from linklab.check.spec import load_checks
from linklab.errors import EXIT_FAILURE, EXIT_OK, LinklabError, StateError, UsageError
from linklab.model import variables


# Seconds between a student's last step and the checks: LACP aggregates ~2.5 s after a bond
# changes, a controller restarted by `set` reconnects within a second or two.
SETTLE_S = 4.0


@dataclass
class Row:
    student: str
    seed: str | None
    points: float
    max_points: float
    percent: float
    passed: int
    failed: int
    inconclusive: int
    failed_ids: str
    exit_code: int
    source: str
    note: str = ""


def from_json(path: Path) -> Row:
    found = fsutil.read_json_record(path)
    doc = upgraded(found)
    if doc is None:
        raise UsageError(f"{path}: not a `linklab check --json` result (schema {found.get('schema')!r}, expected {SCHEMA})")
    s = doc["summary"]
    failed = [c["id"] for c in doc["checks"] if c["verdict"] in ("fail", "warn")]
    note = "run with --student: hidden checks not run" if doc.get("student") else ""
    return Row(path.stem, doc.get("seed"), s["points"], s["max_points"], _pct(s["points"], s["max_points"]),
               s["passed"], s["failed"], s["inconclusive"], " ".join(failed), s["exit_code"], str(path), note)


def from_report(student: str, report: Report, source: str) -> Row:
    s = report.summary()
    return Row(student, report.seed, s["points"], s["max_points"], _pct(s["points"], s["max_points"]),
               s["passed"], s["failed"], s["inconclusive"], " ".join(r.id for r in report.results if r.verdict in ("fail", "warn")),
               s["exit_code"], source)


def _pct(points: float, most: float) -> float:
    return round(100.0 * points / most, 1) if most else 0.0


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


def grade(directory: Path, checks: str | None, say: Callable[[str], None], lab_name: str | None = None) -> list[Row]:
    rows = []
    for p in entries(directory):
        if p.suffix == ".json":
            rows.append(from_json(p))
            continue
        if checks is None:
            raise UsageError(f"{p}: a student's solution is graded against a checks file: "
                             "linklab check CHECKS --roster DIR")
        seed = (p / "seed").read_text().strip() if (p / "seed").is_file() else p.name
        say(f"linklab: {p.name} (seed {seed})")
        try:
            rows.append(from_report(p.name, _grade_solution(Path(checks), p / "steps", seed, say, lab_name), str(p)))
        except LinklabError as e:
            rows.append(Row(p.name, seed, 0.0, 0.0, 0.0, 0, 0, 0, "", e.exit_code, str(p), f"not graded: {e}"))
    return rows


def _grade_solution(checks: Path, steps_file: Path, seed: str, say, lab_name: str | None) -> Report:
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
        return run_checks(spec, lablib.handle(name), say=lambda m: say("  " + m))
    finally:
        lablib.down(name, say=lambda _m: None)


def _topology_values(topology: str, seed: str) -> dict[str, Any]:
    from linklab.model.loader import read_yaml
    data, _ = read_yaml(Path(topology))
    return variables.values(variables.declared(data)[0], seed)


def csv_text(rows: list[Row]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(Row.__dataclass_fields__))
    w.writeheader()
    for r in rows:
        w.writerow(asdict(r))
    return out.getvalue()


def json_doc(rows: list[Row]) -> dict[str, Any]:
    return {"schema": "linklab-roster/1", "students": [asdict(r) for r in rows]}


def table(rows: list[Row]) -> str:
    head = ("STUDENT", "SEED", "POINTS", "%", "FAILED")
    body = [(r.student, str(r.seed or "-"), f"{r.points:g}/{r.max_points:g}", f"{r.percent:g}",
             (r.failed_ids or "-") + (f"  ({r.note})" if r.note else "")) for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in [head, *body])


def exit_code(rows: list[Row]) -> int:
    """Grading went through when every student has a row with points: their own results are in
    the rows, not in the exit code."""
    return EXIT_FAILURE if any(r.note.startswith("not graded") for r in rows) else EXIT_OK
