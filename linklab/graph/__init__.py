"""A lab drawn: the resolved model (and, for a running lab, what the kernel reports) as an SVG
picture, laid out deterministically, optionally inside a small HTML page with a legend.

scene.py decides what is shown (nodes by kind, links with their labels, bond members, the
kernel's marks), layout.py where it goes, svg.py how it looks, page.py the HTML around it.
"""

from __future__ import annotations

from typing import Any

from linklab.graph.layout import layout
from linklab.graph.scene import Scene, scene
from linklab.graph.svg import render

__all__ = ["Scene", "draw", "layout", "render", "scene"]


def draw(lab: Any, live: dict[str, Any] | None = None, caption: str | None = None) -> str:
    """The SVG text of `lab` (a resolved Lab); `live`: `linklab status`'s kernel data to overlay."""
    sc = scene(lab, live, caption)
    return render(sc, layout(sc))
