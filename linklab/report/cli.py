"""CLI commands for reports (linklab.cli adds them to its parser; each names its handler):
report, compare, baseline, noise, speed, merge."""

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

writes report.html (one self-contained page: open it from disk, nothing is fetched),
report.md and figures/*.svg|png into the run directory (several runs: results/reports/A__B/)
"""

COMPARE_HELP = """\
examples:
  linklab compare baselines/e1_bonding_mtu-quick-vm-tcg results/e1_bonding_mtu/20261122-101500
  linklab compare BASELINE RUN --all                 # every check, not only the failures
  linklab compare RUN_A RUN_B --allow-different placement   # e.g. native vs lab VM, on purpose
  linklab compare BASELINE RUN --tolerance 35        # a baseline recorded on another machine
  linklab compare BASELINE RUN --allow-missing       # a run of part of the matrix, on purpose
  linklab compare BASELINE RUN2 --confirms RUN1      # RUN2 repeats RUN1: fail what failed in both
  # confirm a failed gate by measuring again only the points that failed:
  linklab sweep EXP --quick --force --points "$(linklab compare BASELINE RUN1 --failed-points)"
  linklab compare BASELINE EXP --confirms RUN1

Each point of the baseline is judged; any of these fails the gate, and each failure names the
point, the metric, the baseline's n / mean / sd, the new value, the band and the rule:
  band       a metric outside its band, either way (CPU: only up; less is harmless)
  missing    the point is not in the new run        failed     a repetition failed
  preflight  pre-flight failed (or passed) unlike the baseline
  disturbed  measured while other work held the host (after the sweep measured it once more)
  members    a bond's traffic on one member instead of spread (or the other way round)
  path_mtu   another path MTU                        flag       a flag the baseline never had
  baseline   nothing in the baseline to judge the point against
The band: where the new mean falls if nothing changed, from the baseline's repetitions (a
prediction interval), never narrower than the noise floor measured beside the baseline
(BASELINE/noise.json, `linklab noise`) or, without one, the metric's declared floor.
On a machine of another speed (CPU level beyond x1.15), CPU is judged relative to that level and
each point's metrics get the room the baseline's speed response measured for them
(BASELINE/speed.json, `linklab speed`) or, without one, a general allowance (report/machine.py).
A repetition flagged host_stolen (the hypervisor under the host took its CPU) is listed, never failed.

exit codes: 0 every check passed, 1 a check failed, 2 bad input (not a run, or runs of
different experiments/scale/placement without --allow-different)
"""

SPEED_HELP = """\
examples:
  linklab speed baselines/e1_bonding_mtu-quick-vm-tcg results-slow/e1_bonding_mtu
        every complete run in that directory, made on a slower machine of the kind; writes
        baselines/e1_bonding_mtu-quick-vm-tcg/speed.json

Per point and metric (not CPU, which compare judges relative to the level): the exponents e of
level**e = run mean / baseline mean, the smallest and largest over the runs. Runs at the
baseline's own speed (level within x1.15) are refused: they are quiet reruns (`linklab noise`).
"""

BASELINE_HELP = """\
examples:
  linklab baseline experiments/e1_bonding_mtu.yaml baselines/e1_bonding_mtu-quick-vm-tcg --quick
        record: a new sweep with 5 repetitions per point (or the experiment's, if more), then store it
  linklab baseline results/e1_bonding_mtu/20261122-034916 DIR
        store a run already made (refused below 5 repetitions per point: --min-repetitions)

A stored baseline is the run's manifest without its bulky dumps and every row, each with the
idle ping RTTs and throughput intervals its figures need. An old noise floor in DIR is removed
(it was measured against the old baseline): measure the new one with `linklab noise DIR --record 10`.
"""

NOISE_HELP = """\
examples:
  linklab noise baselines/e1_bonding_mtu-quick-vm-tcg --record 10
        10 quiet reruns of the baseline's experiment (into results-noise/, resumable: the runs
        already complete there count), then the floor, written to BASELINE/noise.json
  linklab noise baselines/e1_bonding_mtu-quick-vm-tcg results-noise/e1_bonding_mtu
        the floor from reruns made already (run directories, or a directory of runs)

Per metric: how far the reruns' means lay from the baseline's (relative, log ratio or in the
metric's unit: metrics.py), and the floor = the larger of the largest seen and z · RMS, z for a
5 % chance that a quiet run fails any of the baseline's point x metric pairs. Run it on a quiet
machine: rows flagged host_disturbed are left out.
"""


def add_commands(sub) -> None:
    _add_report(sub)
    _add_compare(sub)
    _add_baseline(sub)
    _add_noise(sub)
    _add_speed(sub)
    _add_merge(sub)


def _add_report(sub) -> None:
    r = sub.add_parser(
        "report", help="a run's report: figures, statistics, beside the published figures and findings",
        description="Report one or more runs: provenance, the published findings checked on the run's data "
                    "(agrees / differs), figures (throughput vs MTU, retransmits, cwnd, per-core CPU heatmap, "
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
    r.set_defaults(handler=cmd_report)


def _add_compare(sub) -> None:
    c = sub.add_parser(
        "compare", help="the regression gate: exit 1 when a run differs from a baseline beyond its noise",
        description="Match the two runs' points by their parameters and judge every point of the baseline: each "
                    "metric's new mean against its band (two-sided unless a side is harmless), and the point's "
                    "structure (present, measured, pre-flight, bond members one vs spread, path MTU, flags). "
                    "Runs of different experiments, scale or placement are refused unless --allow-different "
                    "says the difference is intended.",
        epilog=COMPARE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("baseline", help="baseline run directory (or a stored baseline, e.g. baselines/…)")
    c.add_argument("new", help="the run to check (run directory, experiment results directory or experiment)")
    c.add_argument("--results", default="results", help="results root directory (default ./results)")
    c.add_argument("--allow-different", default="", metavar="WHAT",
                   help="comma-separated: experiment, scale, placement — compare anyway")
    c.add_argument("--tolerance", type=float, default=0.0, metavar="PCT",
                   help="widen every band to at least ±PCT %% of the baseline mean (e.g. 35 for a baseline recorded "
                        "on another machine, whose emulated CPU is faster or slower; default: none)")
    c.add_argument("--allow-missing", action="store_true",
                   help="a point missing, failed or disturbed in the new run (or with nothing to judge it against in "
                        "the baseline) is listed as not judged instead of failing")
    c.add_argument("--noise", metavar="FILE",
                   help="noise floor to use (default: BASELINE/noise.json when it exists, else the metrics' declared "
                        "floors)")
    c.add_argument("--confirms", metavar="RUN",
                   help="NEW repeats RUN (the same code, measured again to confirm a failed gate): a check fails "
                        "only where it failed for RUN too; the others are listed as not confirmed")
    c.add_argument("--failed-points", action="store_true",
                   help="print only the ids of the points that failed, comma-separated (every point when a check "
                        "of the whole run failed), for `linklab sweep --points` to measure them again")
    c.add_argument("--all", action="store_true", help="list every check, not only the failures")
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
                   help=f"refuse a run with fewer repetitions measured on a quiet host at any point "
                        f"(default {MIN_REPETITIONS}; 1 stores any run)")
    b.add_argument("--results", default="results", help="results root directory (default ./results)")
    b.set_defaults(handler=cmd_baseline)


def _add_noise(sub) -> None:
    n = sub.add_parser(
        "noise", help="measure a baseline's noise floor from quiet reruns (BASELINE/noise.json)",
        description="How far quiet reruns of the baseline's experiment moved from it with nothing changed, per "
                    "metric: the floor below which `linklab compare` never narrows a band. Measured on the "
                    "machine kind the baseline was recorded on, with the machine otherwise quiet.",
        epilog=NOISE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    n.add_argument("baseline", help="stored baseline (or run) directory")
    n.add_argument("reruns", nargs="*", metavar="RUN",
                   help="rerun directories, or directories of runs (every complete run in them)")
    n.add_argument("--record", type=int, metavar="N",
                   help="first make sure N complete reruns exist under --results (recording the missing ones with "
                        "`linklab sweep`; an interrupted one is resumed), then use them")
    n.add_argument("--results", default="results-noise",
                   help="--record: where the reruns go (default ./results-noise, apart from ./results)")
    n.add_argument("--out", help="where to write the floor (default BASELINE/noise.json)")
    n.add_argument("--dry-run", action="store_true", help="print the floor, write nothing")
    n.set_defaults(handler=cmd_noise)


def _add_speed(sub) -> None:
    sp = sub.add_parser(
        "speed", help="measure how a baseline's points move on a machine of another speed (BASELINE/speed.json)",
        description="From runs of the baseline's experiment on a machine whose CPU level is beyond x1.15 the "
                    "baseline's (a slower machine of the kind, say), keep per point and metric how far it moved "
                    "as an exponent of that level. `linklab compare` then gives each point the room it measurably "
                    "needs at a run's level, and no more, instead of one allowance for every point.",
        epilog=SPEED_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("baseline", help="stored baseline (or run) directory")
    sp.add_argument("runs", nargs="+", metavar="RUN",
                    help="run directories, or directories of runs (every complete run in them)")
    sp.add_argument("--out", help="where to write it (default BASELINE/speed.json)")
    sp.add_argument("--dry-run", action="store_true", help="print it, write nothing")
    sp.set_defaults(handler=cmd_speed)


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


def cmd_report(args, argv) -> int:
    from linklab.report.build import build, default_out, write
    from linklab.report.runs import find_run

    results = Path(args.results)
    runs = [find_run(t, results) for t in (args.runs or [None])]
    rep = build(runs, figures=not args.no_figures)
    out = Path(args.out) if args.out else default_out(runs, results)
    paths = write(rep, out)
    if not args.quiet:
        print(rep.markdown, end="")
    say(f"linklab: report written to {paths['html']} ({len(rep.figures)} figures; also {paths['markdown']})")
    return 0


def cmd_compare(args, argv) -> int:
    from linklab.report.compare import as_json, compare, confirm, failed_point_ids, render, repeat_level
    from linklab.report.noise import NoiseFloor, for_baseline
    from linklab.report.runs import Run, find_run
    from linklab.report.speed import for_baseline as speed_for_baseline

    results = Path(args.results)
    base = Run.load(find_run(args.baseline, results))
    new = Run.load(find_run(args.new, results))
    allow = {a.strip() for a in args.allow_different.split(",") if a.strip()}
    if not 0 <= args.tolerance < 100:
        raise UsageError(f"--tolerance {args.tolerance:g}: a percentage from 0 to below 100")
    noise = NoiseFloor.load(Path(args.noise)) if args.noise else for_baseline(base)
    speed = speed_for_baseline(base)

    def judge(run, level=None):
        return compare(base, run, allow, tolerance=args.tolerance / 100, noise=noise,
                       allow_missing=args.allow_missing, speed=speed, level=level)

    if args.confirms:
        first = Run.load(find_run(args.confirms, results))
        level, level_note = repeat_level(base, first, new)
        res = confirm(judge(new, level), judge(first))
        if level_note:
            res.notes.insert(0, level_note)
    else:
        res = judge(new)
    if args.failed_points:
        print(",".join(failed_point_ids(res)))
    else:
        print(json.dumps(as_json(res), indent=1) if args.json else render(res, show_all=args.all))
    return 0 if res.ok else 1


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
    from linklab.report.noise import NOISE_FILE
    from linklab.report.runs import Run, export, find_run
    from linklab.report.speed import SPEED_FILE

    results = Path(args.results)
    if args.min_repetitions < 1 or (args.repetitions is not None and args.repetitions < 1):
        raise UsageError("--repetitions and --min-repetitions: whole numbers from 1")
    target = Path(args.run)
    if target.suffix in (".yaml", ".yml") and target.is_file():
        from linklab.sweep.experiment import load_experiment
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
    dest = Path(args.dest)
    stale = [dest / NOISE_FILE, dest / SPEED_FILE]
    dest = export(run, dest)
    say(f"linklab: {len(run.rows)} rows of {run.name} stored in {dest} "
            f"(sweep took {_wall(run)})")
    for old in stale:
        if old.exists():
            old.unlink()
            say(f"  removed {old}: it was measured against the previous baseline")
    say(f"  its noise floor: linklab noise {dest} --record 10   (quiet machine; or give reruns made already)")
    return 0


def _sweep(argv: list[str]) -> int:
    """`linklab sweep ARGV` in a process of its own, as a user would run it (it forwards to the lab
    VM where needed, and builds again a lab that went with a stopped VM); its exit code."""
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "linklab", "sweep", *argv]).returncode


def _thin_points(run, need: int) -> list[str]:
    from linklab.report.points import group
    return [f"{p.label}: {len(p.clean)}" for p in group(run) if p.ok and len(p.clean) < need]


def _wall(run) -> str:
    s = ((run.manifest.get("timing") or {}).get("sweep_wall_s"))
    return f"{s / 60:.1f} min" if isinstance(s, (int, float)) else "an unrecorded time"


def cmd_noise(args, argv) -> int:
    from linklab.report.noise import NOISE_FILE, load_reruns, measure, render
    from linklab.report.runs import Run, find_run

    base = Run.load(find_run(args.baseline, Path("results")))
    targets = list(args.reruns)
    if args.record is not None:
        if args.record < 1:
            raise UsageError("--record N: a whole number from 1")
        targets.append(str(_record_reruns(base, args.record, Path(args.results))))
    if not targets:
        raise UsageError("no reruns given", hint="give rerun directories, or --record N to make them")
    nf = measure(base, load_reruns(targets))
    print(render(nf))
    if args.dry_run:
        return 0
    out = Path(args.out) if args.out else base.path / NOISE_FILE
    nf.save(out)
    say(f"linklab: noise floor written to {out} (`linklab compare {base.path} RUN` uses it)")
    return 0


def cmd_speed(args, argv) -> int:
    from linklab.report.noise import load_reruns
    from linklab.report.runs import Run, find_run
    from linklab.report.speed import SPEED_FILE, measure, render

    base = Run.load(find_run(args.baseline, Path("results")))
    sr = measure(base, load_reruns(list(args.runs)))
    print(render(sr))
    if args.dry_run:
        return 0
    out = sr.save(Path(args.out) if args.out else base.path / SPEED_FILE)
    say(f"linklab: speed response written to {out} (`linklab compare {base.path} RUN` uses it)")
    return 0


def _record_reruns(base, want: int, results: Path) -> Path:
    """Make sure `want` complete reruns of the baseline's experiment exist under results/:
    resume an interrupted one, record the missing ones. A sweep that fails twice in a row stops it."""
    import time
    from linklab.results.store import ResultsStore

    exp_file = base.manifest.get("experiment_file")
    if not exp_file or not Path(exp_file).is_file():
        raise UsageError(f"{base.path}: its experiment file {exp_file!r} is not here",
                         hint="run from the checkout the baseline was recorded in, or give reruns made already")
    name = base.experiment
    quick = ["--quick"] if base.manifest.get("quick") else []
    failures = 0
    while True:
        runs = ResultsStore.runs(results, name)
        done = [r for r in runs if r.manifest.get("complete")]
        if len(done) >= want:
            return results / name
        resume = runs and not runs[-1].manifest.get("complete")
        say(f"linklab noise: rerun {len(done) + 1} of {want}" + (" (resuming the interrupted one)" if resume else ""))
        t0 = time.monotonic()
        rc = _sweep([exp_file, "--results", str(results), *quick, *([] if resume else ["--force"])])
        say(f"linklab noise: sweep exited {rc} after {time.monotonic() - t0:.0f} s")
        failures = failures + 1 if rc != 0 else 0
        if failures >= 2:
            raise UsageError(f"two sweeps in a row failed (exit {rc}); {len(done)} of {want} reruns complete in "
                             f"{results / name}", hint="see the sweep's output above; rerun the same command to go on")
