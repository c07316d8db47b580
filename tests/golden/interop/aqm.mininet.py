#!/usr/bin/python3
# linklab lab 'aqm' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/aqm.yaml`.
# Rates are scaled by 1 (topology file); re-export with --scale to change.
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
# in-order jitter, >1000 Mbit/s, duplicate/corrupt/reorder): h1:eth1, h1:eth2, h2:eth1, h2:eth2, h3:bond0-m0, h3:bond0-m1, s1:s1-eth1, s1:s1-eth2, s1:s1-eth3, s1:s1-eth4

LAB = {
    'name': 'aqm',
    'scale': 1.0,
    'hosts': {
        'h1': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_ecn': '1'}},
        'h2': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_ecn': '1'}},
        'h3': {'main_intf': 'bond0', 'sysctls': {'net.ipv4.tcp_ecn': '1'}},
    },
    'switches': {
        's1': {'stp': False},
    },
    'veths': [
        {'link': 'h1-s1', 'a': ['h1', 'eth1'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': {'bw': 20.0}, 'tclink_b': None, 'mininet_b': {'bw': 20.0}},
        {'link': 'h2-s1', 'a': ['h2', 'eth1'], 'b': ['s1', 's1-eth2'], 'tclink_a': None, 'mininet_a': {'delay': '10000us', 'max_queue_size': 249, 'bw': 50.0}, 'tclink_b': None, 'mininet_b': {'delay': '10000us', 'max_queue_size': 249, 'bw': 50.0}},
        {'link': 'h3-s1', 'a': ['h3', 'bond0-m0'], 'b': ['s1', 's1-eth3'], 'tclink_a': None, 'mininet_a': {'bw': 40.0}, 'tclink_b': None, 'mininet_b': {'bw': 40.0}},
        {'link': 'h3-s1', 'a': ['h3', 'bond0-m1'], 'b': ['s1', 's1-eth4'], 'tclink_a': None, 'mininet_a': {'bw': 40.0}, 'tclink_b': None, 'mininet_b': {'bw': 40.0}},
        {'link': 'h1-h2', 'a': ['h1', 'eth2'], 'b': ['h2', 'eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [
        {'node': 'h3', 'ifname': 'bond0', 'mode': 'active-backup', 'create_args': ['mode', 'active-backup', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
    ],
    'mtu': [
        ['h1', 'eth1', 1500],
        ['s1', 's1-eth1', 1500],
        ['h2', 'eth1', 1500],
        ['s1', 's1-eth2', 1500],
        ['s1', 's1-eth3', 1500],
        ['s1', 's1-eth4', 1500],
        ['h3', 'bond0', 1500],
        ['h1', 'eth2', 1500],
        ['h2', 'eth2', 1500],
        ['s1', 's1', 1500],
    ],
    'up': [
        ['h3', 'bond0'],
    ],
    'addresses': [
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'h2', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'h3', 'ifname': 'bond0', 'ipv4': '10.77.0.3/24', 'ipv6': 'fd00:77::3/64'},
        {'node': 'h1', 'ifname': 'eth2', 'ipv4': '10.77.1.1/24', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'h2', 'ifname': 'eth2', 'ipv4': '10.77.1.2/24', 'ipv6': 'fd00:77:0:1::2/64'},
    ],
    'qdiscs': [
        {'node': 'h1', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '20000000bit', 'ceil', '20000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'fq_codel', 'limit', '166', 'target', '5000us', 'interval', '100000us', 'ecn']]},
        {'node': 's1', 'ifname': 's1-eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 's1-eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 's1-eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '20000000bit', 'ceil', '20000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 's1-eth1', 'parent', '1:1', 'handle', '10:', 'pie', 'limit', '166', 'target', '15000us', 'noecn']]},
        {'node': 'h2', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '50000000bit', 'ceil', '50000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '10000us', 'limit', '249'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '10:1', 'handle', '20:', 'cake', 'unlimited', 'rtt', '40000us', 'triple-isolate', 'memlimit', '312500']]},
        {'node': 's1', 'ifname': 's1-eth2', 'tc': [['tc', 'qdisc', 'add', 'dev', 's1-eth2', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 's1-eth2', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '50000000bit', 'ceil', '50000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 's1-eth2', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '10000us', 'limit', '5860'], ['tc', 'qdisc', 'add', 'dev', 's1-eth2', 'parent', '10:1', 'handle', '20:', 'cake', 'unlimited', 'rtt', '40000us', 'triple-isolate', 'memlimit', '312500']]},
        {'node': 'h3', 'ifname': 'bond0-m0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '40000000bit', 'ceil', '40000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'parent', '1:1', 'handle', '10:', 'red', 'limit', '100000', 'min', '25000', 'max', '75000', 'avpkt', '1514', 'bandwidth', '40000000bit', 'ecn']]},
        {'node': 's1', 'ifname': 's1-eth3', 'tc': [['tc', 'qdisc', 'add', 'dev', 's1-eth3', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 's1-eth3', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '40000000bit', 'ceil', '40000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 's1-eth3', 'parent', '1:1', 'handle', '10:', 'red', 'limit', '100000', 'min', '25000', 'max', '75000', 'avpkt', '1514', 'bandwidth', '40000000bit', 'ecn']]},
        {'node': 'h3', 'ifname': 'bond0-m1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '40000000bit', 'ceil', '40000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'parent', '1:1', 'handle', '10:', 'codel', 'limit', '67', 'noecn']]},
        {'node': 's1', 'ifname': 's1-eth4', 'tc': [['tc', 'qdisc', 'add', 'dev', 's1-eth4', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 's1-eth4', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '40000000bit', 'ceil', '40000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 's1-eth4', 'parent', '1:1', 'handle', '10:', 'codel', 'limit', '67', 'noecn']]},
        {'node': 'h1', 'ifname': 'eth2', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth2', 'root', 'handle', '1:', 'fq', 'flow_limit', '50', 'nopacing']]},
        {'node': 'h2', 'ifname': 'eth2', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth2', 'root', 'handle', '1:', 'fq', 'flow_limit', '50', 'nopacing']]},
    ],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'h1-s1+h2-s1', 'size': 1472},
        {'from': 'h1', 'to': 'h3', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'h1-s1+h3-s1', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'h2-s1+h1-s1', 'size': 1472},
        {'from': 'h2', 'to': 'h3', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'h2-s1+h3-s1', 'size': 1472},
        {'from': 'h3', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'h3-s1+h1-s1', 'size': 1472},
        {'from': 'h3', 'to': 'h2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'h3-s1+h2-s1', 'size': 1472},
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.1.2', 'mtu': 1500, 'via': 'h1-h2', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.1.1', 'mtu': 1500, 'via': 'h1-h2', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each",
    ],
    'mininet_shaping_notes': [
        "link h1-s1, h1 sending: rate 20 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link h1-s1, h1 sending: aqm fq_codel dropped (TCLink queues in its own FIFO or RED)',
        "link h1-s1, s1 sending: rate 20 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link h1-s1, s1 sending: aqm pie dropped (TCLink queues in its own FIFO or RED)',
        "link h2-s1, h2 sending: rate 50 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link h2-s1, h2 sending: aqm cake dropped (TCLink queues in its own FIFO or RED)',
        "link h2-s1, s1 sending: queue of 312500 bytes as TCLink's netem limit, 249 packets (GSO packets count as one: it can hold more)",
        "link h2-s1, s1 sending: rate 50 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link h2-s1, s1 sending: aqm cake dropped (TCLink queues in its own FIFO or RED)',
        "link h3-s1 member 0, h3 sending: rate 40 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link h3-s1 member 0, h3 sending: aqm red dropped (TCLink queues in its own FIFO or RED)',
        "link h3-s1 member 0, s1 sending: rate 40 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link h3-s1 member 0, s1 sending: aqm red dropped (TCLink queues in its own FIFO or RED)',
        "link h3-s1 member 1, h3 sending: rate 40 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link h3-s1 member 1, h3 sending: aqm codel dropped (TCLink queues in its own FIFO or RED)',
        "link h3-s1 member 1, s1 sending: rate 40 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link h3-s1 member 1, s1 sending: aqm codel dropped (TCLink queues in its own FIFO or RED)',
        'link h1-h2, h1 sending: aqm fq dropped (TCLink queues in its own FIFO or RED)',
        'link h1-h2, h2 sending: aqm fq dropped (TCLink queues in its own FIFO or RED)',
    ],
}

