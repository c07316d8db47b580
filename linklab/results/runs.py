"""Finding runs from what users type, and loading them.

A run is either a full run directory (manifest.json + points/<point>/rep<k>/row.json, as
`linklab sweep` writes it) or a trimmed copy (manifest.json + rows.json) such as the baselines
stored in the repository: `export()` makes one, and the verdict and the report read both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.fsutil import write_json_atomic
from linklab.results import samples
from linklab.results.manifest import placement_name
from linklab.results.store import MANIFEST, ResultsStore, read_manifest

ROWS_FILE = "rows.json"  # a trimmed run's rows (a full run keeps one row.json per repetition)
# Manifest fields a trimmed copy leaves out: large dumps that a report or compare never reads.
BULKY = ("resolved_lab", "qdiscs_at_start", "sysctls_at_start", "command")


@dataclass
class Run:
    path: Path
    manifest: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path | str) -> Run:
        path = Path(path)
        mpath = path / MANIFEST
        if not mpath.is_file():
            raise UsageError(f"{path} is not a run directory (no {MANIFEST})",
                             hint="give results/<experiment>/<timestamp> or a stored baseline directory")
        manifest = read_manifest(path)  # upgraded from the format it was written in
        if (path / "points").is_dir():
            rows = ResultsStore(path, manifest).rows()
        elif (path / ROWS_FILE).is_file():
            try:
                rows = json.loads((path / ROWS_FILE).read_text())
            except ValueError as e:
                raise UsageError(f"{path / ROWS_FILE}: not valid JSON ({e})") from None
        else:
            rows = []
        return cls(path, manifest, sorted(rows, key=lambda r: (int(r.get("point_index") or 0), int(r.get("rep") or 0))))

    # -- what the run was --------------------------------------------------------------------

    @property
    def experiment(self) -> str:
        return str(self.manifest.get("experiment") or self.path.parent.name)

    @property
    def name(self) -> str:
        return f"{self.experiment}/{self.manifest.get('run') or self.path.name}"

    @property
    def axes(self) -> list[str]:
        return list((self.manifest.get("matrix") or {}).keys())

    @property
    def scale(self) -> float:
        try:
            return float(self.manifest.get("scale") or 1.0)
        except (TypeError, ValueError):
            return 1.0

    @property
    def placement(self) -> str:
        """"native", or "vm (tcg)" / "vm (kvm)": where the lab ran, and how fast its CPU was."""
        return placement_name(self.manifest.get("placement"))

    @property
    def expected_reps(self) -> int:
        return int(self.manifest.get("points") or 0) * int(self.manifest.get("repetitions") or 1)

    def ok_rows(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if row_ok(r)]

    def reference_path(self, experiments_dir: Path | None = None) -> Path | None:
        name = self.manifest.get("reference")
        if not name:
            return None
        exp_file = Path(self.manifest.get("experiment_file") or "")
        candidates = [d / name for d in (experiments_dir, exp_file.parent, Path("experiments")) if d is not None]
        return next((c for c in candidates if c.is_file()), candidates[0])


def row_ok(row: dict[str, Any]) -> bool:
    """A repetition that measured something: no error, pre-flight passed."""
    return not row.get("error") and str(row.get("preflight_ok", True)).lower() != "false"


# -- finding runs ---------------------------------------------------------------------------

def find_run(target: str | None, results_root: Path) -> Path:
    """A run directory from what users type: a run dir (or stored baseline), an experiment's
    results dir (its newest run), an experiment file or name (its newest run under
    results_root), or nothing (the newest run of any experiment)."""
    if target:
        path = Path(target)
        if (path / MANIFEST).is_file():
            return path
        if path.is_dir() and (newest := _newest_run(path)):
            return newest
        name = path.stem if path.suffix in (".yaml", ".yml") else path.name
        if newest := _newest_run(results_root / name):
            return newest
        raise UsageError(f"no results found for {target!r}",
                         hint=f"give a run directory (results/<experiment>/<timestamp>) or an experiment that "
                              f"has run; experiments with results under {results_root}: "
                              f"{', '.join(_experiments(results_root)) or 'none'}")
    runs = [r for d in _experiment_dirs(results_root) if (r := _newest_run(d))]
    if not runs:
        raise UsageError(f"no results under {results_root}", hint="run `linklab sweep EXPERIMENT` first")
    return max(runs, key=lambda r: ResultsStore.open(r).manifest.get("created_at", ""))


def _experiment_dirs(root: Path) -> list[Path]:
    return sorted(d for d in root.iterdir() if d.is_dir()) if root.is_dir() else []


def _experiments(root: Path) -> list[str]:
    return [d.name for d in _experiment_dirs(root) if _newest_run(d)]


def _newest_run(exp_dir: Path) -> Path | None:
    newest = ResultsStore.latest(exp_dir.parent, exp_dir.name)  # orders run-2 … run-11 numerically
    return newest.path if newest else None


# -- trimmed copies (baselines) -------------------------------------------------------------

def export(run: Run, dest: Path, *, drop_columns: tuple[str, ...] = ()) -> Path:
    """A small copy of a run that `report` and `compare` read like the original: the manifest
    without its bulky dumps, and every row (optionally without some columns)."""
    dest.mkdir(parents=True, exist_ok=True)
    manifest = {k: v for k, v in run.manifest.items() if k not in BULKY}
    manifest["exported_from"] = str(run.path)
    write_json_atomic(dest / MANIFEST, manifest)
    rows = [{k: v for k, v in _with_samples(run.path, r).items() if k not in drop_columns} for r in run.rows]
    write_json_atomic(dest / ROWS_FILE, rows)
    return dest


def _with_samples(run_path: Path, row: dict) -> dict:
    """The row plus the samples its figures need and the raw files hold (idle RTTs, throughput
    intervals), so a baseline's report draws the RTT distribution and the time series."""
    out = dict(row)
    rtts = samples.row_ping_rtts(run_path, row)
    if rtts and not any(isinstance(row.get(f), list) for f in samples.RTT_FIELDS):
        out[samples.RTT_FIELDS[0]] = [round(v, 3) for v in rtts]
    ivs = samples.row_intervals(run_path, row)
    if ivs and not any(isinstance(row.get(f), list) for f in samples.INTERVAL_FIELDS):
        out[samples.INTERVAL_FIELDS[1]] = [[round(t, 3), round(v)] for t, v in ivs]
    return out
