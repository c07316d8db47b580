"""A lab host: a namespace whose link ends carry addresses (sysctls and /etc/hosts are
written for all hosts at once by the backend)."""

from __future__ import annotations

import ipaddress
from typing import Any

IFA_F_NODAD = 0x02


def check(lab, node) -> list[str]:
    return []


def configure(b, node) -> None:
    for link in b.lab.links:
        for end in link.ends:
            if end.node != node.name:
                continue
            ipr, i = b.ipr[end.node], b.idx(end.node, end.ifname)
            want = {ipaddress.ip_interface(a) for a in (end.ipv4, end.ipv6 if link.ipv6 else None) if a}
            have = set()
            for a in ipr.get_addr(index=i):
                if a["scope"] == 0:  # global; link-local fe80:: is the kernel's business
                    have.add(ipaddress.ip_interface(f"{a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}"))
            for a in have - want:
                ipr.addr("del", index=i, address=str(a.ip), prefixlen=a.network.prefixlen)
            for a in sorted(want - have, key=str):
                # Below MTU 1280 the kernel drops IPv6 from an interface and does not bring the
                # addresses back when the MTU rises: reconciling re-adds them here.
                extra = {"flags": IFA_F_NODAD} if a.version == 6 else {}
                ipr.addr("add", index=i, address=str(a.ip), prefixlen=a.network.prefixlen, **extra)


def inspect(lab, node, ns: str) -> dict[str, Any]:
    return {}


def remove(lab_name: str, node: str, ns: str, owned: dict[str, Any]) -> list[str]:
    return []
