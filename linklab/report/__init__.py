"""Reports of sweep runs: tables with full statistics, figures, the published figures and
findings beside linklab's, and the verdict of one run against another.

Everything here reads only what a run directory (or a stored baseline) holds, so a report can
be made anywhere, long after the lab is gone. Modules, one job each:

    runs       find and load runs (full run directories or trimmed baselines)
    points     group rows into matrix points; labels that tell points apart
    metrics    what a metric is (column, unit, direction, scale, minimum effect), as data
    stats      n, mean, sd, variance, 95 % CI per metric and point
    published  linklab beside the published figures, in comparable units
    findings   published findings as checkable statements -> agrees / differs / explained
    cpu_model  E1's CPU% = alpha * packets/s + beta, fitted with its uncertainty
    plots      plot types as data, rendered deterministically with matplotlib (Agg)
    render     report.md and a self-contained report.html
    verdict    does run B differ from run A: the one model (`linklab ab`, `linklab compare`)
    aa         the A/A spread the verdict never judges a point below (`linklab aa`)
    compare    a stored run against another, by the verdict, advisory
"""
