"""`linklab check`: coursework checks against a running lab, an exercise's selftest, a class's
grades (linklab.cli adds the command to its parser)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from linklab import bundled
from linklab.console import say
from linklab.errors import EXIT_INCONCLUSIVE, EXIT_OK, UsageError

EPILOG = """\
examples:
  linklab check                                 the checks in the lab's own topology (its checks: section)
  linklab check exercises/mtu_path/checks.yaml  a checks file naming its topology
  linklab check --student --stage 1             what a student sees: no hidden checks, stage 1 only
  linklab check --json out.json --junit out.xml
  linklab check --watch                         again after every change of the lab
  linklab check --selftest mtu_path             build an exercise, prove its solution and broken variants
  linklab check --selftest mtu_path --junit selftest.xml   ... a JUnit test case per stage
  linklab check exercises/mtu_path/checks.yaml --restore 2 the running lab at the end of stage 2 (its seed kept)
  linklab check exercises/mtu_path/checks.yaml --roster submissions/ --csv grades.csv
  linklab check CHECKS --roster submissions/ --csv moodle.csv --csv-layout moodle --remeasure
  linklab check --kinds                         the kinds of check, and what each judges

verdicts: PASS, FAIL, WARN (a failed check of severity warn), INCONCLUSIVE (a measured check the
emulator or a busy host limited: never FAIL), SKIP (a check it requires did not pass)
A bad checks file is refused with every problem, its path and line, before anything runs or a
lab is looked for; an option of another mode (--csv without --roster, ...) is refused, naming it.
--json, --junit and --csv files go where they are named, also when the lab runs in the lab VM.
exit codes: docs/commands.md#exit-codes (a check failed, inconclusive, only warnings, ...)
"""


def add_commands(sub) -> None:
    p = sub.add_parser("check", help="coursework checks: is the running lab right, and why not",
                       description="Run checks against a running lab: its state read back from the kernel (routes "
                                   "too), its data plane probed (loss-aware; paths traced, services asked), its "
                                   "measured behaviour judged with a tolerance, any command's exit and output.",
                       epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checks", nargs="?", type=bundled.argtype("exercises", "topologies"),
                   help="checks file, or a topology with a checks: section, or a bundled exercise's name "
                   "(its checks.yaml) (default: the running lab's topology)")
    p.add_argument("--lab", help="the lab to check (default: the only lab up)")
    p.add_argument("--seed", metavar="ID", help="the student variant (default: the one the lab was built as)")
    p.add_argument("--stage", type=int, metavar="N", help="only checks of stages 1..N")
    p.add_argument("--only", metavar="ID,ID", help="only these checks (and those they require)")
    p.add_argument("--student", action="store_true", help="leave hidden checks out (not run, not shown)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON (schema linklab-check/2; "
                   "--selftest: each stage's, --roster: one row per student)")
    p.add_argument("--raw", action="store_true", help="with --json: keep what each tool printed")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML (a testcase per check)")
    p.add_argument("--watch", action="store_true", help="run again whenever the lab changes (Ctrl-C stops)")
    p.add_argument("--interval", type=float, help="--watch: seconds between looks at the lab (default: 1)")
    p.add_argument("--selftest", metavar="EXERCISE", help="build an exercise's lab and check its start, its "
                   "reference solution and each broken variant (exercises/<name>)")
    p.add_argument("--name", help="--selftest, --roster: the lab's name (default: the topology's)")
    p.add_argument("--keep", action="store_true", help="--selftest: leave the lab up afterwards")
    p.add_argument("--roster", metavar="DIR", help="grade a class: DIR has NAME.json (saved --json results) "
                   "or NAME/steps (a student's solution, NAME/seed their variant)")
    p.add_argument("--csv", metavar="FILE", help="--roster: write the rows as CSV")
    p.add_argument("--csv-layout", choices=roster_layouts(), help="--csv: the columns: linklab (every column "
                   "of a row, the default), moodle (Moodle's grade import) or canvas (Canvas's gradebook import); "
                   "docs/coursework.md")
    p.add_argument("--remeasure", action="store_true", help="--roster: measure a rebuilt lab's inconclusive "
                   "checks once more before grading it (a saved result's cannot be)")
    p.add_argument("--restore", type=int, metavar="STAGE", help="bring the running lab of an exercise to the "
                   "reference at the end of STAGE: built again for its seed, the solution's steps up to STAGE applied")
    p.add_argument("--kinds", action="store_true", help="list the kinds of check, with what each judges")
    p.set_defaults(handler=cmd_check)


def roster_layouts() -> tuple[str, ...]:
    """roster.LAYOUTS, named here so that building the parser imports no lab code (a unit test
    holds the two equal)."""
    return ("linklab", "moodle", "canvas")


# The modes of `linklab check`, and the options each takes (an option given to another is refused).
CHECK, SELFTEST, ROSTER, RESTORE, KINDS = "check", "--selftest", "--roster", "--restore", "--kinds"
MODE_NAMES = {CHECK: "`linklab check` of a running lab", SELFTEST: "--selftest (an exercise proved)",
              ROSTER: "--roster (a class graded)", RESTORE: "--restore (a lab brought to a stage)",
              KINDS: "--kinds"}
OPTIONS = {  # dest: (its flag, the modes that take it)
    "checks": ("CHECKS", (CHECK, ROSTER, RESTORE)), "lab": ("--lab", (CHECK, RESTORE)),
    "seed": ("--seed", (CHECK, SELFTEST)), "stage": ("--stage", (CHECK,)), "only": ("--only", (CHECK,)),
    "student": ("--student", (CHECK,)), "json": ("--json", (CHECK, SELFTEST, ROSTER)),
    "raw": ("--raw", (CHECK, SELFTEST)), "junit": ("--junit", (CHECK, SELFTEST)), "watch": ("--watch", (CHECK,)),
    "interval": ("--interval", (CHECK,)), "name": ("--name", (SELFTEST, ROSTER)), "keep": ("--keep", (SELFTEST,)),
    "csv": ("--csv", (ROSTER,)), "csv_layout": ("--csv-layout", (ROSTER,)), "remeasure": ("--remeasure", (ROSTER,)),
}


def mode_of(args) -> str:
    """The one mode the options ask for; refuses two modes, or an option no mode given takes
    (exit 2, naming the modes that take it)."""
    given = [m for m, on in ((SELFTEST, args.selftest), (ROSTER, args.roster), (RESTORE, args.restore is not None),
                             (KINDS, args.kinds)) if on]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)}: one at a time (each is a mode of its own)")
    mode = given[0] if given else CHECK
    for dest, (flag, modes) in OPTIONS.items():
        if getattr(args, dest) not in (None, False) and mode not in modes:
            raise UsageError(f"{flag} does not apply to {MODE_NAMES[mode]}: it is for "
                             + " and ".join(MODE_NAMES[m] for m in modes))
    if args.interval is not None and not args.watch:
        raise UsageError("--interval is the time between looks of --watch: give --watch too")
    if args.csv_layout and not args.csv:
        raise UsageError("--csv-layout is the columns of --csv FILE: give --csv too")
    return mode


def cmd_check(args, argv) -> int:
    mode = mode_of(args)
    if mode == KINDS:
        from linklab.check.kinds import REGISTRY
        for name, k in REGISTRY.items():
            print(f"{name:<15} {k.summary}")
        return 0
    if args.stage is not None and not 1 <= args.stage <= 100:
        raise UsageError(f"--stage {args.stage}: a stage from 1 to 100")
    if args.raw and not args.json:
        raise UsageError("--raw keeps the tools' output in the JSON results: give --json FILE too")
    if mode == SELFTEST:
        return _selftest(args, argv)
    if mode == ROSTER:
        return _roster(args, argv)
    if mode == RESTORE:
        return _restore(args, argv)
    return _check(args, argv)


def _outputs(args) -> list[tuple[str, str]]:
    return [(what, f) for what, f in (("--json", args.json), ("--junit", args.junit), ("--csv", args.csv)) if f]


def _forward(args, argv, forward) -> int:
    """`forward(argv)` into the lab VM, each output file the VM does not share written through a
    spool it does and copied where it was named when the command ends (as a sweep's results:
    linklab/results/spool.py); the spool's path, given last, wins in the VM."""
    from linklab.results.spool import files_through_vm
    named = _outputs(args)
    with files_through_vm([Path(f) for _, f in named], say=say) as where:
        extra = [x for (what, f), w in zip(named, where) if w != Path(f).resolve() for x in (what, str(w))]
        return forward([*argv, *extra])


