"""`linklab graph`: the SVG is valid SVG; every node, link and bond member is in it with its
labels; no two node boxes overlap, for every bundled topology and for generated 50-node labs;
the same file gives the same bytes; a running lab's kernel data (captured from a real lab) marks
members down and MTU mismatches; the CLI and the report use it."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from linklab.cli import main
from linklab.graph import draw, layout, scene
from linklab.lab import build_lab
from linklab.model import resolve
from linklab.model.topology import Topology

ROOT = Path(__file__).resolve().parents[2]
NS = {"s": "http://www.w3.org/2000/svg"}
BUNDLED = sorted([*ROOT.glob("topologies/*.yaml"), *ROOT.glob("tests/golden/topologies/good/*.yaml"),
                  *ROOT.glob("exercises/*/lab.yaml")])


def generated(shape: str, n: int = 50) -> Topology:
    hosts, switches, links = {}, {}, []
    if shape == "ring":
        hosts = {f"r{i}": {} for i in range(n)}
        links = [{"endpoints": [f"r{i}", f"r{(i + 1) % n}"], "impair": {"rate": "100mbit", "delay": "1ms"}}
                 for i in range(n)]
    elif shape == "tree":  # a core switch, 4 aggregation switches, the hosts shared among them
        switches = {"core": {}, **{f"a{i}": {} for i in range(4)}}
        hosts = {f"h{i}": {} for i in range(n - 5)}
        links = [{"endpoints": ["core", f"a{i}"], "mtu": 9000} for i in range(4)]
        links += [{"endpoints": [f"a{i % 4}", f"h{i}"]} for i in range(n - 5)]
    elif shape == "star":
        switches = {"s1": {}}
        hosts = {f"h{i}": {} for i in range(n - 1)}
        links = [{"endpoints": ["s1", f"h{i}"], "impair": {"delay": f"{i + 1}ms"}} for i in range(n - 1)]
    elif shape == "chain":
        hosts = {f"n{i}": {} for i in range(n)}
        links = [{"endpoints": [f"n{i}", f"n{i + 1}"]} for i in range(n - 1)]
    elif shape == "dumbbell":  # two switches, the hosts split between them, bonded uplinks
        switches = {"s1": {}, "s2": {"kind": "ovs", "controller": "l2_learning"}}
        hosts = {f"h{i}": {} for i in range(n - 2)}
        links = [{"endpoints": ["s1", "s2"], "bond": {"members": 3, "mode": "802.3ad"}}]
        links += [{"endpoints": [f"h{i}", "s1" if i % 2 else "s2"]} for i in range(n - 2)]
    return Topology.model_validate({"name": shape, "hosts": hosts, "switches": switches, "links": links})


def labs():
    for path in BUNDLED:
        yield pytest.param(lambda path=path: build_lab(path, []), id=str(path.relative_to(ROOT)))
    for shape in ("ring", "tree", "star", "chain", "dumbbell"):
        yield pytest.param(lambda shape=shape: resolve(generated(shape)), id=f"generated-{shape}-50")


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return root


def texts(el: ET.Element) -> list[str]:
    return [t.text for t in el.iter("{http://www.w3.org/2000/svg}text")]


def shape_box(g: ET.Element) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of a node group's own shape (a rect or a hexagon's polygon)."""
    el = next(e for e in g if e.tag.endswith(("rect", "polygon")))
    if el.tag.endswith("rect"):
        x, y = float(el.get("x")), float(el.get("y"))
        return x, y, x + float(el.get("width")), y + float(el.get("height"))
    pts = [tuple(map(float, p.split(","))) for p in el.get("points").split()]
    return min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts), max(p[1] for p in pts)


