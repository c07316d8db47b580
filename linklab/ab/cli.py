"""`linklab ab` and `linklab aa`: the commands (linklab.cli adds them to its parser). Handlers
import what they run when they run: linklab.cli imports this module to build its parser, so
whatever is imported at the top is paid by every command's start-up."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from linklab import bundled
from linklab.ab import manifest as ab_manifest
from linklab.console import say
from linklab.errors import LinklabError, UsageError

DEFAULT_PAIRS = 2
DEFAULT_CONFIRM = 6  # a point measured again: at six a side its own spread has 10 degrees of freedom

AB_HELP = """\
examples:
  linklab ab experiments/e1_bonding_mtu.yaml --quick --b 'links[*].impair.rate=900mbit'
        the lab as it is (A) against every link at 900 Mbit/s (B)
  linklab ab experiments/e1_bonding_mtu.yaml --quick --a-rev origin/main
        this checkout's code and files (B) against another revision of it (A): a regression test
  linklab ab experiments/e1_bonding_mtu.yaml --quick
        A/A: both arms alike, to see what the verdict does when nothing changed
  linklab ab EXP --quick --a-rev v1 --b-rev v2 --pairs 3

Both arms run in one lab VM boot (natively where this kernel can host the lab), each with a lab
of its own; at every point they are measured interleaved, A B B A (B A A B at the next point), so
that whatever the machine does for a while hits both. How B is judged against A, and how to
do it by hand: docs/verdicts.md.

Writes RESULTS/ab/<experiment>/<time>/: ab.json (the arms, their order), a/ and b/ (each a run
as `linklab sweep` writes it), a.log and b.log (the arms' sweeps), verdict.json, report.html.

exit codes: docs/commands.md#exit-codes (B differs, inconclusive, bad input, ...)
"""


AA_HELP = """\
examples:
  linklab aa experiments/e1_bonding_mtu.yaml --quick --runs 20
        20 A/A runs of E1's quick variant (those already under results/ab/ count; an interrupted
        one does not), then the spread, written to baselines/e1_bonding_mtu-quick-vm-tcg/aa.json
  linklab aa experiments/e1_bonding_mtu.yaml --quick --runs 0
        the spread from the A/A runs made already

