"""Which namespaces are this lab's: the mark on each namespace's loopback, and removing a
namespace with everything running in it."""

from __future__ import annotations

from pyroute2 import netns

from linklab import procs
from linklab.backends.linux import daemons, frrd, ovsd
from linklab.backends.linux.names import Mark
from linklab.linux import netlink

LOOPBACK_IFINDEX = 1  # the kernel gives every namespace's loopback this index


def is_ours(found: Mark | None, me: Mark) -> bool:
    """A mark is this lab's when name, id and checkout match; a mark from before checkouts were
    recorded (home None) is ours when name and id match (the id came from our own state file)."""
    return found is not None and found.lab == me.lab and found.id == me.id and found.home in (None, me.home)


def mark_loopback(ns: str, the_mark: str) -> None:
    """The lab's mark on the namespace's loopback (ifindex 1 in every namespace:
    LOOPBACK_IFINDEX), which is brought up too."""
    batch = netlink.Batch(ns)
    batch.set("lo", alias=the_mark, up=True)
    batch.send()


def read_mark(ns: str) -> str | None:
    # netlink.read_alias opens existing namespaces only: pyroute2's own IPRoute(netns=) would
    # silently create an empty one if it vanished since it was listed (a concurrent `down`),
    # leaving an unmarked namespace nobody owns.
    try:
        return netlink.read_alias(ns, LOOPBACK_IFINDEX)
    except OSError:
        return None


def remove_netns(ns: str, table: dict | None = None) -> None:
    """Stop every process inside (iperf3 servers, controllers, a switch's OVS, a router's FRR),
    then delete the namespace and the OVS and FRR directories named after it."""
    pids = daemons.netns_pids(ns, table)
    procs.stop(pids)
    try:
        netns.remove(ns)
    except FileNotFoundError:
        pass
    ovsd.remove_rundir(ns)
    frrd.remove_rundir(ns)
    frrd.remove_crash_dirs(pids)  # what a routing daemon killed after its grace left behind
