"""Timeline events: what an experiment may write, and how an impairment changes mid-window
(in place when the queue's structure stays, rebuilt when it does not)."""

import pytest
from pydantic import ValidationError

from linklab.linux import tc
from linklab.model.resolved import Qdisc
from linklab.sweep.experiment import Event


@pytest.mark.parametrize("text,kind", [
    ("links[bond].bond.member[0].state=down", "member_state"),
    ("links[ bond ].bond.member[1].state = up", "member_state"),
    ("links[0].bond.active=1", "active_member"),
    ("links[wan].impair.delay=50ms", "impair"),
    ("links[bond].bond.member[1].impair.loss=1%", "impair"),
    ("links[wan].impair.from.h1.rate=10mbit", "impair"),
])
def test_event_kinds(text, kind):
    assert Event(at=1, set=text).kind == kind


def test_impair_event_is_an_override_parsed_like_linklab_set():
    assert Event(at=2, set="links[wan].impair.from.h1.delay=5ms").override() == ("links[wan].impair.from.h1.delay", "5ms")
    assert Event(at=2, set="links[0].bond.member[1].impair.loss=0.5").override() == ("links[0].bond.member[1].impair.loss", 0.5)


@pytest.mark.parametrize("text", ["links[x].mtu=9000", "links[x].bond.member[0].state=sideways", "bond_mode=802.3ad",
                                  "links[x].bond.active=one"])
def test_unknown_events_list_the_valid_ones(text):
    with pytest.raises(ValidationError) as e:
        Event(at=1, set=text)
    assert ("valid: links[<link>].bond.member[<k>].state=down|up; links[<link>].state=down|up; "
            "links[<link>].bond.active=<k>") in str(e.value)


def test_delay_change_under_htb_is_changed_in_place():
    old = Qdisc(shaper="htb", rate_bps=1e8, delay_s=0.005, order_rate_bps=1e8)
    new = Qdisc(shaper="htb", rate_bps=1e8, delay_s=0.050, order_rate_bps=1e8)
    cmds = tc.change_plan(old, new, 1500, "m0")
    # htb's root has no change operation: only its class (the rate) and the netem leaf change
    assert [c[:3] for c in cmds] == [["tc", "class", "change"], ["tc", "qdisc", "change"]]
    assert cmds[1][cmds[1].index("delay") + 1] == "50000us" and cmds == [[*c[:2], "change", *c[3:]] for c in tc.plan(new, 1500, "m0")[1:]]


def test_rate_change_under_netem_is_in_place_but_adding_netem_to_a_fifo_rebuilds():
    a, b = Qdisc(shaper="netem", rate_bps=1e8), Qdisc(shaper="netem", rate_bps=5e7)
    assert tc.change_plan(a, b, 1500, "e")[0][:4] == ["tc", "qdisc", "change", "dev"]
    fifo = Qdisc(shaper="htb", rate_bps=1e8, queue_bytes=125000)
    lossy = Qdisc(shaper="htb", rate_bps=1e8, queue_bytes=125000, loss_pct=1.0)
    assert tc.change_plan(fifo, lossy, 1500, "e") is None  # bfifo leaf -> netem leaf: a new structure
    assert tc.change_plan(None, a, 1500, "e") is None
