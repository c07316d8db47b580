#!/usr/bin/python3
# linklab lab 'rrreorder' for Mininet 2.3 — exported by `linklab export --to mininet topologies/rr_reorder.yaml`.
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
# Applied with linklab's own tc commands (TCIntf would differ: netem rate, tbf, htb burst,
# in-order jitter, >1000 Mbit/s, duplicate/corrupt/reorder): h1:bond0-m0, h1:bond0-m1, h2:bond0-m0, h2:bond0-m1

LAB = {
    'name': 'rrreorder',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'bond0', 'sysctls': {}},
        'h2': {'main_intf': 'bond0', 'sysctls': {}},
    },
    'switches': {},
    'veths': [
        {'link': 'bond', 'a': ['h1', 'bond0-m0'], 'b': ['h2', 'bond0-m0'], 'tclink_a': None, 'mininet_a': {'delay': '100us', 'max_queue_size': 84, 'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'delay': '100us', 'max_queue_size': 84, 'bw': 100.0}},
        {'link': 'bond', 'a': ['h1', 'bond0-m1'], 'b': ['h2', 'bond0-m1'], 'tclink_a': None, 'mininet_a': {'delay': '600us', 'max_queue_size': 88, 'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'delay': '600us', 'max_queue_size': 88, 'bw': 100.0}},
    ],
    'bonds': [
        {'node': 'h1', 'ifname': 'bond0', 'mode': 'balance-rr', 'create_args': ['mode', 'balance-rr', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
        {'node': 'h2', 'ifname': 'bond0', 'mode': 'balance-rr', 'create_args': ['mode', 'balance-rr', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
    ],
    'mtu': [
        ['h1', 'bond0', 1500],
        ['h2', 'bond0', 1500],
    ],
    'up': [
        ['h1', 'bond0'],
        ['h2', 'bond0'],
    ],
    'addresses': [
        {'node': 'h1', 'ifname': 'bond0', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'h2', 'ifname': 'bond0', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
    ],
    'qdiscs': [
        {'node': 'h1', 'ifname': 'bond0-m0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '100us', 'limit', '84']]},
        {'node': 'h2', 'ifname': 'bond0-m0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '100us', 'limit', '84']]},
        {'node': 'h1', 'ifname': 'bond0-m1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '600us', 'limit', '88']]},
        {'node': 'h2', 'ifname': 'bond0-m1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '600us', 'limit', '88']]},
    ],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'bond', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'bond', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
    ],
    'mininet_shaping_notes': [
        "link bond member 0, h1 sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link bond member 0, h2 sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link bond member 1, h1 sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link bond member 1, h2 sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
    ],
}

