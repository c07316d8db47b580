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


CHAIN = """
name: chain
hosts: {h1: {}, h2: {}}
switches: {s1: {kind: bridge}, s2: {kind: bridge}}
links:
  - {name: a, endpoints: [h1, s1], impair: {rate: 1gbit}}
  - {name: b, endpoints: [s1, s2], impair: {rate: RATE_B}}
  - {name: c, endpoints: [s2, h2], impair: {rate: 1gbit}}
"""


def test_ports_after_an_equal_rate_bottleneck_are_beyond_it(tmp_path):
    # Same rate all the way: the first port (h1's) bounds the flow; both switch ports that carry
    # it towards h2 can never need a queue on a real network. The way back is a different path.
    from linklab.model.paths import beyond_bottleneck
    lab = lab_from(tmp_path, CHAIN.replace("RATE_B", "1gbit"), Context(auto_scale=0.1))
    assert beyond_bottleneck(lab, "h1", "h2") == {"s1/eth2": "h1/eth1", "s2/eth2": "h1/eth1"}
    assert beyond_bottleneck(lab, "h2", "h1") == {"s2/eth1": "h2/eth1", "s1/eth1": "h2/eth1"}


def test_a_slower_hop_is_the_bottleneck_and_a_faster_one_before_it_bounds_nothing(tmp_path):
    from linklab.model.paths import beyond_bottleneck
    lab = lab_from(tmp_path, CHAIN.replace("RATE_B", "100mbit"), Context(auto_scale=1.0))
    # s1's port to s2 (100 Mbit/s) is a real bottleneck behind h1's 1 Gbit/s port: a queue there
    # is the link's doing. The last port is beyond it (1 Gbit/s after 100 Mbit/s).
    assert beyond_bottleneck(lab, "h1", "h2") == {"s2/eth2": "s1/eth2"}


def test_hashing_onto_one_bond_member_is_never_counted_as_the_emulators(tmp_path):
    from linklab.model.paths import beyond_bottleneck
    lab = lab_from(tmp_path, """
name: lag
hosts: {h1: {}, h2: {}}
switches: {s1: {kind: bridge}}
links:
  - {name: up, endpoints: [h1, s1], bond: {members: 2, mode: 802.3ad}, impair: {rate: 1gbit}}
  - {name: down, endpoints: [s1, h2], bond: {members: 2, mode: 802.3ad}, impair: {rate: 1gbit}}
  - {name: single, endpoints: [h1, h2], impair: {rate: 1gbit}}
""", Context(auto_scale=1.0))
    # Two members carry 2 Gbit/s together into s1; one member out of s1 may get every flow.
    assert beyond_bottleneck(lab, "h1", "h2") == {}
    assert beyond_bottleneck(lab, "h1", "h1") == {}


def test_unshaped_ports_bound_nothing(tmp_path):
    # An unshaped port passes whatever comes (veth speed): the shaped port after it is a real
    # bottleneck; the unshaped port after a shaped one is beyond it.
    from linklab.model.paths import beyond_bottleneck
    lab = lab_from(tmp_path, CHAIN.replace("{name: a, endpoints: [h1, s1], impair: {rate: 1gbit}}",
                                           "{name: a, endpoints: [h1, s1]}")
                   .replace("{name: c, endpoints: [s2, h2], impair: {rate: 1gbit}}", "{name: c, endpoints: [s2, h2]}")
                   .replace("RATE_B", "100mbit"), Context(auto_scale=1.0))
    assert beyond_bottleneck(lab, "h1", "h2") == {"s2/eth2": "s1/eth2"}


# --- what TCP could deliver if only the links bounded it ------------------------------------

def test_goodput_fraction_counts_headers_per_family_and_mss():
    from linklab.model.paths import goodput_fraction
    assert goodput_fraction(1500) == pytest.approx(1448 / 1514)
    assert goodput_fraction(9000) == pytest.approx(8948 / 9014)
    assert goodput_fraction(1500, family=6) == pytest.approx(1428 / 1514)
    # iperf3 -M 1000 (the timestamp option inside it): 988-byte payloads in 1054-byte frames
    assert goodput_fraction(1500, mss=1000) == pytest.approx(988 / 1054)
    assert goodput_fraction(40) == 0.0


@pytest.mark.parametrize("family, protocol, timestamps, payload", [
    (4, "tcp", True, 1500 - 20 - 20 - 12),   # IPv4, TCP, its timestamp option (Linux's default)
    (4, "tcp", False, 1500 - 20 - 20),
    (6, "tcp", True, 1500 - 40 - 20 - 12),   # IPv6's header is 40 bytes
    (6, "tcp", False, 1500 - 40 - 20),
    (4, "udp", True, 1500 - 20 - 8),         # UDP carries no timestamps: the flag changes nothing
    (6, "udp", False, 1500 - 40 - 8),
])
def test_goodput_theory_against_headers_counted_by_hand(family, protocol, timestamps, payload):
    # Every full-sized packet of MTU 1500 leaves as a frame of 1514 bytes (14 of Ethernet header),
    # and carries `payload` of the flow's data. No VLAN tag: linklab's links carry none.
    from linklab.model.paths import goodput_bps, goodput_fraction, headers
    assert headers(family, protocol, timestamps) == 1500 - payload
    assert goodput_fraction(1500, family, protocol=protocol, timestamps=timestamps) == pytest.approx(payload / 1514)
    assert goodput_bps(100e6, 1500, family, protocol=protocol, timestamps=timestamps) == pytest.approx(
        100e6 * payload / 1514)


