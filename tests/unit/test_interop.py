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
from linklab.interop.common import controller_ports, switch_ifname
from linklab.interop.shell import loss_matrix
from linklab.model import Context, load_topology, resolve
from linklab.model import frr as frr_config
from linklab.model.resolved import Qdisc

ROOT = Path(__file__).resolve().parents[2]
ALL_TOPOLOGIES = sorted((ROOT / "topologies").glob("*.yaml")) + sorted((ROOT / "tests/golden/topologies/good").glob("*.yaml"))


# Open vSwitch ones included: both exporters map them, and routed ones (routers, their routes,
# FRR). Ones with background services are refused (below).
ROUTED = [p for p in ALL_TOPOLOGIES if "routers:" in p.read_text()]
SERVICES = [p for p in ALL_TOPOLOGIES if "background: true" in p.read_text()]
TOPOLOGIES = [p for p in ALL_TOPOLOGIES if p not in SERVICES]
VM = Context(auto_scale=0.1, auto_scale_reason="software-emulated VM (TCG)")
CAMPUS = ROOT / "tests/data/interop/campus.clab.yml"
CLAB = ROOT / "tests/data/interop/clab"  # containerlab's own files (BSD-3: CLAB/LICENSE)


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
    fast = mininet_export.mininet_tcintf(Qdisc(shaper="netem", rate_bps=10e9, delay_s=1e-3), "link x", notes, 1500)
    assert fast == {"delay": "1000us"} and "left unshaped" in notes[0]
    notes.clear()
    slow = mininet_export.mininet_tcintf(Qdisc(shaper="netem", rate_bps=1e8, jitter_s=1e-4), "link y", notes, 1500)
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
        switch_ifname("averylongname", "eth1")


def _e3_lab(port_mtu=None, mtu=1500):
    """E3's lab at one of its points (how experiments/e3_sdn_mtu.yaml's sweep sets mtu and port_mtu)."""
    from linklab.interop.common import resolved_lab
    overrides = [("links[*].mtu", mtu)] + ([("switches.s1.port_mtu", port_mtu)] if port_mtu else [])
    return resolved_lab(ROOT / "topologies/sdn_pair.yaml", overrides, scale=0.1)


def test_mininet_script_builds_ovs_with_its_controller_and_port_mtus():
    lab = _e3_lab(port_mtu=1500, mtu=2000)
    table = mininet_export.lab_table(lab)
    assert table["switches"]["s1"] == {"ovs": {"protocols": "OpenFlow13", "failMode": "secure",
                                               "datapath": "kernel", "dpid": "%016x" % lab.dpid("s1")}}
    (plan,) = table["ovs"]
    flat = [" ".join(argv) for argv in plan["vsctl"]]
    # The ports the hosts' MTU exceeds stay at 1500, as in linklab (the E3 mismatch case).
    assert "set interface s1-eth1 mtu_request=1500 -- set interface s1-eth2 mtu_request=1500" in flat
    assert {(n, i): m for n, i, m in table["mtu"]} == {("h1", "eth1"): 2000, ("h2", "eth1"): 2000}
    assert flat[-1] == (
        "set-controller s1 tcp:127.0.0.1:6653 -- set controller s1 connection_mode=out-of-band max_backoff=1000")
    ctl = plan["controller"]
    assert ctl["app"] == "l2_learning" and ctl["argv"][-3:] == ["--ofp-tcp-listen-port", "6653", "l2_learning.py"]
    assert 'LINKLAB_SWITCH={"ports":[1,2],"groups":[]}' in ctl["env"]
    text = mininet_export.export(lab, "topologies/sdn_pair.yaml", osken_manager="/opt/venv/bin/osken-manager")
    ast.parse(text)
    apps = _script_globals(text, "CONTROLLER_APPS")
    assert apps["l2_learning.py"] == (ROOT / "controllers/l2_learning.py").read_text()
    assert "_common.py" in apps and _script_globals(text, "OSKEN_MANAGER") == "/opt/venv/bin/osken-manager"


