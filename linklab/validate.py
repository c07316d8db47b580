"""`linklab validate FILE`: a topology or an experiment, told apart by what the file contains."""

from __future__ import annotations

from pathlib import Path

from linklab.model import load_topology, resolve
from linklab.model.loader import read_yaml


def validate_file(path: str) -> str:
    data, _ = read_yaml(Path(path))
    if "matrix" in data or "measure" in data or "topology" in data:
        from linklab.sweep.experiment import load_experiment
        load_experiment(path)
        return "experiment"
    resolve(load_topology(path))  # resolution finds address clashes and pool exhaustion
    return "topology"
