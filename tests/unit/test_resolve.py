"""Resolution rules that users rely on (beyond the golden snapshots)."""

import pytest
import yaml

from linklab.model import Context, load_topology, resolve
from linklab.model.resolve import ORDER_KEEPING_RATE_BPS


def lab_from(tmp_path, text, ctx=Context()):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return resolve(load_topology(p), ctx)


def test_scale_auto_follows_context_and_is_recorded(tmp_path):
    text = "name: s\nhosts: {a: {}, b: {}}\nlinks: [{endpoints: [a, b], impair: {rate: 1gbit}}]\n"
    native = lab_from(tmp_path, text)
    vm = lab_from(tmp_path, text, Context(auto_scale=0.1, auto_scale_reason="TCG"))
    assert native.links[0].veths[0].egress_a.rate_bps == 1e9
    assert vm.links[0].veths[0].egress_a.rate_bps == pytest.approx(1e8)
    assert vm.scale == 0.1 and "TCG" in vm.scale_source
    forced = lab_from(tmp_path, text, Context(auto_scale=0.1, scale_override=0.5))
    assert forced.links[0].veths[0].egress_a.rate_bps == pytest.approx(5e8)


def test_jitter_without_reorder_keeps_order(tmp_path):
    lab = lab_from(tmp_path, "name: j\nhosts: {a: {}, b: {}}\n"
                             "links: [{endpoints: [a, b], impair: {delay: 5ms, jitter: 1ms}},"
                             "        {endpoints: [a, b], impair: {delay: 5ms, jitter: 1ms, allow_reorder: true}},"
                             "        {endpoints: [a, b], impair: {delay: 5ms, jitter: 1ms, rate: 10mbit, shaper: netem}},"
                             "        {endpoints: [a, b], impair: {delay: 5ms, jitter: 1ms, rate: 10mbit}}]\n")
    assert lab.links[0].veths[0].egress_a.order_rate_bps == ORDER_KEEPING_RATE_BPS
    assert lab.links[1].veths[0].egress_a.order_rate_bps is None  # asked to allow reordering
    assert lab.links[2].veths[0].egress_a.order_rate_bps is None  # netem's own rate keeps order
    assert lab.links[3].veths[0].egress_a.order_rate_bps == ORDER_KEEPING_RATE_BPS  # htb shapes, netem delays


def test_ipv6_dropped_below_1280_with_a_note(tmp_path):
    lab = lab_from(tmp_path, "name: m\nhosts: {a: {}, b: {}}\nlinks: [{endpoints: [a, b], mtu: 450}]\n")
    assert lab.links[0].ipv6 is False
    assert all(e.ipv6 is None for e in lab.links[0].ends)
    assert any("MTU 450" in n for n in lab.notes)


def test_switch_side_lag_follows_mode(tmp_path):
    modes = {}
    for mode in ("802.3ad", "balance-rr", "balance-alb"):
        lab = lab_from(tmp_path, f"name: w\nhosts: {{a: {{}}}}\nswitches: {{s: {{}}}}\n"
                                 f"links: [{{endpoints: [a, s], bond: {{mode: {mode}}}}}]\n")
        lags = [b for b in lab.links[0].bonds if b.role == "switch-lag"]
        modes[mode] = (lags[0].mode if lags else None, lab.links[0].ends[1].bridge_ports)
    assert modes["802.3ad"] == ("802.3ad", ["lag0"])
    assert modes["balance-rr"] == ("balance-xor", ["lag0"])
    assert modes["balance-alb"] == (None, ["eth1", "eth2"])  # plain ports, as tlb/alb expect


def test_host_active_backup_bond_and_ovs_bond_without_lacp_agree_on_the_active_member(tmp_path):
    base = ("name: o\nhosts: {h1: {}, h2: {}}\nswitches: {s1: {kind: ovs}}\nlinks:\n"
            "  - {name: bond, endpoints: [h1, s1], bond: {mode: active-backup, ovs_bond_mode: %s%s}}\n"
            "  - {endpoints: [h2, s1]}\n")

    def ends(mode, extra=""):
        link = lab_from(tmp_path, base % (mode, extra)).links[0]
        return link.bonds[0].options, next(e.ovs_bond for e in link.ends if e.ovs_bond)

    opts, ovs = ends("active-backup")
    assert opts["primary"] == "bond0-m0" and ovs.primary == "eth1" and "all_slaves_active" not in opts
    opts, ovs = ends("balance-slb")  # OVS takes broadcasts on every member; the host on both too
    assert "primary" not in opts and ovs.primary is None and opts["all_slaves_active"] is True
    opts, ovs = ends("active-backup", ", options: {primary: 1}")  # the user's primary wins, on both ends
    assert opts["primary"] == "bond0-m1" and ovs.primary == "eth2"
    opts, ovs = ends("balance-tcp", ", switch_lag: lacp")  # LACP says which member carries what
    assert "primary" not in opts and ovs.primary is None and ovs.lacp == "active"


def test_hosts_entries_prefer_a_shared_segment(tmp_path):
    lab = lab_from(tmp_path, "name: h\nhosts: {a: {}, b: {}, c: {}}\nswitches: {s: {}}\n"
                             "links: [{endpoints: [a, b]}, {endpoints: [b, s]}, {endpoints: [c, s]}]\n")
    b_addr_on_switch = lab.links[1].ends[0].ipv4.split("/")[0]
    seen_from_c = dict((name, addr) for addr, name in lab.node("c").hosts)
    assert seen_from_c["b"] == b_addr_on_switch
    seen_from_a = dict((name, addr) for addr, name in lab.node("a").hosts)
    assert seen_from_a["b"] == lab.links[0].ends[1].ipv4.split("/")[0]


def test_bond_defaults_recorded(tmp_path):
    lab = lab_from(tmp_path, "name: b\nhosts: {a: {}, b: {}}\n"
                             "links: [{endpoints: [a, b], bond: {mode: 802.3ad, members: 3}}]\n")
    bond = lab.links[0].bonds[0]
    assert bond.options == {"miimon": 100, "lacp_rate": "fast"}
    assert bond.members == ["bond0-m0", "bond0-m1", "bond0-m2"]


def test_resolution_is_deterministic(tmp_path):
    text = open("topologies/e5_three_receivers.yaml").read()
    one = yaml.safe_dump(lab_from(tmp_path, text).model_dump(mode="json"))
    two = yaml.safe_dump(lab_from(tmp_path, text).model_dump(mode="json"))
    assert one == two
