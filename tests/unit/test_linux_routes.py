"""Routes through netlink (linklab/linux/routes.py): what the kernel reports read back, and the
plan that changes only the routes that differ, never one another protocol installed."""

import socket

from pyroute2.netlink.rtnl.rtmsg import rtmsg

from linklab.linux.routes import RTM_F_CLONED, RTPROT_LINKLAB, KernelRoute, from_message, is_route, plan, request


def message(dst, dst_len, proto, **attrs):
    msg = rtmsg()
    msg["dst_len"], msg["proto"], msg["type"] = dst_len, proto, 1
    msg["attrs"] = ([("RTA_DST", dst)] if dst else []) + list(attrs.items())
    return msg


def test_a_route_message_reads_back_as_prefix_hops_and_protocol():
    one = from_message(message("10.77.2.0", 24, RTPROT_LINKLAB, RTA_GATEWAY="10.77.1.2", RTA_OIF=3), socket.AF_INET)
    assert one == KernelRoute("10.77.2.0/24", (("10.77.1.2", 3),))
    default = from_message(message(None, 0, 4, RTA_GATEWAY="fd00::2", RTA_OIF=2), socket.AF_INET6)
    assert default == KernelRoute("::/0", (("fd00::2", 2),), 4)
    hops = [{"attrs": [("RTA_GATEWAY", "10.77.1.2")], "oif": 3}, {"attrs": [("RTA_GATEWAY", "10.77.2.2")], "oif": 4}]
    multi = from_message(message("10.77.3.0", 24, RTPROT_LINKLAB, RTA_MULTIPATH=hops), socket.AF_INET)
    assert multi.nexthops == (("10.77.1.2", 3), ("10.77.2.2", 4))
    connected = from_message(message("10.77.1.0", 24, 2, RTA_OIF=3), socket.AF_INET)
    assert connected.nexthops == ((None, 3),) and connected.proto == 2


def test_plan_changes_only_what_differs_and_never_removes_another_protocols_route():
    same = KernelRoute("10.77.2.0/24", (("10.77.1.2", 3),))
    moved = KernelRoute("10.77.3.0/24", (("10.77.1.2", 3),))
    stale = KernelRoute("10.77.9.0/24", (("10.77.1.2", 3),))
    users = KernelRoute("192.0.2.0/24", (("10.77.1.2", 3),), proto=3)  # an exec: command's (proto boot)
    kernels = KernelRoute("10.77.1.0/24", ((None, 3),), proto=2)
    want = [same, KernelRoute("10.77.3.0/24", (("10.77.1.2", 3), ("10.77.2.2", 4))), KernelRoute("::/0", (("fd00::2", 3),))]
    put, remove = plan([same, moved, stale, users, kernels], want)
    assert put == want[1:] and remove == [stale]
    assert plan(want, want) == ([], [])  # a second build asks for nothing


def test_requests_are_one_route_each_several_hops_as_one_multipath_route():
    r = request(KernelRoute("::/0", (("fd00::2", 3),)))
    assert r == {"dst": "::/0", "family": socket.AF_INET6, "proto": RTPROT_LINKLAB, "table": 254,
                 "gateway": "fd00::2", "oif": 3}
    m = request(KernelRoute("10.77.3.0/24", (("10.77.1.2", 3), ("10.77.2.2", 4))))
    assert m["multipath"] == [{"gateway": "10.77.1.2", "oif": 3}, {"gateway": "10.77.2.2", "oif": 4}]
    assert "gateway" not in m and m["family"] == socket.AF_INET


def test_a_learned_path_mtu_in_the_dump_is_no_route():
    """The kernel's dump lists a path MTU learned from ICMP as a cached /128 clone carrying the
    protocol of the route it came from: reconciling must not take it for a stale route of linklab's."""
    clone = message("fd00:77:0:2::2", 128, RTPROT_LINKLAB, RTA_GATEWAY="fd00:77::2", RTA_OIF=2)
    clone["flags"] = RTM_F_CLONED
    assert not is_route(clone)
    assert is_route(message("10.77.2.0", 24, RTPROT_LINKLAB, RTA_GATEWAY="10.77.1.2", RTA_OIF=3))
    unreachable = message("10.9.0.0", 16, 4)
    unreachable["type"] = 7  # RTN_UNREACHABLE
    assert not is_route(unreachable)
