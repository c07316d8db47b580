"""The explicit registry of backends. Add a backend by importing it and listing it here."""

from __future__ import annotations

from linklab.backends.base import Backend
from linklab.errors import UsageError


def _linux() -> Backend:
    # Imported when asked for (start-up cost): pyroute2 and the node kinds, which what needs only
    # the Backend interface (a check kind's bond_summary, a drawing) would otherwise import too.
    from linklab.backends.linux.backend import LinuxBackend
    return LinuxBackend()


REGISTRY = {
    "linux": _linux,  # network namespaces, veth, Linux bonds and bridges, tc qdiscs
}


def get_backend(name: str = "linux") -> Backend:
    try:
        return REGISTRY[name]()
    except KeyError:
        raise UsageError(f"unknown backend {name!r} (valid: {', '.join(REGISTRY)})") from None