NO_CHECKS_HINT = "a checks: section lists them (see `linklab check --help`)"


def _check(args, argv) -> int:
    from linklab import kernel, placement, state
    from linklab.check.spec import load_checks
    from linklab.model.resolved import Lab
    if args.checks:
        _refuse_a_bad_checks_file(args.checks, args.seed)
    name = args.lab or state.default_lab()
    record = state.require(name)
    seed = record["topology"].get("seed")
    if args.seed is not None and str(args.seed) != str(seed):
        raise UsageError(f"lab {name} was built as the variant of seed {seed!r}, not {args.seed!r}",
                         hint=f"`linklab down {name}`, then `linklab up TOPOLOGY --seed {args.seed}`")
    checks = args.checks or record["topology"]["path"]
    # Validated here, before anything runs or a command is forwarded: a bad file costs nothing.
    spec = load_checks(checks, Lab.model_validate(record["resolved"]), seed)
    if not spec.checks:
        raise UsageError(f"{checks}: no checks", hint=NO_CHECKS_HINT)
    only = [x for x in (args.only or "").split(",") if x] or None
    unknown = [x for x in only or [] if x not in {c.id for c in spec.checks}]
    if unknown:
        raise UsageError(f"--only {','.join(unknown)}: no such check (valid: {', '.join(c.id for c in spec.checks)})")
    if not kernel.in_lab_vm() and placement.lab_is_in_vm(name):
        return _forward(args, argv, lambda a: placement.forward(a, say=say, boot=False))
    from linklab import lab

    def once() -> int:
        from linklab.check.output import table, write_json, write_junit
        from linklab.check.run import run_checks
        current = state.require(name)
        fresh = load_checks(checks, Lab.model_validate(current["resolved"]), seed)
        report = run_checks(fresh, lab.handle(name), stage=args.stage, student=args.student, only=only,
                            say=lambda m: print(m, file=sys.stderr, flush=True), keep_raw=args.raw)
        print(table(report), flush=True)
        if args.json:
            write_json(report, Path(args.json), raw=args.raw)
        if args.junit:
            write_junit(report, Path(args.junit))
        return report.exit_code

    if args.watch:
        from linklab.check.watch import watch
        return watch(name, once, say, interval=args.interval or 1.0)
    return once()


