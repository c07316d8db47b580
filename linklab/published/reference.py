"""A run beside its experiment's reference file (experiments/<name>.reference.yaml): linklab's
figures beside the published ones, the published findings evaluated on the run's data, and E1's
CPU model fitted, each where the reference asks for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.published import cpu_model, figures, findings
from linklab.results.points import Point
from linklab.results.runs import Run


@dataclass
class Beside:
    path: Path | None                              # the reference file the run names, found or not
    reference: dict[str, Any] | None               # its contents; None where the run names none or it is missing
    published: figures.Published | None = None
    verdicts: list[findings.Verdict] = field(default_factory=list)
    fit: cpu_model.Fit | None = None


def beside(run: Run, points: list[Point], experiments_dir: Path | None = None) -> Beside:
    path = run.reference_path(experiments_dir)
    ref = figures.load_reference(path) if path and path.is_file() else None
    out = Beside(path, ref)
    if ref is not None:
        out.published = figures.compare(run, ref)
        out.verdicts = findings.evaluate(ref, points, run.scale)
        if ref.get("cpu_model"):
            out.fit = cpu_model.fit_rows(run.ok_rows())
    return out