An A/A run is `linklab ab` with both arms alike. What the spread is and how `linklab ab` uses
it: docs/verdicts.md ("The A/A spread"). Run it alone on the machine kind the A/B runs on.
"""


def add_commands(sub) -> None:
    _add_ab(sub)
    a = sub.add_parser(
        "aa", help="record how far an experiment's A/B ratios move when nothing changed (the A/A spread)",
        description="Make sure RUNS A/A runs of the experiment exist (`linklab ab` with both arms alike), then "
                    "measure the A/A spread from all of them: per point and metric, how far B/A moved with "
                    "nothing changed. `linklab ab` reads it from baselines/<experiment>[-quick]-<placement>/aa.json.",
        epilog=AA_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("experiment", type=bundled.argtype("experiments"), help="experiment YAML, or a bundled experiment's name")
    a.add_argument("--quick", action="store_true", help="the experiment's short variant")
    a.add_argument("--runs", type=int, default=20, metavar="N", help="A/A runs to have (default 20; 0: use those made)")
    a.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, metavar="N",
                   help=f"repetitions per arm and point of the runs it records (default {DEFAULT_PAIRS})")
    a.add_argument("--results", default="results", help="results root directory (default ./results)")
    a.add_argument("--out", help="where to write it (default baselines/<experiment>[-quick]-<placement>/aa.json)")
    a.add_argument("--dry-run", action="store_true", help="print the spread, write nothing")
    a.set_defaults(handler=cmd_aa)


def _add_ab(sub) -> None:
    p = sub.add_parser(
        "ab", help="measure two variants side by side, interleaved in one lab, and judge B against A",
        description="Run an experiment twice at once: arm A and arm B, each a revision of the checkout (or its "
                    "working tree) with lab settings on top, measured interleaved point by point in one lab VM "
                    "boot, then judged by the verdict (docs/verdicts.md).",
        epilog=AB_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", type=bundled.argtype("experiments"),
                   help="experiment YAML, or a bundled experiment's name (each revision's own copy of it, for --a-rev/--b-rev)")
    p.add_argument("--quick", action="store_true", help="the experiment's short variant")
    p.add_argument("--a", dest="a_set", action="append", default=[], metavar="PATH=VALUE",
                   help="a lab setting for arm A on top of every point's (as `linklab set` takes it; repeatable)")
    p.add_argument("--b", dest="b_set", action="append", default=[], metavar="PATH=VALUE",
                   help="a lab setting for arm B, e.g. --b 'links[*].impair.delay=2ms' (repeatable)")
    p.add_argument("--a-rev", metavar="REV", help="arm A runs this git revision of the checkout (default: the working tree)")
    p.add_argument("--b-rev", metavar="REV", help="arm B runs this git revision (default: the working tree)")
    p.add_argument("--only", action="append", default=[], metavar="AXIS=V,V",
                   help="only the points whose AXIS is one of these values, e.g. --only mtu=450,9200 "
                        "(repeatable: every one must hold)")
    p.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, metavar="N",
                   help=f"repetitions of each arm at each point (default {DEFAULT_PAIRS}: A B B A)")
    p.add_argument("--confirm", type=int, default=DEFAULT_CONFIRM, metavar="N",
                   help=f"where B differs from A in a metric at a point or two, measure those points again, N "
                        f"repetitions of each arm, and believe only what that says there (default {DEFAULT_CONFIRM}; "
                        "0: the first verdict stands; docs/verdicts.md, \"Measured again\")")
    p.add_argument("--results", default="results", help="results root directory (default ./results)")
    p.add_argument("--keep-labs", action="store_true", help="leave both arms' labs up afterwards (default: taken down)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.add_argument("--no-report", action="store_true", help="no report.html (the verdict is printed either way)")
    p.add_argument("--junit", metavar="FILE", help="also write the verdict as JUnit XML for CI: a test case per point "
                   "and judged metric and per point and structural check (differs: failure; inconclusive: skipped)")
    p.add_argument("--run-dir", help=argparse.SUPPRESS)  # the host's half names the run the VM's half fills
    p.set_defaults(handler=cmd_ab)


def cmd_ab(args, argv) -> int:
    from linklab import kernel, lab, placement
    from linklab.ab import arms as arms_mod
    from linklab.sweep.experiment import raw_data, topology_path
    from linklab.validate import load_experiment

    if not 1 <= args.pairs <= 20:
        raise UsageError(f"--pairs {args.pairs}: a whole number from 1 to 20")
    if not 0 <= args.confirm <= 20:
        raise UsageError(f"--confirm {args.confirm}: a whole number from 0 (never measure again) to 20")
    exp_path = Path(args.experiment)
    exp = load_experiment(exp_path, quick=args.quick)  # bad input stops here, before any VM boots
    subset = parse_subset(args.only, exp.matrix)
    tpath = topology_path(exp_path, exp)
    specs = [arms_mod.ArmSpec("a", args.a_rev, tuple(args.a_set)), arms_mod.ArmSpec("b", args.b_rev, tuple(args.b_set))]
    for spec in specs:
        if spec.overrides:  # each setting must apply to this topology: refused now, not in the VM
            lab.build_lab(tpath, lab.parse_overrides(list(spec.overrides)))
    base_lab = raw_data(tpath)["name"]
    if args.run_dir:  # the VM's half: measure into the run the host made
        run_dir = Path(args.run_dir)
        arms = arms_mod.prepare(specs, exp_path, base_lab, run_dir)
        measure(arms, run_dir, args, subset)
        return 0
    from linklab.sweep.plan import point_labs
    arm_labs = [lab_ for spec in specs for lab_ in point_labs(exp_path, exp, tuple(lab.parse_overrides(list(spec.overrides))))]
    use_vm, why = placement.want_vm_for_up(False, False, arm_labs)
    use_vm = use_vm and not kernel.in_lab_vm()
    if use_vm:  # both arms write their runs from inside the VM: refused now where that is lost
        placement.require_shared_with_vm(Path(args.results), "results directory")
    run_dir = new_run_dir(Path(args.results), exp.name)
    arms = arms_mod.prepare(specs, exp_path, base_lab, run_dir)
    manifest = {"format": ab_manifest.FORMAT, "kind": "ab", "experiment": exp.name, "experiment_file": str(exp_path),
                "quick": args.quick, "pairs": args.pairs, "order": "ABBA per point, BAAB at every other point",
                "subset": {k: sorted(v) for k, v in subset.items()},  # --only: the points measured
                "arms": {a.name: a.describe() for a in arms}, "command": ["linklab", *argv],
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "complete": False}
    from linklab.fsutil import write_json_atomic
    write_json_atomic(run_dir / ab_manifest.AB_FILE, manifest)
    say(f"linklab ab: A = {specs[0].words()}; B = {specs[1].words()}" + ("  (A/A: the arms are alike)"
                                                                          if specs[0] == _as_a(specs[1]) else ""))
    say(f"linklab ab: results go to {run_dir}")
    if use_vm:
        say(f"linklab ab: both arms run in one lab VM ({why})")
        rc = placement.forward_booting([*argv, "--run-dir", str(run_dir)], say=say)
        if rc != 0:
            return rc
    else:
        measure(arms, run_dir, args, subset)
    return judge_run(run_dir, as_json=args.json, report=not args.no_report,
                     junit=Path(args.junit) if args.junit else None)


def measure(arms, run_dir: Path, args, subset: dict[str, set[str]]) -> None:
    """Both arms measured interleaved; then, where B differs from A at a point or two, those
    points measured again (--confirm: linklab/ab/confirm.py)."""
    from linklab import verdict
    from linklab.ab import confirm
    from linklab.ab.session import drive, take_down
    from linklab.results.runs import Run
    from linklab.verdict import aa

    if not args.confirm:
        drive(arms, run_dir, args.pairs, args.quick, say=say, keep_labs=args.keep_labs, subset=subset)
        return
    again = []
    try:  # the labs stay up for a second measurement (their build saved), else taken down here
        manifest = drive(arms, run_dir, args.pairs, args.quick, say=say, keep_labs=True, subset=subset)
        a = Run.load(manifest["runs"]["a"])
        first = verdict.judge(a, Run.load(manifest["runs"]["b"]), paired=True, aa=aa.for_run(a))
        again = confirm.points(first)
    finally:
        if not again and not args.keep_labs:
            for arm in arms:
                take_down(arm, say)
    if not again:
        return
    say(f"linklab ab: B differs from A at {', '.join(p.label for p in again)} ({len(first.failures)} judgments); "
        f"measuring {'it' if len(again) == 1 else 'them'} again, {args.confirm} repetitions of each arm, "
        "before believing it")
    cdir, arms_again = confirm.prepare(run_dir, arms, again, args.confirm)
    drive(arms_again, cdir, args.confirm, args.quick, say=say, keep_labs=args.keep_labs, keep=confirm.keeps(again),
          reuse_labs=True)


def parse_subset(specs: list[str], matrix: dict[str, list]) -> dict[str, set[str]]:
    """--only AXIS=V,V (repeatable) against the experiment's matrix: the subset, {axis: the values
    kept}, each value as the matrix writes it; every problem at once, with the valid choices (exit 2)."""
    subset: dict[str, set[str]] = {}
    problems = []
    for spec in specs:
        axis, sep, values = spec.partition("=")
        axis = axis.strip()
        if not sep or not axis or not values.strip():
            problems.append(f"--only {spec!r}: AXIS=VALUE[,VALUE...], e.g. --only mtu=450,9200")
            continue
        if axis not in matrix:
            problems.append(f"--only {spec!r}: unknown axis {axis!r} (valid: {', '.join(matrix) or 'none'})")
            continue
        valid = [str(v) for v in matrix[axis]]
        wanted = [v.strip() for v in values.split(",") if v.strip()]
        bad = [v for v in wanted if v not in valid]
        if bad:
            problems.append(f"--only {spec!r}: {axis} has no value {', '.join(map(repr, bad))} (valid: {', '.join(valid)})")
            continue
        subset[axis] = subset.get(axis, set(valid)) & set(wanted)
    if problems:
        raise UsageError("; ".join(problems))
    empty = [a for a, v in subset.items() if not v]
    if empty:
        raise UsageError(f"--only leaves no value of {', '.join(empty)}: no point to measure")
    return subset


def _as_a(spec):
    from dataclasses import replace
    return replace(spec, name="a")


def new_run_dir(root: Path, experiment: str) -> Path:
    """RESULTS/ab/<experiment>/<YYYYmmdd-HHMMSS>[-N]: a new directory, never an existing one."""
    base = root / "ab" / experiment
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        path = base / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise UsageError(f"{base}: no new run directory could be made")


def judge_run(run_dir: Path, as_json: bool = False, report: bool = True, figures: bool = True,
              quiet: bool = False, junit: Path | None = None) -> int:
    """The verdict of a measured A/B run (written to verdict.json; report.html beside it, and the
    JUnit XML to `junit`); 0 when B does not differ from A, 1 when it does."""
    from linklab.fsutil import write_json_atomic
    from linklab import verdict
    from linklab.results.runs import Run
    from linklab.ab import confirm
    from linklab.verdict import aa

    manifest = ab_manifest.read(run_dir)
    runs = manifest.get("runs") or {}
    if set(runs) != {"a", "b"}:
        raise UsageError(f"{run_dir}: the A/B run has no measured arms (ab.json names no runs)")
    a = Run.load(runs["a"])
    res = first = verdict.judge(a, Run.load(runs["b"]), paired=True, aa=aa.for_run(a))
    again = confirm.second(run_dir)
    if again is not None:  # measured again where the first differed (confirm.py): that decides there
        ca, cb, again_manifest = again
        second = verdict.judge(ca, cb, paired=True, aa=aa.for_run(ca))
        write_json_atomic(run_dir / confirm.DIR / "verdict.json", verdict.as_json(second))
        write_json_atomic(run_dir / "verdict-first.json", verdict.as_json(first))
        res = confirm.combine(first, second, again_manifest.get("pairs", "?"))
    write_json_atomic(run_dir / "verdict.json", verdict.as_json(res))
    if junit is not None:
        from linklab.fsutil import write_atomic
        from linklab.verdict.junit import junit_text
        junit.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(junit, junit_text(res, a.experiment))
        say(f"  JUnit: {junit}")
    if not quiet and as_json:
        print(json.dumps(verdict.as_json(res), indent=1))
    elif not quiet and again is None:
        print(verdict.render(res))
    elif not quiet:
        print(verdict.render(first, last="first measurement"))
        print(f"\nmeasured again ({run_dir / confirm.DIR}):")
        print(verdict.render(second, last="measured again"))
        print("\nresult: " + res.words())
    if report:
        try:
            from linklab.report.build import write_ab_report
            say(f"  report: {write_ab_report(run_dir, res, figures=figures)}")
        except Exception as e:  # the verdict stands without a report; `linklab report` can retry
            say(f"  (no report: {e})")
    again_s = f" + {again_manifest.get('wall_s', '?')} s measuring again" if again else ""
    say(f"linklab ab: {manifest.get('wall_s', '?')} s measuring{again_s}; verdict: {res.words()}")
    sys.stdout.flush()
    return res.exit_code()


def aa_runs(root: Path, experiment: str, quick: bool) -> list[Path]:
    """The complete A/A runs of an experiment (variant) under RESULTS/ab/<experiment>/, oldest first."""
    from linklab.ab.session import alike, complete_runs
    return [d for d, m in complete_runs(root, experiment) if alike(m) and bool(m.get("quick")) == quick]


def cmd_aa(args, argv) -> int:
    import subprocess
    from linklab.results.runs import Run
    from linklab.verdict import aa
    from linklab.sweep.plan import load_experiment

    if not 0 <= args.runs <= 200:
        raise UsageError(f"--runs {args.runs}: a whole number from 0 to 200")
    exp = load_experiment(args.experiment, quick=args.quick)
    root = Path(args.results)
    failures = 0
    while len(have := aa_runs(root, exp.name, args.quick)) < args.runs:
        say(f"linklab aa: A/A run {len(have) + 1} of {args.runs}")
        rc = subprocess.run([sys.executable, "-m", "linklab", "ab", args.experiment, "--pairs", str(args.pairs),
                             "--results", str(root), "--no-report", "--confirm", "0",  # every A/A run as measured
                             *(["--quick"] if args.quick else [])]).returncode
        # Whatever its verdict said (a false alarm, inconclusive), a run that completed counts.
        failures = 0 if len(aa_runs(root, exp.name, args.quick)) > len(have) else failures + 1
        if failures >= 2:
            raise LinklabError(f"two A/A runs in a row failed (exit {rc}); {len(have)} of {args.runs} complete",
                               hint="see the output above; the same command goes on from there")
    runs = []
    for d in have:
        m = ab_manifest.read(d)
        runs.append((str(d), Run.load(m["runs"]["a"]), Run.load(m["runs"]["b"])))
    spread = aa.measure(runs)
    from linklab.verdict.metrics import table_of
    print(aa.render(spread, table_of(*(r.manifest for _, a, b in runs for r in (a, b)))))
    if args.dry_run:
        return 0
    out = Path(args.out) if args.out else aa.default_path(spread.experiment, spread.quick, spread.placement)
    out.parent.mkdir(parents=True, exist_ok=True)
    spread.save(out)
    say(f"linklab aa: the A/A spread of {len(runs)} runs written to {out} (`linklab ab` reads it)")
    return 0
