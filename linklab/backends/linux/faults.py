"""Faults applied during a measurement: a bond member (a veth pair) or a whole link taken down
or up, as a pulled cable would be. Setting one end down takes the peer's carrier too, so both bonds see it
(through miimon) the way two NICs on one cable do. A bond's active member chosen, and a link's
impairment changed in place. Through netlink (pyroute2), tc for the qdiscs (linklab/linux/tc.py says why)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from linklab.linux import netlink
from linklab.linux import tc
from linklab.backends.linux.names import netns_name
from linklab.model.resolved import Lab, Link


def _link(lab: Lab, link: str) -> Link:
    """A link by name or index."""
    for lk in lab.links:
        if lk.name == link or str(lk.index) == link:
            return lk
    raise LookupError(f"no link {link!r} (links: {', '.join(lk.name for lk in lab.links)})")


def member_ends(lab: Lab, link: str, member: int) -> tuple[str, str]:
    """(node, ifname) of the a-end of the link's member-th veth pair; link by name or index."""
    lk = _link(lab, link)
    if lk.kind != "bond" or not 0 <= member < len(lk.veths):
        raise LookupError(f"link {link} has no bond member {member}")
    a = lk.veths[member].a
    return a.node, a.ifname


def set_member_state(lab: Lab, link: str, member: int, up: bool) -> str:
    return _set_state(lab, [member_ends(lab, link, member)], up)


def set_link_state(lab: Lab, link: str, up: bool) -> str:
    """Every veth pair of the link (a bond's every member) down or up at its a-end; the peers
    lose their carrier, so a route through either end sees the link go (a routed path's link
    failing: the kernel drops the nexthops through it)."""
    return _set_state(lab, [(pair.a.node, pair.a.ifname) for pair in _link(lab, link).veths], up)


def _set_state(lab: Lab, ends: list[tuple[str, str]], up: bool) -> str:
    for node, ifname in ends:
        with netlink.iproute(netns_name(lab.name, node)) as ipr, \
                netlink.refused(f"{node}/{ifname} {'up' if up else 'down'}"):
            ipr.link("set", index=_index(ipr, node, ifname), state="up" if up else "down")
    return ", ".join(f"{node}/{ifname} {'up' if up else 'down'}" for node, ifname in ends)


def _index(ipr, node: str, ifname: str) -> int:
    """The interface's index in the node's namespace; a LookupError naming it when it is gone
    (deleted by hand since the lab was built): a fault's log says which, not an IndexError."""
    found = ipr.link_lookup(ifname=ifname)
    if not found:
        raise LookupError(f"{node}/{ifname}: no such interface in the running lab (`linklab status` shows what is there)")
    return found[0]


def set_active_member(lab: Lab, link: str, member: int) -> str:
    """Make the link's member-th veth the active member of the a-end's bond (active-backup,
    balance-tlb, balance-alb: the modes with one), as `ip link set bond0 type bond active_slave`."""
    node, ifname = member_ends(lab, link, member)
    bond = next((b for b in _link(lab, link).bonds if b.node == node and ifname in b.members), None)
    if bond is None:
        raise LookupError(f"link {link}: {node}/{ifname} is not a member of a bond of {node}")
    with netlink.iproute(netns_name(lab.name, node)) as ipr, \
            netlink.refused(f"{node}/{bond.ifname}: {ifname} as its active member",
                            hint=f"only active-backup, balance-tlb and balance-alb have one (this bond: {bond.mode})"):
        ipr.link("set", index=_index(ipr, node, bond.ifname), kind="bond",
                 bond_active_slave=_index(ipr, node, ifname))
    return f"{node}/{bond.ifname} active {ifname}"


def change_impairments(old: Lab, new: Lab) -> list[str]:
    """Every egress queue that differs between two resolutions of the same lab, changed in place
    (tc change) where its structure is the same, rebuilt otherwise; returns what was done.

    The queues change concurrently, one tc process each: an event's time is when all its
    changes are in, and under software emulation with a flow keeping the CPUs busy one tc
    process can take most of a second (bench/README.md#start-up-times)."""
    where, jobs = [], []  # per queue: what the log calls it, tc.change's arguments
    before = {(lk.name, i): pair for lk in old.links for i, pair in enumerate(lk.veths)}
    for lk in new.links:
        for i, pair in enumerate(lk.veths):
            was = before.get((lk.name, i))
            if was is None:
                raise LookupError(f"link {lk.name} member {i} is not in the running lab")
            for (end, _, q), (_, _, q0) in zip(pair.directions(), was.directions()):
                if q != q0:
                    where.append(f"{end.node}/{end.ifname}")
                    jobs.append((netns_name(new.name, end.node), end.ifname, q0, q, lk.mtu))
    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=min(len(jobs), 8)) as pool:
        hows = list(pool.map(lambda args: tc.change(*args), jobs))
    return [f"{w} {how}" for w, how in zip(where, hows)]