def boxes(root: ET.Element) -> dict[str, list[tuple[float, float, float, float]]]:
    """Each node's boxes as drawn: its shape, and its controller's."""
    out = {}
    for g in root.iterfind(".//s:g[@data-node]", NS):
        out[g.get("data-node")] = [shape_box(g)] + [shape_box(c) for c in g.iterfind("s:g[@class='controller']", NS)]
    return out


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("make", list(labs()))
def test_every_node_link_and_member_is_drawn_and_no_node_boxes_overlap(make):
    lab = make()
    svg = draw(lab)
    root = parse(svg)
    sc = scene(lab)
    drawn = boxes(root)
    assert set(drawn) == {n.name for n in lab.nodes}
    for g in root.iterfind(".//s:g[@data-node]", NS):
        assert g.get("data-node") in texts(g)  # its name is written on it
        assert sc.node(g.get("data-node")).detail in texts(g)
    groups = root.findall(".//s:g[@data-link]", NS)
    assert [g.get("data-link") for g in groups] == [link.name for link in lab.links]
    for g, link, glink in zip(groups, lab.links, sc.links):
        assert g.get("data-ends") == f"{link.ends[0].node} {link.ends[1].node}"
        label = texts(g.find("s:g[@class='label']", NS))
        assert label[0].startswith(link.name)
        assert label[1].startswith(f"MTU {link.mtu}") or "≠" in label[1]
        assert set(glink.lines) <= set(label)
        members = [p.get("data-member") for p in g.iterfind("s:path", NS)]
        assert members == [f"{v.a.node}:{v.a.ifname} {v.b.node}:{v.b.ifname}" for v in link.veths]
        if link.kind == "bond":
            assert len(g.findall("s:ellipse", NS)) == len({b.node for b in link.bonds} | {
                e.node for e in link.ends if e.ovs_bond or len(e.bridge_ports) > 1})
            assert any(b.mode in label[0] for b in link.bonds)
    flat = [(name, b) for name, bs in drawn.items() for b in bs]
    hits = [(n1, n2) for i, (n1, b1) in enumerate(flat) for n2, b2 in flat[i + 1:] if overlap(b1, b2)]
    assert hits == []
    w, h = float(root.get("width")), float(root.get("height"))
    assert all(0 <= b[0] and b[2] <= w and 0 <= b[1] and b[3] <= h for _, b in flat)


@pytest.mark.parametrize("make", list(labs()))
def test_labels_cover_no_node_and_no_other_label(make):
    lay = layout(scene(make()))
    labels = [p.label for p in lay.links]
    assert not [(i, j) for i, a in enumerate(labels) for j, b in enumerate(labels[i + 1:]) if a.overlaps(b)]
    assert not [(i, v) for i, a in enumerate(labels) for v, f in lay.footprints.items() if a.overlaps(f)]


def test_the_same_file_gives_the_same_svg_whatever_the_hash_seed():
    code = ("from linklab.lab import build_lab; from linklab.graph import draw; import sys; "
            "sys.stdout.write(draw(build_lab('tests/golden/topologies/good/ovs_bonds.yaml', [])))")
    outs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outs) == 1 and draw(build_lab(ROOT / "tests/golden/topologies/good/ovs_bonds.yaml", [])) in outs


def test_labels_give_rate_and_delay_as_written_whatever_the_scale():
    # E5's links: 10gbit with 125us±15us, a 2.2gbit one with 14ms; at scale 0.1 the kernel shapes
    # at a tenth, the picture still says what the topology says (and the caption says the scale).
    for scale in (1.0, 0.1):
        sc = scene(build_lab(ROOT / "topologies/e5_three_receivers.yaml", [], scale=scale))
        lines = {link.name: link.lines for link in sc.links}
        assert lines["toa"] == ("toa", "MTU 1500 · 10gbit", "delay 125us±15us")
        assert lines["toc"] == ("toc", "MTU 1500 · 2.2gbit", "delay 14ms±100us")
        assert lines["sndbond"][0] == "sndbond: bond balance-rr × 2"
        assert ("scale 0.1" in sc.caption) == (scale == 0.1)


def test_members_with_their_own_impairment_are_labelled_each():
    sc = scene(build_lab(ROOT / "topologies/rr_reorder.yaml", []))
    assert [m.label for m in sc.links[0].members] == ["m0: 1gbit, delay 100us", "m1: 1gbit, delay 600us"]


def test_node_kinds_and_an_ovs_controller():
    sc = scene(build_lab(ROOT / "tests/golden/topologies/good/ovs_bonds.yaml", []))
    assert {n.name: n.kind for n in sc.nodes} == {"h1": "host", "h2": "host", "s1": "ovs", "s2": "ovs"}
    assert sc.node("s2").controller == "controller lacp :6654" and sc.node("s1").controller is None
    root = parse(draw(build_lab(ROOT / "tests/golden/topologies/good/ovs_bonds.yaml", [])))
    s2 = root.find(".//s:g[@data-node='s2']", NS)
    assert "controller lacp :6654" in texts(s2.find("s:g[@class='controller']", NS))
    # the OVS side of the 802.3ad bond: OVS's own LACP bond, named with its mode at that end
    assert "lag0 balance-tcp (OVS, LACP)" in texts(root.find(".//s:g[@data-link='b1']", NS))
    containers = scene(build_lab(ROOT / "topologies/containers.yaml", []))
    assert containers.node("c1").kind == "container" and containers.node("c1").detail == "container linklab/base"


