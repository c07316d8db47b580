"""A sweep's results on disk: written by linklab/sweep, read by linklab/verdict, linklab/published
and linklab/report. The store (store.py) owns the layout; neither side reaches into the other.

    manifest  the manifest's format; older runs upgraded as they are read
    store     the run directory: points, repetitions, raw files, the tidy table
    spool     where a run is written while the lab VM measures it
    runs      a run (full or a trimmed baseline) found from what users type and loaded
    points    rows grouped into matrix points; labels that tell points apart
    samples   per-packet and per-second samples (RTTs, throughput intervals) of a repetition"""
