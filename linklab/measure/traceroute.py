"""traceroute (Debian's `traceroute`, Dmitry Butskoy's): argv, and its output read as the hops a
packet crosses. With -n every hop line is its TTL, then each answering address followed by its
probes' times, `*` for a probe unanswered, and `!N`/`!H`/`!X`/`!<n>` after a time for an ICMP
unreachable; a hop whose probes took different paths (a multipath route hashing each probe's
ports) lists several addresses:

     1  10.255.1.2  0.061 ms 10.255.2.2  0.034 ms  0.022 ms
     2  * * *

Captured output: tests/data/tools/traceroute_*.txt.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import ClassVar

from linklab.measure.base import MeasurementError, Tool

_HEADER = re.compile(r"^traceroute to (?P<name>\S+) \((?P<target>[^)]+)\), (?P<max>\d+) hops max")
_HOP = re.compile(r"^\s*(?P<ttl>\d+)\s+(?P<rest>.*)$")


class TracerouteError(MeasurementError):
    """traceroute could not trace at all (an unknown name, no route to send on)."""


@dataclass(frozen=True)
class Hop:
    ttl: int
    addresses: tuple[str, ...]  # who answered, in the order they did (several: multipath)
    unanswered: int  # probes that got nothing (`*`)
    flags: tuple[str, ...] = ()  # ICMP unreachables: !N, !H, !X...


@dataclass(frozen=True)
class Trace:
    target: str  # the address traced
    max_hops: int
    hops: tuple[Hop, ...]

    @property
    def reached(self) -> bool:
        """The target answered (its own reply ends a trace)."""
        return bool(self.hops) and self.target in self.hops[-1].addresses


def parse_traceroute(stdout: str, stderr: str = "") -> Trace:
    """traceroute -n output -> Trace. Pure. Raises TracerouteError when it did not trace."""
    header = None
    hops = []
    for line in stdout.splitlines():
        m = _HEADER.match(line)
        if m:
            header = m
            continue
        m = _HOP.match(line)
        if not m:
            continue
        addresses, flags, unanswered = [], [], 0
        for word in m["rest"].split():
            if word == "*":
                unanswered += 1
            elif word.startswith("!"):
                flags.append(word)
            elif _is_address(word) and word not in addresses:
                addresses.append(word)
        hops.append(Hop(int(m["ttl"]), tuple(addresses), unanswered, tuple(flags)))
    if header is None:
        why = " ".join((stderr or stdout).split()) or "no output"
        raise TracerouteError(f"traceroute did not trace: {why}")
    return Trace(header["target"], int(header["max"]), tuple(hops))


def _is_address(word: str) -> bool:
    try:
        ipaddress.ip_address(word)
        return True
    except ValueError:
        return False


@dataclass(frozen=True)
class Traceroute(Tool):
    name: ClassVar[str] = "traceroute"
    binary: ClassVar[str] = "traceroute"
    version_flag: ClassVar[str] = "--version"
    version_pattern: ClassVar[str] = r"version (\S+)"

    target: str
    family: int = 4
    max_hops: int = 16
    wait: float = 1.0  # -w: seconds to wait for a probe's answer
    queries: int = 3  # -q: probes per hop

    def argv(self) -> list[str]:
        # -n: addresses, not names (no reverse lookups: a lab has no DNS, and names are matched
        # to the lab's nodes by their addresses).
        return ["traceroute", "-n", f"-{self.family}", "-m", str(self.max_hops), "-w", f"{self.wait:g}",
                "-q", str(self.queries), self.target]

    @staticmethod
    def parse(text: str) -> Trace:
        return parse_traceroute(text)
