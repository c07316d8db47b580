"""TCP listeners read from procfs: /proc/<pid>/net/tcp{,6} lists the sockets of the network
namespace process <pid> lives in, so a daemon's own namespace is read without entering it and
without starting a process (`ss` in the namespace is slow under software emulation, and takes
its time from the very daemon it waits for: bench/README.md#netlink-and-files)."""

from __future__ import annotations

from pathlib import Path

from linklab.linux import netlink

LISTEN = "0A"  # include/net/tcp_states.h: TCP_LISTEN, as the st column prints it


def listening_ports(table: str) -> set[int]:
    """The local ports of listening sockets in one /proc/net/tcp or tcp6 table. Pure.

    A row: `sl local_address rem_address st ...`, addresses as HEXIP:HEXPORT."""
    ports = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == LISTEN:
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def listens(pid: int, port: int, netns: str) -> bool:
    """Whether a TCP socket listens on `port` in named network namespace `netns`, read through
    process `pid`, which must be in it: one started through `ip netns exec` is in its parent's
    namespace until that has entered the named one (False then, and if the process is gone)."""
    if not netlink.same_namespace(netns, pid):
        return False
    for table in ("tcp", "tcp6"):
        try:
            if port in listening_ports(Path(f"/proc/{pid}/net/{table}").read_text()):
                return True
        except OSError:
            pass
    return False
