#!/usr/bin/python3
# linklab lab 'queues' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/queues.yaml`.
# Rates are scaled by 0.1 (topology file); re-export with --scale to change.
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
# Applied with linklab's own tc commands (TCIntf would differ: netem rate, tbf, htb burst,
# in-order jitter, >1000 Mbit/s, duplicate/corrupt/reorder): a:bond0-m0, a:bond0-m1, a:eth1, a:eth2, b:bond0-m0, b:bond0-m1, b:eth1, s1:s1-eth1

LAB = {
    'name': 'queues',
    'scale': 0.1,
    'hosts': {
        'a': {'main_intf': 'eth1', 'sysctls': {}},
        'b': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {
        's1': {'stp': False},
    },
    'veths': [
        {'link': 'a-b-0', 'a': ['a', 'eth1'], 'b': ['b', 'eth1'], 'tclink_a': None, 'mininet_a': {'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'bw': 100.0}},
        {'link': 'a-b-1', 'a': ['a', 'bond0-m0'], 'b': ['b', 'bond0-m0'], 'tclink_a': None, 'mininet_a': {'delay': '1000us', 'max_queue_size': 19, 'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'delay': '1000us', 'max_queue_size': 19, 'bw': 100.0}},
        {'link': 'a-b-1', 'a': ['a', 'bond0-m1'], 'b': ['b', 'bond0-m1'], 'tclink_a': None, 'mininet_a': {'delay': '1000us', 'max_queue_size': 92, 'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'delay': '1000us', 'max_queue_size': 92, 'bw': 100.0}},
        {'link': 'a-s1', 'a': ['a', 'eth2'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': {'bw': 10.0}, 'tclink_b': None, 'mininet_b': {'bw': 10.0}},
    ],
    'bonds': [
        {'node': 'a', 'ifname': 'bond0', 'mode': 'active-backup', 'create_args': ['mode', 'active-backup', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
        {'node': 'b', 'ifname': 'bond0', 'mode': 'active-backup', 'create_args': ['mode', 'active-backup', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
    ],
    'mtu': [
        ['a', 'eth1', 1500],
        ['b', 'eth1', 1500],
        ['a', 'bond0', 1500],
        ['b', 'bond0', 1500],
        ['a', 'eth2', 1500],
        ['s1', 's1-eth1', 1500],
        ['s1', 's1', 1500],
    ],
    'up': [
        ['a', 'bond0'],
        ['b', 'bond0'],
    ],
    'addresses': [
        {'node': 'a', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'b', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'a', 'ifname': 'bond0', 'ipv4': '10.77.1.1/24', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'b', 'ifname': 'bond0', 'ipv4': '10.77.1.2/24', 'ipv6': 'fd00:77:0:1::2/64'},
        {'node': 'a', 'ifname': 'eth2', 'ipv4': '10.77.2.1/24', 'ipv6': 'fd00:77:0:2::1/64'},
    ],
    'qdiscs': [
        {'node': 'a', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '62500']]},
        {'node': 'b', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '26214']]},
        {'node': 'a', 'ifname': 'bond0-m0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '1000us', 'limit', '19']]},
        {'node': 'b', 'ifname': 'bond0-m0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '1000us', 'limit', '19']]},
        {'node': 'a', 'ifname': 'bond0-m1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '1000us', 'limit', '92']]},
        {'node': 'b', 'ifname': 'bond0-m1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '1000us', 'limit', '92']]},
        {'node': 'a', 'ifname': 'eth2', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth2', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth2', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '10000000bit', 'ceil', '10000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth2', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '12500']]},
        {'node': 's1', 'ifname': 's1-eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 's1-eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 's1-eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '10000000bit', 'ceil', '10000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 's1-eth1', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '67028']]},
    ],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'a', 'to': 'b', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'a-b-0', 'size': 1472},
        {'from': 'b', 'to': 'a', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'a-b-0', 'size': 1472},
        {'from': 'a', 'to': 'b', 'to_addr': '10.77.1.2', 'mtu': 1500, 'via': 'a-b-1', 'size': 1472},
        {'from': 'b', 'to': 'a', 'to_addr': '10.77.1.1', 'mtu': 1500, 'via': 'a-b-1', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each",
    ],
    'mininet_shaping_notes': [
        "link a-b-0, a sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link a-b-0, b sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link a-b-1 member 0, a sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link a-b-1 member 0, b sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link a-b-1 member 1, a sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link a-b-1 member 1, b sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link a-s1, a sending: rate 10 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link a-s1, s1 sending: rate 10 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
    ],
}