def _refuse_a_bad_checks_file(checks: str, seed: str | None) -> None:
    """Before any lab is looked for: the file on its own, against the lab its topology resolves to
    (as `linklab validate` judges it), so a malformed one is refused with every problem, its path
    and line (exit 2) whether a lab is up or not. The running lab's variant is judged after."""
    from linklab.validate import validate_file
    kind = validate_file(checks, seed)
    if kind not in ("checks file", "topology with checks"):
        raise UsageError(f"{checks}: no checks (it is {'an' if kind[0] in 'ae' else 'a'} {kind})", hint=NO_CHECKS_HINT)


def _selftest(args, argv) -> int:
    from linklab import placement
    from linklab.check import exercise
    loaded = exercise.load(args.selftest, args.seed)  # bad exercise files stop here, before a VM boots
    use_vm, why = placement.want_vm_for_up(False, False, exercise.labs(loaded))
    if use_vm:
        say(f"linklab: the selftest runs in the lab VM ({why})")
        return _forward(args, argv, lambda a: placement.forward_booting(a, say=say))
    stages = exercise.selftest(args.selftest, args.seed, args.name, say=say, keep=args.keep, keep_raw=args.raw)
    if args.json:
        from linklab import fsutil
        fsutil.write_atomic(Path(args.json), json.dumps(exercise.as_json(args.selftest, stages, raw=args.raw),
                                                        indent=1, default=str) + "\n")
    if args.junit:
        from linklab import fsutil
        fsutil.write_atomic(Path(args.junit), exercise.junit(Path(args.selftest).name, stages))
    width = max(len(s.name) for s in stages)
    for s in stages:
        say(f"  {s.verdict.upper():<12} {s.name:<{width}}  must fail: {', '.join(s.expected) or 'none'}; "
            f"failed: {', '.join(s.failed) or 'none'}" + (f"; inconclusive: {', '.join(s.inconclusive)}" if s.inconclusive else "")
            + (f"; skipped without cause: {', '.join(s.unexpected)}" if s.unexpected else ""))
        for line in _not_as_written(s):
            say(line)
    rc = exercise.exit_code(stages)
    say(f"linklab: selftest {'passed' if rc == EXIT_OK else 'inconclusive' if rc == EXIT_INCONCLUSIVE else 'FAILED'} "
        f"({sum(s.seconds for s in stages):.0f} s)")
    return rc


