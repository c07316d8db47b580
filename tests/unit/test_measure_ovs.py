"""Parsers of Open vSwitch's own counters, on output captured in the lab VM (tests/data/tools/ovs_*)."""

from pathlib import Path

from linklab.backends.linux.kinds.ovs import tool_args
from linklab.linux import ovs

DATA = Path(__file__).resolve().parents[1] / "data" / "tools"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_dump_flows_learning_switch_counts_packets_sent_to_the_controller():
    flows = ovs.parse_dump_flows(read("ovs_ofctl_dump_flows_l2_learning.txt"))
    assert len(flows) == 3
    learned = [f for f in flows if f["cookie"] == 1]
    assert len(learned) == 2 and all(f["priority"] == 1 and f["actions"].startswith("output:") for f in learned)
    miss = [f for f in flows if f["priority"] == 0]
    assert miss[0]["actions"] == "CONTROLLER:65535"
    assert ovs.packet_in_count(flows) == miss[0]["n_packets"] == 3


def test_dump_ports_reads_rx_and_tx_per_port():
    ports = ovs.parse_dump_ports(read("ovs_ofctl_dump_ports.txt"))
    assert [p["port"] for p in ports] == ["LOCAL", "1", "2"]
    p1 = ports[1]
    assert (p1["rx_packets"], p1["rx_bytes"], p1["tx_packets"], p1["tx_bytes"]) == (20, 1688, 19, 1478)
    assert all(p[k] == 0 for p in ports for k in ("rx_dropped", "rx_errors", "tx_dropped", "tx_errors"))


def test_dpctl_show_reads_datapath_lookups():
    dp = ovs.parse_dpctl_show(read("ovs_appctl_dpctl_show.txt"))
    assert dp == {"hit": 18, "missed": 45, "lost": 0, "flows": 0}


def test_interfaces_csv_maps_openflow_ports_to_names_and_mtus():
    names = ovs.parse_interfaces_csv(read("ovs_vsctl_interfaces.csv"))
    assert names == {"LOCAL": {"name": "s1", "mtu": 1500}, "1": {"name": "eth1", "mtu": 1500},
                     "2": {"name": "eth2", "mtu": 1500}}


def test_port_delta_by_name():
    before = [{"port": "1", "name": "eth1", "mtu": 1500, "rx_packets": 5, "tx_errors": 0}]
    after = [{"port": "1", "name": "eth1", "mtu": 1500, "rx_packets": 9, "tx_errors": 2}]
    assert ovs.port_delta(before, after) == {"eth1": {"rx_packets": 4, "tx_errors": 2}}


def test_linklab_ovs_command_reaches_the_right_tool():
    assert tool_args(["dump-flows"], "s1") == ("ovs-ofctl", ["-O", "OpenFlow13", "dump-flows", "s1"])
    assert tool_args(["vsctl", "show"], "s1") == ("ovs-vsctl", ["show"])
    assert tool_args(["appctl", "dpctl/show"], "s1") == ("ovs-appctl", ["dpctl/show"])
    assert tool_args(["ofctl", "dump-groups", "s1"], "s1") == ("ovs-ofctl", ["-O", "OpenFlow13", "dump-groups", "s1"])


def _lab(path):
    from linklab.model import Context, load_topology, resolve
    root = Path(__file__).resolve().parents[2]
    return resolve(load_topology(root / path), Context())


def test_controller_sees_a_host_bond_as_one_group_of_openflow_ports():
    lab = _lab("tests/golden/topologies/good/ovs_bonds.yaml")
    assert lab.openflow_layout("s2") == {"ports": [1, 2, 3], "groups": [[1, 2]]}
    assert lab.dpid("s2") == 4


def test_ovs_tools_run_against_the_lab_switchs_private_directories():
    from linklab.backends.linux.ovsd import OvsDirs
    d = OvsDirs(ns="ll-x-s1", lab="x", node="s1")
    argv = d.argv("ovs-vsctl", "show")
    assert argv[0] == "env" and "OVS_RUNDIR=/run/linklab-ovs/ll-x-s1" in argv
    assert argv[-3:] == ["ovs-vsctl", "--timeout=15", "show"]
    assert any(a.startswith("OVS_DBDIR=") for a in argv) and any(a.startswith("OVS_SYSCONFDIR=") for a in argv)


def test_controller_argv_names_app_port_and_layout():
    from linklab.backends.linux.kinds import controller
    argv = controller.argv("hub", 6653, {"ports": [1, 2], "groups": []}, 3)
    assert argv[0] == "env" and 'LINKLAB_SWITCH={"ports":[1,2],"groups":[]}' in argv and "LINKLAB_DPID=3" in argv
    assert argv[argv.index("--ofp-tcp-listen-port") + 1] == "6653"
    assert argv[-1].endswith("controllers/hub.py")


def test_dump_flows_hub_has_only_the_table_miss_flow():
    flows = ovs.parse_dump_flows(read("ovs_ofctl_dump_flows_hub.txt"))
    assert [(f["priority"], f["actions"]) for f in flows] == [(0, "CONTROLLER:65535")]
    assert ovs.packet_in_count(flows) == flows[0]["n_packets"] > 0


def test_switch_evidence_row_sums_deltas():
    from linklab.measure.switch_evidence import first_packet_row, row
    before = {"switches": {"s1": {"packet_ins": 3, "flows": 1, "datapath": {"hit": 1, "missed": 2, "lost": 0},
                                  "ports": [{"port": "1", "name": "eth1", "rx_dropped": 1, "tx_errors": 0}]}},
              "kernel_over_mtu_lines": 4}
    after = {"switches": {"s1": {"packet_ins": 13, "flows": 1, "datapath": {"hit": 5, "missed": 9, "lost": 1},
                                 "ports": [{"port": "1", "name": "eth1", "rx_dropped": 4, "tx_errors": 2}]}},
             "kernel_over_mtu_lines": 6}
    r = row(before, after)
    assert (r["switch_packet_ins"], r["switch_dp_missed"], r["switch_dp_lost"]) == (10, 7, 1)
    assert (r["switch_rx_dropped"], r["switch_tx_errors"], r["kernel_over_mtu_lines"]) == (3, 2, 2)
    assert first_packet_row((60.0, 1.0, 3.0)) == {"ping_first_rtt_ms": 60.0, "ping_steady_rtt_mean_ms": 2.0}


def test_over_mtu_kernel_lines_are_picked_out():
    lines = ovs.over_mtu_lines("[ 1.0] IPv6: ADDRCONF(NETDEV_CHANGE): eth1: link becomes ready\n"
                               + read("dmesg_ovs_over_mtu.txt"))
    assert len(lines) == 3 and all("> 1500" in x for x in lines)


def test_bond_show_active_backup_after_failover():
    b = ovs.parse_bond_show(read("ovs_appctl_bond_show_active_backup_failed_over.txt"))["lag0"]
    assert (b["mode"], b["lacp_status"], b["primary"], b["active"]) == ("active-backup", "off", "eth1", "eth2")
    assert b["members"] == {"eth1": {"enabled": False}, "eth2": {"enabled": True}}
    assert b["all_members_active"] is None  # OVS prints it for balance-slb only


def test_bond_show_balance_slb_takes_broadcasts_on_every_member():
    b = ovs.parse_bond_show(read("ovs_appctl_bond_show_balance_slb.txt"))["lag0"]
    assert (b["mode"], b["primary"], b["active"], b["all_members_active"]) == ("balance-slb", None, "eth1", True)
    assert all(m["enabled"] for m in b["members"].values())
