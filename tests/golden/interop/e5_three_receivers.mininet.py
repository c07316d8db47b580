#!/usr/bin/python3
# linklab lab 'e5' for Mininet 2.3 — exported by `linklab export --to mininet topologies/e5_three_receivers.yaml`.
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
# Applied with linklab's own tc commands (TCIntf would differ: netem rate, tbf, htb burst,
# in-order jitter, >1000 Mbit/s, duplicate/corrupt/reorder): rxa:eth1, rxb:eth1, rxc:eth1, snd:bond0-m0, snd:bond0-m1, sw:sw-eth1, sw:sw-eth2, sw:sw-eth3, sw:sw-eth4, sw:sw-eth5

LAB = {
    'name': 'e5',
    'scale': 0.1,
    'hosts': {
        'snd': {'main_intf': 'bond0', 'sysctls': {'net.ipv4.tcp_congestion_control': 'cubic'}},
        'rxa': {'main_intf': 'eth1', 'sysctls': {}},
        'rxb': {'main_intf': 'eth1', 'sysctls': {}},
        'rxc': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_rmem': '4096 13107 838860'}},
    },
    'switches': {
        'sw': {'stp': False},
    },
    'veths': [
        {'link': 'sndbond', 'a': ['snd', 'bond0-m0'], 'b': ['sw', 'sw-eth1'], 'tclink_a': None, 'mininet_a': {'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'bw': 100.0}},
        {'link': 'sndbond', 'a': ['snd', 'bond0-m1'], 'b': ['sw', 'sw-eth2'], 'tclink_a': None, 'mininet_a': {'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'bw': 100.0}},
        {'link': 'toa', 'a': ['sw', 'sw-eth3'], 'b': ['rxa', 'eth1'], 'tclink_a': None, 'mininet_a': {'delay': '125us', 'jitter': '15us', 'max_queue_size': 147, 'bw': 1000.0}, 'tclink_b': None, 'mininet_b': {'delay': '125us', 'jitter': '15us', 'max_queue_size': 112, 'bw': 1000.0}},
        {'link': 'tob', 'a': ['sw', 'sw-eth4'], 'b': ['rxb', 'eth1'], 'tclink_a': None, 'mininet_a': {'delay': '150us', 'jitter': '100us', 'max_queue_size': 156, 'bw': 1000.0}, 'tclink_b': None, 'mininet_b': {'delay': '150us', 'jitter': '100us', 'max_queue_size': 121, 'bw': 1000.0}},
        {'link': 'toc', 'a': ['sw', 'sw-eth5'], 'b': ['rxc', 'eth1'], 'tclink_a': None, 'mininet_a': {'delay': '14000us', 'jitter': '100us', 'max_queue_size': 302, 'bw': 220.0}, 'tclink_b': None, 'mininet_b': {'delay': '14000us', 'jitter': '100us', 'max_queue_size': 357, 'bw': 220.0}},
    ],
    'bonds': [
        {'node': 'snd', 'ifname': 'bond0', 'mode': 'balance-rr', 'create_args': ['mode', 'balance-rr', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
        {'node': 'sw', 'ifname': 'sw-lag0', 'mode': 'balance-xor', 'create_args': ['mode', 'balance-xor', 'miimon', '100', 'xmit_hash_policy', 'layer3+4'], 'primary': None, 'members': ['sw-eth1', 'sw-eth2'], 'switch': 'sw'},
    ],
    'mtu': [
        ['snd', 'bond0', 1500],
        ['sw', 'sw-lag0', 1500],
        ['sw', 'sw-eth3', 1500],
        ['rxa', 'eth1', 1500],
        ['sw', 'sw-eth4', 1500],
        ['rxb', 'eth1', 1500],
        ['sw', 'sw-eth5', 1500],
        ['rxc', 'eth1', 1500],
        ['sw', 'sw', 1500],
    ],
    'up': [
        ['snd', 'bond0'],
        ['sw', 'sw-lag0'],
    ],
    'addresses': [
        {'node': 'snd', 'ifname': 'bond0', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'rxa', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'rxb', 'ifname': 'eth1', 'ipv4': '10.77.0.3/24', 'ipv6': 'fd00:77::3/64'},
        {'node': 'rxc', 'ifname': 'eth1', 'ipv4': '10.77.0.4/24', 'ipv6': 'fd00:77::4/64'},
    ],
    'qdiscs': [
        {'node': 'snd', 'ifname': 'bond0-m0', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m0', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '125000']]},
        {'node': 'sw', 'ifname': 'sw-eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'sw-eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'sw-eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'sw-eth1', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '67028']]},
        {'node': 'snd', 'ifname': 'bond0-m1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'bond0-m1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'bond0-m1', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '125000']]},
        {'node': 'sw', 'ifname': 'sw-eth2', 'tc': [['tc', 'qdisc', 'add', 'dev', 'sw-eth2', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'sw-eth2', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'sw-eth2', 'parent', '1:1', 'handle', '10:', 'bfifo', 'limit', '67028']]},
        {'node': 'sw', 'ifname': 'sw-eth3', 'tc': [['tc', 'qdisc', 'add', 'dev', 'sw-eth3', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'sw-eth3', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '1000000000bit', 'ceil', '1000000000bit', 'burst', '200000', 'cburst', '200000'], ['tc', 'qdisc', 'add', 'dev', 'sw-eth3', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '125us', '15us', 'limit', '3447', 'rate', '30000000000bit'], ['tc', 'qdisc', 'add', 'dev', 'sw-eth3', 'parent', '10:1', 'handle', '20:', 'bfifo', 'limit', '203028']]},
        {'node': 'rxa', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '1000000000bit', 'ceil', '1000000000bit', 'burst', '200000', 'cburst', '200000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '125us', '15us', 'limit', '112', 'rate', '30000000000bit']]},
        {'node': 'sw', 'ifname': 'sw-eth4', 'tc': [['tc', 'qdisc', 'add', 'dev', 'sw-eth4', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'sw-eth4', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '1000000000bit', 'ceil', '1000000000bit', 'burst', '200000', 'cburst', '200000'], ['tc', 'qdisc', 'add', 'dev', 'sw-eth4', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '150us', '100us', 'limit', '3662', 'rate', '30000000000bit'], ['tc', 'qdisc', 'add', 'dev', 'sw-eth4', 'parent', '10:1', 'handle', '20:', 'bfifo', 'limit', '203028']]},
        {'node': 'rxb', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '1000000000bit', 'ceil', '1000000000bit', 'burst', '200000', 'cburst', '200000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '150us', '100us', 'limit', '121', 'rate', '30000000000bit']]},
        {'node': 'sw', 'ifname': 'sw-eth5', 'tc': [['tc', 'qdisc', 'add', 'dev', 'sw-eth5', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'sw-eth5', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '220000000bit', 'ceil', '220000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'sw-eth5', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '14000us', '100us', 'limit', '7107', 'rate', '30000000000bit'], ['tc', 'qdisc', 'add', 'dev', 'sw-eth5', 'parent', '10:1', 'handle', '20:', 'bfifo', 'limit', '67028']]},
        {'node': 'rxc', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '220000000bit', 'ceil', '220000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '14000us', '100us', 'limit', '357', 'rate', '30000000000bit']]},
    ],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'snd', 'to': 'rxa', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'sndbond+toa', 'size': 1472},
        {'from': 'snd', 'to': 'rxb', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'sndbond+tob', 'size': 1472},
        {'from': 'snd', 'to': 'rxc', 'to_addr': '10.77.0.4', 'mtu': 1500, 'via': 'sndbond+toc', 'size': 1472},
        {'from': 'rxa', 'to': 'snd', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'toa+sndbond', 'size': 1472},
        {'from': 'rxa', 'to': 'rxb', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'toa+tob', 'size': 1472},
        {'from': 'rxa', 'to': 'rxc', 'to_addr': '10.77.0.4', 'mtu': 1500, 'via': 'toa+toc', 'size': 1472},
        {'from': 'rxb', 'to': 'snd', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'tob+sndbond', 'size': 1472},
        {'from': 'rxb', 'to': 'rxa', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'tob+toa', 'size': 1472},
        {'from': 'rxb', 'to': 'rxc', 'to_addr': '10.77.0.4', 'mtu': 1500, 'via': 'tob+toc', 'size': 1472},
        {'from': 'rxc', 'to': 'snd', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'toc+sndbond', 'size': 1472},
        {'from': 'rxc', 'to': 'rxa', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'toc+toa', 'size': 1472},
        {'from': 'rxc', 'to': 'rxb', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'toc+tob', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each",
    ],
    'mininet_shaping_notes': [
        "link sndbond member 0, snd sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link sndbond member 0, sw sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link sndbond member 1, snd sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link sndbond member 1, sw sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link toa, sw sending: queue of 203028 bytes as TCLink's netem limit, 147 packets (GSO packets count as one: it can hold more)",
        "link toa, sw sending: rate 1000 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link toa, sw sending: jitter 15us reorders packets under TCLink (linklab keeps them in order)',
        "link toa, rxa sending: rate 1000 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link toa, rxa sending: jitter 15us reorders packets under TCLink (linklab keeps them in order)',
        "link tob, sw sending: queue of 203028 bytes as TCLink's netem limit, 156 packets (GSO packets count as one: it can hold more)",
        "link tob, sw sending: rate 1000 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link tob, sw sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link tob, rxb sending: rate 1000 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link tob, rxb sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link toc, sw sending: queue of 67028 bytes as TCLink's netem limit, 302 packets (GSO packets count as one: it can hold more)",
        "link toc, sw sending: rate 220 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link toc, sw sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
        "link toc, rxc sending: rate 220 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        'link toc, rxc sending: jitter 100us reorders packets under TCLink (linklab keeps them in order)',
    ],
}

