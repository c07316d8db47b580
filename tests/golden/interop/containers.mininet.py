#!/usr/bin/python3
# linklab lab 'containers' for Mininet 2.3 — exported by `linklab export --to mininet topologies/containers.yaml`.
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
#   - container nodes (c1, c2) are plain Mininet hosts: Mininet runs no images

LAB = {
    'name': 'containers',
    'scale': 0.1,
    'hosts': {
        'c1': {'main_intf': 'bond0', 'sysctls': {}},
        'c2': {'main_intf': 'eth1', 'sysctls': {}},
        'h1': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {
        's1': {'stp': False},
    },
    'veths': [
        {'link': 'c1up', 'a': ['c1', 'bond0-m0'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'c1up', 'a': ['c1', 'bond0-m1'], 'b': ['s1', 's1-eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'c2up', 'a': ['c2', 'eth1'], 'b': ['s1', 's1-eth3'], 'tclink_a': {'delay': '10000us'}, 'mininet_a': {'delay': '10000us'}, 'tclink_b': {'delay': '10000us'}, 'mininet_b': {'delay': '10000us'}},
        {'link': 'h1up', 'a': ['h1', 'eth1'], 'b': ['s1', 's1-eth4'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [
        {'node': 'c1', 'ifname': 'bond0', 'mode': 'active-backup', 'create_args': ['mode', 'active-backup', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
    ],
    'mtu': [
        ['s1', 's1-eth1', 1500],
        ['s1', 's1-eth2', 1500],
        ['c1', 'bond0', 1500],
        ['c2', 'eth1', 1500],
        ['s1', 's1-eth3', 1500],
        ['h1', 'eth1', 1500],
        ['s1', 's1-eth4', 1500],
        ['s1', 's1', 1500],
    ],
    'up': [
        ['c1', 'bond0'],
    ],
    'addresses': [
        {'node': 'c1', 'ifname': 'bond0', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'c2', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '10.77.0.3/24', 'ipv6': 'fd00:77::3/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'c1', 'to': 'c2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'c1up+c2up', 'size': 1472},
        {'from': 'c1', 'to': 'h1', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'c1up+h1up', 'size': 1472},
        {'from': 'c2', 'to': 'c1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'c2up+c1up', 'size': 1472},
        {'from': 'c2', 'to': 'h1', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'c2up+h1up', 'size': 1472},
        {'from': 'h1', 'to': 'c1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'h1up+c1up', 'size': 1472},
        {'from': 'h1', 'to': 'c2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'h1up+c2up', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each",
        'container nodes (c1, c2) are plain Mininet hosts: Mininet runs no images',
    ],
    'mininet_shaping_notes': [],
}

