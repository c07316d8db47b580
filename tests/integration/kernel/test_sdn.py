"""SDN labs with real packets: Open vSwitch switches run by the lab, os-ken controllers,
LACP and multipath through OpenFlow select groups, OVS's own bonds, and a clean teardown
that leaves an OVS the lab did not start alone."""

import json
import re
import time
import pytest
from pyroute2 import netns

from linklab import lab, runner
from linklab.backends.base import bond_summary
from linklab.backends.linux import daemons, ovsd
from linklab.measure import ovs as ovsparse

DATA_REL = "../tests/integration/data"  # make_lab reads topologies/<name>: this reaches the test data


def _ovs(lb, node):
    return lb.live()["nodes"][node]["ovs"]


def _ofctl(lb, node, *args):
    d = ovsd.OvsDirs(ns=lb.ns(node), lab=lb.name, node=node)
    return d.run_tool("ovs-ofctl", "-O", "OpenFlow13", *args).stdout


@pytest.fixture
def foreign_ovs():
    """An OVS this test starts itself, in its own namespace: the labs must leave it alone."""
    ns = "lltest-foreign-ovs"
    netns.create(ns)
    d = ovsd.OvsDirs(ns=ns, lab="not-a-lab", node="x")
    recs = ovsd.start(d, "kernel")
    ovsd.vsctl(d, "add-br", "foreign0")
    yield d, recs
    daemons.stop(recs)
    ovsd.remove_rundir(ns)
    netns.remove(ns)


def test_l2_learning_then_hub_and_down_leaves_only_the_foreign_ovs(make_lab, foreign_ovs):
    d_foreign, foreign = foreign_ovs
    lb = make_lab("sdn_pair.yaml", "itsdn")
    other = make_lab("sdn_pair.yaml", "itsdn2", [("switches.s1.controller", None)])  # two SDN labs at once
    res, _ = lb.ping_until_ok("h1", "h2", deadline_s=30)
    assert " 0% packet loss" in res.stdout, res.stdout
    res2, _ = other.ping_until_ok("h1", "h2", deadline_s=30)
    assert " 0% packet loss" in res2.stdout, res2.stdout
    o = _ovs(lb, "s1")
    assert o["controller_connected"] is True and o["controller"] == "l2_learning"
    learned = [f for f in ovsparse.parse_dump_flows(_ofctl(lb, "s1", "dump-flows", "s1")) if f["cookie"] == 1]
    assert len(learned) >= 2, "the learning switch installed no flows"
    assert {p["name"]: p["mtu"] for p in o["ports"]}.get("eth1") == 1500

    lb.set(("switches.s1.controller", "hub"))
    before = _ovs(lb, "s1")["packet_ins"]
    res, _ = lb.ping_until_ok("h1", "h2", deadline_s=30)
    assert " 0% packet loss" in res.stdout, res.stdout
    after = _ovs(lb, "s1")
    flows = ovsparse.parse_dump_flows(_ofctl(lb, "s1", "dump-flows", "s1"))
    assert [f["priority"] for f in flows] == [0], f"hub must install no flow but the table-miss: {flows}"
    assert after["packet_ins"] - before >= 10, "5 echo requests and 5 replies at least crossed the controller"

    owned = lab.state.load("itsdn")["owned"]
    mine = owned["processes"]
    assert {p["role"] for p in mine} == {"ovsdb-server", "ovs-vswitchd", "controller"}
    lb.down()
    other.down()
    assert not any(daemons.alive(p) for p in mine)
    assert not (ovsd.RUN_ROOT / lb.ns("s1")).exists() and not (ovsd.RUN_ROOT / other.ns("s1")).exists()
    assert not [n for n in netns.listnetns() if n.startswith(("ll-itsdn-", "ll-itsdn2-"))]
    assert all(daemons.alive(p) for p in foreign), "the lab stopped an OVS it did not start"
    assert "foreign0" in ovsd.vsctl(d_foreign, "list-br").stdout


def _aggregated(lb, node="h1", deadline_s=60):
    t0 = time.monotonic()
    while True:
        ifaces = lb.live()["nodes"][node]["interfaces"]
        bond = next(i for i in ifaces if i["ifname"] == "bond0")
        s = bond_summary(bond, [i for i in ifaces if i.get("master") == "bond0"])
        if s.get("lacp_aggregated") or time.monotonic() - t0 > deadline_s:
            return s
        time.sleep(1)


def _four_streams_on_both_members(lb):
    from linklab.measure import counters
    srv = runner.start(["iperf3", "-s", "-1"], netns=lb.ns("h2"))
    try:
        time.sleep(1)
        before = counters.read_counters(lb.ns("h1"), ["bond0-m0", "bond0-m1"])
        # Consecutive client ports alternate the layer3+4 hash: two streams a member.
        res = lb.run("h1", ["iperf3", "-c", "h2", "-P", "4", "--cport", "40000", "-t", "3", "-J"], timeout=90)
        after = counters.read_counters(lb.ns("h1"), ["bond0-m0", "bond0-m1"])
    finally:
        srv.kill()
    bps = json.loads(res.stdout)["end"]["sum_received"]["bits_per_second"]
    sent = {m: after[m]["tx_bytes"] - before[m]["tx_bytes"] for m in after}
    return bps, sent


