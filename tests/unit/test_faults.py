"""A fault the kernel refuses mid-window (a bond without an active member asked for one, an
interface deleted by hand) is recorded in the repetition's event log as what was asked and why
it failed, never a bare errno tuple or an IndexError."""

import contextlib
import errno

import pytest
from pyroute2.netlink.exceptions import NetlinkError

from linklab.backends.linux import faults
from linklab.errors import LinklabError
from linklab.model import Context, load_topology, resolve

TOPOLOGY = ("name: f\nhosts: {h1: {}, h2: {}}\n"
            "links: [{name: bond, endpoints: [h1, h2], bond: {members: 2, mode: balance-rr}}]\n")


class FakeIPRoute:
    """The calls faults.py makes, against a namespace holding `names`; a set answers `refuse`."""

    def __init__(self, names, refuse=None):
        self.names, self.refuse = list(names), refuse

    def link_lookup(self, ifname):
        return [self.names.index(ifname) + 1] if ifname in self.names else []

    def link(self, *args, **kw):
        if self.refuse:
            raise NetlinkError(self.refuse, "")


@pytest.fixture
def lab(tmp_path):
    p = tmp_path / "f.yaml"
    p.write_text(TOPOLOGY)
    return resolve(load_topology(p), Context())


def _with(monkeypatch, ipr):
    monkeypatch.setattr(faults.netlink, "iproute", lambda ns: contextlib.nullcontext(ipr))


def test_an_active_member_of_a_bond_without_one_is_refused_with_its_reason(lab, monkeypatch):
    bond = lab.links[0].bonds[0]
    _with(monkeypatch, FakeIPRoute([bond.ifname, *bond.members], refuse=errno.EINVAL))
    with pytest.raises(LinklabError) as e:
        faults.set_active_member(lab, "bond", 1)
    assert str(e.value) == (f"h1/{bond.ifname}: {bond.members[1]} as its active member: the kernel refused it: "
                            "Invalid argument (errno 22, EINVAL)")
    assert "balance-rr" in e.value.hint


def test_a_member_deleted_by_hand_is_named(lab, monkeypatch):
    _with(monkeypatch, FakeIPRoute([]))
    with pytest.raises(LookupError, match=r"h1/\S+: no such interface in the running lab"):
        faults.set_link_state(lab, "bond", False)
    _with(monkeypatch, FakeIPRoute(lab.links[0].bonds[0].members))
    assert faults.set_member_state(lab, "bond", 0, False).endswith(" down")
