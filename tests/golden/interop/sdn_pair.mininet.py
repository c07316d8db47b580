#!/usr/bin/python3
# linklab lab 'sdn_pair' for Mininet 2.3 — exported by `linklab export --to mininet topologies/sdn_pair.yaml`.
# Rates are scaled by 0.1 (auto (software-emulated VM (TCG))); re-export with --scale to change.
#
#   sudo python3 THIS.py            build it and open Mininet's CLI (pingall, h1 ping h2, iperf h1 h2)
#   sudo python3 THIS.py --test     pingall + don't-fragment pings at the path MTU; exit 1 on loss
#   sudo python3 THIS.py --mininet-shaping   shape with TCLink's htb instead (prints what differs)
#
# Mapped: hosts, Linux-bridge switches (no controller), one link per bond member, TCIntf
# parameters (delay/loss/limit) per interface and direction; bonds, switch LAGs, MTU of every
# interface, addresses, qdiscs TCIntf cannot build, offloads and sysctls are set after start.
# Open vSwitch switches: Mininet's OVSSwitch (OpenFlow 1.3, linklab's fail mode and dpid), then
# linklab's own OVS settings (OpenFlow port numbers, OVS bonds, port MTUs by mtu_request); each
# controller is the same os-ken app as in linklab (carried below), run with osken-manager on
# 127.0.0.1 and given to Mininet as a RemoteController. Needs Open vSwitch installed: where
# none runs (no database socket) the script starts its own and stops it at the end; and
# os-ken 3.1.1 (--osken-manager PATH). In linklab's lab VM:
#   linklab vm run -- python3 THIS.py --test
# Differences from `linklab up`:
#   - names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab
#   - OVS switches are bridges of the machine's own Open vSwitch (Mininet's OVSSwitch), their controllers run in the root namespace, not one namespace each

LAB = {
    'name': 'sdn_pair',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'eth1', 'sysctls': {}},
        'h2': {'main_intf': 'eth1', 'sysctls': {}},
    },
    'switches': {
        's1': {'ovs': {'protocols': 'OpenFlow13', 'failMode': 'secure', 'datapath': 'kernel', 'dpid': '0000000000000003'}},
    },
    'veths': [
        {'link': 'l1', 'a': ['h1', 'eth1'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'l2', 'a': ['h2', 'eth1'], 'b': ['s1', 's1-eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [],
    'mtu': [
        ['h1', 'eth1', 1500],
        ['h2', 'eth1', 1500],
    ],
    'up': [],
    'addresses': [
        {'node': 'h1', 'ifname': 'eth1', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'h2', 'ifname': 'eth1', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [
        {'switch': 's1', 'vsctl': [['set', 'bridge', 's1', 'protocols=OpenFlow13', 'fail_mode=secure', 'other_config:disable-in-band=true', 'other_config:datapath-id=0000000000000003'], ['set', 'interface', 's1-eth1', 'ofport_request=1', '--', 'set', 'interface', 's1-eth2', 'ofport_request=2'], ['set', 'interface', 's1-eth1', 'mtu_request=1500', '--', 'set', 'interface', 's1-eth2', 'mtu_request=1500'], ['set-controller', 's1', 'tcp:127.0.0.1:6653', '--', 'set', 'controller', 's1', 'connection_mode=out-of-band', 'max_backoff=1000']], 'controller': {'app': 'l2_learning', 'port': 6653, 'env': ['LINKLAB_SWITCH={"ports":[1,2],"groups":[]}', 'LINKLAB_DPID=3', 'EVENTLET_NO_GREENDNS=yes'], 'argv': ['osken-manager', '--ofp-listen-host', '127.0.0.1', '--ofp-tcp-listen-port', '6653', 'l2_learning.py']}},
    ],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'l1+l2', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'l2+l1', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "OVS switches are bridges of the machine's own Open vSwitch (Mininet's OVSSwitch), their controllers run in the root namespace, not one namespace each",
    ],
    'mininet_shaping_notes': [],
}