def test_host_802_3ad_bond_to_ovs_through_the_lacp_app(make_lab):
    lb = make_lab(f"{DATA_REL}/sdn_lacp.yaml", "itsdnlacp")
    s = _aggregated(lb)
    assert s["lacp_aggregated"], s
    res, _ = lb.ping_until_ok("h1", "h2", deadline_s=30)
    assert " 0% packet loss" in res.stdout, res.stdout
    bps, sent = _four_streams_on_both_members(lb)
    assert bps > 1e6
    total = sum(sent.values())
    assert all(v > 0.2 * total for v in sent.values()), f"4 streams should use both members: {sent}"


def test_host_802_3ad_bond_to_an_ovs_lacp_bond(make_lab):
    lb = make_lab(f"{DATA_REL}/sdn_ovsbond.yaml", "itsdnovsb")
    s = _aggregated(lb)
    assert s["lacp_aggregated"], s
    d = ovsd.OvsDirs(ns=lb.ns("s1"), lab=lb.name, node="s1")
    show = d.run_tool("ovs-appctl", "bond/show").stdout
    assert "bond_mode: balance-tcp" in show and re.search(r"lacp_status: negotiated", show), show
    res, _ = lb.ping_until_ok("h1", "h2", deadline_s=30)
    assert " 0% packet loss" in res.stdout, res.stdout


def test_multipath_spreads_flows_over_parallel_switch_links(make_lab):
    from linklab.measure import counters
    lb = make_lab(f"{DATA_REL}/sdn_multipath.yaml", "itsdnmp")
    res, _ = lb.ping_until_ok("h1", "h2", deadline_s=30)
    assert " 0% packet loss" in res.stdout, res.stdout
    groups = _ofctl(lb, "s1", "dump-groups", "s1")
    assert "type=select" in groups, groups
    ports = ["eth2", "eth3"]  # s1's two links towards s2
    before = counters.read_counters(lb.ns("s1"), ports)
    srv = runner.start(["iperf3", "-s", "-1"], netns=lb.ns("h2"))
    try:
        time.sleep(1)
        lb.run("h1", ["iperf3", "-c", "h2", "-P", "8", "-t", "3"], timeout=90)
    finally:
        srv.kill()
    after = counters.read_counters(lb.ns("s1"), ports)
    sent = {p: after[p]["tx_bytes"] - before[p]["tx_bytes"] for p in ports}
    assert all(v > 0.05 * sum(sent.values()) for v in sent.values()), f"8 flows should use both links: {sent}"


def test_e3_quick_sweep_end_to_end_with_switch_evidence(tmp_path):
    import csv
    from linklab.sweep.engine import Options, run
    try:
        store = run("experiments/e3_sdn_mtu.yaml", Options(quick=True, results=tmp_path / "results"),
                    say=lambda *_: None)
        with open(store.path / "results.csv") as f:
            rows = list(csv.DictReader(f))
    finally:
        if lab.state.load("sdn_pair"):
            lab.down("sdn_pair", say=lambda *_: None)
    assert len(rows) == 12, "6 points x 2 repetitions"
    assert all(str(r["preflight_ok"]).lower() == "true" and not r.get("error") for r in rows), [r.get("error") for r in rows]

    def pick(controller, port_mtu, mtu):
        return [r for r in rows if r["switches.s1.controller"] == controller
                and r["switches.s1.port_mtu"] in (port_mtu, "" if port_mtu == "null" else port_mtu)
                and r["mtu"] == str(mtu)]

    for r in rows:
        assert int(r["switch_packet_ins"]) > 0
    learning, hub = pick("l2_learning", "null", 1500), pick("hub", "null", 1500)
    assert all(float(r["throughput_bps"]) > 0 for r in learning + hub)
    # Every packet through the controller vs only first packets: far more packet-ins.
    assert min(int(r["switch_packet_ins"]) for r in hub) > 10 * max(int(r["switch_packet_ins"]) for r in learning)
    # The first ping crossed the controller (flows and ARP forgotten before it).
    assert (sum(float(r["ping_first_rtt_ms"]) for r in learning)
            > sum(float(r["ping_steady_rtt_mean_ms"]) for r in learning))
    # Hosts at 2000, switch ports at 1500: oversize frames are dropped entering the switch's
    # ports, and TCP collapses against every element at 2000.
    mismatch, matched = pick("l2_learning", "1500", 2000), pick("l2_learning", "null", 2000)
    assert all(int(r["switch_rx_dropped"]) + int(r["switch_tx_errors"]) > 0 for r in mismatch)
    assert max(float(r["throughput_bps"]) for r in mismatch) < 0.5 * min(float(r["throughput_bps"]) for r in matched)
