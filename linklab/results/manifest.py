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
    return upgraded(manifest, where, FORMAT, UPGRADES, "results")


def upgraded(doc: dict[str, Any], where: Path | str, current: int,
             upgrades: dict[int, Callable[[dict[str, Any]], dict[str, Any]]], what: str) -> dict[str, Any]:
    """A versioned document linklab wrote (a run's manifest; an A/B run's ab.json), read from
    `where`, in format `current`: upgraded step by step (`upgrades`: format -> what turns it into
    the next; no `format` field is format 1), or refused when a newer linklab wrote it."""
    fmt = doc.get("format", 1)
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
        raise UsageError(f"{where}: unknown {what} format {fmt!r} (this linklab reads 1 to {current})")
    if fmt > current:
        raise UsageError(f"{where}: {what} format {fmt}, written by a newer linklab (this one reads 1 to {current})",
                         hint="update linklab to read this run")
    for step in range(fmt, current):
        doc = upgrades[step](doc)
    return {**doc, "format": current}


def placement_name(placement: dict[str, Any] | None) -> str:
    """"native", or "vm (tcg)" / "vm (kvm)": where a run's lab ran, and how fast its CPU was."""
    p = placement or {}
    kind = p.get("kind") or "?"
    if kind == "vm":
        kind += f" ({(p.get('vm') or {}).get('accel', '?')})"
    return kind
