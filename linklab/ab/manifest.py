"""ab.json: an A/B run's own manifest, beside the arms' runs (the arms, their order, the points
measured, the arms' run directories), and reading one an older linklab wrote: upgraded as it is
read, as a run's manifest is (linklab/results/manifest.py).

Formats:
  1  the points only one arm has under "only"
  2  under "unmatched" ("only" is the --only subset's word: `subset` in ab.json)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.results.manifest import upgraded

AB_FILE = "ab.json"
FORMAT = 2


def _from_1(manifest: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in manifest.items() if k != "only"}
    if "only" in manifest:
        out["unmatched"] = manifest["only"]
    return out


UPGRADES = {1: _from_1}


def read(run_dir: Path) -> dict[str, Any]:
    """run_dir/ab.json in the current format."""
    path = Path(run_dir) / AB_FILE
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: not a readable A/B run manifest ({e})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not an A/B run manifest (a JSON object)")
    return upgraded(doc, path, FORMAT, UPGRADES, "A/B run")
