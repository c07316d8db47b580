"""The /etc/hosts each lab host sees (`ip netns exec` binds /etc/netns/<ns>/hosts over it), and
removing it only when its mark names the lab."""

from __future__ import annotations

from pathlib import Path

from linklab import fsutil
from linklab.backends.linux.names import Mark, hosts_dir, parse_mark
from linklab.model.resolved import Lab


def text(lab: Lab, node: str, mark: str) -> str:
    lines = [f"# {mark}: written by linklab, removed by `linklab down`",
             "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback", f"127.0.1.1\t{node}"]
    lines += [f"{addr}\t{name}" for addr, name in lab.node(node).hosts]
    return "\n".join(lines) + "\n"


def write(lab: Lab, node: str, ns: str, mark: str) -> str:
    """`node`'s hosts file, for commands run in namespace `ns`; returns its directory."""
    d = Path(hosts_dir(ns))
    d.mkdir(parents=True, exist_ok=True)
    fsutil.write_atomic(d / "hosts", text(lab, node, mark))
    return str(d)


def _our_tmp(name: str) -> bool:
    """A temp file linklab's atomic writer leaves beside a hosts file it was writing."""
    return name == ".hosts.tmp" or fsutil.is_tmp_name(name)


def mark_of(d: Path) -> Mark | None:
    """The mark in the first line of hosts directory d's file (None: none, or not ours)."""
    try:
        first = (d / "hosts").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    return parse_mark(first.lstrip("# ").split(" ")[0].rstrip(":"))


def remove_dir(d: Path, lab_name: str) -> bool:
    hosts = d / "hosts"
    if not hosts.exists() and d.is_dir():
        # A `down` killed between removing the hosts file and its directory: what is left is an
        # empty directory (or our temp files), nothing of anyone's to lose.
        rest = [x for x in d.iterdir() if not _our_tmp(x.name)]
        if rest:
            return False
        for leftover in d.iterdir():
            leftover.unlink()
        d.rmdir()
        return True
    found = mark_of(d)
    if not found or found[0] != lab_name:
        return False
    hosts.unlink()
    for leftover in d.iterdir():
        if _our_tmp(leftover.name):
            leftover.unlink()
    try:
        d.rmdir()
    except OSError:
        pass
    return True
