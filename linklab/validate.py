"""`linklab validate FILE`: a topology or an experiment, told apart by what the file contains."""

from __future__ import annotations

from pathlib import Path

from linklab.model import load_topology, resolve
from linklab.model.loader import read_yaml


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
        from linklab.sweep.plan import load_experiment
        load_experiment(path)
        return "experiment"
    lab = resolve(load_topology(path, seed=seed))  # resolution finds address clashes and pool exhaustion
    if data.get("checks"):
        load_checks(path, lab, seed)
        return "topology with checks"
    return "topology"
