#!/usr/bin/python3
# linklab lab 'ecmp2' for Mininet 2.3 — exported by `linklab export --to mininet topologies/ecmp2.yaml`.
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
# Applied with linklab's own tc commands (TCIntf would differ: netem rate, tbf, htb burst,
# in-order jitter, >1000 Mbit/s, duplicate/corrupt/reorder): r1:eth2, r1:eth3, r2:eth1, r2:eth2

LAB = {
    'name': 'ecmp2',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'eth1', 'sysctls': {}},
        'h2': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {},
    'veths': [
        {'link': 'h1-r1', 'a': ['h1', 'eth1'], 'b': ['r1', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'path0', 'a': ['r1', 'eth2'], 'b': ['r2', 'eth1'], 'tclink_a': None, 'mininet_a': {'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'bw': 100.0}},
        {'link': 'path1', 'a': ['r1', 'eth3'], 'b': ['r2', 'eth2'], 'tclink_a': None, 'mininet_a': {'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'bw': 100.0}},
        {'link': 'r2-h2', 'a': ['r2', 'eth3'], 'b': ['h2', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [],
    'mtu': [
        ['h1', 'eth1', 1500],
        ['r1', 'eth1', 1500],
        ['r1', 'eth2', 1500],
        ['r2', 'eth1', 1500],
        ['r1', 'eth3', 1500],
        ['r2', 'eth2', 1500],
        ['r2', 'eth3', 1500],
        ['h2', 'eth1', 1500],
    ],
    'up': [],
    'addresses': [
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'r1', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'r1', 'ifname': 'eth2', 'ipv4': '10.77.1.1/24', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'r2', 'ifname': 'eth1', 'ipv4': '10.77.1.2/24', 'ipv6': 'fd00:77:0:1::2/64'},
        {'node': 'r1', 'ifname': 'eth3', 'ipv4': '10.77.2.1/24', 'ipv6': 'fd00:77:0:2::1/64'},
        {'node': 'r2', 'ifname': 'eth2', 'ipv4': '10.77.2.2/24', 'ipv6': 'fd00:77:0:2::2/64'},
        {'node': 'r2', 'ifname': 'eth3', 'ipv4': '10.77.3.1/24', 'ipv6': 'fd00:77:0:3::1/64'},
        {'node': 'h2', 'ifname': 'eth1', 'ipv4': '10.77.3.2/24', 'ipv6': 'fd00:77:0:3::2/64'},
    ],
    'qdiscs': [
        {'node': 'r1', 'ifname': 'eth2', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth2', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth2', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth2', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '67028']]},
        {'node': 'r2', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '67028']]},
        {'node': 'r1', 'ifname': 'eth3', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth3', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth3', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth3', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '67028']]},
        {'node': 'r2', 'ifname': 'eth2', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth2', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth2', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth2', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '67028']]},
    ],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.3.2', 'mtu': 1500, 'via': 'h1-r1+path0+r2-h2 or h1-r1+path1+r2-h2', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'r2-h2+path0+h1-r1 or r2-h2+path1+h1-r1', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
    ],
    'mininet_shaping_notes': [
        "link path0, r1 sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link path0, r2 sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link path1, r1 sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link path1, r2 sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
    ],
    'routers': {
        'r1': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.fib_multipath_hash_policy': '1', 'net.ipv6.fib_multipath_hash_policy': '1'}},
        'r2': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.fib_multipath_hash_policy': '1', 'net.ipv6.fib_multipath_hash_policy': '1'}},
    },
    'routes': {
        'h1': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77::2', 'dev', 'eth1']],
        'h2': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.3.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:3::1', 'dev', 'eth1']],
        'r1': [['ip', 'route', 'replace', '10.77.3.0/24', 'nexthop', 'via', '10.77.1.2', 'dev', 'eth2', 'nexthop', 'via', '10.77.2.2', 'dev', 'eth3'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:3::/64', 'nexthop', 'via', 'fd00:77:0:1::2', 'dev', 'eth2', 'nexthop', 'via', 'fd00:77:0:2::2', 'dev', 'eth3']],
        'r2': [['ip', 'route', 'replace', '10.77.0.0/24', 'nexthop', 'via', '10.77.1.1', 'dev', 'eth1', 'nexthop', 'via', '10.77.2.1', 'dev', 'eth2'], ['ip', '-6', 'route', 'replace', 'fd00:77::/64', 'nexthop', 'via', 'fd00:77:0:1::1', 'dev', 'eth1', 'nexthop', 'via', 'fd00:77:0:2::1', 'dev', 'eth2']],
    },
    'frr': {},
    'frr_subnets': [],
}

