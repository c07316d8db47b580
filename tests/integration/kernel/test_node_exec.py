"""Nodes' `exec:` commands on real labs: they run in the node once the lab is up (a namespace
host with this machine's programs, a container with its image's, an Open vSwitch switch against
its own OVS), an address one sets answers a ping and survives `set`, a failing one fails `up`
naming it and `up` again runs only the rest; containerlab's own files with `exec:` (imported)
come up with their commands run. Needs linklab/base (`make images`) for the container node."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from linklab import lab, runner, state
from linklab.backends.base import NodeCommandsFailed
from linklab.backends.linux.names import netns_name
from linklab.interop import clab_import

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests/integration/data"
CLAB = ROOT / "tests/data/interop/clab"
QUIET = dict(say=lambda *_: None)


@pytest.fixture
def labs():
    made: list[str] = []
    yield made
    for name in made:
        if state.load(name):
            lab.down(name, **QUIET)


def _in(name: str, node: str, argv: list[str], check=True):
    st = state.require(name)
    return runner.run(argv, netns=st["netns"][node], check=check, timeout=30)


def _pings(name: str, src: str, dst: str) -> bool:
    res = _in(name, src, ["ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", dst], check=False)
    return res.ok and " 0% packet loss" in res.stdout


def test_commands_run_in_each_kind_of_node_and_a_failing_one_fails_up_naming_it(labs, tmp_path):
    name = "itexec"
    labs.append(name)
    with pytest.raises(NodeCommandsFailed) as e:
        lab.up(DATA / "exec_ovs.yaml", name=name, **QUIET)
    msg = str(e.value)
    # The node, the command (its place in the list), its exit code and what it printed.
    assert msg.startswith("node h1: exec command 2 of 3 exited 2: ip route add 10.99.0.0/16 via 203.0.113.1\n"), msg
    assert "Nexthop has invalid gateway" in msg or "Network is unreachable" in msg, msg
    assert e.value.exit_code == 1 and "linklab up" in e.value.hint
    st = state.require(name)
    assert st["status"] == "building"  # as any failed `up` leaves a lab
    done = st["owned"]["exec"]
    assert done["h1"]["ran"] == [["ip", "addr", "add", "192.0.2.1/24", "dev", "eth1"]] and "failed" in done["h1"]
    for node in ("h2", "c1", "s1"):  # the other nodes ran theirs
        assert len(done[node]["ran"]) == 1 and "failed" not in done[node], done
    assert not Path("/tmp/linklab-exec-h1").exists()  # h1 stopped at its failure
    # Each ran where it belongs: the container's file is in the container, not on this machine;
    # the switch's command reached the switch's own OVS.
    assert _in(name, "c1", ["cat", "/root/linklab-exec-c1"]).stdout.strip() == "inside"
    assert not Path("/root/linklab-exec-c1").exists()
    from linklab.backends.linux import ovsd
    d = ovsd.OvsDirs(ns=netns_name(name, "s1"), lab=name, node="s1")
    assert ovsd.vsctl(d, "get", "bridge", "s1", "other_config:mac-aging-time").stdout.strip() == '"123"'

    # Fixed (here by `set`, as an edited file and `up` would): only h1's failed command and the one
    # after it run; the others' commands, already run, are not run again (they would fail: File exists).
    try:
        rec = lab.set_params(name, [("hosts.h1.exec[1]", "ip route add 10.99.0.0/16 via 192.0.2.254")], **QUIET)
        assert rec["status"] == "up"
        assert rec["owned"]["exec"]["h1"]["ran"] == state.require(name)["resolved"]["nodes"][0]["exec"]
        assert Path("/tmp/linklab-exec-h1").read_text().strip() == "h1"
        assert "10.99.0.0/16 via 192.0.2.254" in _in(name, "h1", ["ip", "route"]).stdout
        # The address h1's exec gave answers, through the switch, at h2's own route.
        assert _pings(name, "h2", "192.0.2.1")
        # A reconcile that touches the interfaces keeps it (only linklab's own addresses are managed),
        # and runs nothing again.
        rec = lab.set_params(name, [("links[*].mtu", 1400)], **QUIET)
        assert "192.0.2.1/24" in _in(name, "h1", ["ip", "-br", "addr", "show", "eth1"]).stdout
        assert _pings(name, "h2", "192.0.2.1")
        # `linklab status` shows them, each marked as run.
        from linklab.status_view import render
        text = render(lab.status(name))
        assert "  h1: 3 of 3 ran, each exit 0" in text and "    + ip addr add 192.0.2.1/24 dev eth1" in text
    finally:
        Path("/tmp/linklab-exec-h1").unlink(missing_ok=True)


def _imported(name: str, tmp_path: Path) -> Path:
    src = CLAB / name
    imp = clab_import.import_clab(src.read_text(), str(src), dest_dir=tmp_path)
    out = tmp_path / (src.name.split(".")[0] + ".yaml")
    out.write_text(imp.yaml_text(str(src)))
    return out


def test_containerlabs_frr01_comes_up_with_its_pcs_addressed_and_routed_by_exec(labs, tmp_path):
    """lab-examples/frr01: three PCs addressed and routed by their exec: commands (the routers'
    FRR runs from a group image: imported as namespace hosts)."""
    name = "itfrr"
    labs.append(name)
    rec = lab.up(_imported("frr01.clab.yml", tmp_path), name=name, **QUIET)
    assert rec["status"] == "up"
    for k, pc in enumerate(("pc1", "pc2", "pc3"), start=1):
        assert len(rec["owned"]["exec"][pc]["ran"]) == 4
        assert f"192.168.1{k}.2/24" in _in(name, pc, ["ip", "-br", "addr", "show", "eth1"]).stdout
        assert f"10.10.10.0/24 via 192.168.1{k}.1 dev eth1" in _in(name, pc, ["ip", "route"]).stdout
    # PC1's exec address answers its router, once the router has an address there (FRR's job).
    _in(name, "router1", ["ip", "addr", "add", "192.168.11.1/24", "dev", "eth3"])
    assert _pings(name, "router1", "192.168.11.2")
    # An added command runs alone (the four before it ran already).
    pc1 = [*(" ".join(c) for c in rec["resolved"]["nodes"][[n["name"] for n in rec["resolved"]["nodes"]].index("pc1")]["exec"]),
           "ip addr add 192.168.11.22/24 dev eth1"]
    rec = lab.set_params(name, [("hosts.pc1.exec", pc1)], **QUIET)
    assert rec["status"] == "up" and len(rec["owned"]["exec"]["pc1"]["ran"]) == 5
    assert _pings(name, "router1", "192.168.11.22")


@pytest.mark.parametrize("source,node,ran", [("24-basic-groups.clab.yaml", "l1", 2), ("stages-race.clab.yml", "l1", 1)])
def test_other_containerlab_files_with_exec_come_up_with_it_run(labs, tmp_path, source, node, ran):
    """The other vendored files whose exec: nodes need no image of their own (group or kind images
    are not imported): their commands (`cat /etc/os-release`, `ip l show dev eth1`) run and pass."""
    name = "itclabx"
    labs.append(name)
    rec = lab.up(_imported(source, tmp_path), name=name, **QUIET)
    assert rec["status"] == "up" and len(rec["owned"]["exec"][node]["ran"]) == ran
    assert os.path.exists(f"/run/netns/{netns_name(name, node)}")
    lab.down(name, **QUIET)
