"""Names and ownership marks of what the Linux backend creates.

Every namespace carries a mark in its loopback's ifalias; `clean` finds a crashed lab's
leftovers by that mark, never by matching name patterns.
"""

from __future__ import annotations

PREFIX = "ll"
MARK = "linklab"


def netns_name(lab: str, node: str) -> str:
    return f"{PREFIX}-{lab}-{node}"


def mark(lab: str, lab_id: str) -> str:
    return f"{MARK}:{lab}:{lab_id}"


def parse_mark(text: str | None) -> tuple[str, str] | None:
    """'linklab:bond2:ab12' -> ('bond2', 'ab12'); anything else -> None."""
    if not text:
        return None
    parts = text.split(":")
    if len(parts) == 3 and parts[0] == MARK:
        return parts[1], parts[2]
    return None


def hosts_dir(ns: str) -> str:
    # `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts: how lab names resolve.
    return f"/etc/netns/{ns}"
