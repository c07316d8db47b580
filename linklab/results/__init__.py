"""A sweep's results on disk: written by linklab/sweep, read by linklab/report. The store
(store.py) owns the layout; neither side reaches into the other."""
