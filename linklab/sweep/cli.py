"""CLI commands for sweeps and reports (registered into linklab.cli)."""

from __future__ import annotations


def add_commands(sub) -> None:
    """Sweep commands are added by the sweep issue; the core CLI works without them."""
