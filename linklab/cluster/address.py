"""What `--cluster` names: an existing Ray cluster, or a local one started for the sweep."""

from __future__ import annotations

import re
from dataclasses import dataclass

from linklab import extras
from linklab.errors import UsageError

MAX_LOCAL_NODES = 64
_HOST_PORT = re.compile(r"^(ray://)?([A-Za-z0-9._-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})$")
_LOCAL = re.compile(r"^local:(\d+)$")


@dataclass(frozen=True)
class Address:
    local_nodes: int | None = None  # local:N
    address: str | None = None      # ray://HOST:PORT (Ray Client) or HOST:PORT (join as a driver)

    @property
    def on_loopback(self) -> bool:
        """A cluster on this machine alone (local:N, or an address on 127.0.0.1 / localhost)."""
        if self.local_nodes:
            return True
        host = self.address.removeprefix("ray://").rsplit(":", 1)[0]
        return host in ("localhost", "[::1]") or host.startswith("127.")

    def __str__(self) -> str:
        return f"local:{self.local_nodes}" if self.local_nodes else str(self.address)


def parse(text: str) -> Address:
    """ray://HOST:PORT | HOST:PORT | local:N; anything else is bad input naming the forms."""
    m = _LOCAL.match(text.strip())
    if m:
        n = int(m.group(1))
        if not 1 <= n <= MAX_LOCAL_NODES:
            raise UsageError(f"--cluster {text}: local:N takes N from 1 to {MAX_LOCAL_NODES}")
        return Address(local_nodes=n)
    m = _HOST_PORT.match(text.strip())
    if m and 0 < int(m.group(3)) < 65536:
        return Address(address=text.strip())
    raise UsageError(f"--cluster {text!r}: expected ray://HOST:PORT, HOST:PORT or local:N "
                     "(e.g. ray://10.0.0.1:10001, 10.0.0.1:6379, local:2)")


def require_ray() -> None:
    """Exit 4, with how to install it, before anything starts if Ray is missing (without
    importing it: a local cluster must set its environment first, linklab/cluster/session.py)."""
    extras.require("cluster", "--cluster")


def import_ray():
    """The ray module, or exit 4 with how to install it. Ray is imported here and by the functions
    that use it, never at a module's top (start-up cost): it is an optional extra, and seconds of
    imports a command without --cluster must not pay."""
    return extras.load("ray", "cluster", "--cluster")
