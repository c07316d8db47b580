#!/usr/bin/python3
# linklab lab 'ovsbonds' for Mininet 2.3 — exported by `linklab export --to mininet tests/golden/topologies/good/ovs_bonds.yaml`.
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
    'name': 'ovsbonds',
    'scale': 0.1,
    'hosts': {
        'h1': {'main_intf': 'bond0', 'sysctls': {}},
        'h2': {'main_intf': 'bond0', 'sysctls': {}},
    },
    'switches': {
        's1': {'ovs': {'protocols': 'OpenFlow13', 'failMode': 'standalone', 'datapath': 'user', 'dpid': '0000000000000003'}},
        's2': {'ovs': {'protocols': 'OpenFlow13', 'failMode': 'secure', 'datapath': 'kernel', 'dpid': '0000000000000004'}},
    },
    'veths': [
        {'link': 'b1', 'a': ['h1', 'bond0-m0'], 'b': ['s1', 's1-eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'b1', 'a': ['h1', 'bond0-m1'], 'b': ['s1', 's1-eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'b2', 'a': ['h2', 'bond0-m0'], 'b': ['s1', 's1-eth3'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'b2', 'a': ['h2', 'bond0-m1'], 'b': ['s1', 's1-eth4'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'b3', 'a': ['h1', 'bond1-m0'], 'b': ['s2', 's2-eth1'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 'b3', 'a': ['h1', 'bond1-m1'], 'b': ['s2', 's2-eth2'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
        {'link': 't', 'a': ['s1', 's1-eth5'], 'b': ['s2', 's2-eth3'], 'tclink_a': None, 'mininet_a': None, 'tclink_b': None, 'mininet_b': None},
    ],
    'bonds': [
        {'node': 'h1', 'ifname': 'bond0', 'mode': '802.3ad', 'create_args': ['mode', '802.3ad', 'miimon', '100', 'lacp_rate', 'fast'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
        {'node': 'h2', 'ifname': 'bond0', 'mode': 'active-backup', 'create_args': ['mode', 'active-backup', 'miimon', '100'], 'primary': None, 'members': ['bond0-m0', 'bond0-m1'], 'switch': None},
        {'node': 'h1', 'ifname': 'bond1', 'mode': '802.3ad', 'create_args': ['mode', '802.3ad', 'miimon', '100', 'lacp_rate', 'fast'], 'primary': None, 'members': ['bond1-m0', 'bond1-m1'], 'switch': None},
    ],
    'mtu': [
        ['h1', 'bond0', 1500],
        ['h2', 'bond0', 1500],
        ['h1', 'bond1', 1500],
    ],
    'up': [
        ['h1', 'bond0'],
        ['h2', 'bond0'],
        ['h1', 'bond1'],
    ],
    'addresses': [
        {'node': 'h1', 'ifname': 'bond0', 'ipv4': '10.77.0.1/24', 'ipv6': 'fd00:77::1/64'},
        {'node': 'h2', 'ifname': 'bond0', 'ipv4': '10.77.0.2/24', 'ipv6': 'fd00:77::2/64'},
        {'node': 'h1', 'ifname': 'bond1', 'ipv4': '10.77.0.3/24', 'ipv6': 'fd00:77::3/64'},
    ],
    'qdiscs': [],
    'iface_settings': [],
    'ovs': [
        {'switch': 's1', 'vsctl': [['set', 'bridge', 's1', 'protocols=OpenFlow13', 'fail_mode=standalone', 'other_config:disable-in-band=true', 'other_config:datapath-id=0000000000000003'], ['set', 'interface', 's1-eth5', 'ofport_request=5'], ['--if-exists', 'del-port', 's1', 's1-eth1', '--', '--if-exists', 'del-port', 's1', 's1-eth2'], ['--may-exist', 'add-bond', 's1', 'lag0', 's1-eth1', 's1-eth2', '--', 'set', 'port', 'lag0', 'bond_mode=balance-tcp', 'lacp=active', 'other_config:lacp-time=fast', 'other_config:bond-detect-mode=carrier', '--', 'remove', 'port', 'lag0', 'other_config', 'bond-primary', '--', 'set', 'port', 'lag0', 'other_config:all-members-active=false'], ['--if-exists', 'del-port', 's1', 's1-eth3', '--', '--if-exists', 'del-port', 's1', 's1-eth4'], ['--may-exist', 'add-bond', 's1', 'lag1', 's1-eth3', 's1-eth4', '--', 'set', 'port', 'lag1', 'bond_mode=active-backup', 'lacp=active', 'other_config:lacp-time=fast', 'other_config:bond-detect-mode=carrier', '--', 'remove', 'port', 'lag1', 'other_config', 'bond-primary', '--', 'set', 'port', 'lag1', 'other_config:all-members-active=false'], ['set', 'interface', 's1-eth1', 'mtu_request=1500', '--', 'set', 'interface', 's1-eth2', 'mtu_request=1500', '--', 'set', 'interface', 's1-eth3', 'mtu_request=1500', '--', 'set', 'interface', 's1-eth4', 'mtu_request=1500', '--', 'set', 'interface', 's1-eth5', 'mtu_request=1500']], 'controller': None},
        {'switch': 's2', 'vsctl': [['set', 'bridge', 's2', 'protocols=OpenFlow13', 'fail_mode=secure', 'other_config:disable-in-band=true', 'other_config:datapath-id=0000000000000004'], ['set', 'interface', 's2-eth1', 'ofport_request=1', '--', 'set', 'interface', 's2-eth2', 'ofport_request=2', '--', 'set', 'interface', 's2-eth3', 'ofport_request=3'], ['set', 'interface', 's2-eth1', 'mtu_request=1500', '--', 'set', 'interface', 's2-eth2', 'mtu_request=1500', '--', 'set', 'interface', 's2-eth3', 'mtu_request=1500'], ['set-controller', 's2', 'tcp:127.0.0.1:6654', '--', 'set', 'controller', 's2', 'connection_mode=out-of-band', 'max_backoff=1000']], 'controller': {'app': 'lacp', 'port': 6654, 'env': ['LINKLAB_SWITCH={"ports":[1,2,3],"groups":[[1,2]]}', 'LINKLAB_DPID=4', 'EVENTLET_NO_GREENDNS=yes'], 'argv': ['osken-manager', '--ofp-listen-host', '127.0.0.1', '--ofp-tcp-listen-port', '6654', 'lacp.py']}},
    ],
    'exec': {},
    'checks': [
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'b1+b2', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.1', 'mtu': 1500, 'via': 'b2+b1', 'size': 1472},
        {'from': 'h2', 'to': 'h1', 'to_addr': '10.77.0.3', 'mtu': 1500, 'via': 'b2+b3', 'size': 1472},
        {'from': 'h1', 'to': 'h2', 'to_addr': '10.77.0.2', 'mtu': 1500, 'via': 'b3+b2', 'size': 1472},
    ],
    'notes': [
        "names resolve through Mininet's CLI (`h1 ping h2`), not /etc/hosts as in linklab",
        "OVS switches are bridges of the machine's own Open vSwitch (Mininet's OVSSwitch), their controllers run in the root namespace, not one namespace each",
    ],
    'mininet_shaping_notes': [],
}

