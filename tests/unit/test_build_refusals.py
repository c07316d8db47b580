"""What the kernel refuses while a lab is built reaches the user as a linklab error naming the
object and the errno's meaning, with the exit code linklab's errors give it (4: the kernel lacks
what it takes; 1: another refusal), never as pyroute2's traceback. Faked: nothing touches the
kernel (the native reproduction is in the commit message)."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from pyroute2.netlink.exceptions import NetlinkError

from linklab.backends.linux import build
from linklab.cli import main
from linklab.errors import EXIT_ENV, EXIT_FAILURE, EnvironmentProblem, LinklabError
from linklab.linux import netlink
from linklab.model import Context, load_topology, resolve

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_module_is_the_machines_lack_named_with_its_errno():
    e = netlink.refusal(NetlinkError(95, "Operation not supported"), "r1: bond lag0 of link lag (802.3ad)")
    assert isinstance(e, EnvironmentProblem) and e.exit_code == EXIT_ENV == 4
    assert str(e) == "r1: bond lag0 of link lag (802.3ad): the kernel refused it: Operation not supported (errno 95, EOPNOTSUPP)"
    assert "lab VM" in e.hint and "linklab doctor" in e.hint


def test_another_refusal_fails_the_operation_and_keeps_what_a_batch_said_of_each_request():
    said = "add veth h1-eth0 (peer r1-eth0 in ll-x-r1): File exists (namespace ll-x-h1)"
    e = netlink.refusal(NetlinkError(17, said), "lab x, building its links (veth_pairs)", hint="see `linklab status`")
    assert type(e) is LinklabError and e.exit_code == EXIT_FAILURE == 1
    assert str(e) == f"lab x, building its links (veth_pairs): the kernel refused it: File exists (errno 17, EEXIST): {said}"
    assert e.hint == "see `linklab status`"
    denied = netlink.refusal(NetlinkError(1), "h1: its routes")
    assert denied.exit_code == EXIT_ENV and "Operation not permitted (errno 1, EPERM)" in str(denied)
    assert "root" in denied.hint


class RefusingIpr:
    def __init__(self, code: int):
        self.code, self.asked = code, []

    def link(self, *args, **kw):
        self.asked.append((args, kw))
        raise NetlinkError(self.code, "Operation not supported")


def test_a_bond_the_kernel_cannot_make_names_its_node_link_and_mode():
    lab = resolve(load_topology(ROOT / "topologies" / "ecmp_bond.yaml"), Context())
    ipr = RefusingIpr(95)
    b = SimpleNamespace(lab=lab, ipr={"r1": ipr, "r2": ipr}, idx=lambda node, ifname: None, own=lambda *a: None)
    with pytest.raises(EnvironmentProblem) as got:
        build.bonds(b)
    bond = next(bd for lk in lab.links for bd in lk.bonds)
    assert ipr.asked[0][1]["kind"] == "bond"  # refused at the bond's creation, the first request
    assert str(got.value).startswith(f"{bond.node}: bond {bond.ifname} of link lag (802.3ad): the kernel refused it: "
                                     "Operation not supported (errno 95, EOPNOTSUPP)")


def test_a_refusal_no_step_names_more_closely_names_the_lab_phase_and_step(monkeypatch):
    lab = resolve(load_topology(ROOT / "topologies" / "ecmp_bond.yaml"), Context())

    def veth_pairs(b):
        raise NetlinkError(17, "add veth r1-eth1 (peer r2-eth1 in ll-ecmp_bond-r2): File exists")
    monkeypatch.setattr(build, "STEPS", {"links": (veth_pairs,)})
    monkeypatch.setattr(build, "wait", lambda fs: None)
    b = SimpleNamespace(lab=lab, kinds={n.name: [] for n in lab.nodes}, _background=[])
    with pytest.raises(LinklabError) as got:
        build.run(b)
    assert got.value.exit_code == EXIT_FAILURE
    assert str(got.value).startswith("lab ecmp_bond, building its links (veth_pairs): the kernel refused it: "
                                     "File exists (errno 17, EEXIST): add veth r1-eth1")


def test_the_cli_says_it_in_one_line_and_a_hint_with_exit_4(monkeypatch, capsys, tmp_path):
    from linklab import lab
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))

    def up(*a, **k):
        with netlink.refused("r1: bond bond0 of link lag (802.3ad)"):
            raise NetlinkError(95, "Operation not supported")
    monkeypatch.setattr(lab, "up", up)
    assert main(["up", str(ROOT / "topologies" / "ecmp_bond.yaml"), "--native"]) == EXIT_ENV
    err = capsys.readouterr().err
    assert err.splitlines()[0] == ("linklab: r1: bond bond0 of link lag (802.3ad): the kernel refused it: "
                                   "Operation not supported (errno 95, EOPNOTSUPP)")
    assert "Traceback" not in err and err.splitlines()[1].startswith("  hint: ")
