"""`linklab graph`'s HTML page opened in headless Chromium, as a reader would: nothing fetched, no
console error, and the picture rendered with real fonts: every node and every link member drawn
with a size, every name and label inside its box (the layout only estimates text widths). A
screenshot of each is kept under tests/artifacts/ (gitignored) to look at."""

import copy
import sys
from pathlib import Path

import pytest

from chromium_page import open_page
from linklab.graph import draw, scene
from linklab.graph.page import page
from linklab.lab import build_lab

sys.path.insert(0, str(Path(__file__).parent))
from test_graph import captured_live, iface  # noqa: E402  (the captured kernel data of a real lab)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"

# For each node and label: does its text fit in its box, as the browser lays the text out?
PROBE = """(() => {
  const inside = (t, b) => t.x >= b.x - 0.5 && t.y >= b.y - 0.5 && t.x + t.width <= b.x + b.width + 0.5
                           && t.y + t.height <= b.y + b.height + 0.5;
  const out = {nodes: 0, members: 0, overflow: [], svg: document.querySelector('svg.linklab-graph').getBoundingClientRect().width};
  for (const g of document.querySelectorAll('svg.linklab-graph g[data-node]')) {
    const shape = g.querySelector(':scope > rect, :scope > polygon').getBBox();
    if (shape.width > 0 && shape.height > 0) out.nodes++;
    for (const t of g.querySelectorAll(':scope > text'))
      if (!inside(t.getBBox(), shape)) out.overflow.push(g.dataset.node + ': ' + t.textContent);
  }
  for (const p of document.querySelectorAll('svg.linklab-graph path[data-member]'))
    if (p.getTotalLength() > 10) out.members++;
  for (const l of document.querySelectorAll('svg.linklab-graph g.label')) {
    const box = l.querySelector('rect').getBBox();
    for (const t of l.querySelectorAll('text'))
      if (!inside(t.getBBox(), box)) out.overflow.push('label: ' + t.textContent);
  }
  return out;
})()"""


def labs():
    yield "e5", build_lab(ROOT / "topologies/e5_three_receivers.yaml", []), None
    yield "ovs_bonds", build_lab(ROOT / "tests/golden/topologies/good/ovs_bonds.yaml", []), None
    live = copy.deepcopy(captured_live())
    iface(live, "h2", "bond0-m1")["bond_member"]["mii"] = "down"
    iface(live, "h1", "bond0")["mtu"] = 9000
    yield "rr_reorder-live", build_lab(ROOT / "topologies/rr_reorder.yaml", []), live


@pytest.mark.parametrize("name,lab,live", list(labs()), ids=[x[0] for x in labs()])
def test_graph_page_renders_in_chromium(tmp_path, name, lab, live):
    html = tmp_path / f"{name}.html"
    html.write_text(page(scene(lab, live), draw(lab, live), f"linklab graph: lab {lab.name}"))
    res = open_page(html, probe=PROBE)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"graph-{name}.png").write_bytes(res.screenshot)
    left = [u for u in res.requests if u != html.resolve().as_uri() and not u.startswith("data:")]
    assert left == [] and res.console_errors == []
    assert res.title == f"linklab graph: lab {lab.name}"
    assert res.probe["svg"] > 200
    assert res.probe["nodes"] == len(lab.nodes)
    assert res.probe["members"] == sum(len(link.veths) for link in lab.links)
    assert res.probe["overflow"] == []
    assert res.screenshot.startswith(b"\x89PNG")
