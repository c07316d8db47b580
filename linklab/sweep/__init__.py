"""Sweeps: run an experiment matrix against a lab, measure, and keep every result."""
