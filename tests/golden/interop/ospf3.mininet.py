#!/usr/bin/python3
# linklab lab 'ospf3' for Mininet 2.3 — exported by `linklab export --to mininet topologies/ospf3.yaml`.
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
# routing: ospf: each router runs FRR's zebra, ospfd and ospf6d (Debian's frr package, in
# /usr/lib/frr) in its namespace, loaded with the frr.conf linklab generates (below, in LAB),
# as `linklab up` runs them; the lab is ready once every router has a route to every subnet.
# Differences from `linklab up`:
#   - names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab
#   - each router's FRR (zebra, ospfd, ospf6d) runs in the router's namespace as in linklab, its state in /var/run/frr/<name> (FRR's -N), stopped and removed at the end

LAB = {
    'name': 'ospf3',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'eth1', 'sysctls': {}},
        'h2': {'main_intf': 'eth1', 'sysctls': {}},
        'h3': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {},
    'veths': [
        {'link': 'h1-r1', 'a': ['h1', 'eth1'], 'b': ['r1', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h2-r2', 'a': ['h2', 'eth1'], 'b': ['r2', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'h3-r3', 'a': ['h3', 'eth1'], 'b': ['r3', 'eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'r1r2', 'a': ['r1', 'eth2'], 'b': ['r2', 'eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'r2r3', 'a': ['r2', 'eth3'], 'b': ['r3', 'eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'r1r3', 'a': ['r1', 'eth3'], 'b': ['r3', 'eth3'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [],
    'mtu': [
        ['h1', 'eth1', 1500],
        ['r1', 'eth1', 1500],
        ['h2', 'eth1', 1500],
        ['r2', 'eth1', 1500],
        ['h3', 'eth1', 1500],
        ['r3', 'eth1', 1500],
        ['r1', 'eth2', 1500],
        ['r2', 'eth2', 1500],
        ['r2', 'eth3', 1500],
        ['r3', 'eth2', 1500],
        ['r1', 'eth3', 1500],
        ['r3', 'eth3', 1500],
    ],
    'up': [],
    'addresses': [
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'r1', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'h2', 'ifname': 'eth1', 'ipv4': '10.77.1.1/24', 'ipv6': 'fd00:77:0:1::1/64'},
        {'node': 'r2', 'ifname': 'eth1', 'ipv4': '10.77.1.2/24', 'ipv6': 'fd00:77:0:1::2/64'},
        {'node': 'h3', 'ifname': 'eth1', 'ipv4': '10.77.2.1/24', 'ipv6': 'fd00:77:0:2::1/64'},
        {'node': 'r3', 'ifname': 'eth1', 'ipv4': '10.77.2.2/24', 'ipv6': 'fd00:77:0:2::2/64'},
        {'node': 'r1', 'ifname': 'eth2', 'ipv4': '10.77.3.1/24', 'ipv6': 'fd00:77:0:3::1/64'},
        {'node': 'r2', 'ifname': 'eth2', 'ipv4': '10.77.3.2/24', 'ipv6': 'fd00:77:0:3::2/64'},
        {'node': 'r2', 'ifname': 'eth3', 'ipv4': '10.77.4.1/24', 'ipv6': 'fd00:77:0:4::1/64'},
        {'node': 'r3', 'ifname': 'eth2', 'ipv4': '10.77.4.2/24', 'ipv6': 'fd00:77:0:4::2/64'},
        {'node': 'r1', 'ifname': 'eth3', 'ipv4': '10.77.5.1/24', 'ipv6': 'fd00:77:0:5::1/64'},
        {'node': 'r3', 'ifname': 'eth3', 'ipv4': '10.77.5.2/24', 'ipv6': 'fd00:77:0:5::2/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.1.1', 'mtu': 1500, 'via': 'h1-r1+r1r2+h2-r2', 'size': 1472},
        {'from': 'h1', 'to': 'h3', 'to_addr': '10.77.2.1', 'mtu': 1500, 'via': 'h1-r1+r1r2+r2r3+h3-r3', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'h2-r2+r1r2+h1-r1', 'size': 1472},
        {'from': 'h2', 'to': 'h3', 'to_addr': '10.77.2.1', 'mtu': 1500, 'via': 'h2-r2+r2r3+h3-r3', 'size': 1472},
        {'from': 'h3', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'h3-r3+r2r3+r1r2+h1-r1', 'size': 1472},
        {'from': 'h3', 'to': 'h2', 'to_addr': '10.77.1.1', 'mtu': 1500, 'via': 'h3-r3+r2r3+h2-r2', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "each router's FRR (zebra, ospfd, ospf6d) runs in the router's namespace as in linklab, its state in /var/run/frr/<name> (FRR's -N), stopped and removed at the end",
    ],
    'mininet_shaping_notes': [],
    'routers': {
        'r1': {'main_intf': 'eth1', 'sysctls': {}},
        'r2': {'main_intf': 'eth1', 'sysctls': {}},
        'r3': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'routes': {
        'h1': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.0.2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77::2', 'dev', 'eth1']],
        'h2': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.1.2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:1::2', 'dev', 'eth1']],
        'h3': [['ip', 'route', 'replace', '0.0.0.0/0', 'via', '10.77.2.2', 'dev', 'eth1'], ['ip', '-6', 'route', 'replace', '::/0', 'via', 'fd00:77:0:2::2', 'dev', 'eth1']],
    },
    'frr': {
        'r1': '! r1 of lab ospf3: generated by linklab from the topology (routing: ospf)\nfrr defaults traditional\nhostname r1\n!\ninterface eth1\n ip ospf cost 1\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf passive\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 1\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 passive\nexit\n!\ninterface eth2\n ip ospf cost 1\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf network point-to-point\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 1\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 network point-to-point\nexit\n!\ninterface eth3\n ip ospf cost 5\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf network point-to-point\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 5\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 network point-to-point\nexit\n!\nrouter ospf\n ospf router-id 10.77.0.2\n maximum-paths 1\n network 10.77.0.0/24 area 0.0.0.0\n network 10.77.3.0/24 area 0.0.0.0\n network 10.77.5.0/24 area 0.0.0.0\nexit\n!\nrouter ospf6\n ospf6 router-id 10.77.0.2\n maximum-paths 1\nexit\n!\n',
        'r2': '! r2 of lab ospf3: generated by linklab from the topology (routing: ospf)\nfrr defaults traditional\nhostname r2\n!\ninterface eth1\n ip ospf cost 1\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf passive\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 1\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 passive\nexit\n!\ninterface eth2\n ip ospf cost 1\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf network point-to-point\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 1\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 network point-to-point\nexit\n!\ninterface eth3\n ip ospf cost 1\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf network point-to-point\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 1\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 network point-to-point\nexit\n!\nrouter ospf\n ospf router-id 10.77.1.2\n maximum-paths 1\n network 10.77.1.0/24 area 0.0.0.0\n network 10.77.3.0/24 area 0.0.0.0\n network 10.77.4.0/24 area 0.0.0.0\nexit\n!\nrouter ospf6\n ospf6 router-id 10.77.1.2\n maximum-paths 1\nexit\n!\n',
        'r3': '! r3 of lab ospf3: generated by linklab from the topology (routing: ospf)\nfrr defaults traditional\nhostname r3\n!\ninterface eth1\n ip ospf cost 1\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf passive\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 1\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 passive\nexit\n!\ninterface eth2\n ip ospf cost 1\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf network point-to-point\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 1\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 network point-to-point\nexit\n!\ninterface eth3\n ip ospf cost 5\n ip ospf hello-interval 1\n ip ospf dead-interval 4\n ip ospf network point-to-point\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 cost 5\n ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\n ipv6 ospf6 network point-to-point\nexit\n!\nrouter ospf\n ospf router-id 10.77.2.2\n maximum-paths 1\n network 10.77.2.0/24 area 0.0.0.0\n network 10.77.4.0/24 area 0.0.0.0\n network 10.77.5.0/24 area 0.0.0.0\nexit\n!\nrouter ospf6\n ospf6 router-id 10.77.2.2\n maximum-paths 1\nexit\n!\n',
    },
    'frr_subnets': [
        '10.77.0.0/24',
        '10.77.1.0/24',
        '10.77.2.0/24',
        '10.77.3.0/24',
        '10.77.4.0/24',
        '10.77.5.0/24',
        'fd00:77::/64',
        'fd00:77:0:1::/64',
        'fd00:77:0:2::/64',
        'fd00:77:0:3::/64',
        'fd00:77:0:4::/64',
        'fd00:77:0:5::/64',
    ],
}

