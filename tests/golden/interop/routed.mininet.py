#!/usr/bin/python3
# linklab lab 'routed' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/routed.yaml`.
# Rates are scaled by 0.1 (auto (software-emulated VM (TCG))); re-export with --scale to change.
#
#   sudo python3 THIS.py            build it and open Mininet's CLI (pingall, h1 ping h2, iperf h1 h2)
#   sudo python3 THIS.py --test     pingall + don't-fragment pings at the path MTU; exit 1 on loss
#   sudo python3 THIS.py --mininet-shaping   shape with TCLink's htb instead (prints what differs)
#
# Mapped: hosts, Linux-bridge switches (no controller), one link per bond member, TCIntf
# parameters (delay/loss/limit) per interface and direction; bonds, switch LAGs, MTU of every
# interface, addresses, qdiscs TCIntf cannot build, offloads and sysctls are set after start.
# Routers: Mininet hosts that forward (LinklabRouter, as Mininet's examples/linuxrouter.py:
# net.ipv4.ip_forward and net.ipv6.conf.all.forwarding on). Every node's routes, as linklab
# computes them (routing: static) or its routes: write them, are `ip route replace` commands
# after the addresses, equal-cost paths as one multipath route (nexthop ... nexthop).
# Differences from `linklab up`:
#   - names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab
#   - switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each
#   - link v4only: IPv6 off on this link: MTU 1000 < 1280 (the kernel drops IPv6 below that)

