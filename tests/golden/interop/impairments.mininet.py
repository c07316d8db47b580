#!/usr/bin/python3
# linklab lab 'imp' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/impairments.yaml`.
# Rates are scaled by 0.5 (topology file); re-export with --scale to change.
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
#   - link a-b-1: IPv6 off on this link: MTU 1000 < 1280 (the kernel drops IPv6 below that)
# Applied with linklab's own tc commands (TCIntf would differ: netem rate, tbf, htb burst,
# in-order jitter, >1000 Mbit/s, duplicate/corrupt/reorder): a:bond0-m0, a:bond0-m1, a:bond0-m2, a:wan0, b:bond0-m0, b:bond0-m1, b:bond0-m2, b:wan0

LAB = {
    'name': 'imp',
    'scale': 0.5,
    'hosts': {
        'a': {'main_intf': 'bond0', 'sysctls': {}},
        'b': {'main_intf': 'bond0', 'sysctls': {'net.ipv4.tcp_reordering': '127'}},
    },
    'switches': {},
    'veths': [
        {'link': 'a-b-0', 'a': ['a', 'bond0-m0'], 'b': ['b', 'bond0-m0'], 'tclink_a': None, 'mininet_a': {'delay': '1000us', 'jitter': '100us', 'max_queue_size': 8, 'bw': 50.0}, 'tclink_b': None, 'mininet_b': {'delay': '1000us', 'jitter': '100us', 'max_queue_size': 16, 'bw': 100.0}},
        {'link': 'a-b-0', 'a': ['a', 'bond0-m1'], 'b': ['b', 'bond0-m1'], 'tclink_a': None, 'mininet_a': {'delay': '3000us', 'jitter': '100us', 'max_queue_size': 10, 'bw': 50.0}, 'tclink_b': None, 'mininet_b': {'delay': '3000us', 'jitter': '100us', 'loss': 1.0, 'max_queue_size': 19, 'bw': 100.0}},
        {'link': 'a-b-0', 'a': ['a', 'bond0-m2'], 'b': ['b', 'bond0-m2'], 'tclink_a': None, 'mininet_a': {'delay': '2000us', 'jitter': '100us', 'max_queue_size': 9, 'bw': 50.0}, 'tclink_b': None, 'mininet_b': {'delay': '2000us', 'jitter': '100us', 'max_queue_size': 17, 'bw': 100.0}},
        {'link': 'a-b-1', 'a': ['a', 'wan0'], 'b': ['b', 'wan0'], 'tclink_a': None, 'mininet_a': {'delay': '20000us', 'max_queue_size': 20, 'bw': 5.0}, 'tclink_b': None, 'mininet_b': {'delay': '20000us', 'max_queue_size': 20, 'bw': 5.0}},
    ],
    'bonds': [
        {'node': 'a', 'ifname': 'bond0', 'mode': 'balance-rr', 'create_args': ['mode', 'balance-rr', 'packets_per_slave', '1', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1', 'bond0-m2'], 'switch': None},
        {'node': 'b', 'ifname': 'bond0', 'mode': 'balance-rr', 'create_args': ['mode', 'balance-rr', 'packets_per_slave', '1', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1', 'bond0-m2'], 'switch': None},
    ],
    'mtu': [
        ['a', 'bond0', 9000],
        ['b', 'bond0', 9000],
        ['a', 'wan0', 1000],
        ['b', 'wan0', 1000],
    ],
    'up': [
        ['a', 'bond0'],
        ['b', 'bond0'],
    ],
    'addresses': [
        {'node': 'a', 'ifname': 'bond0', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'b', 'ifname': 'bond0', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'a', 'ifname': 'wan0', 'ipv4': '192.0.2.1/30', 'ipv6': None},
        {'node': 'b', 'ifname': 'wan0', 'ipv4': '192.0.2.2/30', 'ipv6': None},
    ],
    'qdiscs': [
        {'node': 'a', 'ifname': 'bond0-m0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '50000000bit', 'ceil', '50000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '1000us', '100us', 'limit', '8', 'rate', '30000000000bit']]},
        {'node': 'b', 'ifname': 'bond0-m0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '1000us', '100us', 'limit', '16', 'rate', '30000000000bit']]},
        {'node': 'a', 'ifname': 'bond0-m1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '50000000bit', 'ceil', '50000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '3000us', '100us', 'limit', '10', 'rate', '30000000000bit']]},
        {'node': 'b', 'ifname': 'bond0-m1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '3000us', '100us', 'loss', '1%', 'limit', '19', 'rate', '30000000000bit']]},
        {'node': 'a', 'ifname': 'bond0-m2', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m2', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m2', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '50000000bit', 'ceil', '50000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m2', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '2000us', '100us', 'limit', '9', 'rate', '30000000000bit']]},
        {'node': 'b', 'ifname': 'bond0-m2', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m2', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m2', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m2', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '2000us', '100us', 'limit', '17', 'rate', '30000000000bit']]},
        {'node': 'a', 'ifname': 'wan0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'wan0', 'root', 'handle', '1:', 'tbf', 'rate', '5000000bit', 'burst', '20000', 'limit', '6250'], ['tc', 'qdisc', 'add', 'dev', 'wan0', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '20000us', 'reorder', '5%', 'limit', '20']]},
        {'node': 'b', 'ifname': 'wan0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'wan0', 'root', 'handle', '1:', 'tbf', 'rate', '5000000bit', 'burst', '20000', 'limit', '6250'], ['tc', 'qdisc', 'add', 'dev', 'wan0', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '20000us', 'reorder', '5%', 'limit', '20']]},
    ],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'a', 'to': 'b', 'to_addr': '10.77.0.2', 'mtu': 9000, 'via': 'a-b-0', 'size': 8972},
        {'from': 'b', 'to': 'a', 'to_addr': '10.77.0.1', 'mtu': 9000, 'via': 'a-b-0', 'size': 8972},
        {'from': 'a', 'to': 'b', 'to_addr': '192.0.2.2', 'mtu': 1000, 'via': 'a-b-1', 'size': 972},
        {'from': 'b', 'to': 'a', 'to_addr': '192.0.2.1', 'mtu': 1000, 'via': 'a-b-1', 'size': 972},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        'link a-b-1: IPv6 off on this link: MTU 1000 < 1280 (the kernel drops IPv6 below that)',
    ],
    'mininet_shaping_notes': [
        "link a-b-0 member 0, a sending: rate 50 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link a-b-0 member 0, a sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link a-b-0 member 0, b sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link a-b-0 member 0, b sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link a-b-0 member 1, a sending: rate 50 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link a-b-0 member 1, a sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link a-b-0 member 1, b sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link a-b-0 member 1, b sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link a-b-0 member 2, a sending: rate 50 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link a-b-0 member 2, a sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link a-b-0 member 2, b sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link a-b-0 member 2, b sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link a-b-1, a sending: rate 5 Mbit/s by TCLink's htb (15 kB burst) instead of tbf: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link a-b-1, a sending: reorder 5 dropped (TCLink has no such parameter)',
        "link a-b-1, b sending: rate 5 Mbit/s by TCLink's htb (15 kB burst) instead of tbf: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link a-b-1, b sending: reorder 5 dropped (TCLink has no such parameter)',
    ],
}

