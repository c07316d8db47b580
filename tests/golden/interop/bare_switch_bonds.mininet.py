#!/usr/bin/python3
# linklab lab 'bare' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/bare_switch_bonds.yaml`.
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
    'name': 'bare',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'bond0', 'sysctls': {}},
        'h2': {'main_intf': 'bond0', 'sysctls': {}},
    },
    'switches': {
        's1': {'stp': False},
    },
    'veths': [
        {'link': 'h1-s1', 'a': ['h1', 'bond0-m0'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h1-s1', 'a': ['h1', 'bond0-m1'], 'b': ['s1', 's1-eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h2-s1', 'a': ['h2', 'bond0-m0'], 'b': ['s1', 's1-eth3'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h2-s1', 'a': ['h2', 'bond0-m1'], 'b': ['s1', 's1-eth4'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [
        {'node': 'h1', 'ifname': 'bond0', 'mode': '802.3ad', 'create_args': ['mode', '802.3ad', 'miimon', '100', 'lacp_rate', 'fast'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
        {'node': 's1', 'ifname': 's1-lag0', 'mode': '802.3ad', 'create_args': ['mode', '802.3ad', 'miimon', '100', 'lacp_rate', 'fast', 'xmit_hash_policy', 'layer3+4'], 'primary': None, 'members': ['s1-eth1', 's1-eth2'], 'switch': 's1'},
        {'node': 'h2', 'ifname': 'bond0', 'mode': 'balance-rr', 'create_args': ['mode', 'balance-rr', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
        {'node': 's1', 'ifname': 's1-lag1', 'mode': 'balance-xor', 'create_args': ['mode', 'balance-xor', 'miimon', '100', 'xmit_hash_policy', 'layer3+4'], 'primary': None, 'members': ['s1-eth3', 's1-eth4'], 'switch': 's1'},
    ],
    'mtu': [
        ['h1', 'bond0', 1500],
        ['s1', 's1-lag0', 1500],
        ['h2', 'bond0', 1500],
        ['s1', 's1-lag1', 1500],
        ['s1', 's1', 1500],
    ],
    'up': [
        ['h1', 'bond0'],
        ['s1', 's1-lag0'],
        ['h2', 'bond0'],
        ['s1', 's1-lag1'],
    ],
    'addresses': [
        {'node': 'h1', 'ifname': 'bond0', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'h2', 'ifname': 'bond0', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'h1-s1+h2-s1', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'h2-s1+h1-s1', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each",
    ],
    'mininet_shaping_notes': [],
}

