"""One table of every published finding: the figure as published, linklab's figure, the verdict,
the mechanism, and the command that shows it (README's "Reproduction" section).

Each experiment is read from its stored run: a full run under `reproductions/` when there is
one, else its quick baseline under `baselines/`. The verdicts are findings.py's:
nothing here judges. `linklab report --findings-table` prints
the table; `--into FILE` writes it between FILE's markers, so README cannot drift from the runs
(tests/unit/test_reproduction.py compares them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from linklab.errors import UsageError
from linklab.published import findings
from linklab.published.reference import beside
from linklab.results.points import group
from linklab.results.runs import Run

BEGIN, END = "<!-- reproduction table: begin -->", "<!-- reproduction table: end -->"
FULL_DIR, QUICK_DIR = "reproductions", "baselines"
MARK = {findings.AGREES: "✔ agrees", findings.DIFFERS: "✘ differs", findings.EXPLAINED: "◐ explained",
        findings.NOT_MEASURED: "– not measured"}


@dataclass(frozen=True)
class Row:
    experiment: str
    run: str       # the stored run's directory, as typed from the checkout's root
    kind: str      # full | quick
    verdict: findings.Verdict


def stored_runs(root: Path) -> list[tuple[Path, str]]:
    """Each experiment with a reference file, its stored run: (directory, full|quick); the full
    run when one is stored. Experiments without a stored run are left out."""
    out = []
    for ref in sorted((root / "experiments").glob("*.reference.yaml")):
        name = ref.name.removesuffix(".reference.yaml")
        full = sorted((root / FULL_DIR).glob(f"{name}-full-*"))
        quick = sorted((root / QUICK_DIR).glob(f"{name}-quick-*"))
        if full:
            out.append((full[-1], "full"))
        elif quick:
            out.append((quick[-1], "quick"))
    return out


def text(runs: list[tuple[Path, str]], root: Path) -> str:
    """README's block: the findings table, then which run each experiment's rows come from."""
    loaded = [(Run.load(path), _shown(path, root), kind) for path, kind in runs]
    return table(rows(loaded, root)) + "\n" + runs_table(loaded)


def _shown(path: Path, root: Path) -> str:
    """A stored run's directory as typed from the checkout's root."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def runs_table(loaded: list[tuple[Run, str, str]]) -> str:
    """Which run each experiment's rows come from: its size and the sweep's wall time (from its
    manifest: created to finished, so a resumed run counts its pauses too; a run left incomplete
    by repetitions that failed: its sweep's own wall time, and how many failed)."""
    lines = ["| experiment | stored run | kind | points × repetitions | sweep took |", "|---|---|---|---|---|"]
    for run, shown, kind in loaded:
        m = run.manifest
        took = _wall(m.get("created_at"), m.get("finished_at"))
        failed = len(run.rows) - len(run.ok_rows())
        if not m.get("complete") and (m.get("timing") or {}).get("sweep_wall_s"):
            took = _seconds(float(m["timing"]["sweep_wall_s"]))
        if failed:
            took += f" ({failed} repetition{'s' if failed > 1 else ''} failed{'' if m.get('complete') else ': the run is incomplete'})"
        lines.append(f"| {m.get('experiment')} | `{shown}` | {kind} | {m.get('points')} × {m.get('repetitions')} | {took} |")
    return "\n".join(lines) + "\n"


def _wall(start: str | None, end: str | None) -> str:
    from datetime import datetime
    try:
        s = (datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))).total_seconds()
    except ValueError:
        return "—"
    return _seconds(s)


def _seconds(s: float) -> str:
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min" if s >= 3600 else f"{int(s // 60)} min {int(s % 60):02d} s"


def rows(loaded: list[tuple[Run, str, str]], root: Path) -> list[Row]:
    out = []
    for run, shown, kind in loaded:
        rep = beside(run, group(run), experiments_dir=root / "experiments")
        if rep.reference is None:
            raise UsageError(f"{shown}: experiment {run.experiment!r} has no reference file, so no published findings")
        out += [Row(run.experiment, shown, kind, v) for v in rep.verdicts]
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip() or "—"


def mechanism(v: findings.Verdict) -> str:
    """Explained: the cause its variant measured. Agrees: whether the points were link- or
    CPU-bound. Differs: what was ruled out, or that nothing was tried yet."""
    if v.verdict == findings.EXPLAINED:
        return v.mechanism
    if v.verdict == findings.DIFFERS:
        if v.mechanism:  # measured on the run, with no variant to remove it
            return f"measured: {v.mechanism}" + (f"; ruled out: {v.tried}" if v.tried else "")
        if v.tried:
            return f"not found; ruled out: {v.tried}"
        if v.variant == findings.NOT_MEASURED:
            return "its variant is not in this run"
        return "its variant does not remove it" if v.variant == findings.DIFFERS else "not investigated yet"
    bounds = re.findall(r"→ ([^;]+)", v.mechanism)
    return ", ".join(f"{b} ({bounds.count(b)} points)" if bounds.count(b) > 1 else b
                     for b in dict.fromkeys(bounds)) if bounds else ""


def table(found: list[Row]) -> str:
    lines = ["| experiment | published finding | published | linklab | verdict | mechanism | shown by |",
             "|---|---|---|---|---|---|---|"]
    for r in found:
        v = r.verdict
        command = f"`linklab report {r.run} --no-figures`" + (" (quick)" if r.kind == "quick" else "")
        lines.append("| " + " | ".join(_cell(x) for x in (r.experiment, v.says, v.published, v.measured, MARK[v.verdict],
                                                           mechanism(v), command)) + " |")
    counts = {m: sum(1 for r in found if r.verdict.verdict == m) for m in MARK}
    lines.append("")
    lines.append("Of " + f"{len(found)} findings: " + ", ".join(f"{m} {n}" for m, n in counts.items()) + ".")
    return "\n".join(lines) + "\n"


def into(path: Path, text: str) -> bool:
    """Write `text` between the file's markers; whether the file changed."""
    from linklab.fsutil import write_atomic
    old = path.read_text()
    if BEGIN not in old or END not in old:
        raise UsageError(f"{path} has no place for the table: put {BEGIN} and {END} on lines of their own")
    head, rest = old.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{text}{END}{tail}"
    if new != old:
        write_atomic(path, new)
    return new != old


def between_markers(path: Path) -> str:
    """What the file holds between its markers now."""
    text = path.read_text()
    if BEGIN not in text or END not in text:
        return ""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].removeprefix("\n")
