#!/usr/bin/python3
# linklab lab 'nodeexec' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/node_exec.yaml`.
# Rates are scaled by 0.1 (auto (software-emulated VM (TCG))); re-export with --scale to change.
#
#   sudo python3 THIS.py            build it and open Mininet's CLI (pingall, h1 ping h2, iperf h1 h2)
#   sudo python3 THIS.py --test     pingall + don't-fragment pings at the path MTU; exit 1 on loss
#   sudo python3 THIS.py --mininet-shaping   shape with TCLink's htb instead (prints what differs)
#
# Mapped: hosts, Linux-bridge switches (no controller), one link per bond member, TCIntf
# parameters (delay/loss/limit) per interface and direction; bonds, switch LAGs, MTU of every
# interface, addresses, qdiscs TCIntf cannot build, offloads and sysctls are set after start.
# Then each node's exec: commands run in it, in order; a failing one stops the script.
# Differences from `linklab up`:
#   - names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab
#   - switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each
#   - container nodes (c1) are plain Mininet hosts: Mininet runs no images
#   - the exec: commands of switches (s1) run in the root namespace, where Mininet's switches are

LAB = {
    'name': 'nodeexec',
    'scale': 0.1,
    'hosts': {
        'pc1': {'main_intf': 'eth1', 'sysctls': {}},
        'c1': {'main_intf': 'eth1', 'sysctls': {}},
        'pc2': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {
        's1': {'stp': False},
    },
    'veths': [
        {'link': 'pc1-s1', 'a': ['pc1', 'eth1'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'c1-s1', 'a': ['c1', 'eth1'], 'b': ['s1', 's1-eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'pc2-s1', 'a': ['pc2', 'eth1'], 'b': ['s1', 's1-eth3'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [],
    'mtu': [
        ['pc1', 'eth1', 1500],
        ['s1', 's1-eth1', 1500],
        ['c1', 'eth1', 1500],
        ['s1', 's1-eth2', 1500],
        ['pc2', 'eth1', 1500],
        ['s1', 's1-eth3', 1500],
        ['s1', 's1', 1500],
    ],
    'up': [],
    'addresses': [
        {'node': 'pc1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'c1', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'pc2', 'ifname': 'eth1', 'ipv4': '10.77.0.3/24', 'ipv6': 'fd00:77::3/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [],
    'exec': {
        'pc1': [['ip', 'link', 'set', 'eth1', 'up'], ['ip', 'addr', 'add', '192.168.11.2/24', 'dev', 'eth1'], ['ip', 'route', 'add', '192.168.0.0/16', 'via', '192.168.11.1'], ['sh', '-c', 'echo ready > /dev/null']],
        'c1': [['ip', '-br', 'addr']],
        's1': [['bridge', 'link', 'show']],
    },
    'checks': [
        {'from': 'pc1', 'to': 'c1', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'pc1-s1+c1-s1', 'size': 1472},
        {'from': 'pc1', 'to': 'pc2', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'pc1-s1+pc2-s1', 'size': 1472},
        {'from': 'c1', 'to': 'pc1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'c1-s1+pc1-s1', 'size': 1472},
        {'from': 'c1', 'to': 'pc2', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'c1-s1+pc2-s1', 'size': 1472},
        {'from': 'pc2', 'to': 'pc1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'pc2-s1+pc1-s1', 'size': 1472},
        {'from': 'pc2', 'to': 'c1', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'pc2-s1+c1-s1', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "switches are Linux bridges in the root namespace (Mininet's LinuxBridge), not one namespace each",
        'container nodes (c1) are plain Mininet hosts: Mininet runs no images',
        "the exec: commands of switches (s1) run in the root namespace, where Mininet's switches are",
    ],
    'mininet_shaping_notes': [],
}

