"""`linklab up`'s optional packages (linklab/provision.py): what a lab needs, installed as root in a
checkout by its group's command, else exit 4 naming that command; nothing run when all is here."""

from pathlib import Path

import pytest

from linklab import provision
from linklab.errors import EXIT_ENV, EnvironmentProblem
from linklab.model import Context, load_topology, resolve

ROOT = Path(__file__).resolve().parents[2]


def lab_of(name):
    return resolve(load_topology(ROOT / "topologies" / name), Context())


def none_found(prog):
    return False


def all_found(prog):
    return True


def test_what_each_lab_needs():
    assert provision.needs(lab_of("bond2.yaml")) == {}
    assert provision.needs(lab_of("sdn_pair.yaml")) == {"ovs": "Open vSwitch switch s1"}
    assert list(provision.needs(lab_of("containers.yaml"))) == ["containers"]


def test_nothing_is_run_when_the_programs_are_here():
    ran = []
    assert provision.ensure(lab_of("sdn_pair.yaml"), found=all_found, root=True, checkout=ROOT,
                            in_lab_vm=False, run=lambda *a, **k: ran.append(a)) == []
    assert ran == []


def test_as_root_in_a_checkout_the_group_is_installed_with_a_line_saying_so():
    ran, said = [], []
    got = provision.ensure(lab_of("sdn_pair.yaml"), say=said.append, found=none_found, root=True, checkout=ROOT,
                           in_lab_vm=False, run=lambda argv, **k: ran.append(argv))
    assert got == ["ovs"]
    assert ran == [["bash", str(ROOT / "scripts/setup.sh"), "--with", "ovs"]]
    assert said == [f"linklab: lab sdn_pair needs openvswitch-switch for its Open vSwitch switch s1, and it is not "
                    f"installed: installing it ({ROOT}/scripts/setup.sh --with ovs)"]


@pytest.mark.parametrize("root, checkout, in_vm, hint", [
    (False, ROOT, False, f"install it: sudo {ROOT}/scripts/setup.sh --with ovs"),
    (True, None, False, "install it: apt-get install openvswitch-switch"),
    (True, ROOT, True, f"on the host: {ROOT}/scripts/setup.sh --with ovs"),
])
def test_otherwise_exit_4_naming_the_command_and_nothing_run(root, checkout, in_vm, hint):
    ran = []
    with pytest.raises(EnvironmentProblem) as e:
        provision.ensure(lab_of("sdn_pair.yaml"), found=none_found, root=root, checkout=checkout, in_lab_vm=in_vm,
                         run=lambda *a, **k: ran.append(a))
    assert e.value.exit_code == EXIT_ENV == 4 and ran == []
    assert "needs openvswitch-switch for its Open vSwitch switch s1" in e.value.render() and hint in e.value.render()
