"""Questions asked of a resolved lab (linklab/model/resolved.py): egress queues, bond members,
addresses. Answered once there instead of by every caller walking links, pairs and bonds."""

import pytest

from linklab.model import Context, load_topology, resolve


def lab_from(tmp_path, text):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return resolve(load_topology(p), Context())


TOPO = """
name: q
hosts: {a: {}, b: {}, c: {}}
switches: {s: {}}
links:
  - endpoints: [a, s]
    bond: {members: 2, mode: balance-rr}
    impair: {from: {a: {rate: 100mbit, loss: 1%}, s: {delay: 2ms}}}
  - {endpoints: [s, b], impair: {rate: 50mbit}}
  - {endpoints: [a, c], ipv6: true}
"""


def test_egress_queues_walk_both_directions_of_every_pair(tmp_path):
    lab = lab_from(tmp_path, TOPO)
    every = list(lab.egress_queues())
    # 2 bond members + 1 + 1 veth pairs, each sending both ways
    assert len(every) == 2 * (2 + 1 + 1)
    a_out = [(e.link.name, e.end.ifname, e.peer.node) for e in lab.egress_queues("a")]
    assert [peer for _, _, peer in a_out] == ["s", "s", "c"]
    lossy = {(e.end.node, e.end.ifname) for e in every if e.queue is not None and e.queue.loss_pct}
    assert lossy == {("a", ifname) for _, ifname, peer in a_out if peer == "s"}
    # The switch's side of the bonded link has the delay, not the loss
    s_back = [e.queue for e in lab.egress_queues("s") if e.peer.node == "a"]
    assert len(s_back) == 2 and all(q.delay_s == pytest.approx(0.002) and not q.loss_pct for q in s_back)


def test_bond_members_by_node_and_by_link(tmp_path):
    lab = lab_from(tmp_path, TOPO)
    bonded = lab.links[0]
    assert lab.bond_members("a") == bonded.bond_members("a") and len(lab.bond_members("a")) == 2
    assert lab.bond_members("b") == [] and lab.links[1].bond_members("s") == []
    assert set(lab.bond_members("a")) == {p.a.ifname for p in bonded.veths}


def test_address_per_family(tmp_path):
    lab = lab_from(tmp_path, TOPO)
    v4 = lab.address("c", 4)
    assert "/" not in v4 and v4.count(".") == 3
    assert ":" in lab.address("c", 6)
    with pytest.raises(LookupError, match="s has no IPv4 address"):
        lab.address("s", 4)
