"""The format of a run's manifest, and reading one an older linklab wrote (flent's resultset
does the same: a version in every file, old files upgraded as they are loaded).

Formats:
  1  no `format` field: every run written before the field existed (linklab 0.1.0), among them
     the stored baselines (baselines/) and test runs (tests/data/runs/)
  2  `format` written; `fingerprint_parts` always present (None for the runs made before it was
     recorded: a resume into one is refused, saying so)

Readers only ever see the current format: load() upgrades in memory, step by step. A manifest
from a newer linklab is refused rather than misread.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from linklab.errors import UsageError

FORMAT = 2


def _from_1(manifest: dict[str, Any]) -> dict[str, Any]:
    return {**manifest, "fingerprint_parts": manifest.get("fingerprint_parts")}


# format -> what turns a manifest of that format into the next one
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _from_1}


def upgrade(manifest: dict[str, Any], where: Path | str) -> dict[str, Any]:
    """`manifest` (read from `where`) in the current format."""
    fmt = manifest.get("format", 1)
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
        raise UsageError(f"{where}: unknown results format {fmt!r} (this linklab reads 1 to {FORMAT})")
    if fmt > FORMAT:
        raise UsageError(f"{where}: results format {fmt}, written by a newer linklab (this one reads 1 to {FORMAT})",
                         hint="update linklab to read this run")
    for step in range(fmt, FORMAT):
        manifest = UPGRADES[step](manifest)
    return {**manifest, "format": FORMAT}


def placement_name(placement: dict[str, Any] | None) -> str:
    """"native", or "vm (tcg)" / "vm (kvm)": where a run's lab ran, and how fast its CPU was."""
    p = placement or {}
    kind = p.get("kind") or "?"
    if kind == "vm":
        kind += f" ({(p.get('vm') or {}).get('accel', '?')})"
    return kind
