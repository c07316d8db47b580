"""Names and ownership marks of what the Linux backend creates.

Every namespace carries a mark in its loopback's ifalias; `clean` finds a crashed lab's
leftovers by that mark, never by matching name patterns.
"""

from __future__ import annotations

from typing import NamedTuple

PREFIX = "ll"
MARK = "linklab"


class Mark(NamedTuple):
    """Who owns an object: the lab's name, the id it got at its first `up`, and the checkout
    (state directory) it belongs to. `home` is None on marks made before homes were recorded."""
    lab: str
    id: str
    home: str | None = None


def netns_name(lab: str, node: str) -> str:
    return f"{PREFIX}-{lab}-{node}"


def node_of(lab: str, ns: str) -> str | None:
    """The node of `lab` whose namespace `ns` is (None: not one of the lab's)."""
    prefix = netns_name(lab, "")
    return ns[len(prefix):] or None if ns.startswith(prefix) else None


def current_home() -> str:
    from linklab import state
    return state.home()


def mark(lab: str, lab_id: str, home: str | None = None) -> str:
    return f"{MARK}:{lab}:{lab_id}:{home or current_home()}"


def parse_mark(text: str | None) -> Mark | None:
    """'linklab:bond2:ab12:0123456789ab' -> Mark('bond2', 'ab12', '0123456789ab'); the older
    three-part form has no home; anything else -> None."""
    if not text:
        return None
    parts = text.split(":")
    if len(parts) in (3, 4) and parts[0] == MARK and all(parts[1:]):
        return Mark(*parts[1:])
    return None


def hosts_dir(ns: str) -> str:
    # `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts: how lab names resolve.
    return f"/etc/netns/{ns}"
