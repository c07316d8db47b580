"""The explicit registry of backends. Add a backend by importing it and listing it here."""

from __future__ import annotations

from linklab.backends.base import Backend
from linklab.errors import UsageError


def _linux() -> Backend:
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
