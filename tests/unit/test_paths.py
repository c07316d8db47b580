"""The round trip a topology asks for between two nodes (linklab/model/paths.py)."""

from pathlib import Path

import pytest

from linklab.model import Context, load_topology, resolve
from linklab.model.paths import PING_FRAME_BYTES, asked_rtt_s

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def lab_from(tmp_path, text, ctx=Context()):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return resolve(load_topology(p), ctx)


def test_e5_receivers_ask_their_published_round_trips():
    # A: 125 us + 15 us jitter each way; C: 14 ms + 100 us each way. The sender's bond (1 Gbit/s
    # members, scaled 0.1) and the switch add a ping's sending time at each shaped hop.
    lab = resolve(load_topology(TOPOLOGIES / "e5_three_receivers.yaml"), Context(auto_scale=0.1))
    a, c = asked_rtt_s(lab, "snd", "rxa"), asked_rtt_s(lab, "snd", "rxc")
    send = PING_FRAME_BYTES * 8
    assert a == pytest.approx(2 * 140e-6 + 2 * send / 1e8 + 2 * send / 1e9, rel=1e-6)
    assert c == pytest.approx(2 * 14.1e-3 + 2 * send / 1e8 + 2 * send / 2.2e8, rel=1e-6)
    assert asked_rtt_s(lab, "rxa", "snd") == pytest.approx(a)


def test_each_direction_and_hop_counts_and_the_slowest_member_is_taken(tmp_path):
    lab = lab_from(tmp_path, """
name: p
hosts: {a: {}, b: {}, c: {}}
switches: {s: {}}
links:
  - endpoints: [a, s]
    bond: {members: 2, mode: balance-rr,
           member: [{impair: {from: {a: {delay: 1ms}}}}, {impair: {from: {a: {delay: 3ms}}}}]}
  - {endpoints: [s, b], impair: {from: {s: {delay: 2ms}, b: {delay: 5ms}}}}
  - {endpoints: [a, c]}
""")
    # a->s slowest member 3 ms, s->a 0 (the switch side of the bond has no delay asked);
    # s->b 2 ms, b->s 5 ms.
    assert asked_rtt_s(lab, "a", "b") == pytest.approx(0.010, rel=1e-6)
    assert asked_rtt_s(lab, "a", "c") == 0.0
    assert asked_rtt_s(lab, "c", "c") == 0.0


def test_unjoined_nodes_have_no_path(tmp_path):
    lab = lab_from(tmp_path, "name: q\nhosts: {a: {}, b: {}, c: {}, d: {}}\n"
                             "links: [{endpoints: [a, b]}, {endpoints: [c, d]}]\n")
    assert asked_rtt_s(lab, "a", "d") is None
