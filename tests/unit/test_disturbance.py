"""Disturbance flags: a saturated core or unasked queue drops mark the row, with evidence."""

from pathlib import Path

from linklab.measure import disturbance as d

DATA = Path(__file__).resolve().parents[1] / "data" / "tools"


def test_core_saturated_names_the_core():
    f = d.flags({"cpu0_busy_pct": 91.2, "cpu1_busy_pct": 40.0, "cpu_all_busy_pct": 65.6})
    assert f["flags"] == "core_saturated" and "cpu0 91% busy" in f["flag_evidence"]


def test_quiet_row_has_no_flags():
    assert d.flags({"cpu0_busy_pct": 50.0, "cpu1_busy_pct": 84.9}, {}) == {"flags": "", "flag_evidence": ""}


def test_drops_where_loss_was_asked_do_not_count():
    drops = {"h1/eth1 netem 10:": 12, "s1/eth2 bfifo 10:": 3}
    f = d.flags({}, drops, lossy_ifaces={"h1/eth1"})
    assert f["flags"] == "queue_dropped" and "s1/eth2 bfifo 10:: 3" in f["flag_evidence"] and "h1" not in f["flag_evidence"]


def test_drops_delta_handles_rebuilt_qdisc():
    before = {"a": {"dropped": 5}, "b": {"dropped": 9}}
    after = {"a": {"dropped": 7}, "b": {"dropped": 2}, "c": {"dropped": 0}}
    assert d.drops_delta(before, after) == {"a": 2, "b": 2}
