"""CLI commands for reports (linklab.cli adds them to its parser; each names its handler):
report, compare, baseline, merge. Handlers import what they run when they run: linklab.cli
imports this module to build its parser, and `linklab report --no-figures` must not load
matplotlib."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from linklab.console import say
from linklab.errors import UsageError

REPORT_HELP = """\
examples:
  linklab report                                   # newest run of any experiment
  linklab report experiments/e1_bonding_mtu.yaml   # newest run of E1
  linklab report results/e1_bonding_mtu/20261121-083017
  linklab report results/e1_bonding_mtu/RUN_A results/e1_bonding_mtu/RUN_B   # both in one page
  linklab report results/ab/e1_bonding_mtu/20261128-072431   # a `linklab ab` run: its verdict, then A and B

writes report.html (one self-contained page: open it from disk, nothing is fetched),
report.md and figures/*.svg|png into the run directory (several runs: results/reports/A__B/)
"""

COMPARE_HELP = """\
examples:
  linklab compare baselines/e1_bonding_mtu-quick-vm-tcg results/e1_bonding_mtu/20261122-101500
  linklab compare BASELINE RUN --all                 # every judgment, not only the failures
  linklab compare RUN_A RUN_B --allow-different placement   # e.g. native vs lab VM, on purpose

Advisory: the two runs were not measured side by side, so whatever differed between their times
or machines (speed, load, the lab VM's boot) differs here too. `linklab ab` measures both
interleaved in one lab VM boot: that is the gate. The verdict is the same (docs/verdicts.md).

Refused as bad input: not a run, or runs of different experiments/scale/placement without
--allow-different.
exit codes: docs/commands.md#exit-codes (NEW differs, inconclusive, bad input, ...)
"""

BASELINE_HELP = """\
examples:
  linklab baseline experiments/e1_bonding_mtu.yaml baselines/e1_bonding_mtu-quick-vm-tcg --quick
        record: a new sweep with 5 repetitions per point (or the experiment's, if more), then store it
  linklab baseline results/e1_bonding_mtu/20261122-034916 DIR
        store a run already made (refused below 5 repetitions per point: --min-repetitions)

A stored baseline is the run's manifest without its bulky dumps and every row, each with the
idle ping RTTs and throughput intervals its figures need. `linklab report` and `linklab compare`
read it like any run; `linklab aa` keeps the experiment's A/A spread beside it (aa.json).
"""


def add_commands(sub) -> None:
    _add_report(sub)
    _add_compare(sub)
    _add_baseline(sub)
    _add_merge(sub)


def _add_report(sub) -> None:
    r = sub.add_parser(
        "report", help="a run's report: figures, statistics, beside the published figures and findings",
        description="Report one or more runs: provenance, the published findings checked on the run's data "
                    "(agrees / differs / explained by a measured variant), figures (throughput vs MTU, "
                    "retransmits, cwnd, per-core CPU heatmap, "
                    "RTT distribution, per-member traffic share, UDP loss and jitter, time series), linklab's "
                    "figures beside the published ones in comparable units, E1's CPU model fit, and per point "
                    "n, mean, sd, variance and 95 % CI of every metric. Prints the markdown; needs no lab.",
        epilog=REPORT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("runs", nargs="*", metavar="RUN",
                   help="run directory, stored baseline, experiment results directory, or experiment file/name "
                        "(default: the newest run)")
    r.add_argument("--results", default="results", help="results root directory (default ./results)")
    r.add_argument("--out", help="where to write the report (default: the run directory; several runs: "
                                 "RESULTS/reports/<runs>)")
    r.add_argument("--quiet", action="store_true", help="do not print the markdown, only where it was written")
    r.add_argument("--no-figures", action="store_true",
                   help="tables and findings only, no figures (matplotlib is not even imported: ~1 min saved in a "
                        "software-emulated VM)")
    r.add_argument("--findings-table", action="store_true",
                   help="one markdown table of every published finding of the given runs (default: each "
                        "experiment's stored run, reproductions/ before baselines/): published figure, linklab's, "
                        "verdict, mechanism, the command that shows it")
    r.add_argument("--into", metavar="FILE", help="--findings-table: write it between FILE's markers "
                                                  "(README.md's Reproduction section) instead of printing it")
    r.set_defaults(handler=cmd_report)


def _add_compare(sub) -> None:
    c = sub.add_parser(
        "compare", help="a run against a stored one, by the verdict model (advisory: not measured side by side)",
        description="Match the two runs' points by their parameters and judge every point of the baseline by the "
                    "verdict (docs/verdicts.md). Advisory: `linklab ab` measures both side by side. Runs of "
                    "different experiments, scale or placement are refused unless --allow-different says the "
                    "difference is intended.",
        epilog=COMPARE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("baseline", help="baseline run directory (or a stored baseline, e.g. baselines/…)")
    c.add_argument("new", help="the run to check (run directory, experiment results directory or experiment)")
    c.add_argument("--results", default="results", help="results root directory (default ./results)")
    c.add_argument("--allow-different", default="", metavar="WHAT",
                   help="comma-separated: experiment, scale, placement — compare anyway")
    c.add_argument("--all", action="store_true", help="list every judgment, not only the failures")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(handler=cmd_compare)


def _add_baseline(sub) -> None:
    b = sub.add_parser(
        "baseline", help="record a baseline (>= 5 repetitions per point) or store a run as one",
        description="Given an experiment file: run a new sweep of it with --repetitions per point (default 5) and "
                    "store it as a baseline. Given a run: store it, if every point has at least --min-repetitions "
                    "measured on a quiet host. `linklab compare` and `linklab report` read a baseline like a run.",
        epilog=BASELINE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("run", metavar="EXPERIMENT|RUN",
                   help="an experiment file (record a new run) or a run directory / experiment results directory")
    b.add_argument("dest", help="directory to write (manifest.json + rows.json)")
    b.add_argument("--quick", action="store_true", help="record the experiment's quick variant")
    b.add_argument("--repetitions", type=int, metavar="N",
                   help=f"record: repetitions per point (default: the experiment's, at least {MIN_REPETITIONS})")
    b.add_argument("--min-repetitions", type=int, default=MIN_REPETITIONS, metavar="N",
                   help=f"refuse a run with fewer repetitions measured on a quiet host (flagged neither "
                        f"host_disturbed nor host_stolen) at any point (default {MIN_REPETITIONS}; 1 stores any run)")
    b.add_argument("--results", default="results", help="results root directory (default ./results)")
    b.set_defaults(handler=cmd_baseline)


def _add_merge(sub) -> None:
    m = sub.add_parser(
        "merge", help="make one run of a sweep's shards (`linklab sweep --shard K/N` on several machines)",
        description="Join the runs of `linklab sweep EXP --shard K/N` (K = 1..N) into one run, raw files "
                    "included. Refused, writing nothing, when the runs are not parts of one sweep (another "
                    "experiment, topology, options, scale or placement) or when a point is missing from every "
                    "run or recorded twice: both are named.",
        epilog="example (a Kubernetes Indexed Job or a Slurm array ran shards 1/3, 2/3, 3/3):\n"
               "  linklab merge results/e1_bonding_mtu/RUN1 results/e1_bonding_mtu/RUN2 results/e1_bonding_mtu/RUN3 "
               "--out results/e1_bonding_mtu/merged",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("runs", nargs="+", metavar="RUN", help="the shards' run directories")
    m.add_argument("--out", required=True, help="the merged run's directory (must not exist)")
    m.add_argument("--allow-different", default="", metavar="WHAT",
                   help="comma-separated: scale, placement — shards whose labs differed in these, on purpose")
    m.set_defaults(handler=cmd_merge)


def _findings_table(args, results: Path) -> int:
    from linklab.published import reproduction
    from linklab.results.runs import Run, find_run

    root = Path.cwd()
    if args.runs:
        runs = [(d, "quick" if Run.load(d).manifest.get("quick") else "full")
                for d in (find_run(t, results) for t in args.runs)]
    else:
        runs = reproduction.stored_runs(root)
        if not runs:
            raise UsageError(f"no stored run under {root / reproduction.FULL_DIR} or {root / reproduction.QUICK_DIR}",
                             hint="run it from the checkout's root, or name the runs")
    text = reproduction.text(runs, root)
    if not args.into:
        print(text, end="")
        return 0
    changed = reproduction.into(Path(args.into), text)
    say(f"linklab: the findings table in {args.into} " + ("written" if changed else "was already current"))
    return 0


def cmd_report(args, argv) -> int:
    from linklab.report.build import build, default_out, write
    from linklab.results.runs import find_run

    results = Path(args.results)
    if args.findings_table or args.into:
        return _findings_table(args, results)
    if len(args.runs) == 1 and (Path(args.runs[0]) / "ab.json").is_file():  # a `linklab ab` run: its verdict first
        from linklab.ab.cli import judge_run
        judge_run(Path(args.runs[0]), report=True, figures=not args.no_figures, quiet=args.quiet)
        return 0
    runs = [find_run(t, results) for t in (args.runs or [None])]
    rep = build(runs, figures=not args.no_figures)
    out = Path(args.out) if args.out else default_out(runs, results)
    paths = write(rep, out)
    if not args.quiet:
        print(rep.markdown, end="")
    say(f"linklab: report written to {paths['html']} ({len(rep.figures)} figures; also {paths['markdown']})")
    return 0


def cmd_compare(args, argv) -> int:
    from linklab import verdict
    from linklab.results.runs import Run, find_run
    from linklab.verdict.compare import compare

    results = Path(args.results)
    base = Run.load(find_run(args.baseline, results))
    new = Run.load(find_run(args.new, results))
    allow = {a.strip() for a in args.allow_different.split(",") if a.strip()}
    res = compare(base, new, allow)
    print(json.dumps(verdict.as_json(res), indent=1) if args.json else verdict.render(res, show_all=args.all))
    return res.exit_code()


MIN_REPETITIONS = 5


def cmd_merge(args, argv) -> int:
    from linklab.report.merge import merge

    allow = {a.strip() for a in args.allow_different.split(",") if a.strip()}
    store, notes = merge([Path(r) for r in args.runs], Path(args.out), allow)
    for note in notes:
        say(f"  {note}")
    rows = store.rows()
    say(f"linklab: merged {len(args.runs)} runs into {store.path}: {store.manifest.get('points')} points, "
        f"{len(rows)} repetitions ({len(store.failed())} failed)")
    return 0


def cmd_baseline(args, argv) -> int:
    from linklab.results.runs import Run, export, find_run

    results = Path(args.results)
    if args.min_repetitions < 1 or (args.repetitions is not None and args.repetitions < 1):
        raise UsageError("--repetitions and --min-repetitions: whole numbers from 1")
    target = Path(args.run)
    if target.suffix in (".yaml", ".yml") and target.is_file():
        from linklab.sweep.plan import load_experiment
        reps = args.repetitions or max(MIN_REPETITIONS, load_experiment(target, quick=args.quick).repetitions)
        if reps < args.min_repetitions:
            raise UsageError(f"--repetitions {reps} is below --min-repetitions {args.min_repetitions}")
        rc = _sweep([str(target), "--force", "--repetitions", str(reps), "--results", str(results)]
                    + (["--quick"] if args.quick else []))
        if rc != 0:
            say(f"linklab: the sweep exited {rc}; no baseline stored")
            return rc
    elif args.quick:
        raise UsageError("--quick records a new run: give an experiment file, not a run")
    run = Run.load(find_run(args.run, results))
    thin = _thin_points(run, args.min_repetitions)
    if thin:
        raise UsageError(f"{run.path}: fewer than {args.min_repetitions} repetitions measured on a quiet host at "
                         f"{len(thin)} point(s): {'; '.join(thin[:5])}{' ...' if len(thin) > 5 else ''}",
                         hint="record a baseline with `linklab baseline EXPERIMENT DIR` (5 repetitions per point), "
                              "or accept this run with --min-repetitions N")
    dest = export(run, Path(args.dest))
    say(f"linklab: {len(run.rows)} rows of {run.name} stored in {dest} (sweep took {_wall(run)})")
    return 0


def _sweep(argv: list[str]) -> int:
    """`linklab sweep ARGV` in a process of its own, as a user would run it (it forwards to the lab
    VM where needed, and builds again a lab that went with a stopped VM); its exit code."""
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "linklab", "sweep", *argv]).returncode


def _thin_points(run, need: int) -> list[str]:
    from linklab.results.points import group
    return [f"{p.label}: {len(p.quiet)}" for p in group(run) if p.ok and len(p.quiet) < need]


def _wall(run) -> str:
    s = ((run.manifest.get("timing") or {}).get("sweep_wall_s"))
    return f"{s / 60:.1f} min" if isinstance(s, (int, float)) else "an unrecorded time"
