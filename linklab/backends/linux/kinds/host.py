"""A lab host: a namespace whose link ends carry addresses, and an /etc/hosts naming the lab's
other hosts (sysctls are written for all hosts at once by the backend)."""

from __future__ import annotations

import ipaddress

from linklab.backends.linux import hostsfile
from linklab.backends.linux.kinds.base import Build, Kind
from linklab.model.resolved import Node


class Host(Kind):
    name = "host"
    phase = "addresses"  # after MTUs: below MTU 1280 the kernel drops IPv6 from an interface

    def configure(self, b: Build, node: Node) -> None:
        ipr = b.ipr[node.name]
        have_by_index: dict[int, set] = {}
        ends = [(link, end) for link in b.lab.links for end in link.ends if end.node == node.name]
        # One dump for the node, not one per interface; none when this build created all its
        # interfaces (a new interface has no address).
        if not all((node.name, end.ifname) in b.created for _, end in ends):
            for a in ipr.get_addr():
                if a["scope"] == 0:  # global; link-local fe80:: is the kernel's business
                    have_by_index.setdefault(a["index"], set()).add(
                        ipaddress.ip_interface(f"{a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}"))
        # Only addresses linklab gave are taken away: one a node's `exec:` (or a daemon in it) added
        # stays. None: the lab was built before linklab recorded its own, and every other goes.
        given_before = b.previous.get("addresses")
        for link, end in ends:
            i = b.idx(end.node, end.ifname)
            want = {ipaddress.ip_interface(a) for a in (end.ipv4, end.ipv6 if link.ipv6 else None) if a}
            have = have_by_index.get(i, set())
            for a in have - want:
                if given_before is None or address_key(node.name, end.ifname, a) in given_before:
                    ipr.addr("del", index=i, address=str(a.ip), prefixlen=a.network.prefixlen)
            b.owned.setdefault("addresses", []).extend(sorted(address_key(node.name, end.ifname, a) for a in want))
            for a in sorted(want - have, key=str):
                # Below MTU 1280 the kernel drops IPv6 from an interface and does not bring the
                # addresses back when the MTU rises: reconciling re-adds them here. No duplicate
                # address detection: it would hold a lab address back for 1-2 s.
                b.batch(node.name).addr(i, str(a.ip), a.network.prefixlen, nodad=a.version == 6)
        b.send_batches()
        b.owned["hosts_files"].append(hostsfile.write(b.lab, node.name, b.ns[node.name], b.mark))


def address_key(node: str, ifname: str, address) -> str:
    """How the build records an address it gave: node/ifname/address/prefix."""
    return f"{node}/{ifname}/{address}"
