"""CLI commands for reports (registered into linklab.cli): report, compare, baseline."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

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
  linklab compare RUN_A RUN_B --all                  # every point and metric, not only what moved
  linklab compare RUN_A RUN_B --allow-different placement   # e.g. native vs lab VM, on purpose
  linklab compare BASELINE RUN --tolerance 35        # baseline from another machine (CI does this)

A point measured while the host was busy with other work (flag host_disturbed, in either run)
is listed as "disturbed" and not judged.

exit codes: 0 every metric within its band (or better), 1 a metric regressed, 2 bad input
(not a run, or runs of different experiments/scale/placement without --allow-different)
"""


def add_commands(sub) -> None:
    from linklab import cli
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
    cli.register("report", cmd_report)

    c = sub.add_parser(
        "compare", help="compare a run against a baseline: exit 1 when a metric left its tolerance band",
        description="Match the two runs' points by their parameters and, per point and metric, check the new "
                    "mean against a band around the baseline's mean: the spread the baseline's repetitions "
                    "imply, never narrower than the metric's floor (so a one-repetition baseline still works). "
                    "Lower throughput or higher retransmits/RTT/loss outside the band is a regression; the "
                    "other direction is an improvement. Runs of different experiments, scale or placement are "
                    "refused unless --allow-different says the difference is intended.",
        epilog=COMPARE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("baseline", help="baseline run directory (or a stored baseline, e.g. baselines/…)")
    c.add_argument("new", help="the run to check (run directory, experiment results directory or experiment)")
    c.add_argument("--results", default="results", help="results root directory (default ./results)")
    c.add_argument("--allow-different", default="", metavar="WHAT",
                   help="comma-separated: experiment, scale, placement — compare anyway")
    c.add_argument("--tolerance", type=float, default=0.0, metavar="PCT",
                   help="widen every relative band to at least ±PCT %% (e.g. 35 for a baseline recorded on another "
                        "machine, whose emulated CPU is faster or slower; default: each metric's own floor)")
    c.add_argument("--all", action="store_true", help="list every point and metric, not only those that moved")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    cli.register("compare", cmd_compare)

    b = sub.add_parser(
        "baseline", help="store a small copy of a run (manifest + rows) to compare later runs against",
        description="Write a trimmed copy of a run: its manifest without the bulky dumps and every row, each "
                    "with the idle ping RTTs and iperf3 throughput intervals its figures need; no raw tool "
                    "output. `linklab compare` and `linklab report` read it like a run.",
        epilog="example:\n  linklab baseline results/e1_bonding_mtu/20261122-034916 baselines/e1_bonding_mtu-quick-vm-tcg",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("run", help="run directory (or experiment: its newest run)")
    b.add_argument("dest", help="directory to write (manifest.json + rows.json)")
    b.add_argument("--results", default="results", help="results root directory (default ./results)")
    cli.register("baseline", cmd_baseline)


def cmd_report(args, argv) -> int:
    from linklab import cli
    from linklab.report.build import build, default_out, write
    from linklab.report.runs import find_run

    results = Path(args.results)
    runs = [find_run(t, results) for t in (args.runs or [None])]
    rep = build(runs)
    out = Path(args.out) if args.out else default_out(runs, results)
    paths = write(rep, out)
    if not args.quiet:
        print(rep.markdown, end="")
    cli.say(f"linklab: report written to {paths['html']} ({len(rep.figures)} figures; also {paths['markdown']})")
    return 0


def cmd_compare(args, argv) -> int:
    from linklab.report.compare import as_json, compare, render
    from linklab.report.runs import Run, find_run

    results = Path(args.results)
    base = Run.load(find_run(args.baseline, results))
    new = Run.load(find_run(args.new, results))
    allow = {a.strip() for a in args.allow_different.split(",") if a.strip()}
    if not 0 <= args.tolerance < 100:
        raise UsageError(f"--tolerance {args.tolerance:g}: a percentage from 0 to below 100")
    res = compare(base, new, allow, tolerance=args.tolerance / 100)
    print(json.dumps(as_json(res), indent=1) if args.json else render(res, show_all=args.all))
    return 0 if res.ok else 1


def cmd_baseline(args, argv) -> int:
    from linklab import cli
    from linklab.report.runs import Run, export, find_run

    run = Run.load(find_run(args.run, Path(args.results)))
    dest = export(run, Path(args.dest))
    cli.say(f"linklab: {len(run.rows)} rows of {run.name} stored in {dest}")
    return 0