def test_a_kind_without_a_shape_is_drawn_generic_with_its_name():
    # Another kind the model gains (routers) is drawn before svg.py gives it a shape of its own.
    lab = build_lab(ROOT / "topologies/bond_switch.yaml", [])
    lab = lab.model_copy(update={"nodes": [n.model_copy(update={"kind": "router"}) if n.name == "s1" else n
                                           for n in lab.nodes]})
    g = parse(draw(lab)).find(".//s:g[@data-node='s1']", NS)
    assert g.get("data-kind") == "router" and g.find("s:polygon", NS) is not None and "router" in texts(g)


# -- a running lab: the kernel's data, as `linklab status` reads it ---------------------------------

def captured_live() -> dict:
    """rr_reorder's h1 and h2 as a real lab's kernel reported them (the `mtu` check's raw data of
    tests/data/checks/rr_reorder.json: Backend.inspect's interfaces, as `linklab status --json`)."""
    doc = json.loads((ROOT / "tests/data/checks/rr_reorder.json").read_text())
    raw = next(c for c in doc["checks"] if c["id"] == "mtu")["raw"]
    return {"lab": "rrreorder", "nodes": {n: {"netns": f"ll-rrreorder-{n}", "present": True, "kind": "host",
                                               "interfaces": ifaces} for n, ifaces in raw.items()}}


def iface(live: dict, node: str, name: str) -> dict:
    return next(i for i in live["nodes"][node]["interfaces"] if i["ifname"] == name)


def test_a_healthy_running_lab_has_no_marks():
    lab = build_lab(ROOT / "topologies/rr_reorder.yaml", [])
    sc = scene(lab, captured_live())
    assert sc.live and sc.problems() == []
    assert 'class="member down"' not in draw(lab, captured_live())


def test_a_member_down_and_an_mtu_mismatch_are_marked():
    lab = build_lab(ROOT / "topologies/rr_reorder.yaml", [])
    live = copy.deepcopy(captured_live())
    iface(live, "h2", "bond0-m1")["bond_member"]["mii"] = "down"
    for name in ("bond0", "bond0-m0", "bond0-m1"):
        iface(live, "h1", name)["mtu"] = 9000
    sc = scene(lab, live)
    assert sc.problems() == ["link bond: MTU h1 9000 ≠ h2 1500", "link bond: h2:bond0 1/2 members up",
                             "link bond: h2:bond0-m1 link down (bond member)"]
    root = parse(draw(lab, live))
    g = root.find(".//s:g[@data-link='bond']", NS)
    assert "mismatch" in g.get("class")
    paths = g.findall("s:path", NS)
    assert [p.get("class") for p in paths] == ["member", "member down"]
    label = texts(g.find("s:g[@class='label']", NS))
    assert label[1] == "MTU h1 9000 ≠ h2 1500" and label[-2:] == ["h2:bond0 1/2 members up",
                                                                  "h2:bond0-m1 link down (bond member)"]


def test_missing_namespace_and_disconnected_controller_are_marked():
    lab = build_lab(ROOT / "topologies/sdn_pair.yaml", [])
    live = {"nodes": {"h1": {"present": False, "netns": "x"},
                      "h2": {"present": True, "interfaces": [{"ifname": "eth1", "state": "DOWN", "mtu": 1500}]},
                      "s1": {"present": True, "interfaces": [{"ifname": "eth1", "state": "UP", "mtu": 1500},
                                                             {"ifname": "eth2", "state": "UP", "mtu": 1500}],
                             "ovs": {"controller": "l2_learning", "controller_connected": False, "flows": 0}}}}
    assert scene(lab, live).problems() == ["node h1: namespace missing", "node s1: controller NOT connected",
                                           "link l2: h2:eth1 down"]


# -- the command and the report ----------------------------------------------------------------------

