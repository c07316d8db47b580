"""Faults applied during a measurement: a bond member (a veth pair) taken down or up, as a
pulled cable would be. Setting one end down takes the peer's carrier too, so both bonds see it
(through miimon) the way two NICs on one cable do. Through netlink (pyroute2)."""

from __future__ import annotations

from pyroute2 import IPRoute

from linklab.backends.linux.names import netns_name
from linklab.model.resolved import Lab


def member_ends(lab: Lab, link: str, member: int) -> tuple[str, str]:
    """(node, ifname) of the a-end of the link's member-th veth pair; link by name or index."""
    for lk in lab.links:
        if lk.name == link or str(lk.index) == link:
            if lk.kind != "bond" or not 0 <= member < len(lk.veths):
                raise LookupError(f"link {link} has no bond member {member}")
            a = lk.veths[member].a
            return a.node, a.ifname
    raise LookupError(f"no link {link!r} (links: {', '.join(lk.name for lk in lab.links)})")


def set_member_state(lab: Lab, link: str, member: int, up: bool) -> str:
    node, ifname = member_ends(lab, link, member)
    with IPRoute(netns=netns_name(lab.name, node)) as ipr:
        idx = ipr.link_lookup(ifname=ifname)[0]
        ipr.link("set", index=idx, state="up" if up else "down")
    return f"{node}/{ifname} {'up' if up else 'down'}"
