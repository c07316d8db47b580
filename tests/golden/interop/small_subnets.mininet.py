#!/usr/bin/python3
# linklab lab 'smallnets' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/small_subnets.yaml`.
# Rates are scaled by 0.1 (auto (software-emulated VM (TCG))); re-export with --scale to change.
#
#   sudo python3 THIS.py            build it and open Mininet's CLI (pingall, h1 ping h2, iperf h1 h2)
#   sudo python3 THIS.py --test     pingall + don't-fragment pings at the path MTU; exit 1 on loss
#   sudo python3 THIS.py --mininet-shaping   shape with TCLink's htb instead (prints what differs)
#
# Mapped: hosts, Linux-bridge switches (no controller), one link per bond member, TCIntf
# parameters (delay/loss/limit) per interface and direction; bonds, switch LAGs, MTU of every
# interface, addresses, qdiscs TCIntf cannot build, offloads and sysctls are set after start.
# Differences from `linklab up`:
#   - names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab
#   - switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each

LAB = {
    'name': 'smallnets',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'eth1', 'sysctls': {}},
        'h2': {'main_intf': 'eth1', 'sysctls': {}},
        'h3': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {
        's1': {'stp': False},
    },
    'veths': [
        {'link': 'h1-h2', 'a': ['h1', 'eth1'], 'b': ['h2', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h1-s1', 'a': ['h1', 'eth2'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h3-s1', 'a': ['h3', 'eth1'], 'b': ['s1', 's1-eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [],
    'mtu': [
        ['h1', 'eth1', 1500],
        ['h2', 'eth1', 1500],
        ['h1', 'eth2', 1500],
        ['s1', 's1-eth1', 1500],
        ['h3', 'eth1', 1500],
        ['s1', 's1-eth2', 1500],
        ['s1', 's1', 1500],
    ],
    'up': [],
    'addresses': [
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '192.0.2.1/30', 'ipv6': 'fd00:77::1/64'},
        {'node': 'h2', 'ifname': 'eth1', 'ipv4': '192.0.2.2/30', 'ipv6': 'fd00:77::2/64'},
        {'node': 'h1', 'ifname': 'eth2', 'ipv4': '198.51.100.1/30', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'h3', 'ifname': 'eth1', 'ipv4': '198.51.100.2/30', 'ipv6': 'fd00:77:0:1::2/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '192.0.2.2', 'mtu': 1500, 'via': 'h1-h2', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '192.0.2.1', 'mtu': 1500, 'via': 'h1-h2', 'size': 1472},
        {'from': 'h1', 'to': 'h3', 'to_addr': '198.51.100.2', 'mtu': 1500, 'via': 'h1-s1+h3-s1', 'size': 1472},
        {'from': 'h3', 'to': 'h1', 'to_addr': '198.51.100.1', 'mtu': 1500, 'via': 'h3-s1+h1-s1', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each",
    ],
    'mininet_shaping_notes': [],
}