def test_goodput_theory_with_iperf3s_mss_and_the_pings_frame():
    from linklab.model.paths import PING_FRAME_BYTES, frame_bytes, goodput_fraction, headers
    # -M 1000 without timestamps: 1000-byte payloads behind 40 bytes of IPv4 and TCP headers
    assert goodput_fraction(1500, mss=1000, timestamps=False) == pytest.approx(1000 / 1054)
    assert goodput_fraction(1500, family=6, mss=1000) == pytest.approx(988 / 1074)
    assert goodput_fraction(1500, protocol="udp", mss=1000) == pytest.approx(1472 / 1514)  # -M is TCP's
    assert goodput_fraction(28, protocol="udp") == 0.0
    # ping: 56 bytes of data, ICMP 8, IPv4 20 (-s fills an MTU of 1500 with 1472, IPv6 1452)
    assert PING_FRAME_BYTES == 98 and frame_bytes(1500) == 1514
    assert 1500 - headers(4, "icmp") == 1472 and 1500 - headers(6, "icmp") == 1452


def test_tcp_theory_leaves_the_timestamps_out_where_an_end_turns_them_off(tmp_path):
    # Both ends must allow the option for a connection to carry it.
    from linklab.model.paths import tcp_goodput_bps, tcp_timestamps
    text = ("name: w\nhosts: {h1: {}, h2: {SYSCTLS}}\nlinks: [{name: wire, endpoints: [h1, h2], "
            "impair: {rate: 100mbit}}]\n")
    on = lab_from(tmp_path, text.replace("SYSCTLS", ""))
    off = lab_from(tmp_path, text.replace("SYSCTLS", "sysctls: {net.ipv4.tcp_timestamps: 0}"))
    assert tcp_timestamps(on, "h1", "h2") and not tcp_timestamps(off, "h1", "h2")
    assert tcp_goodput_bps(on, "h1", "h2") == pytest.approx(100e6 * 1448 / 1514)
    assert tcp_goodput_bps(off, "h1", "h2") == pytest.approx(100e6 * 1460 / 1514)
    assert tcp_goodput_bps(off, "h2", "h1", family=6) == pytest.approx(100e6 * 1440 / 1514)


def test_one_delayed_jumbo_link(tmp_path):
    from linklab.model.paths import goodput_fraction, path_mtu, tcp_goodput_bps
    lab = lab_from(tmp_path, "name: w\nhosts: {h1: {}, h2: {}}\nlinks: [{name: wire, endpoints: [h1, h2], "
                             "mtu: 9000, impair: {rate: 1gbit, delay: 5ms}}]\n", Context(auto_scale=0.1))
    assert path_mtu(lab, "h1", "h2") == 9000
    assert tcp_goodput_bps(lab, "h1", "h2") == pytest.approx(100e6 * goodput_fraction(9000))  # 99.27 Mbit/s
    assert tcp_goodput_bps(lab, "h2", "h1", family=6) == pytest.approx(100e6 * goodput_fraction(9000, 6))


BONDED = """
name: b
hosts: {h1: {}, h2: {}}
links:
  - {name: bond, endpoints: [h1, h2], mtu: 1500, bond: {members: 2, mode: MODE}, impair: {rate: 1gbit}}
"""


@pytest.mark.parametrize("mode, members, measured", [("balance-rr", 2, None), ("802.3ad", 1, None),
                                                     ("802.3ad", 2, 2), ("802.3ad", 2, 5),
                                                     ("balance-xor", 1, 1), ("active-backup", 1, None)])
def test_a_bond_counts_the_members_one_flow_can_use(tmp_path, mode, members, measured):
    # balance-rr sprays every flow over both members; a hashing mode puts a host pair's flows on
    # one unless its counters showed more carrying them (never more than it has).
    from linklab.model.paths import goodput_fraction, tcp_capacity_bps, tcp_goodput_bps
    lab = lab_from(tmp_path, BONDED.replace("MODE", mode), Context(auto_scale=0.1))
    got = tcp_goodput_bps(lab, "h1", "h2", src_members=measured)
    assert got == pytest.approx(members * 100e6 * goodput_fraction(1500))
    assert tcp_capacity_bps(lab, "h1", "h2", src_members=measured)[1].startswith("h1/")


def test_the_slowest_hop_and_the_smallest_mtu_bound_the_path(tmp_path):
    from linklab.model.paths import goodput_fraction, path_mtu, tcp_capacity_bps, tcp_goodput_bps
    lab = lab_from(tmp_path, CHAIN.replace("RATE_B", "100mbit"), Context(auto_scale=1.0))
    assert tcp_capacity_bps(lab, "h1", "h2") == (100e6, "s1/eth2")
    assert tcp_goodput_bps(lab, "h1", "h2") == pytest.approx(100e6 * goodput_fraction(1500))
    ports = lab_from(tmp_path, CHAIN.replace("RATE_B", "100mbit").replace("s2: {kind: bridge}",
                                                                          "s2: {kind: bridge, port_mtu: 1400}"))
    assert path_mtu(ports, "h1", "h2") == 1400


def test_an_unshaped_path_has_no_theory(tmp_path):
    from linklab.model.paths import tcp_goodput_bps
    lab = lab_from(tmp_path, "name: u\nhosts: {a: {}, b: {}, c: {}}\nlinks: [{endpoints: [a, b], impair: {delay: 5ms}}]\n")
    assert tcp_goodput_bps(lab, "a", "b") is None
    assert tcp_goodput_bps(lab, "a", "c") is None  # no path at all
