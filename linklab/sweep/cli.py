"""CLI commands for sweeps (linklab.cli adds them to its parser; each names its handler)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from linklab import bundled
from linklab.console import say
from linklab.errors import EXIT_FAILURE, EXIT_OK, UsageError

DEFAULT_EXPERIMENT = "experiments/e1_bonding_mtu.yaml"


def add_commands(sub) -> None:
    p = sub.add_parser(
        "sweep", help="run an experiment matrix against its lab, resumably",
        description="Run an experiment: reconfigure the lab for each matrix point, check it (pre-flight), "
                    "measure every repetition, and record raw outputs, a tidy CSV and a manifest under "
                    "results/<experiment>/<timestamp>/. Rerunning resumes an interrupted run and skips what "
                    "is recorded; --force starts a new run instead.",
        epilog="examples:\n  linklab sweep experiments/e1_bonding_mtu.yaml --quick\n"
               "  linklab sweep experiments/e5_rr_tlb_cc.yaml            # hours: shows progress and ETA\n"
               "  linklab sweep experiments/e1_bonding_mtu.yaml --quick  # again: resumes or says it is complete\n"
               "  linklab sweep experiments/e1_bonding_mtu.yaml --quick --force --points p006-bond_mode-balance-rr_mtu-450_streams-1-c9e6e911",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", nargs="?", default=DEFAULT_EXPERIMENT, type=bundled.argtype("experiments"),
                   help=f"experiment YAML, or a bundled experiment's name (default {DEFAULT_EXPERIMENT})")
    p.add_argument("--quick", action="store_true", help="the experiment's short variant: fewer points, shorter runs")
    p.add_argument("--force", action="store_true", help="start a new run even if one is complete or resumable")
    p.add_argument("--no-retry", action="store_true",
                   help="resume without measuring failed repetitions again (default: a resume retries them, "
                        "keeping each failed attempt as rep<k>.failed-<n>)")
    p.add_argument("--repetitions", type=int, metavar="N",
                   help="measure every point N times instead of the experiment's (or its quick variant's) number")
    p.add_argument("--no-rerun-disturbed", action="store_true",
                   help="keep a repetition flagged host_disturbed as it is (default: measure it once more, the "
                        "disturbed attempt kept aside as rep<k>.disturbed-<n>)")
    p.add_argument("--results", default="results",
                   help="results root directory, anywhere on the machine (default ./results); one the lab VM "
                        "does not share is written through a spool in the state directory and copied when the sweep ends")
    p.add_argument("--lab", help="run against this lab (default: the lab named by the experiment's topology)")
    p.add_argument("--shard", metavar="K/N",
                   help="only the K-th of N parts of the points (groups sharing the outermost axes kept together), "
                        "for a Kubernetes Indexed Job, a Slurm array or a CI matrix; `linklab merge` joins the runs")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run the points on a Ray cluster: ray://HOST:PORT or HOST:PORT (an existing one; nodes "
                        "that may host a lab advertise the resource linklab: 1), or local:N (start N local nodes "
                        "on 127.0.0.1, for trying it out)")
    p.add_argument("--allow-different", default="", metavar="WHAT",
                   help="--cluster: accept workers whose labs differ in these (comma-separated: placement, scale)")
    p.add_argument("--dry-run", type=float, nargs="?", const=1.0, metavar="SECONDS",
                   help="no lab: each repetition sleeps SECONDS (default 1) instead of measuring; for trying out "
                        "shards and clusters, and for measuring the scheduler's own overhead")
    # Also how a cluster's worker runs its unit of work.
    p.add_argument("--points", metavar="ID,ID",
                   help="only these points, by id (a run's point_id column), e.g. to measure again the ones a "
                        "verdict named; the run is a part of the matrix, and no report is written for it")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="a lab setting on top of every point's own, as `linklab set` takes it (repeatable; it wins "
                        "over an axis that sets the same path); the lab is put back after the sweep (a lab the sweep brings "
                        "up is built with them, and kept so)")
    p.add_argument("--stepwise", action="store_true",
                   help="measure only what stdin asks, one JSON command per line (prepare a point, measure a "
                        "repetition, end): how `linklab ab` interleaves its arms (linklab/sweep/stepwise.py)")
    p.set_defaults(handler=cmd_sweep)



def cmd_sweep(args, argv) -> int:
    from linklab import kernel, placement, state
    from linklab.results.spool import through_vm
    from linklab.results.store import ResultsStore
    from linklab.sweep.experiment import raw_data, topology_path
    from linklab.sweep.engine import run
    from linklab.sweep.plan import point_labs
    from linklab.validate import load_experiment

    if args.repetitions is not None and not 1 <= args.repetitions <= 1000:
        raise UsageError(f"--repetitions {args.repetitions}: a whole number from 1 to 1000")
    exp = load_experiment(args.experiment, quick=args.quick)  # bad input stops here, before any VM boots
    if args.points is not None and not args.points.strip(" ,"):
        raise UsageError("--points: no point id given (ids as in a run's point_id column)")
    opts = _options(args)
    if args.dry_run is not None and not 0 <= args.dry_run <= 3600:
        raise UsageError(f"--dry-run {args.dry_run:g}: seconds from 0 to 3600")
    if args.cluster:
        from linklab.cluster.run import run_on_cluster
        store = run_on_cluster(args.experiment, opts, args.cluster, _allowed(args.allow_different), say=say,
                               loaded=exp)
        if args.dry_run is None and store.manifest.get("complete"):
            write_report(store.path)
        return EXIT_OK if store.manifest.get("complete") else EXIT_FAILURE
    if args.dry_run is not None:  # no lab: runs here, wherever the lab would
        run(args.experiment, opts, say=say, loaded=exp)
        return 0
    if args.stepwise:
        return _stepwise(args, opts, exp)
    if kernel.in_lab_vm():  # forwarded here: the host that forwarded it writes the report
        run(args.experiment, opts, say=say, loaded=exp)
        return 0
    lab_name = args.lab or raw_data(topology_path(args.experiment, exp))["name"]
    # A lab that went with its stopped VM is built again, where `linklab up` would, as one never up.
    if placement.forget_lab_gone_with_vm(lab_name):
        say(f"linklab: lab {lab_name} lived in the lab VM, which has stopped: the sweep builds it again")
    in_vm = placement.lab_is_in_vm(lab_name)
    # No lab yet: the sweep brings it up where `linklab up` would.
    use_vm, why = ((False, "") if in_vm or state.load(lab_name) is not None
                   else placement.want_vm_for_up(False, False, point_labs(args.experiment, exp, opts.overrides)))
    if not (in_vm or use_vm):
        store = run(args.experiment, opts, say=say, loaded=exp)
        if args.points is None:
            write_report(store.path)
        return 0
    if use_vm:
        say(f"linklab: the sweep runs in the lab VM ({why})")
    # A results directory the VM does not share is written through a spool it does (results/spool.py).
    with through_vm(Path(args.results), exp.name, say=say) as results:
        there = argv if results == Path(args.results).resolve() else [*argv, "--results", str(results)]
        rc = placement.forward(there, say=say, boot=False) if in_vm else placement.forward_booting(there, say=say)
    newest = ResultsStore.latest(Path(args.results), exp.name) if rc == 0 else None
    # A cluster's unit (--points) is reported by its driver, with every unit's repetitions.
    if newest is not None and newest.manifest.get("complete") and args.points is None:
        write_report(newest.path)
    return rc


def _stepwise(args, opts, exp) -> int:
    """`--stepwise`: here, natively or inside the lab VM already (its stdin is a driver's
    commands, which forwarding into the VM would not carry); no report (its driver makes one)."""
    from linklab import kernel, placement
    from linklab.sweep import stepwise
    from linklab.sweep.engine import run
    from linklab.sweep.plan import point_labs
    if args.cluster or args.shard:
        raise UsageError("--stepwise takes its points from stdin: not with --cluster or --shard")
    if not kernel.in_lab_vm() and placement.want_vm_for_up(False, False, point_labs(args.experiment, exp, opts.overrides))[0]:
        raise UsageError("--stepwise runs where the lab is, and this lab needs the lab VM",
                         hint="run it inside the VM (`linklab ab` does), e.g. `linklab vm run -- linklab sweep ... --stepwise`")
    replies = stepwise.protocol_stream()  # first: from here on nothing else can print to stdout
    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    ended: dict = {}

    def order(sweep, points, todo) -> None:
        ended.update(stepwise.serve(sweep, points, todo, replies=replies), lab=sweep.handle.record["lab"])

    run(args.experiment, opts, say=say, order=order, loaded=exp)
    if ended.get("down"):
        # Here, with linklab imported already: a driver's own `linklab down` would be a cold
        # Python start (~10-25 s in a software-emulated lab VM).
        from linklab import lab
        lab.down(ended["lab"], say=say)
    return 0


def _options(args):
    from linklab.lab import parse_overrides
    from linklab.sweep.engine import Options
    from linklab.sweep.shard import parse_shard
    return Options(quick=args.quick, force=args.force, results=Path(args.results), lab_name=args.lab,
                   retry_failed=not args.no_retry, repetitions=args.repetitions,
                   overrides=tuple(parse_overrides(args.overrides)), stepwise=args.stepwise,
                   rerun_disturbed=not args.no_rerun_disturbed,
                   shard=parse_shard(args.shard) if args.shard else None, dry_run=args.dry_run,
                   points=tuple(p for p in args.points.split(",") if p) if args.points is not None else None)


def _allowed(text: str) -> set[str]:
    allowed = {a.strip() for a in text.split(",") if a.strip()}
    bad = allowed - {"placement", "scale"}
    if bad:
        raise UsageError(f"unknown --allow-different value(s) {sorted(bad)} (valid: placement, scale)")
    return allowed


def write_report(run_dir: Path) -> None:
    """The report of a sweep's run, written where the sweep was started, after it: the one place
    a sweep's report is made (under software emulation matplotlib takes minutes, so a sweep
    forwarded into the lab VM is reported on the host)."""
    try:
        from linklab.report.build import write_report as write
        say(f"  report: {write(run_dir)[0].with_name('report.html')} (`linklab report` prints it)")
    except Exception as e:  # the results are safe on disk; a report can be made later
        say(f"  (no report: {e}; `linklab report {run_dir}` retries)")
