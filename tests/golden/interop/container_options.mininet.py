#!/usr/bin/python3
# linklab lab 'ctropts' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/container_options.yaml`.
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
#   - container nodes (r1, r2) are plain Mininet hosts: Mininet runs no images

LAB = {
    'name': 'ctropts',
    'scale': 0.1,
    'hosts': {
        'r1': {'main_intf': 'eth1', 'sysctls': {}},
        'r2': {'main_intf': 'eth1', 'sysctls': {}},
        'h1': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {},
    'veths': [
        {'link': 'r1-r2', 'a': ['r1', 'eth1'], 'b': ['r2', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'r2-h1', 'a': ['r2', 'eth2'], 'b': ['h1', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [],
    'mtu': [
        ['r1', 'eth1', 1500],
        ['r2', 'eth1', 1500],
        ['r2', 'eth2', 1500],
        ['h1', 'eth1', 1500],
    ],
    'up': [],
    'addresses': [
        {'node': 'r1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'r2', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'r2', 'ifname': 'eth2', 'ipv4': '10.77.1.1/24', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '10.77.1.2/24', 'ipv6': 'fd00:77:0:1::2/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'r1', 'to': 'r2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'r1-r2', 'size': 1472},
        {'from': 'r2', 'to': 'r1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'r1-r2', 'size': 1472},
        {'from': 'r2', 'to': 'h1', 'to_addr': '10.77.1.2', 'mtu': 1500, 'via': 'r2-h1', 'size': 1472},
        {'from': 'h1', 'to': 'r2', 'to_addr': '10.77.1.1', 'mtu': 1500, 'via': 'r2-h1', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        'container nodes (r1, r2) are plain Mininet hosts: Mininet runs no images',
    ],
    'mininet_shaping_notes': [],
}