def _not_as_written(stage) -> list[str]:
    """Each check of a stage whose verdict is not the one written, as `linklab check` shows a
    check (expected, observed, the detail: the flags that limited a measurement)."""
    import shutil

    from linklab.check.exercise import mismatches
    from linklab.check.output import result_lines
    found = mismatches(stage)
    if not found:
        return []
    width = shutil.get_terminal_size((120, 20)).columns - 6
    idw = max(len(r.id) for r, _ in found)
    out = []
    for r, written in found:
        out.append(f"      {r.id}: must {written}, was {r.verdict}")
        out += ["        " + line for line in result_lines(r, width - 2, idw, detail_always=True)]
    return out


def _restore(args, argv) -> int:
    from linklab import kernel, placement, state
    from linklab.check import exercise
    if not 1 <= args.restore <= 100:
        raise UsageError(f"--restore {args.restore}: a stage from 1 to 100")
    name = args.lab or state.default_lab()
    record = state.require(name)
    topology = record.get("topology") or {}
    loaded = exercise.for_lab(args.checks or topology["path"], topology.get("seed"))
    exercise.restore_steps(loaded, args.restore)  # a stage it has not is refused here, before the VM
    if not kernel.in_lab_vm() and placement.lab_is_in_vm(name):
        return placement.forward(argv, say=say, boot=False)
    exercise.restore(loaded, name, args.restore, say=say)
    say(f"linklab: lab {name} is at the end of stage {args.restore}: "
        f"`linklab check {loaded.checks.source} --stage {args.restore}` passes")
    return EXIT_OK


def _roster(args, argv) -> int:
    from linklab import fsutil, kernel, placement
    from linklab.check import roster
    directory = Path(args.roster)
    if roster.needs_labs(directory) and not kernel.in_lab_vm() and args.checks:
        use_vm, why = placement.want_vm_for_up(False, False, roster.labs(args.checks))
        if use_vm:
            say(f"linklab: grading runs in the lab VM ({why})")
            return _forward(args, argv, lambda a: placement.forward_booting(a, say=say))
    rows = roster.grade(directory, args.checks, say, args.name, remeasure=args.remeasure)
    print(roster.table(rows))
    if args.csv:
        item = load_title(args.checks)
        fsutil.write_atomic(Path(args.csv), roster.csv_text(rows, args.csv_layout or "linklab", item))
    if args.json:
        fsutil.write_atomic(Path(args.json), json.dumps(roster.json_doc(rows), indent=1) + "\n")
    return roster.exit_code(rows)


def load_title(checks: str) -> str:
    """A grade item's name: the checks file's title, else its exercise's directory name."""
    from linklab.model.loader import read_yaml
    data, _ = read_yaml(Path(checks))
    return str(data.get("title") or Path(checks).resolve().parent.name)