LAB = {
    'name': 'routed',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'eth1', 'sysctls': {}},
        'h2': {'main_intf': 'eth1', 'sysctls': {}},
        'h3': {'main_intf': 'eth1', 'sysctls': {}},
        'h4': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {
        's1': {'stp': False},
    },
    'veths': [
        {'link': 'h1-r1', 'a': ['h1', 'eth1'], 'b': ['r1', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h1-r2', 'a': ['h1', 'eth2'], 'b': ['r2', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'ring1', 'a': ['r1', 'bond0-m0'], 'b': ['r2', 'bond0-m0'], 'tclink_a': {'delay': '1000us'}, 'mininet_a': {'delay': '1000us'}, 'tclink_b': {'delay': '1000us'}, 'mininet_b': {'delay': '1000us'}},
        {'link': 'ring1', 'a': ['r1', 'bond0-m1'], 'b': ['r2', 'bond0-m1'], 'tclink_a': {'delay': '1000us'}, 'mininet_a': {'delay': '1000us'}, 'tclink_b': {'delay': '1000us'}, 'mininet_b': {'delay': '1000us'}},
        {'link': 'ring2', 'a': ['r2', 'eth2'], 'b': ['r3', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'ring3', 'a': ['r3', 'eth2'], 'b': ['r1', 'eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'lan', 'a': ['r3', 'eth3'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h2-s1', 'a': ['h2', 'eth1'], 'b': ['s1', 's1-eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h3-s1', 'a': ['h3', 'eth1'], 'b': ['s1', 's1-eth3'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'v4only', 'a': ['r2', 'eth3'], 'b': ['h4', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [
        {'node': 'r1', 'ifname': 'bond0', 'mode': '802.3ad', 'create_args': ['mode', '802.3ad', 'miimon', '100', 'lacp_rate', 'fast'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
        {'node': 'r2', 'ifname': 'bond0', 'mode': '802.3ad', 'create_args': ['mode', '802.3ad', 'miimon', '100', 'lacp_rate', 'fast'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
    ],
    'mtu': [
        ['h1', 'eth1', 1500],
        ['r1', 'eth1', 1500],
        ['h1', 'eth2', 1500],
        ['r2', 'eth1', 1500],
        ['r1', 'bond0', 1500],
        ['r2', 'bond0', 1500],
        ['r2', 'eth2', 1500],
        ['r3', 'eth1', 1500],
        ['r3', 'eth2', 1500],
        ['r1', 'eth2', 1500],
        ['r3', 'eth3', 1500],
        ['s1', 's1-eth1', 1500],
        ['h2', 'eth1', 1500],
        ['s1', 's1-eth2', 1500],
        ['h3', 'eth1', 1500],
        ['s1', 's1-eth3', 1500],
        ['r2', 'eth3', 1000],
        ['h4', 'eth1', 1000],
        ['s1', 's1', 1500],
    ],
    'up': [
        ['r1', 'bond0'],
        ['r2', 'bond0'],
    ],
    'addresses': [
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'r1', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'h1', 'ifname': 'eth2', 'ipv4': '10.77.1.1/24', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'r2', 'ifname': 'eth1', 'ipv4': '10.77.1.2/24', 'ipv6': 'fd00:77:0:1::2/64'},
        {'node': 'r1', 'ifname': 'bond0', 'ipv4': '10.77.2.1/24', 'ipv6': 'fd00:77:0:2::1/64'},
        {'node': 'r2', 'ifname': 'bond0', 'ipv4': '10.77.2.2/24', 'ipv6': 'fd00:77:0:2::2/64'},
        {'node': 'r2', 'ifname': 'eth2', 'ipv4': '10.77.3.1/24', 'ipv6': 'fd00:77:0:3::1/64'},
        {'node': 'r3', 'ifname': 'eth1', 'ipv4': '10.77.3.2/24', 'ipv6': 'fd00:77:0:3::2/64'},
        {'node': 'r3', 'ifname': 'eth2', 'ipv4': '10.77.4.1/24', 'ipv6': 'fd00:77:0:4::1/64'},
        {'node': 'r1', 'ifname': 'eth2', 'ipv4': '10.77.4.2/24', 'ipv6': 'fd00:77:0:4::2/64'},
        {'node': 'r3', 'ifname': 'eth3', 'ipv4': '10.77.5.1/24', 'ipv6': 'fd00:77:0:5::1/64'},
        {'node': 'h2', 'ifname': 'eth1', 'ipv4': '10.77.5.2/24', 'ipv6': 'fd00:77:0:5::2/64'},
        {'node': 'h3', 'ifname': 'eth1', 'ipv4': '10.77.5.3/24', 'ipv6': 'fd00:77:0:5::3/64'},
        {'node': 'r2', 'ifname': 'eth3', 'ipv4': '10.77.6.1/24', 'ipv6': None},
        {'node': 'h4', 'ifname': 'eth1', 'ipv4': '10.77.6.2/24', 'ipv6': None},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'h2', 'to': 'h3', 'to_addr': '10.77.5.3', 'mtu': 1500, 'via': 'h2-s1+h3-s1', 'size': 1472},
        {'from': 'h3', 'to': 'h2', 'to_addr': '10.77.5.2', 'mtu': 1500, 'via': 'h3-s1+h2-s1', 'size': 1472},
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.5.2', 'mtu': 1500, 'via': 'h1-r1+ring3+lan+h2-s1', 'size': 1472},
        {'from': 'h1', 'to': 'h3', 'to_addr': '10.77.5.3', 'mtu': 1500, 'via': 'h1-r1+ring3+lan+h3-s1', 'size': 1472},
        {'from': 'h1', 'to': 'h4', 'to_addr': '10.77.6.2', 'mtu': 1000, 'via': 'h1-r1+ring1+v4only', 'size': 972},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'h2-s1+lan+ring3+h1-r1', 'size': 1472},
        {'from': 'h2', 'to': 'h4', 'to_addr': '10.77.6.2', 'mtu': 1000, 'via': 'h2-s1+lan+ring2+v4only', 'size': 972},
        {'from': 'h3', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'h3-s1+lan+ring3+h1-r1', 'size': 1472},
        {'from': 'h3', 'to': 'h4', 'to_addr': '10.77.6.2', 'mtu': 1000, 'via': 'h3-s1+lan+ring2+v4only', 'size': 972},
        {'from': 'h4', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1000, 'via': 'v4only+ring1+h1-r1', 'size': 972},
        {'from': 'h4', 'to': 'h2', 'to_addr': '10.77.5.2', 'mtu': 1000, 'via': 'v4only+ring2+lan+h2-s1', 'size': 972},
        {'from': 'h4', 'to': 'h3', 'to_addr': '10.77.5.3', 'mtu': 1000, 'via': 'v4only+ring2+lan+h3-s1', 'size': 972},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each",
        'link v4only: IPv6 off on this link: MTU 1000 < 1280 (the kernel drops IPv6 below that)',
    ],
    'mininet_shaping_notes': [],
    'routers': {
        'r1': {'main_intf': 'eth1', 'sysctls': {}},
        'r2': {'main_intf': 'eth1', 'sysctls': {}},
        'r3': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.fib_multipath_hash_policy': '0', 'net.ipv6.fib_multipath_hash_policy': '0'}},
    },
    'routes': {
        'h1': [['ip', 'route', 'replace', '10.77.2.0/24', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', 'route', 'replace', '10.77.3.0/24', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', 'route', 'replace', '10.77.4.0/24', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', 'route', 'replace', '10.77.5.0/24', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', 'route', 'replace', '10.77.6.0/24', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:2::/64', 'via', 'fd00:77::2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:3::/64', 'via', 'fd00:77::2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:4::/64', 'via', 'fd00:77::2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:5::/64', 'via', 'fd00:77::2', 'dev', 'eth1']],
        'h2': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.5.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:5::1', 'dev', 'eth1']],
        'h3': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.5.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:5::1', 'dev', 'eth1']],
        'h4': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.6.1', 'dev', 'eth1'], ['ip', 'route', 'replace', '192.0.2.0/24', 'via', '10.77.6.1', 'dev', 'eth1']],
        'r1': [['ip', 'route', 'replace', '10.77.1.0/24', 'via', '10.77.2.2', 'dev', 'bond0'], ['ip', 'route', 'replace', '10.77.3.0/24', 'via', '10.77.2.2', 'dev', 'bond0'], ['ip', 'route', 'replace', '10.77.5.0/24', 'via', '10.77.4.1', 'dev', 'eth2'], ['ip', 'route', 'replace', '10.77.6.0/24', 'via', '10.77.2.2', 'dev', 'bond0'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:1::/64', 'via', 'fd00:77:0:2::2', 'dev', 'bond0'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:3::/64', 'via', 'fd00:77:0:2::2', 'dev', 'bond0'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:5::/64', 'via', 'fd00:77:0:4::1', 'dev', 'eth2']],
        'r2': [['ip', 'route', 'replace', '10.77.0.0/24', 'via', '10.77.2.1', 'dev', 'bond0'], ['ip', 'route', 'replace', '10.77.4.0/24', 'via', '10.77.2.1', 'dev', 'bond0'], ['ip', 'route', 'replace', '10.77.5.0/24', 'via', '10.77.3.2', 'dev', 'eth2'], ['ip', 'route', 'replace', '10.77.5.3/32', 'via', '10.77.3.2', 'dev', 'eth2'], ['ip', '-6', 'route', 'replace', 'fd00:77::/64', 'via', 'fd00:77:0:2::1', 'dev', 'bond0'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:4::/64', 'via', 'fd00:77:0:2::1', 'dev', 'bond0'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:5::/64', 'via', 'fd00:77:0:3::2', 'dev', 'eth2'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:5::3/128', 'via', 'fd00:77:0:3::2', 'dev', 'eth2']],
        'r3': [['ip', 'route', 'replace', '10.77.0.0/24', 'via', '10.77.4.2', 'dev', 'eth2'], ['ip', 'route', 'replace', '10.77.1.0/24', 'via', '10.77.3.1', 'dev', 'eth1'], ['ip', 'route', 'replace', '10.77.2.0/24', 'nexthop', 'via', '10.77.3.1', 'dev', 'eth1', 'nexthop', 'via', '10.77.4.2', 'dev', 'eth2'], ['ip', 'route', 'replace', '10.77.6.0/24', 'via', '10.77.3.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77::/64', 'via', 'fd00:77:0:4::2', 'dev', 'eth2'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:1::/64', 'via', 'fd00:77:0:3::1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:2::/64', 'nexthop', 'via', 'fd00:77:0:3::1', 'dev', 'eth1', 'nexthop', 'via', 'fd00:77:0:4::2', 'dev', 'eth2']],
    },
    'frr': {},
    'frr_subnets': [],
}

