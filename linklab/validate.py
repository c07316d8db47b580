"""`linklab validate FILE`: a topology or an experiment, told apart by what the file contains."""

from __future__ import annotations

from pathlib import Path

from linklab.model import load_topology, resolve
from linklab.model.loader import read_yaml


def load_experiment(path, quick: bool = False):
    """An experiment file validated whole: its own checks (linklab/sweep/experiment.py), then the
    names of the metrics it declares against the verdict's built-in ones (a layer above it)."""
    from linklab.errors import ValidationFailed
    from linklab.sweep.plan import load_experiment as load
    from linklab.verdict.metrics import check_declared
    exp = load(path, quick=quick)
    problems = check_declared(exp.tool.metrics)
    if problems:
        raise ValidationFailed(str(path), problems)
    return exp


def validate_file(path: str, seed: str | None = None) -> str:
    """`linklab validate`: a topology (with its checks: section, for the variant of `seed`, by
    default every variable's default), a checks file (against the topology it names), an
    exercise, or an experiment. Returns what the file is; raises ValidationFailed."""
    from linklab.check.spec import is_checks_file, load_checks
    data, _ = read_yaml(Path(path))
    if Path(path).name == "exercise.yaml" and "variants" in data:
        from linklab.check.exercise import load
        load(path)
        return "exercise"
    if is_checks_file(data):
        load_checks(path, seed=seed, lab_for=lambda topo, s: resolve(load_topology(topo, seed=s)))
        return "checks file"
    if "matrix" in data or "measure" in data or "topology" in data:
        load_experiment(path)
        return "experiment"
    lab = resolve(load_topology(path, seed=seed))  # resolution finds address clashes and pool exhaustion
    if data.get("checks"):
        load_checks(path, lab, seed)
        return "topology with checks"
    return "topology"
