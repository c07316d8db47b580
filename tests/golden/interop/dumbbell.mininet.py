#!/usr/bin/python3
# linklab lab 'dumbbell' for Mininet 2.3 — exported by `linklab export --to mininet topologies/dumbbell.yaml`.
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
# in-order jitter, >1000 Mbit/s, duplicate/corrupt/reorder): ra:eth3, rb:eth1

LAB = {
    'name': 'dumbbell',
    'scale': 0.1,
    'hosts': {
        'snd1': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_congestion_control': 'cubic', 'net.ipv4.tcp_ecn': '1'}},
        'snd2': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_congestion_control': 'cubic', 'net.ipv4.tcp_ecn': '1'}},
        'rcv1': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_congestion_control': 'cubic', 'net.ipv4.tcp_ecn': '1'}},
        'rcv2': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_congestion_control': 'cubic', 'net.ipv4.tcp_ecn': '1'}},
    },
    'switches': {},
    'veths': [
        {'link': 's1', 'a': ['snd1', 'eth1'], 'b': ['ra', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 's2', 'a': ['snd2', 'eth1'], 'b': ['ra', 'eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'bottleneck', 'a': ['ra', 'eth3'], 'b': ['rb', 'eth1'], 'tclink_a': None, 'mininet_a': {'delay': '10000us', 'max_queue_size': 909, 'bw': 100.0}, 'tclink_b': None, 'mininet_b': {'delay': '10000us', 'max_queue_size': 909, 'bw': 100.0}},
        {'link': 'r1', 'a': ['rb', 'eth2'], 'b': ['rcv1', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'r2', 'a': ['rb', 'eth3'], 'b': ['rcv2', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [],
    'mtu': [
        ['snd1', 'eth1', 1500],
        ['ra', 'eth1', 1500],
        ['snd2', 'eth1', 1500],
        ['ra', 'eth2', 1500],
        ['ra', 'eth3', 1500],
        ['rb', 'eth1', 1500],
        ['rb', 'eth2', 1500],
        ['rcv1', 'eth1', 1500],
        ['rb', 'eth3', 1500],
        ['rcv2', 'eth1', 1500],
    ],
    'up': [],
    'addresses': [
        {'node': 'snd1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'ra', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'snd2', 'ifname': 'eth1', 'ipv4': '10.77.1.1/24', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'ra', 'ifname': 'eth2', 'ipv4': '10.77.1.2/24', 'ipv6': 'fd00:77:0:1::2/64'},
        {'node': 'ra', 'ifname': 'eth3', 'ipv4': '10.77.2.1/24', 'ipv6': 'fd00:77:0:2::1/64'},
        {'node': 'rb', 'ifname': 'eth1', 'ipv4': '10.77.2.2/24', 'ipv6': 'fd00:77:0:2::2/64'},
        {'node': 'rb', 'ifname': 'eth2', 'ipv4': '10.77.3.1/24', 'ipv6': 'fd00:77:0:3::1/64'},
        {'node': 'rcv1', 'ifname': 'eth1', 'ipv4': '10.77.3.2/24', 'ipv6': 'fd00:77:0:3::2/64'},
        {'node': 'rb', 'ifname': 'eth3', 'ipv4': '10.77.4.1/24', 'ipv6': 'fd00:77:0:4::1/64'},
        {'node': 'rcv2', 'ifname': 'eth1', 'ipv4': '10.77.4.2/24', 'ipv6': 'fd00:77:0:4::2/64'},
    ],
    'qdiscs': [
        {'node': 'ra', 'ifname': 'eth3', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth3', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth3', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth3', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '10000us', 'limit', '21486'], ['tc', 'qdisc', 'add', 'dev', 'eth3', 'parent', '10:1', 'handle', '20:', 'bfifo', 'limit', '1250000']]},
        {'node': 'rb', 'ifname': 'eth1', 'tc': [['tc', 'qdisc', 'add', 'dev', 'eth1', 'root', 'handle', '1:', 'htb', 'default', '1'], ['tc', 'class', 'add', 'dev', 'eth1', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '100000000bit', 'ceil', '100000000bit', 'burst', '64000', 'cburst', '64000'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '1:1', 'handle', '10:', 'netem', 'delay', '10000us', 'limit', '21486'], ['tc', 'qdisc', 'add', 'dev', 'eth1', 'parent', '10:1', 'handle', '20:', 'bfifo', 'limit', '1250000']]},
    ],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'snd1', 'to': 'snd2', 'to_addr': '10.77.1.1', 'mtu': 1500, 'via': 's1+s2', 'size': 1472},
        {'from': 'snd1', 'to': 'rcv1', 'to_addr': '10.77.3.2', 'mtu': 1500, 'via': 's1+bottleneck+r1', 'size': 1472},
        {'from': 'snd1', 'to': 'rcv2', 'to_addr': '10.77.4.2', 'mtu': 1500, 'via': 's1+bottleneck+r2', 'size': 1472},
        {'from': 'snd2', 'to': 'snd1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 's2+s1', 'size': 1472},
        {'from': 'snd2', 'to': 'rcv1', 'to_addr': '10.77.3.2', 'mtu': 1500, 'via': 's2+bottleneck+r1', 'size': 1472},
        {'from': 'snd2', 'to': 'rcv2', 'to_addr': '10.77.4.2', 'mtu': 1500, 'via': 's2+bottleneck+r2', 'size': 1472},
        {'from': 'rcv1', 'to': 'snd1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'r1+bottleneck+s1', 'size': 1472},
        {'from': 'rcv1', 'to': 'snd2', 'to_addr': '10.77.1.1', 'mtu': 1500, 'via': 'r1+bottleneck+s2', 'size': 1472},
        {'from': 'rcv1', 'to': 'rcv2', 'to_addr': '10.77.4.2', 'mtu': 1500, 'via': 'r1+r2', 'size': 1472},
        {'from': 'rcv2', 'to': 'snd1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'r2+bottleneck+s1', 'size': 1472},
        {'from': 'rcv2', 'to': 'snd2', 'to_addr': '10.77.1.1', 'mtu': 1500, 'via': 'r2+bottleneck+s2', 'size': 1472},
        {'from': 'rcv2', 'to': 'rcv1', 'to_addr': '10.77.3.2', 'mtu': 1500, 'via': 'r2+r1', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
    ],
    'mininet_shaping_notes': [
        "link bottleneck, ra sending: queue of 1250000 bytes as TCLink's netem limit, 909 packets (GSO packets count as one: it can hold more)",
        "link bottleneck, ra sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
        "link bottleneck, rb sending: queue of 1250000 bytes as TCLink's netem limit, 909 packets (GSO packets count as one: it can hold more)",
        "link bottleneck, rb sending: rate 100 Mbit/s by TCLink's htb (15 kB burst) instead of htb: measured 80-86 % of theoretical TCP goodput, netem's rate 99 %",
    ],
    'routers': {
        'ra': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_congestion_control': 'cubic', 'net.ipv4.tcp_ecn': '1'}},
        'rb': {'main_intf': 'eth1', 'sysctls': {'net.ipv4.tcp_congestion_control': 'cubic', 'net.ipv4.tcp_ecn': '1'}},
    },
    'routes': {
        'snd1': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77::2', 'dev', 'eth1']],
        'snd2': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.1.2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:1::2', 'dev', 'eth1']],
        'rcv1': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.3.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:3::1', 'dev', 'eth1']],
        'rcv2': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.4.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:4::1', 'dev', 'eth1']],
        'ra': [['ip', 'route', 'replace', '10.77.3.0/24', 'via', '10.77.2.2', 'dev', 'eth3'], ['ip', 'route', 'replace', '10.77.4.0/24', 'via', '10.77.2.2', 'dev', 'eth3'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:3::/64', 'via', 'fd00:77:0:2::2', 'dev', 'eth3'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:4::/64', 'via', 'fd00:77:0:2::2', 'dev', 'eth3']],
        'rb': [['ip', 'route', 'replace', '10.77.0.0/24', 'via', '10.77.2.1', 'dev', 'eth1'], ['ip', 'route', 'replace', '10.77.1.0/24', 'via', '10.77.2.1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77::/64', 'via', 'fd00:77:0:2::1', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', 'fd00:77:0:1::/64', 'via', 'fd00:77:0:2::1', 'dev', 'eth1']],
    },
    'frr': {},
    'frr_subnets': [],
}

