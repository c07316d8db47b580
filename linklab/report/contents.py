"""What a report holds: each run with its points and what its reference file found (linklab/
published), the figures, and what comes before the runs (an A/B run's verdict). build.py fills
it; render.py writes it as markdown and HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linklab.published import cpu_model, figures, findings
from linklab.published.reference import beside
from linklab.report import topology
from linklab.results.points import Point, group
from linklab.results.runs import Run

if TYPE_CHECKING:  # plots imports matplotlib: only build.py imports it, and only to draw figures
    from linklab.report import plots


@dataclass
class RunReport:
    tag: str
    run: Run
    points: list[Point]
    reference_path: Path | None
    reference: dict[str, Any] | None
    published: figures.Published | None = None
    verdicts: list[findings.Verdict] = field(default_factory=list)
    fit: cpu_model.Fit | None = None
    topology: topology.Drawing | None = None  # the lab the run measured, drawn


@dataclass
class Report:
    runs: list[RunReport]
    figures: list["plots.Figure"]
    markdown: str = ""
    html: str = ""
    preface: list[Any] = field(default_factory=list)  # render.Blocks ahead of the runs' own (an A/B's verdict)


def analyse(run: Run, tag: str, experiments_dir: Path | None = None, points: list[Point] | None = None) -> RunReport:
    points = group(run) if points is None else points
    b = beside(run, points, experiments_dir)
    return RunReport(tag, run, points, b.path, b.reference, b.published, b.verdicts, b.fit,
                     topology=topology.drawing(run))
