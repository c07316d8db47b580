"""Interface counters: delta and spread are pure; read_counters is checked on the host's lo
and on the refusal to open (and so create) a namespace that does not exist."""

import json
import os
from pathlib import Path

import pytest

from linklab.errors import StateError
from linklab.measure.counters import FIELDS, delta, read_counters, spread, spread_row

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"


def captured():
    doc = json.loads((DATA / "counters_llcap_r.json").read_text())
    return doc["before"], doc["after"]


def test_delta_of_captured_window():
    d = delta(*captured())
    assert d["eth0"]["rx_bytes"] == 13016121  # data arriving from the sender
    assert d["eth1"]["tx_bytes"] == 12525089  # forwarded on through the tbf
    assert d["eth0"]["tx_bytes"] == d["eth1"]["rx_bytes"] == 317873  # ACKs coming back
    assert set(d["eth0"]) == set(FIELDS)


def test_spread_of_captured_window():
    s = spread(delta(*captured()))
    assert s["tx"]["eth1"] == pytest.approx(12525089 / (12525089 + 317873))
    assert s["rx"]["eth0"] == pytest.approx(13016121 / (13016121 + 317873))
    assert sum(s["tx"].values()) == pytest.approx(1.0)


def test_spread_all_on_one_member_and_idle_direction():
    d = {
        "eth0": {"tx_bytes": 4000, "rx_bytes": 0, "tx_packets": 4, "rx_packets": 0},
        "eth1": {"tx_bytes": 0, "rx_bytes": 0, "tx_packets": 0, "rx_packets": 0},
        "eth2": {"tx_bytes": 0, "rx_bytes": 0, "tx_packets": 0, "rx_packets": 0},
        "eth3": {"tx_bytes": 0, "rx_bytes": 0, "tx_packets": 0, "rx_packets": 0},
    }
    s = spread(d)
    assert s["tx"] == {"eth0": 1.0, "eth1": 0.0, "eth2": 0.0, "eth3": 0.0}
    assert s["rx"] == dict.fromkeys(d)  # nothing received: no shares, not zeros
    row = spread_row(s, prefix="bond0_")
    assert row["bond0_tx_max_share"] == 1.0 and row["bond0_tx_active"] == 1
    assert row["bond0_rx_max_share"] is None and row["bond0_rx_active"] is None
    assert row["bond0_tx_share_eth2"] == 0.0


def test_spread_even_by_packets():
    d = {n: {"tx_packets": 25, "rx_packets": 10, "tx_bytes": 0, "rx_bytes": 0} for n in ("a", "b", "c", "d")}
    s = spread(d, unit="packets")
    assert s["tx"] == dict.fromkeys("abcd", 0.25)
    assert spread_row(s)["member_tx_active"] == 4
    with pytest.raises(ValueError):
        spread(d, unit="bits")


def test_delta_refuses_counters_going_backwards():
    before, after = captured()
    with pytest.raises(ValueError, match="backwards"):
        delta(after, before)
    with pytest.raises(ValueError, match="missing"):
        delta({}, after)


def test_read_counters_host_loopback():
    c = read_counters(None, ["lo"])
    assert set(c["lo"]) == set(FIELDS) and all(isinstance(v, int) for v in c["lo"].values())
    with pytest.raises(StateError, match="no interface"):
        read_counters(None, ["lo", "linklab-no-such-if0"])


def test_read_counters_never_creates_a_namespace():
    # pyroute2 0.9.7 would create it by default (flags=O_CREAT).
    name = "linklab-unit-no-such-netns"
    with pytest.raises(StateError, match="does not exist"):
        read_counters(name, ["eth0"])
    assert not os.path.exists(f"/var/run/netns/{name}")
