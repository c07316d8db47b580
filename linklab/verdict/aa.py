"""The A/A spread: how far B/A moves at each point and metric when both arms are alike, measured
from A/A runs of `linklab ab` (`linklab aa` records them) and kept beside the experiment's
baselines as aa.json. The verdict (judging.py) never lets a point's interval be narrower than
what that point did with nothing changed: a metric that is bimodal at one point (retransmits 0 in
one repetition, 2400 per GB in the next; a tlb bond on one member or on both) is judged at that
point with the room it needs, and every other point keeps its own narrow interval.

Per point and metric it keeps two spreads, as one repetition's standard deviation on the metric's
scale, and how many runs measured them:
  d       from the difference of arm means d: sigma_d**2 = mean over the runs of d**2 / (1/nA + 1/nB)
          (d is 0 on average when nothing changed): all that moves B/A, whatever its cause;
  within  from each arm's repetitions around their own mean: what the verdict compares a new
          run's own repetitions with, to see whether the machine is noisier today.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from linklab.errors import UsageError
from linklab.fsutil import read_json_written_by, write_json_atomic
from linklab.results.points import Point, group
from linklab.results.runs import Run
from linklab.verdict import metrics
from linklab.verdict.effect import cells, quiet, scaled, sum_of_squares

AA_FILE = "aa.json"
FORMAT = 1


def point_key(p: Point) -> str:
    """A point as the file names it: its axes, in a stable text."""
    return json.dumps(p.key())


@dataclass
class Spread:
    """sigma per point and metric, from `runs` A/A runs."""

    experiment: str
    quick: bool
    placement: str
    # point -> metric -> [sigma_d, sigma_within, runs]
    sigma: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    path: Path | None = None

    def of(self, p: Point, m: metrics.Metric) -> tuple[float, float, int] | None:
        """(sigma_d, sigma_within, runs) at this point for this metric; None where no A/A run measured it."""
        got = self.sigma.get(point_key(p), {}).get(m.key)
        return (got[0], got[1], int(got[2])) if got and got[1] > 0 else None

    def describe(self) -> str:
        return (f"A/A spread from {len(self.runs)} A/A runs ({self.path or 'not saved'}): no point's interval is "
                "narrower than what that point moved with both arms alike")

    def save(self, path: Path) -> Path:
        write_json_atomic(path, {"format": FORMAT, "experiment": self.experiment,
                                 "quick": self.quick, "placement": self.placement,
                                 "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": self.runs,
                                 "sigma": self.sigma})
        self.path = path
        return path

    @classmethod
    def load(cls, path: Path) -> Spread:
        data = read_json_written_by(path, FORMAT, "sigma", "A/A spread", "linklab aa", "EXPERIMENT")
        return cls(data.get("experiment", ""), bool(data.get("quick")), data.get("placement", ""), data["sigma"],
                   list(data.get("runs") or []), Path(path))


def measure(aa_runs: list[tuple[str, Run, Run]]) -> Spread:
    """The spread from A/A runs, each given as (its name, arm A's run, arm B's run)."""
    if not aa_runs:
        raise UsageError("no A/A run to measure the spread from", hint="`linklab aa EXPERIMENT --runs 20` records them")
    first = aa_runs[0][1]
    sums: dict[str, dict[str, list[float]]] = {}  # point -> metric -> [sum of d**2 terms, runs, within SS, within df]
    for _name, a, b in aa_runs:
        by_key = {q.key(): q for q in group(b)}
        # Only points both arms measured on a quiet host: a run whose arm had nothing but repetitions
        # that other work or the hypervisor disturbed tells what they did, not what the machine does
        # when nothing changed.
        matched = [(p, by_key[p.key()]) for p in group(a) if p.key() in by_key and quiet(p) and quiet(by_key[p.key()])]
        for p, m, va, vb, *_ in cells(matched, metrics.table_of(a.manifest, b.manifest)):
            ya, yb = scaled(m, va), scaled(m, vb)
            d = sum(yb) / len(yb) - sum(ya) / len(ya)
            acc = sums.setdefault(point_key(p), {}).setdefault(m.key, [0.0, 0, 0.0, 0])
            acc[0] += d * d / (1 / len(ya) + 1 / len(yb))
            acc[1] += 1
            acc[2] += sum_of_squares(ya) + sum_of_squares(yb)
            acc[3] += len(ya) + len(yb) - 2
    sigma = {pk: {mk: [math.sqrt(sd / n), math.sqrt(sw / dw) if dw else 0.0, n] for mk, (sd, n, sw, dw) in ms.items()}
             for pk, ms in sums.items()}
    return Spread(first.experiment, bool(first.manifest.get("quick")), first.placement, sigma,
                  [name for name, _, _ in aa_runs])


def default_path(experiment: str, quick: bool, placement: str, root: Path = Path("baselines")) -> Path:
    """baselines/<experiment>[-quick]-<placement>/aa.json: beside the experiment's stored baseline."""
    slug = placement.replace(" (", "-").replace(")", "").replace(" ", "-")
    return root / f"{experiment}{'-quick' if quick else ''}-{slug}" / AA_FILE


def for_run(run: Run, root: Path = Path("baselines")) -> Spread | None:
    """The A/A spread recorded for this run's experiment, variant and placement, if any."""
    path = default_path(run.experiment, bool(run.manifest.get("quick")), run.placement, root)
    return Spread.load(path) if path.is_file() else None


def render(spread: Spread, table: tuple[metrics.Metric, ...] = metrics.METRICS) -> str:
    """Per metric: the widest and the typical point, as a factor (B/A) or in the metric's unit."""
    lines = [f"A/A spread of {spread.experiment}{' (quick)' if spread.quick else ''} on {spread.placement}, "
             f"{len(spread.runs)} runs: sigma of one repetition, as B/A would move by it"]
    by_metric: dict[str, list[tuple[float, str]]] = {}
    for pk, ms in spread.sigma.items():
        for mk, (sigma, _w, _n) in ms.items():
            by_metric.setdefault(mk, []).append((sigma, pk))
    for m in table:
        got = sorted(by_metric.get(m.key, []))
        if not got:
            continue
        median, (widest, where) = got[len(got) // 2][0], got[-1]

        def words(x: float) -> str:
            return f"{x:.3g} {m.unit}" if m.scale == "abs" else f"x{math.exp(x):.3f}"

        point = ", ".join(f"{a}={v}" for a, v in json.loads(where))
        lines.append(f"  {m.title}: typical {words(median)}, widest {words(widest)} at {point}")
    return "\n".join(lines)
