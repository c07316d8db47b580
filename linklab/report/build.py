"""Assemble a report: load runs, group points, evaluate the reference, draw the figures,
write report.md, report.html and figures/ (SVG + PNG)."""

from __future__ import annotations

import re
from pathlib import Path

# plots is imported where figures are drawn: matplotlib takes ~1 min to import under software
# emulation, and a report without figures (`linklab report --no-figures`) needs none of it.
from linklab.fsutil import write_atomic
from linklab.report import render
from linklab.report.contents import Report, analyse
from linklab.results.points import group, label_points
from linklab.results.runs import Run
from linklab.verdict import Result

REPORT_MD, REPORT_HTML, FIGURES = "report.md", "report.html", "figures"


def build(run_dirs: list[Path], experiments_dir: Path | None = None, figures: bool = True) -> Report:
    runs = [Run.load(d) for d in run_dirs]
    tags = [chr(ord("A") + i) if len(runs) > 1 else "" for i in range(len(runs))]
    grouped = [group(r) for r in runs]
    if len(runs) > 1 and len({tuple(r.axes) for r in runs}) == 1:
        # One set of labels over every run's points, so the same point reads the same in each.
        for pts in grouped:
            for p in pts:
                p.labels.clear()
        label_points([p for pts in grouped for p in pts])
    run_reports = [analyse(r, t, experiments_dir, pts) for r, t, pts in zip(runs, tags, grouped)]
    ref = next((r.reference for r in run_reports if r.reference), None)
    figs = []
    if figures:
        from linklab.report import plots
        sources = [plots.Source(r.tag or r.run.name, r.run, r.points) for r in run_reports]
        figs = plots.render_all(plots.specs_from(ref), sources)
    rep = Report(run_reports, figs)
    rep.markdown = render.markdown(rep)
    rep.html = render.html(rep)
    return rep


def default_out(run_dirs: list[Path], results_root: Path) -> Path:
    if len(run_dirs) == 1:
        return run_dirs[0]
    name = "__".join(re.sub(r"[^A-Za-z0-9_.+-]", "-", f"{Path(d).parent.name}-{Path(d).name}") for d in run_dirs)
    return results_root / "reports" / name[:180]


def write(rep: Report, out: Path) -> dict[str, Path]:
    """report.md, report.html and figures/*.svg|png; derived from the rows, so rewriting them
    loses nothing measured."""
    out.mkdir(parents=True, exist_ok=True)
    if rep.figures:
        from linklab.report import plots
        plots.write(rep.figures, out / FIGURES)
    for drawing, name, _ in render.topologies(rep):
        (out / FIGURES).mkdir(exist_ok=True)
        write_atomic(out / FIGURES / name, drawing.svg)
    write_atomic(out / REPORT_MD, rep.markdown)
    write_atomic(out / REPORT_HTML, rep.html)
    return {"markdown": out / REPORT_MD, "html": out / REPORT_HTML, "figures": out / FIGURES}


def write_report(run_dir: Path, experiments_dir: Path | None = None, figures: bool = True) -> tuple[Path, str]:
    """One run's report into its own directory (what a sweep calls when it finishes)."""
    rep = build([Path(run_dir)], experiments_dir, figures)
    paths = write(rep, Path(run_dir))
    return paths["markdown"], rep.markdown


def write_ab_report(run_dir: Path, res: Result, experiments_dir: Path | None = None, figures: bool = True) -> Path:
    """An A/B run's report (linklab/ab): the verdict and every point's B/A with its interval first,
    then both arms as one multi-run report (A and B side by side in every table and figure)."""
    rep = build([res.a.path, res.b.path], experiments_dir, figures)
    rep.preface = render.verdict_blocks(res)
    if figures:
        from linklab.report import plots
        fig = plots.ratio_figure([c for c in res.judgments if c.metric is not None])
        if fig is not None:
            rep.figures.insert(0, fig)
    rep.markdown, rep.html = render.markdown(rep), render.html(rep)
    return write(rep, Path(run_dir))["html"]
