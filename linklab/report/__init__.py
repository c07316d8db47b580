"""Reports of sweep runs: they present what others found. A run is read by linklab/results, the
published figures and findings beside it are linklab/published's, and the verdict of one run
against another is linklab/verdict's; here it is shown.

Everything here reads only what a run directory (or a stored baseline) holds, so a report can
be made anywhere, long after the lab is gone. Modules, one job each:

    contents   what a report holds: each run with its points and its reference's findings
    columns    which columns the tables show: the metrics measured, every other numeric column
    plots      plot types as data, rendered deterministically with matplotlib (Agg)
    render     report.md and a self-contained report.html
    build      a report assembled and written (a sweep's, several runs', an A/B run's)
    merge      one run made of a sweep's shards (`linklab merge`)
    cli        report, compare, baseline, merge
"""
