"""The topology a run measured, drawn for its report (linklab/graph).

A run directory's manifest holds the resolved lab as it was when the sweep began
(`resolved_lab`): that is drawn. A trimmed copy (a stored baseline) leaves it out; then the
topology file the manifest names is resolved again with the run's lab overrides and scale, and
the caption says so, and says whether the file still has the bytes the run measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.results.runs import Run

FILE = "topology.svg"  # under the report's figures/


@dataclass(frozen=True)
class Drawing:
    svg: str
    caption: str


def drawing(run: Run) -> Drawing | None:
    """The run's topology drawn, or None when neither the manifest nor its topology file has it."""
    from linklab.graph import draw
    from linklab.graph.scene import count
    from linklab.model.resolved import Lab
    m = run.manifest
    lab = None
    if m.get("resolved_lab"):
        try:
            lab = Lab.model_validate(m["resolved_lab"])
            how = "as resolved when the run began"
        except ValueError:
            pass  # a lab of a model this linklab cannot read (older or newer): drawn from its file instead
    if lab is None:
        found = _topology_file(run)
        if found is None:
            return None
        lab, how = found
    axes = ", ".join(run.axes)
    caption = (f"Lab {lab.name} ({count(lab.nodes, 'node')}, {count(lab.links, 'link')}), {how}"
               + (f"; rates as written, shaped at scale {lab.scale:g}" if lab.scale != 1 else "")
               + (f". The experiment varies {axes} from point to point." if axes else "."))
    return Drawing(draw(lab, caption=f"lab {lab.name}"), caption)


def _topology_file(run: Run) -> tuple[Any, str] | None:
    from linklab.errors import LinklabError
    from linklab.model import Context, load_topology, resolve, topology_sha256
    m = run.manifest
    name = m.get("topology_file")
    if not name:
        return None
    path = Path(name)
    if not path.is_file() and m.get("experiment_file"):
        # Written relative to where the sweep ran: also try it from the experiment file's checkout.
        exp = Path(m["experiment_file"])
        path = next((c for c in (exp.parent / path, exp.parent.parent / path) if c.is_file()), path)
    if not path.is_file():
        return None
    overrides = [tuple(o) for o in m.get("lab_overrides") or []]
    try:
        lab = resolve(load_topology(path, overrides), Context(scale_override=run.scale))
    except LinklabError:
        return None  # the file no longer loads: the report goes on without the picture
    how = f"from {name}"
    if m.get("topology_sha256") and topology_sha256(path) != m["topology_sha256"]:
        how += " as it is now (changed since the run: its sha256 differs from the run's)"
    if overrides:
        how += " with the run's lab overrides " + ", ".join(f"{p}={v}" for p, v in overrides)
    return lab, how
