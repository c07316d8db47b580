"""Interop generators: Mininet scripts, containerlab topologies (export and import), the cli's pure parts."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
from pathlib import Path

import pytest
import yaml

from linklab.errors import UsageError
from linklab.interop import clab_export, clab_import, mininet_export
from linklab.interop.shell import loss_matrix
from linklab.model import Context, load_topology, resolve
from linklab.model.resolved import Qdisc

ROOT = Path(__file__).resolve().parents[2]
ALL_TOPOLOGIES = sorted((ROOT / "topologies").glob("*.yaml")) + sorted((ROOT / "tests/golden/topologies/good").glob("*.yaml"))


def _has_ovs(path: Path) -> bool:
    from linklab.interop.common import ovs_switches, resolved_lab
    return bool(ovs_switches(resolved_lab(path)))


# Open vSwitch topologies are refused by both exporters (test_ovs_switches_are_refused_with_a_reason).
TOPOLOGIES = [p for p in ALL_TOPOLOGIES if not _has_ovs(p)]
VM = Context(auto_scale=0.1, auto_scale_reason="software-emulated VM (TCG)")
CAMPUS = ROOT / "tests/data/interop/campus.clab.yml"


def _lab(path: Path):
    return resolve(load_topology(path), VM)


# ---- Mininet ------------------------------------------------------------------------------

def test_tcintf_gets_only_what_it_builds_as_linklab_does():
    assert mininet_export.faithful_tcintf(Qdisc(delay_s=0.002, loss_pct=0.5, limit=500)) == {
        "delay": "2000us", "loss": 0.5, "max_queue_size": 500}
    # netem's own rate, tbf, in-order jitter, reorder: TCIntf would build something else.
    assert mininet_export.faithful_tcintf(Qdisc(shaper="netem", rate_bps=1e8)) is None
    assert mininet_export.faithful_tcintf(Qdisc(shaper="tbf", rate_bps=1e8)) is None
    assert mininet_export.faithful_tcintf(Qdisc(jitter_s=1e-4, order_rate_bps=3e10)) is None
    assert mininet_export.faithful_tcintf(Qdisc(delay_s=0.001, reorder_pct=5)) is None
    assert mininet_export.faithful_tcintf(None) is None


def test_mininet_shaping_says_what_differs():
    notes: list[str] = []
    fast = mininet_export.mininet_tcintf(Qdisc(shaper="netem", rate_bps=10e9, delay_s=1e-3), "link x", notes)
    assert fast == {"delay": "1000us"} and "left unshaped" in notes[0]
    notes.clear()
    slow = mininet_export.mininet_tcintf(Qdisc(shaper="netem", rate_bps=1e8, jitter_s=1e-4), "link y", notes)
    assert slow == {"bw": 100.0, "delay": "0us", "jitter": "100us"}
    assert any("htb" in n for n in notes) and any("reorders" in n for n in notes)


def test_mininet_script_maps_bonds_mtu_and_addresses_of_the_resolved_lab():
    lab = _lab(ROOT / "tests/golden/topologies/good/impairments.yaml")
    table = mininet_export.lab_table(lab)
    bond = lab.links[0]
    # One Mininet link per bond member, each with linklab's own qdiscs for what TCIntf cannot build.
    assert [v["a"][1] for v in table["veths"] if v["link"] == bond.name] == bond.bonds[0].members
    assert {(q["node"], q["ifname"]) for q in table["qdiscs"]} >= {(m, "bond0-m0") for m in ("a", "b")}
    mtus = {(n, i): m for n, i, m in table["mtu"]}
    assert mtus[("a", "bond0")] == 9000 and mtus[("a", "wan0")] == 1000
    assert {a["ipv4"] for a in table["addresses"]} == {e.ipv4 for link in lab.links for e in link.ends}
    assert table["hosts"]["b"]["sysctls"] == {"net.ipv4.tcp_reordering": "127"}


def test_switch_ports_get_lab_wide_names_containing_the_switch():
    table = mininet_export.lab_table(_lab(ROOT / "topologies/e5_three_receivers.yaml"))
    sw_ports = [v["a"][1] for v in table["veths"] if v["a"][0] == "sw"] + \
               [v["b"][1] for v in table["veths"] if v["b"][0] == "sw"]
    assert sw_ports and all(p.startswith("sw-") for p in sw_ports)
    lag = next(b for b in table["bonds"] if b["switch"])
    assert lag["ifname"] == "sw-lag0" and lag["create_args"][:2] == ["mode", "balance-xor"]
    with pytest.raises(UsageError, match="longer than 15"):
        mininet_export.switch_ifname("averylongname", "eth1")


def test_ovs_switches_are_refused_with_a_reason(tmp_path):
    p = tmp_path / "ovs.yaml"
    p.write_text("name: o\nhosts: {h1: {}, h2: {}}\nswitches: {s1: {kind: ovs}}\n"
                 "links: [{endpoints: [h1, s1]}, {endpoints: [h2, s1]}]\n")
    for exporter in (lambda lab: mininet_export.export(lab, "x"), lambda lab: clab_export.export(lab, "x")):
        with pytest.raises(UsageError, match="Open vSwitch"):
            exporter(_lab(p))


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.stem)
def test_mininet_script_is_python_and_matches_golden(path):
    text = mininet_export.export(_lab(path), str(path.relative_to(ROOT)))
    ast.parse(text)
    head = text[:text.index(mininet_export.RUNTIME.read_text())]
    _golden(head, ROOT / "tests/golden/interop" / f"{path.stem}.mininet.py")


# ---- containerlab export ------------------------------------------------------------------

NAME_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9-._]*$")        # clab.schema.json: name
NODE_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9-._|]*$")       # topology.nodes patternProperties
ENDPOINT_RE = re.compile(r"^\S+:\S+$")                        # link-config-short endpoints


def _check_clab(doc: dict) -> None:
    """What containerlab's schema requires of what we emit (the real schema is checked too
    when LINKLAB_CLAB_SCHEMA names a copy of schemas/clab.schema.json)."""
    assert set(doc) <= {"name", "prefix", "mgmt", "topology", "settings", "debug"}
    assert {"name", "topology"} <= set(doc) and NAME_RE.match(doc["name"])
    topo = doc["topology"]
    assert set(topo) <= {"nodes", "links", "kinds", "defaults", "groups"}
    for name, node in topo["nodes"].items():
        assert NODE_RE.match(name) and node["kind"] == "linux"
        assert all(isinstance(c, str) and shlex.split(c) for c in node.get("exec", []))
        assert all(isinstance(v, (str, int, float)) for v in node.get("sysctls", {}).values())
    seen = set()
    for link in topo["links"]:
        assert set(link) <= {"endpoints", "mtu", "ipv4", "ipv6", "vars"}
        eps = link["endpoints"]
        assert len(eps) == 2 and len(set(eps)) == 2 and all(ENDPOINT_RE.match(e) for e in eps)
        for e in eps:
            node, _, ifname = e.partition(":")
            assert node in topo["nodes"] and len(ifname) <= 15 and e not in seen
            seen.add(e)
        assert isinstance(link["mtu"], int) and 1 <= link["mtu"] <= 65535
    schema = os.environ.get("LINKLAB_CLAB_SCHEMA")
    if schema:
        import jsonschema
        spec = json.loads(Path(schema).read_text())
        # Not jsonschema.validate(): that first checks the schema itself, and containerlab's uses
        # \\p{L} (Go/ECMA regex) in a pattern of `ports`, which Python's re cannot compile.
        jsonschema.validators.validator_for(spec)(spec).validate(doc)


def _position(cmds: list[str], *words: str) -> int:
    return next(i for i, c in enumerate(cmds) if all(w in shlex.split(c) for w in words))


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.stem)
def test_containerlab_export_is_valid_ordered_and_matches_golden(path):
    lab = _lab(path)
    text = clab_export.export(lab, str(path.relative_to(ROOT)))
    doc = yaml.safe_load(text)
    _check_clab(doc)
    nodes = doc["topology"]["nodes"]
    for link in lab.links:
        assert sum(1 for x in doc["topology"]["links"] if x["mtu"] == link.mtu) >= len(link.veths)
        for b in link.bonds:
            cmds = nodes[b.node]["exec"]
            made = _position(cmds, "add", b.ifname, "bond")
            for m in b.members:  # members down before enslaving, after the bond exists
                down, master = _position(cmds, m, "down"), _position(cmds, m, "master", b.ifname)
                assert made < down < master
            mtu = _position(cmds, "dev", b.ifname, "mtu", str(link.mtu))
            assert mtu > max(_position(cmds, m, "master") for m in b.members)
        for e in link.ends:
            if e.ipv4:
                assert _position(nodes[e.node]["exec"], "addr", e.ipv4, e.ifname) >= 0
    _golden(text, ROOT / "tests/golden/interop" / f"{path.stem}.clab.yml")


# ---- containerlab import ------------------------------------------------------------------

def test_import_maps_nodes_links_mtu_and_lists_the_rest():
    imp = clab_import.import_clab(CAMPUS.read_text(), str(CAMPUS))
    t = imp.topology
    assert t["name"] == "campus_lab" and set(t["hosts"]) == {"client_1", "server"}
    assert t["switches"] == {"br_core": {"kind": "bridge"}}
    assert t["hosts"]["server"]["sysctls"] == {"net.ipv4.tcp_congestion_control": "bbr"}
    assert [link["endpoints"] for link in t["links"]] == [
        ["client_1:eth1", "br_core:eth1"], ["server:eth1", "br_core:eth2"], ["client_1:eth2", "server:eth2"]]
    assert [link["mtu"] for link in t["links"]] == [9000, 9000, clab_import.CLAB_DEFAULT_MTU]
    assert t["links"][2]["addresses"] == {"client_1": {"ipv4": "192.0.2.1/30"}, "server": {"ipv4": "192.0.2.2/30"}}
    listed = "\n".join(imp.not_imported)
    for expected in ("node spine1 (kind nokia_srlinux", "node client-1: exec (1 commands)", "links[3]",
                     "top-level `mgmt`", "topology.kinds"):
        assert expected in listed, listed
    assert imp.renamed == {"client-1": "client_1", "br-core": "br_core", "campus-lab": "campus_lab"}
    assert "# Not imported:" in imp.yaml_text("x")


def test_import_then_export_keeps_nodes_links_and_mtu(tmp_path):
    imp = clab_import.import_clab(CAMPUS.read_text(), str(CAMPUS))
    p = tmp_path / "campus.yaml"
    p.write_text(imp.yaml_text(str(CAMPUS)))
    doc = clab_export.topology_dict(resolve(load_topology(p), VM))
    _check_clab(doc)
    assert set(doc["topology"]["nodes"]) == {"client_1", "server", "br_core"}
    back = {(tuple(x["endpoints"]), x["mtu"]) for x in doc["topology"]["links"]}
    assert back == {(tuple(x["endpoints"]), x["mtu"]) for x in imp.topology["links"]}


def test_import_refuses_what_is_not_a_containerlab_topology():
    with pytest.raises(UsageError, match="no `topology:`"):
        clab_import.import_clab("name: x\n", "f.yml")


# ---- the cli's pure parts -----------------------------------------------------------------

def test_loss_matrix_marks_each_direction():
    text = loss_matrix(["h1", "h2", "h3"], {("h1", "h2"): False, ("h1", "h3"): True, ("h2", "h1"): False,
                                            ("h2", "h3"): False, ("h3", "h1"): True, ("h3", "h2"): False})
    rows = [line.split() for line in text.splitlines()]
    assert rows[0] == ["loss", "%", "h1", "h2", "h3"]
    assert rows[1] == ["h1", "-", "0", "100"] and rows[3] == ["h3", "100", "0", "-"]


UPDATE = os.environ.get("LINKLAB_UPDATE_GOLDEN") == "1"


def _golden(actual: str, path: Path) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
    assert path.exists(), f"no golden file {path}; create it with LINKLAB_UPDATE_GOLDEN=1"
    assert actual == path.read_text(), f"output differs from {path}"


class _FakeNodes:
    """Stands in for NodeExec: records commands; h2 cannot reach h1."""

    def __init__(self):
        self.streamed: list[tuple[str, list[str]]] = []

    def capture(self, node, command, timeout=60):
        return (1, "100% packet loss") if (node, command[-1]) == ("h2", "10.77.0.1") else (0, "0% packet loss")

    def stream(self, node, command):
        self.streamed.append((node, command))
        return 0


def _shell(tmp_path, monkeypatch):
    import io
    from linklab import state
    from linklab.interop.shell import LabShell
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    state.save({"lab": "bond2", "resolved": _lab(ROOT / "topologies/bond2.yaml").model_dump(mode="json")})
    out, fake = io.StringIO(), _FakeNodes()
    return LabShell("bond2", executor=fake, stdout=out), out, fake


def test_cli_pingall_reports_who_reached_whom(tmp_path, monkeypatch):
    shell, out, _ = _shell(tmp_path, monkeypatch)
    shell.onecmd("pingall")
    text = out.getvalue()
    assert "h1 -> h2" in text and "h2 -> X" in text and "*** Results: 50% dropped (1/2 received)" in text
    assert [line.split() for line in text.splitlines()[-2:]] == [["h1", "-", "0"], ["h2", "100", "-"]]


def test_cli_runs_node_commands_and_refuses_unknown_ones(tmp_path, monkeypatch):
    shell, out, fake = _shell(tmp_path, monkeypatch)
    shell.onecmd("h1 ip -br addr")
    shell.onecmd("ping h1 h2 2")
    assert fake.streamed == [("h1", ["ip", "-br", "addr"]), ("h1", ["ping", "-n", "-c", "2", "10.77.0.2"])]
    with pytest.raises(UsageError, match="unknown command 'h3'"):
        shell.onecmd("h3 ip addr")
    with pytest.raises(UsageError, match="unknown node 'h9'"):
        shell.onecmd("ping h1 h9")
    assert shell.onecmd("exit") is True
    assert sorted(shell.completenames("h")) == ["h1", "h2", "help"]


def _linklab(*args, cwd=ROOT):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "linklab", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_import_command_prints_a_topology_and_lists_the_rest_on_stderr(tmp_path):
    res = _linklab("import", "containerlab", str(CAMPUS), "-o", str(tmp_path / "campus.yaml"))
    assert res.returncode == 0, res.stderr
    assert "not imported: node spine1 (kind nokia_srlinux" in res.stderr
    assert yaml.safe_load((tmp_path / "campus.yaml").read_text())["name"] == "campus_lab"
    bad = tmp_path / "bad.clab.yml"
    bad.write_text("name: x\ntopology: {nodes: {a: {kind: linux}}, links: [{endpoints: ['a:eth1', 'a:eth1']}]}\n")
    res = _linklab("import", "containerlab", str(bad))
    assert res.returncode == 2 and res.stdout == "", (res.returncode, res.stdout)


def test_export_command_needs_no_lab_and_refuses_bad_input(tmp_path):
    res = _linklab("export", "--to", "mininet", "topologies/bond2.yaml", "--scale", "0.1")
    assert res.returncode == 0 and res.stdout.startswith("#!/usr/bin/python3") and "100000000bit" in res.stdout
    res = _linklab("export", "--to", "containerlab", "topologies/nosuch.yaml")
    assert res.returncode == 2


def test_container_nodes_round_trip_through_containerlab():
    """Export: a container node is kind linux with its own image (and cmd, env, binds); import: a
    linux node with an image of its own becomes a container node, one taking the kinds' default
    image stays a host."""
    from linklab.model import Context, load_topology, resolve
    lab = resolve(load_topology(ROOT / "tests/golden/topologies/good/container_options.yaml"), Context())
    nodes = clab_export.topology_dict(lab)["topology"]["nodes"]
    assert nodes["r1"]["kind"] == "linux" and nodes["r1"]["image"] == "registry.example:5000/frr:9.1"
    assert nodes["r1"]["cmd"] == "/usr/lib/frr/docker-start" and nodes["r1"]["binds"][1] == "/srv/shared:/shared:ro"
    assert nodes["r2"]["cmd"] == "sleep infinity" and "image" not in nodes["h1"]
    text = yaml.safe_dump({"name": "rt", "topology": {"kinds": {"linux": {"image": "alpine"}}, "nodes": nodes,
                                                       "links": [{"endpoints": ["r1:eth1", "h1:eth1"]}]}})
    hosts = clab_import.import_clab(text, "rt.clab.yml").topology["hosts"]
    assert hosts["r1"]["kind"] == "container" and hosts["r1"]["image"] == "registry.example:5000/frr:9.1"
    assert hosts["r1"]["env"] == {"DAEMONS": "zebra ospfd", "DEBUG": "true", "WORKERS": "4"}
    assert hosts["r2"]["cmd"] == "sleep infinity" and "kind" not in hosts["h1"]
