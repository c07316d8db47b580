#!/usr/bin/python3
# linklab lab 'routed_chain' for Mininet 2.3 — exported by `linklab export --to mininet topologies/routed_chain.yaml`.
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

LAB = {
    'name': 'routed_chain',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'eth1', 'sysctls': {}},
        'h2': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {},
    'veths': [
        {'link': 'h1-r1', 'a': ['h1', 'eth1'], 'b': ['r1', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'core', 'a': ['r1', 'eth2'], 'b': ['r2', 'eth1'], 'tclink_a': {'delay': '2000us'}, 'mininet_a': {'delay': '2000us'}, 'tclink_b': {'delay': '2000us'}, 'mininet_b': {'delay': '2000us'}},
        {'link': 'r2-h2', 'a': ['r2', 'eth2'], 'b': ['h2', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [],
    'mtu': [
        ['h1', 'eth1', 1500],
        ['r1', 'eth1', 1500],
        ['r1', 'eth2', 1400],
        ['r2', 'eth1', 1400],
        ['r2', 'eth2', 1500],
        ['h2', 'eth1', 1500],
    ],
    'up': [],
    'addresses': [
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'r1', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'r1', 'ifname': 'eth2', 'ipv4': '10.77.1.1/24', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'r2', 'ifname': 'eth1', 'ipv4': '10.77.1.2/24', 'ipv6': 'fd00:77:0:1::2/64'},
        {'node': 'r2', 'ifname': 'eth2', 'ipv4': '10.77.2.1/24', 'ipv6': 'fd00:77:0:2::1/64'},
        {'node': 'h2', 'ifname': 'eth1', 'ipv4': '10.77.2.2/24', 'ipv6': 'fd00:77:0:2::2/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.2.2', 'mtu': 1400, 'via': 'h1-r1+core+r2-h2', 'size': 1372},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1400, 'via': 'r2-h2+core+h1-r1', 'size': 1372},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
    ],
    'mininet_shaping_notes': [],
    'routers': {
        'r1': {'main_intf': 'eth1', 'sysctls': {}},
        'r2': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'routes': {
        'h1': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77::2', 'dev', 'eth1']],
        'h2': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.2.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:2::1', 'dev', 'eth1']],
        'r1': [['ip', 'route', 'replace', '10.77.2.0/24', 'via', '10.77.1.2', 'dev', 'eth2'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:2::/64', 'via', 'fd00:77:0:1::2', 'dev', 'eth2']],
        'r2': [['ip', 'route', 'replace', '10.77.0.0/24', 'via', '10.77.1.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77::/64', 'via', 'fd00:77:0:1::1', 'dev', 'eth1']],
    },
    'frr': {},
    'frr_subnets': [],
}

