"""linklab.linux.netlink on this host's own kernel (network namespaces and veth need no lab VM),
in a namespace the test creates and removes."""

import os
import socket

import pytest
from pyroute2 import netns
from pyroute2.netlink.rtnl.ndmsg import NUD_PERMANENT, NUD_STALE

from linklab.linux import netlink


@pytest.fixture
def namespace():
    name = f"lltest-nl-{os.getpid()}"
    netlink.create(name)
    try:
        yield name
    finally:
        netns.remove(name)


def test_flush_neighbours_deletes_learned_entries_and_keeps_permanent_ones(namespace):
    """What `ip neigh flush all` does (reset_forwarding's neighbour step): learned IPv4 and IPv6
    entries go, one set by hand (permanent) stays."""
    with netlink.iproute(namespace) as ipr:
        ipr.link("add", ifname="v0", kind="veth", peer="v1")
        idx = ipr.link_lookup(ifname="v0")[0]
        ipr.link("set", index=idx, state="up")
        ipr.neigh("add", dst="10.9.0.2", lladdr="02:00:00:00:00:02", ifindex=idx, state=NUD_STALE)
        ipr.neigh("add", dst="fe80::2", lladdr="02:00:00:00:00:02", ifindex=idx, state=NUD_STALE, family=socket.AF_INET6)
        ipr.neigh("add", dst="10.9.0.3", lladdr="02:00:00:00:00:03", ifindex=idx, state=NUD_PERMANENT)
    assert netlink.flush_neighbours(namespace) == 2
    with netlink.iproute(namespace) as ipr:
        left = {(n.get_attr("NDA_DST"), n["state"]) for n in ipr.neigh("dump")}
    assert left == {("10.9.0.3", NUD_PERMANENT)}
    assert netlink.flush_neighbours(namespace) == 0  # idempotent
    with pytest.raises(FileNotFoundError):
        netlink.flush_neighbours(namespace + "-missing")  # a typo does not create a namespace