def _script_globals(text: str, name: str):
    """A literal assigned at the top of an exported script."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and node.targets[0].id == name:
            return ast.literal_eval(node.value)
    raise KeyError(name)


def test_ovs_bonds_and_controller_ports_in_both_exports():
    lab = _lab(ROOT / "tests/golden/topologies/good/ovs_bonds.yaml")
    (s1, s2) = mininet_export.lab_table(lab)["ovs"]
    bonds = [argv for argv in s1["vsctl"] if "add-bond" in argv]
    assert [argv[argv.index("add-bond") + 1:argv.index("add-bond") + 5] for argv in bonds] == [
        ["s1", "lag0", "s1-eth1", "s1-eth2"], ["s1", "lag1", "s1-eth3", "s1-eth4"]]
    # The members leave the bridge (OVSSwitch added them as ports) before the bond takes them.
    assert s1["vsctl"].index(bonds[0]) - 1 == next(i for i, a in enumerate(s1["vsctl"]) if "del-port" in a)
    assert s1["controller"] is None and s2["controller"]["port"] == lab.node("s2").controller_port
    before, after = clab_export.ovs_commands(lab)
    assert before[0].startswith("ovs-vsctl --may-exist add-br s1 -- set bridge s1 protocols=OpenFlow13")
    assert any("controllers/lacp.py &" in line for line in before)
    assert any("add-bond s1 lag0 s1-eth1 s1-eth2" in line for line in after)


def test_two_controllers_in_one_namespace_get_their_own_ports(tmp_path):
    p = tmp_path / "two.yaml"
    p.write_text("name: two\nhosts: {h1: {}, h2: {}}\n"
                 "switches: {s1: {kind: ovs, controller: hub}, s2: {kind: ovs, controller: hub}}\n"
                 "links: [{endpoints: [h1, s1]}, {endpoints: [s1, s2]}, {endpoints: [s2, h2]}]\n")
    assert controller_ports(_lab(p)) == {"s1": 6653, "s2": 6654}


def _runtime_functions(*names: str) -> dict:
    """Functions of the Mininet runtime (pasted into exported scripts, never imported: it imports
    Mininet at its top), compiled on their own with what they use."""
    tree = ast.parse(mininet_export.RUNTIME.read_text())
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names
            or isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "BATCHES" for t in n.targets)]
    scope: dict = {"shlex": shlex, "json": json}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "mininet_runtime", "exec"), scope)
    return scope


def test_a_nodes_commands_run_in_order_batched_and_stop_at_the_first_failure(tmp_path):
    """The line the exported script sends a node's shell: consecutive ip / tc commands through
    one `-batch -` process, consecutive ovs-vsctl commands as one transaction, others as they are;
    run here in a real shell against stand-ins that log what they were given (and fail on `bad`)."""
    import subprocess
    shell_line = _runtime_functions("shell_line")["shell_line"]
    log = tmp_path / "log"
    for tool in ("ip", "tc", "ovs-vsctl", "sysctl"):
        stub = tmp_path / tool
        stub.write_text(f"#!/bin/sh\necho \"{tool} $*\" >> {log}\n"
                        "if [ \"$1\" = -batch ]; then while read -r l; do echo \"  $l\" >> " + str(log) + "; "
                        "case \"$l\" in *bad*) exit 1;; esac; done; fi\n"
                        "case \"$*\" in *bad*) exit 1;; esac\n")
        stub.chmod(0o755)
    argvs = [["ip", "link", "add", "bond0", "type", "bond"], ["ip", "link", "set", "dev", "m0", "master", "bond0"],
             ["ovs-vsctl", "set", "bridge", "s1", "fail_mode=secure"], ["ovs-vsctl", "set-controller", "s1", "tcp:x"],
             ["ip", "-6", "addr", "add", "fd00::1/64", "dev", "bond0"], ["ip", "link", "set", "dev", "bond0", "up"],
             ["tc", "qdisc", "add", "dev", "m0", "root", "handle", "1:", "htb"], ["tc", "class", "add", "dev", "m0"],
             ["sysctl", "-q", "-w", "net.ipv4.tcp_rmem=4096 13107 838860"], ["ip", "addr", "add", "10.0.0.1/24", "dev", "x"]]

    def run(argvs):
        log.write_text("")
        line = shell_line(argvs)
        res = subprocess.run(["sh", "-c", "( set -e; " + line + " )"], env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
                             capture_output=True, text=True, timeout=30)
        return line, res.returncode, log.read_text().splitlines()

    line, rc, got = run(argvs)
    assert rc == 0 and got == [
        "ip -batch -", "  link add bond0 type bond", "  link set dev m0 master bond0",
        "ovs-vsctl set bridge s1 fail_mode=secure -- set-controller s1 tcp:x",
        "ip -6 addr add fd00::1/64 dev bond0",  # an option before the command: on its own
        "ip link set dev bond0 up",  # a batch of one is the command itself
        "tc -batch -", "  qdisc add dev m0 root handle 1: htb", "  class add dev m0",
        "sysctl -q -w net.ipv4.tcp_rmem=4096 13107 838860",  # blanks kept in one word
        "ip addr add 10.0.0.1/24 dev x"], (line, got)
    assert line.count("ip -batch -") == 1 and line.count("ovs-vsctl") == 1
    # A failure inside a batch stops the batch and everything after it, with a failing status.
    failing = [*argvs[:1], ["ip", "link", "set", "dev", "bad", "up"], ["ip", "link", "del", "never"], *argvs[2:]]
    _, rc, got = run(failing)
    assert rc != 0 and got == ["ip -batch -", "  link add bond0 type bond", "  link set dev bad up"], got
    # A word with a blank never goes into a batch file (its lines are split at blanks).
    line, rc, got = run([["ip", "link", "set", "dev", "a", "alias", "x y"], ["ip", "link", "set", "dev", "a", "up"]])
    assert "-batch" not in line and rc == 0 and got == ["ip link set dev a alias x y", "ip link set dev a up"], got


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.stem)
def test_mininet_script_is_python_and_matches_golden(path):
    text = mininet_export.export(_lab(path), str(path.relative_to(ROOT)))
    ast.parse(text)
    head = text[:text.index(mininet_export.APPS_MARK)]  # the apps are controllers/ (checked above)
    _golden(head, ROOT / "tests/golden/interop" / f"{path.stem}.mininet.py")


def test_routed_labs_are_in_the_golden_exports():
    assert {p.stem for p in ROUTED} >= {"routed_chain", "ecmp2", "ospf3", "dumbbell", "ecmp_bond"}
    assert set(ROUTED) <= set(TOPOLOGIES)


def test_mininet_script_carries_routers_forwarding_and_every_nodes_routes_ecmp_as_multipath():
    lab = _lab(ROOT / "topologies/ecmp2.yaml")
    table = mininet_export.lab_table(lab)
    assert set(table["routers"]) == {"r1", "r2"} and set(table["hosts"]) == {"h1", "h2"}
    # Forwarding is the router class's (as Mininet's LinuxRouter); the hash policy is a sysctl beside it.
    assert table["routers"]["r1"]["sysctls"] == {"net.ipv4.fib_multipath_hash_policy": "1",
                                                 "net.ipv6.fib_multipath_hash_policy": "1"}
    assert table["routes"]["r1"] == [
        ["ip", "route", "replace", "10.77.3.0/24", "nexthop", "via", "10.77.1.2", "dev", "eth2",
         "nexthop", "via", "10.77.2.2", "dev", "eth3"],
        ["ip", "-6", "route", "replace", "fd00:77:0:3::/64", "nexthop", "via", "fd00:77:0:1::2", "dev", "eth2",
         "nexthop", "via", "fd00:77:0:2::2", "dev", "eth3"]]
    assert table["routes"]["h1"][0] == ["ip", "route", "replace", "0.0.0.0/0", "via", "10.77.0.2", "dev", "eth1"]
    assert not table["frr"]
    # The checks ping host to host across the routers, naming both equal-cost paths.
    assert [(c["from"], c["to"], c["mtu"], c["via"]) for c in table["checks"]] == [
        ("h1", "h2", 1500, "h1-r1+path0+r2-h2 or h1-r1+path1+r2-h2"),
        ("h2", "h1", 1500, "r2-h2+path0+h1-r1 or r2-h2+path1+h1-r1")]
    text = mininet_export.export(lab, "ecmp2.yaml")
    assert "class LinklabRouter(LinklabHost):" in text and "net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1" in text


def test_a_routed_chains_checks_ping_at_the_smallest_mtu_on_the_way():
    table = mininet_export.lab_table(_lab(ROOT / "topologies/routed_chain.yaml"))
    assert [(c["from"], c["to_addr"], c["mtu"], c["size"], c["via"]) for c in table["checks"]] == [
        ("h1", "10.77.2.2", 1400, 1372, "h1-r1+core+r2-h2"), ("h2", "10.77.0.1", 1400, 1372, "r2-h2+core+h1-r1")]


def test_written_routes_win_in_both_exports():
    """A route written by hand replaces the computed one to the same prefix, in the script and in the file."""
    t = load_topology(ROOT / "topologies/routed_chain.yaml",
                      [("hosts.h1.routes", [{"to": "10.77.2.0/24", "via": "r1"}]),
                       ("routers.r1.routes", [{"to": "h2", "via": "r2"}])])
    lab = resolve(t, VM)
    routes = mininet_export.lab_table(lab)["routes"]
    assert ["ip", "route", "replace", "10.77.2.0/24", "via", "10.77.0.2", "dev", "eth1"] in routes["h1"]
    assert ["ip", "route", "replace", "10.77.2.2/32", "via", "10.77.1.2", "dev", "eth2"] in routes["r1"]
    r1 = clab_export.topology_dict(lab)["topology"]["nodes"]["r1"]["exec"]
    assert "ip route replace 10.77.2.2/32 via 10.77.1.2 dev eth2" in r1
    # forwarding before the routes, the routes after the addresses their gateways are on
    assert _position(r1, "addr", "10.77.1.1/24") < _position(r1, "net.ipv4.ip_forward=1") \
        < _position(r1, "route", "10.77.2.2/32")


def test_containerlab_routers_are_linux_nodes_forwarding_by_exec():
    lab = _lab(ROOT / "topologies/ecmp2.yaml")
    nodes = clab_export.topology_dict(lab)["topology"]["nodes"]
    r1 = nodes["r1"]
    assert r1["kind"] == "linux" and "image" not in r1  # the linux kind's image, as every node's
    assert "net.ipv4.ip_forward" not in r1["sysctls"]
    for line in ("sysctl -w net.ipv4.ip_forward=1", "sysctl -w net.ipv6.conf.all.forwarding=1",
                 "sysctl -w net.ipv4.fib_multipath_hash_policy=1",
                 "ip route replace 10.77.3.0/24 nexthop via 10.77.1.2 dev eth2 nexthop via 10.77.2.2 dev eth3"):
        assert line in r1["exec"], r1["exec"]
    assert "ip route replace 0.0.0.0/0 via 10.77.0.2 dev eth1" in nodes["h1"]["exec"]
    assert not any("forward" in c for c in nodes["h1"]["exec"])
    assert clab_export.side_files(lab) == {}


def test_ospf_routers_run_frr_in_both_exports():
    lab = _lab(ROOT / "topologies/ospf3.yaml")
    table = mininet_export.lab_table(lab)
    assert set(table["frr"]) == {"r1", "r2", "r3"}
    assert table["frr"]["r1"] == frr_config.generated(lab, lab.node("r1"))
    assert "routes" in table and "r1" not in table["routes"]  # a router's routes are OSPF's; hosts' static
    assert table["frr_subnets"] == frr_config.subnets(lab) and len(table["frr_subnets"]) == 12
    # The checks follow what OSPF converges to: r1 reaches h3 through r2 (r1r3 costs 5).
    assert ("h1", "h3", "h1-r1+r1r2+r2r3+h3-r3") in [(c["from"], c["to"], c["via"]) for c in table["checks"]]
    files = clab_export.side_files(lab)
    assert files["ospf3-frr/r2/frr.conf"] == frr_config.generated(lab, lab.node("r2"))
    assert "ospfd=yes" in files["ospf3-frr/r2/daemons"] and "ospf6d=yes" in files["ospf3-frr/r2/daemons"]
    r2 = clab_export.topology_dict(lab)["topology"]["nodes"]["r2"]
    assert r2["image"] == clab_export.FRR_IMAGE
    assert r2["binds"] == ["ospf3-frr/r2/daemons:/etc/frr/daemons", "ospf3-frr/r2/frr.conf:/etc/frr/frr.conf"]
    assert not any(c.startswith("ip route") for c in r2["exec"])


def test_containerlab_export_of_an_ospf_lab_writes_the_frr_files_beside_it_or_refuses_stdout(tmp_path):
    res = _linklab("export", "--to", "containerlab", "topologies/ospf3.yaml")
    assert res.returncode == 2 and res.stdout == "" and "cannot go to stdout" in res.stderr, res.stderr
    res = _linklab("export", "--to", "containerlab", "topologies/ospf3.yaml", "-o", str(tmp_path / "o.clab.yml"))
    assert res.returncode == 0, res.stderr
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "o.clab.yml", *(f"ospf3-frr/r{k}/{f}" for k in (1, 2, 3) for f in ("daemons", "frr.conf"))]


def test_the_scripts_convergence_wait_reads_ip_json_routes():
    prefixes = _runtime_functions("json_lists", "route_prefixes")["route_prefixes"]
    text = ('[{"dst":"default","gateway":"10.0.0.1"},{"dst":"10.77.0.0/24","dev":"eth1"}]\n'
            '[{"dst":"fd00:77::/64","dev":"eth1"}]\n')
    assert prefixes(text) == {"default", "10.77.0.0/24", "fd00:77::/64"}
    assert prefixes("[]\n[]\n") == set()


def test_the_scripts_lacp_wait_reads_ip_json_links_captured_in_the_lab_vm():
    """802.3ad bonds in the lab VM (`ip -j -d link show dev bond0` and `... master bond0`): both
    ends bonded, settled; and a bond whose far end is two plain veths (no partner: one member in
    its own aggregator, the other BACKUP). The exported script waits for the first, names the second."""
    f = _runtime_functions("json_lists", "lacp_unready")
    lacp = ROOT / "tests/data/interop/lacp"

    def read(name):
        return f["json_lists"]((lacp / f"{name}-bond.json").read_text() + (lacp / f"{name}-members.json").read_text())

    assert f["lacp_unready"](*read("aggregated"), 2) is None
    assert f["lacp_unready"](*read("aggregated"), 3) == "partner d6:32:0d:0d:22:6f, 2/3 members distributing, aggregators 1"
    assert f["lacp_unready"](*read("no-partner"), 2) == "partner 00:00:00:00:00:00, 1/2 members distributing, aggregators 1,2"
    bond, members = read("aggregated")
    assert f["lacp_unready"](bond, members[:1], 2) == "partner d6:32:0d:0d:22:6f, 1/2 members distributing, aggregators 1"


@pytest.mark.parametrize("path", SERVICES, ids=lambda p: p.stem)
def test_exports_refuse_a_lab_with_background_services_naming_them(path):
    """Neither tool waits for a service to be ready or owns it: both exporters refuse (exit 2),
    naming each service NODE/NAME, rather than run it as a command that never ends."""
    lab = _lab(path)
    for export in (lambda: mininet_export.export(lab, "t.yaml"), lambda: clab_export.export(lab, "t.yaml")):
        with pytest.raises(UsageError) as err:
            export()
        assert err.value.exit_code == 2
        assert "has background services (h1/web, h1/idle, h2/sleep, h2/probe)" in str(err.value)


# ---- containerlab export ------------------------------------------------------------------

NAME_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9-._]*$")        # clab.schema.json: name
NODE_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9-._|]*$")       # topology.nodes patternProperties
ENDPOINT_RE = re.compile(r"^\S+:\S+$")                        # link-config-short endpoints


def _clab_validator():
    """containerlab's own JSON schema (vendored with its licence), its patterns read by the
    `regex` module: they are Go/ECMA patterns (\\p{N}\\p{L}: Unicode classes), which Python's re
    cannot compile. Everything else is jsonschema's Draft 7, as the schema declares."""
    import jsonschema
    import regex

    def pattern(validator, patrn, instance, schema):
        if validator.is_type(instance, "string") and not regex.search(patrn, instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    spec = json.loads((CLAB / "clab.schema.json").read_text())
    base = jsonschema.validators.validator_for(spec)
    assert base is jsonschema.Draft7Validator
    return jsonschema.validators.extend(base, {"pattern": pattern})(spec)


CLAB_SCHEMA = _clab_validator()


def test_the_schema_check_reads_containerlabs_unicode_patterns():
    from jsonschema.exceptions import best_match

    def node(**spec):
        return {"name": "x", "topology": {"nodes": {"a": {"kind": "linux", **spec}}}}

    # A zone (%eth0, %ＥＴＨ０: \\p{L}\\p{N}) is valid, punctuation is not: the pattern ran as written.
    for ok in (node(**{"mgmt-ipv4": "192.0.2.1"}), node(**{"mgmt-ipv4": "192.0.2.1%eth0"}),
               node(**{"mgmt-ipv4": "192.0.2.1%\uff25\uff34\uff28\uff10"})):
        CLAB_SCHEMA.validate(ok)
    for bad, why in ((node(**{"mgmt-ipv4": "192.0.2.1%eth0!"}), "does not match"),
                     ({**node(), "topology": {**node()["topology"], "links": []}}, "should be non-empty|too short"),
                     (node(kind="nosuch"), "is not one of")):
        err = best_match(CLAB_SCHEMA.iter_errors(bad))
        assert err is not None and re.search(why, err.message), (bad, err and err.message)


def _check_clab(doc: dict) -> None:
    """containerlab's schema, and what it leaves to containerlab's code (endpoints name nodes
    of the topology, each interface once, names Linux accepts)."""
    CLAB_SCHEMA.validate(doc)
    topo = doc["topology"]
    for name, node in topo["nodes"].items():
        assert NODE_RE.match(name) and node["kind"] in ("linux", "ovs-bridge")
        assert all(isinstance(c, str) and shlex.split(c) for c in node.get("exec", []))
    seen = set()
    for link in topo.get("links", []):
        assert set(link) <= {"endpoints", "mtu", "ipv4", "ipv6", "vars"}
        eps = link["endpoints"]
        assert len(eps) == 2 and len(set(eps)) == 2 and all(ENDPOINT_RE.match(e) for e in eps)
        for e in eps:
            node, _, ifname = e.partition(":")
            assert node in topo["nodes"] and len(ifname) <= 15 and e not in seen
            seen.add(e)
        assert isinstance(link["mtu"], int) and 1 <= link["mtu"] <= 65535


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
    # its exec: commands too, run after `up` as containerlab runs them after deploy
    assert t["hosts"]["client_1"]["exec"] == ["ip link add bond0 type bond mode 802.3ad"]
    listed = "\n".join(imp.not_imported)
    for expected in ("node spine1 (kind nokia_srlinux", "links[3]", "top-level `mgmt`", "topology.kinds"):
        assert expected in listed, listed
    assert "exec" not in listed.replace("kinds, exec and binds were resolved", ""), listed
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


# ---- containerlab's own files (tests/data/interop/clab, BSD-3) ---------------------------------

def _import(name: str, text: str | None = None):
    path = CLAB / name
    return clab_import.import_clab(text if text is not None else path.read_text(), str(path))


def _validated(imp, tmp_path):
    p = tmp_path / "imported.yaml"
    p.write_text(imp.yaml_text("x"))
    return resolve(load_topology(p), VM)


REAL_IMPORTS = ["24-basic-groups.clab.yaml", "03-linux-nodes-to-bridge-and-host.clab.yml",
                "01-linux-single-node.clab.yml", "frr01.clab.yml"]


@pytest.mark.parametrize("name", REAL_IMPORTS)
def test_real_containerlab_files_import_and_export_again_validly(name, tmp_path):
    lab = _validated(_import(name), tmp_path)
    _check_clab(clab_export.topology_dict(lab))  # no `links: []` when no link was left (the schema's minItems)
    table = mininet_export.lab_table(lab)  # raises if a derived name is over 15 characters
    assert all(len(v[side][1]) <= 15 for v in table["veths"] for side in ("a", "b"))


def test_kinds_resolve_through_groups_and_defaults_as_containerlab_does():
    imp = _import("24-basic-groups.clab.yaml")
    # l1, l2: their own group's kind; l3: no group of its own, the defaults' group g3's.
    assert set(imp.topology["hosts"]) == {"l1", "l2", "l3"}
    assert not any("kind unset" in x for x in imp.not_imported)
    assert clab_import.resolve_kind({}, {"defaults": {"kind": "bridge"}}) == "bridge"
    assert clab_import.resolve_kind({"group": "g"}, {"groups": {"g": {}}, "defaults": {"kind": "linux"}}) == "linux"
    frr = _import("frr01.clab.yml")
    assert set(frr.topology["hosts"]) == {"router1", "router2", "router3", "pc1", "pc2", "pc3"}
    assert len(frr.topology["links"]) == 6


def test_imported_names_keep_every_exporters_derived_names_valid(tmp_path):
    imp = _import("03-linux-nodes-to-bridge-and-host.clab.yml")
    sw = imp.renamed["br-01-03-clab"]
    assert len(sw) <= clab_import.SWITCH_NAME_MAX and sw in imp.topology["switches"]
    # Its ports' containerlab names (l1-eth1) would make `br_01_03-l1-eth1`: linklab names them.
    assert any("br-01-03-clab:l1-eth1" in x and "at most 15" in x for x in imp.not_imported)
    lab = _validated(imp, tmp_path)
    ports = [v[side][1] for v in mininet_export.lab_table(lab)["veths"] for side in "ab" if v[side][0] == sw]
    assert ports == [f"{sw}-eth1", f"{sw}-eth2"] and all(len(p) <= 15 for p in ports)


def _run_import(path: Path):
    return _linklab("import", "containerlab", str(path))


def test_a_failed_import_still_lists_what_was_dropped_and_locates_the_error_in_the_source():
    res = _run_import(CLAB / "br01.clab.yml")
    assert res.returncode == 2 and res.stdout == ""
    for kind_dropped in ("node srl1 (kind nokia_srlinux", "node srl3 (kind nokia_srlinux", "links[2] srl3:e1-1"):
        assert kind_dropped in res.stderr, res.stderr
    # The source's own line: `  nodes:` of br01.clab.yml.
    line = (CLAB / "br01.clab.yml").read_text().splitlines().index("  nodes:") + 1
    assert line == 9 and "br01.clab.yml, as a linklab topology" in res.stderr
    assert f"topology.nodes (line {line}): a lab needs at least one host" in res.stderr, res.stderr
    res = _run_import(CLAB / "02-srl02.clab.yml")
    assert res.returncode == 2 and "node srl2 (kind nokia_srlinux" in res.stderr


def test_link_errors_name_the_sources_link_index_and_line(tmp_path):
    text = (CLAB / "frr01.clab.yml").read_text()
    # frr01, with a router of another kind wired first (dropped: every later index shifts by one in
    # the import) and an MTU linklab refuses on its last link.
    text = text.replace("  nodes:\n", "  nodes:\n    srl:\n      kind: nokia_srlinux\n", 1)
    text = text.replace("  links:\n", '  links:\n    - endpoints: ["srl:e1-1", "router1:eth9"]\n', 1)
    text = text.replace('["PC3:eth1", "router3:eth3"]', '["PC3:eth1", "router3:eth3"]\n      mtu: 20')
    imp = _import("frr01.clab.yml", text)
    src = tmp_path / "frr01-edited.clab.yml"
    src.write_text(text)
    res = _run_import(src)
    assert res.returncode == 2, res.stderr
    line = next(i for i, x in enumerate(text.splitlines(), 1) if '"PC3:eth1"' in x)
    assert f"links[6] (mtu) (line {line}):" in res.stderr, res.stderr
    assert "links[5]" not in res.stderr.split("as a linklab topology")[1]
    assert imp.source_map.links == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("name,line", [("30-bridge-reconcile.clab.yml", 19), ("29-apply.clab.yml", 14)])
def test_go_templates_are_named_as_such_with_the_file(name, line):
    with pytest.raises(UsageError, match=rf"{re.escape(str(CLAB / name))}: a Go template .* on line {line}"):
        _import(name)


def test_a_yaml_error_names_the_file_and_its_line():
    with pytest.raises(UsageError, match=r"f.clab.yml, line 2: not YAML"):
        clab_import.import_clab("name: x\ntopology: {nodes: ]}\n", "f.clab.yml")


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


# ---- every containerlab file of the kinds linklab maps (tests/data/interop/clab, BSD-3) --------

MAPPED_KINDS = {"linux", "bridge", "host", "ovs-bridge"}  # host: containerlab's own namespace, listed as not imported
# Files of those kinds that are not a topology to import, each refused as containerlab itself would.
REFUSED = {
    "30-bridge-reconcile.clab.yml": "a Go template (`{{ if .remap }}`): containerlab renders it before reading it",
    "topo6.yml": "containerlab's test of a bad file (core/config_test.go): an interface used twice, a link "
                 "with both ends on one node; containerlab refuses it too",
}


def _mapped_files() -> list[Path]:
    out = []
    for p in sorted(CLAB.glob("*.y*ml")):
        text = p.read_text()
        if clab_import.TEMPLATE.search(text):
            kinds = set(re.findall(r"kind: *(\S+)", text))  # a template is YAML only once rendered
        else:
            topo = yaml.safe_load(text)["topology"]
            kinds = {clab_import.resolve_kind(spec or {}, topo) for spec in (topo.get("nodes") or {}).values()}
        if kinds <= MAPPED_KINDS:
            out.append(p)
    return out


MAPPED_FILES = _mapped_files()


def _node_exec(path: Path) -> dict[str, list[str]]:
    topo = yaml.safe_load(path.read_text())["topology"]
    return {name: cmds for name, spec in (topo.get("nodes") or {}).items()
            if (cmds := clab_import.merged(spec or {}, topo, clab_import.resolve_kind(spec or {}, topo), "exec"))}


def test_the_vendored_files_are_every_one_of_the_mapped_kinds():
    # containerlab at 39ff2b7 (tests/data/interop/clab/README.md): 28 topology files of these kinds
    # in its tests and examples, one a Go template; 10 give nodes exec: commands (on the node, its
    # group, kind or defaults; two more run commands at `stages:`, which linklab lists as not imported).
    assert len(MAPPED_FILES) == 28
    with_exec = [p.name for p in MAPPED_FILES if not clab_import.TEMPLATE.search(p.read_text()) and _node_exec(p)]
    assert len(with_exec) == 10, with_exec
    assert {p.name for p in MAPPED_FILES} >= set(REFUSED)


@pytest.mark.parametrize("path", MAPPED_FILES, ids=lambda p: p.name)
def test_every_containerlab_file_of_the_mapped_kinds_imports_and_exports_again_validly(path, tmp_path):
    text = path.read_text()
    if clab_import.TEMPLATE.search(text):
        with pytest.raises(UsageError, match="a Go template"):
            clab_import.import_clab(text, str(path))
        return
    if path.name in REFUSED:
        res = _run_import(path)
        assert res.returncode == 2 and "as a linklab topology" in res.stderr, res.stderr
        return
    imp = clab_import.import_clab(text, str(path), dest_dir=tmp_path)
    saved = tmp_path / "imported.yaml"
    saved.write_text(imp.yaml_text(str(path)))
    lab = resolve(load_topology(saved), VM)
    doc = clab_export.topology_dict(lab)
    _check_clab(doc)
    mininet_export.lab_table(lab)  # every derived name valid
    # Every exec: command of a linux node is imported, in containerlab's merged order, and exported
    # again after linklab's own configuration.
    topo = yaml.safe_load(text)["topology"]
    for name, spec in (topo.get("nodes") or {}).items():
        kind = clab_import.resolve_kind(spec or {}, topo)
        want = clab_import.merged(spec or {}, topo, kind, "exec")
        new = imp.renamed.get(name, name)
        if kind == "linux":
            assert lab.node(new).exec == [shlex.split(c) for c in want]
            exported = [shlex.split(c) for c in doc["topology"]["nodes"][new].get("exec", [])]
            assert exported[len(exported) - len(want):] == lab.node(new).exec
        elif want and kind in ("bridge", "ovs-bridge"):
            assert any(f"node {name}: exec" in x and "runs none" in x for x in imp.not_imported), imp.not_imported


def test_exec_merges_defaults_kind_group_and_node_as_containerlab_does():
    topo = {"defaults": {"exec": ["a", "b"], "group": "g"}, "kinds": {"linux": {"exec": ["k"]}},
            "groups": {"g": {"exec": ["g1", "a"]}}}
    assert clab_import.merged({"exec": ["n", "b"]}, topo, "linux", "exec") == ["a", "b", "k", "g1", "n"]
    groups = _import("24-basic-groups.clab.yaml")  # exec given by group g1 only
    assert groups.topology["hosts"]["l1"]["exec"] == ["echo this_is_an_exec_test", "cat /etc/os-release"]
    assert "exec" not in groups.topology["hosts"]["l2"]


def test_relative_binds_resolve_from_the_source_and_are_written_for_where_the_import_is_saved(tmp_path):
    src = CLAB / "01-linux-nodes.clab.yml"  # binds: 01-test.txt:/01-test.txt, 01-test.json:/test.json
    want = [f"{CLAB}/01-test.txt:/01-test.txt", f"{CLAB}/01-test.json:/test.json"]
    on_stdout = clab_import.import_clab(src.read_text(), str(src))
    assert on_stdout.topology["hosts"]["l1"]["binds"] == want  # where it is saved is not known: absolute
    beside = clab_import.import_clab(src.read_text(), str(src), dest_dir=CLAB)
    assert beside.topology["hosts"]["l1"]["binds"] == ["01-test.txt:/01-test.txt", "01-test.json:/test.json"]
    res = _linklab("import", "containerlab", str(src), "-o", str(tmp_path / "sub" / "lab.yaml"))
    assert res.returncode == 0, res.stderr
    saved = yaml.safe_load((tmp_path / "sub" / "lab.yaml").read_text())
    assert all(not b.startswith("/") for b in saved["hosts"]["l1"]["binds"])  # relative to tmp/sub
    assert load_topology(tmp_path / "sub" / "lab.yaml").hosts["l1"].binds == want
    magic = "name: m\ntopology:\n  nodes:\n    a: {kind: linux, image: x, binds: ['__clabNodeDir__/cfg:/cfg', 'b:/b']}\n"
    imp = clab_import.import_clab(magic, str(tmp_path / "m.clab.yml"))
    assert imp.topology["hosts"]["a"]["binds"] == [f"{tmp_path}/b:/b"]
    assert "node a: bind __clabNodeDir__/cfg:/cfg (containerlab's own lab directory: linklab has none)" in imp.not_imported


def test_an_ovs_switchs_exec_goes_to_the_docker_hosts_commands_after_deploy():
    # containerlab runs no exec: on an ovs-bridge node: the header lists it with the after-deploy commands.
    lab = resolve(load_topology(ROOT / "topologies/sdn_pair.yaml",
                                [("switches.s1.exec", ["ovs-ofctl -O OpenFlow13 dump-flows s1"])]), VM)
    before, after = clab_export.ovs_commands(lab)
    assert after[-1] == "ovs-ofctl -O OpenFlow13 dump-flows s1" and not any("dump-flows" in b for b in before)
    doc = yaml.safe_load(clab_export.export(lab, "sdn_pair.yaml"))
    assert doc["topology"]["nodes"]["s1"] == {"kind": "ovs-bridge"}
    assert "#   ovs-ofctl -O OpenFlow13 dump-flows s1" in clab_export.export(lab, "sdn_pair.yaml")


# ---- routed labs through containerlab and back ---------------------------------------------------

def _routes(lab) -> dict[str, list[tuple]]:
    return {n.name: [(r.to, [(h.via, h.dev, h.node) for h in r.nexthops]) for r in n.routes] for n in lab.nodes}


@pytest.mark.parametrize("name", ["routed_chain", "ecmp2", "dumbbell"])
def test_a_routed_lab_exported_to_containerlab_imports_back_with_its_routers_and_routes(name, tmp_path):
    """Export, then import: the nodes that forward are routers again, every node has the same
    routes (each gateway, interface and neighbour; ECMP's multipath too), the same addresses."""
    lab = _lab(ROOT / f"topologies/{name}.yaml")
    imp = clab_import.import_clab(clab_export.export(lab, f"{name}.yaml"), f"{name}.clab.yml")
    back = _validated(imp, tmp_path)
    assert {n.name for n in back.nodes if n.kind == "router"} == {n.name for n in lab.nodes if n.kind == "router"}
    assert _routes(back) == _routes(lab)
    assert [[(e.node, e.ifname, e.ipv4, e.ipv6) for e in x.ends] for x in back.links] == \
        [[(e.node, e.ifname, e.ipv4, e.ipv6) for e in x.ends] for x in lab.links]
    router = "ra" if name == "dumbbell" else "r1"
    added = {"net.ipv6.conf.all.accept_dad", "net.ipv6.conf.default.accept_dad"}  # the exporter's, on every node
    assert {k: v for k, v in back.node(router).sysctls.items() if k not in added} == \
        lab.node(router).sysctls  # forwarding, and ecmp2's hash policy
    assert imp.topology["routing"]["protocol"] == "none" and imp.mapped[0].startswith("routers ")
    for n in back.nodes:  # what was read as addresses, forwarding and routes is no command any more
        assert not any(c[:2] in (["ip", "route"], ["ip", "addr"], ["sysctl", "-w"]) for c in n.exec), n.exec


def test_import_reads_forwarding_and_routes_only_where_a_node_forwards(tmp_path):
    text = """name: r
topology:
  nodes:
    a: {kind: linux, exec: ["ip addr add 10.0.1.1/24 dev eth1", "ip route add default via 10.0.1.2"]}
    gw: {kind: linux, sysctls: {net.ipv4.ip_forward: 1}, exec: ["ip addr add 10.0.1.2/24 dev eth1",
         "ip addr add 10.0.2.1/24 dev eth2", "ip route add 10.9.0.0/16 via 10.0.2.99 metric 5"]}
    b: {kind: linux, exec: ["ip addr add 10.0.2.2/24 dev eth1", "ip route replace 10.0.1.0/24 via 10.0.2.1 dev eth1"]}
  links:
    - endpoints: ["a:eth1", "gw:eth1"]
    - endpoints: ["gw:eth2", "b:eth1"]
"""
    imp = clab_import.import_clab(text, "r.clab.yml")
    t = imp.topology
    assert list(t) == ["name", "description", "hosts", "routers", "routing", "links"]
    assert t["routers"] == {"gw": {"exec": ["ip route add 10.9.0.0/16 via 10.0.2.99 metric 5"]}}  # metric: kept
    assert t["hosts"]["a"] == {"routes": [{"to": "0.0.0.0/0", "via": "gw"}]}
    assert t["hosts"]["b"] == {"routes": [{"to": "10.0.1.0/24", "via": "gw"}]}
    assert t["links"][0]["addresses"] == {"a": {"ipv4": "10.0.1.1/24"}, "gw": {"ipv4": "10.0.1.2/24"}}
    assert t["links"][0]["ipv6"] is False
    lab = _validated(imp, tmp_path)
    assert [(r.to, r.nexthops[0].via) for r in lab.node("a").routes] == [("0.0.0.0/0", "10.0.1.2")]
    # No node forwards: nothing is read, every command stays as it was (frr01's PCs: their routers are FRR images).
    frr = _import("frr01.clab.yml")
    assert "routers" not in frr.topology and not frr.mapped
    assert frr.topology["hosts"]["pc1"]["exec"][2] == "ip route add 192.168.0.0/16 via 192.168.11.1 dev eth1"