def test_cli_writes_name_svg_here_and_an_html_page(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["graph", str(ROOT / "topologies/bond2.yaml")]) == 0
    out = tmp_path / "bond2.svg"
    assert str(out) in capsys.readouterr().out
    parse(out.read_text())
    assert main(["graph", str(ROOT / "topologies/bond2.yaml"), "-o", "b.html", "--set", "links[0].mtu=9000"]) == 0
    page = (tmp_path / "b.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and 'class="legend"' in page and "MTU 9000" in page
    parse(page[page.index("<svg xmlns"):page.index("</svg>") + 6])


def test_cli_refuses_bad_input_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    assert main(["graph", str(ROOT / "topologies/bond2.yaml"), "-o", "x.png"]) == 2
    assert main(["graph", "no_such_lab"]) == 2
    err = capsys.readouterr().err
    assert "write a .svg or an .html file" in err and "neither a topology file nor a lab that is up" in err
    assert list(tmp_path.glob("*.svg")) == []


def test_a_report_draws_its_runs_topology(tmp_path):
    from linklab.report.build import build, write
    rep = build([ROOT / "tests/data/runs/e1-quick"], ROOT / "experiments", figures=False)
    paths = write(rep, tmp_path / "r")
    assert "![topology](figures/topology.svg)" in paths["markdown"].read_text()
    root = parse((tmp_path / "r/figures/topology.svg").read_text())
    assert set(boxes(root)) == {"h1", "h2"}
    html = paths["html"].read_text()
    assert '<figure class="topology"' in html and 'data-node="h1"' in html


def test_a_report_prefers_the_manifests_resolved_lab(tmp_path):
    from linklab.results.runs import Run
    from linklab.report.topology import drawing
    run = Run.load(ROOT / "tests/data/runs/e1-quick")
    lab = build_lab(ROOT / "topologies/bond_switch.yaml", [])  # not the topology file it names
    run.manifest["resolved_lab"] = lab.model_dump(mode="json")
    d = drawing(run)
    assert "as resolved when the run began" in d.caption and 'data-node="s1"' in d.svg


@pytest.mark.parametrize("svg,topology", [("graph-bond2.svg", "topologies/bond2.yaml"),
                                          ("graph-e5.svg", "topologies/e5_three_receivers.yaml")])
def test_the_pictures_in_the_docs_are_what_the_command_draws(svg, topology):
    # docs/graph.md shows them: regenerate with `linklab graph TOPOLOGY -o docs/NAME.svg` when this fails.
    assert (ROOT / "docs" / svg).read_text() == draw(build_lab(ROOT / topology, []))


def test_cli_draws_a_running_lab_from_what_status_reads(tmp_path, monkeypatch, capsys):
    # A lab's state record as `linklab up` leaves it, and lab.status() (what `linklab status`
    # calls) answering with a real lab's captured kernel data, one member made to fail.
    from linklab import lab as lab_module
    from linklab import state
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    resolved = build_lab(ROOT / "topologies/rr_reorder.yaml", []).model_dump(mode="json")
    state.save({"lab": "rrreorder", "status": "up", "placement": {"kind": "native"}, "resolved": resolved,
                "topology": {"path": "topologies/rr_reorder.yaml", "sha256": "0" * 64}})
    live = copy.deepcopy(captured_live())
    iface(live, "h1", "bond0-m0")["state"] = "DOWN"
    asked = []
    monkeypatch.setattr(lab_module, "status", lambda name: asked.append(name) or {"state": state.load(name), "live": live})
    assert main(["graph"]) == 0  # the one lab up
    assert asked == ["rrreorder"]
    out = capsys.readouterr().out
    assert f"written to {tmp_path / 'rrreorder.svg'}" in out
    assert "the kernel reports 1 problem (marked in red):\n    link bond: h1:bond0-m0 down" in out
    root = parse((tmp_path / "rrreorder.svg").read_text())
    assert root.get("data-live") == "yes"
    assert [p.get("class") for p in root.iterfind(".//s:path", NS)] == ["member down", "member"]
    assert main(["graph", "rrreorder", "--set", "links[0].mtu=9000"]) == 2  # --set is for files


def test_a_report_falls_back_to_the_topology_file_when_the_resolved_lab_does_not_load():
    from linklab.results.runs import Run
    from linklab.report.topology import drawing
    run = Run.load(ROOT / "tests/data/runs/e1-quick")
    run.manifest["resolved_lab"] = {"name": "bond2", "nodes": "not a list"}
    d = drawing(run)
    assert "from experiments/../topologies/bond2.yaml" in d.caption and 'data-node="h2"' in d.svg
