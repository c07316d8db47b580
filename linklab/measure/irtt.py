"""irtt (Isochronous Round-Trip Tester, Debian's `irtt`): UDP round trips sent on a fixed
interval, the UDP latency probe flent's RRUL runs beside ICMP ping (its rrul_be_irtt test).

Why irtt rather than an echo of linklab's own: it is the tool flent uses for these series, it
times each packet in Go (no interpreter's scheduling in the figure), the server timestamps both
ends (one-way delays beside the round trip), it tells a packet lost upstream from one lost on
the way back, and its JSON (`-o -`) is documented and versioned (`json_format`).

The client's JSON keeps every round trip: seqno k was sent k x interval into the test, `lost`
is "false", "true" (no reply; direction unknown), "true_up" or "true_down" (the server's
received-packet stats place it), `delay.rtt` in nanoseconds for those that came back. Its own
summary (`stats`) covers the whole test; the row is computed from the round trips instead, so a
window can leave slow start out as the load ping's does (linklab/measure/ping.py: load_window).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from linklab.measure import stats
from linklab.measure.base import MeasurementError, Tool

DEFAULT_PORT = 2112  # irtt's own
PACKET_BYTES = 172  # flent's irtt runner's -l: a small packet, like a game's or a call's


class IrttError(MeasurementError):
    """irtt ran but gave no round trips (no server, refused, unparseable output)."""


@dataclass(frozen=True)
class RoundTrip:
    seq: int
    rtt_ms: float | None  # None: lost
    lost: str = "false"  # irtt's word: false, true, true_up, true_down


@dataclass(frozen=True)
class IrttResult:
    interval_s: float
    trips: tuple[RoundTrip, ...]

    @property
    def sent(self) -> int:
        return len(self.trips)

    @property
    def rtts_ms(self) -> list[float]:
        return [t.rtt_ms for t in self.trips if t.rtt_ms is not None]

    @property
    def loss_percent(self) -> float | None:
        return round(100.0 * (self.sent - len(self.rtts_ms)) / self.sent, 3) if self.sent else None

    def window(self, skip_s: float) -> IrttResult:
        """The round trips sent from `skip_s` into the test on (seqno k left k x interval in)."""
        return IrttResult(self.interval_s, tuple(t for t in self.trips if t.seq * self.interval_s >= skip_s - 1e-9))

    def row(self, prefix: str = "udp_rtt_") -> dict[str, Any]:
        rtts = self.rtts_ms

        def pct(p: float) -> float | None:
            return round(stats.percentile(rtts, p), 4) if rtts else None
        return {f"{prefix}p50_ms": pct(50), f"{prefix}p95_ms": pct(95),
                f"{prefix}mean_ms": round(sum(rtts) / len(rtts), 4) if rtts else None,
                f"{prefix}sent": self.sent, f"{prefix}received": len(rtts), f"{prefix}loss_pct": self.loss_percent}


def parse_irtt(text: str) -> IrttResult:
    """An irtt client's JSON (`-o -`) -> its round trips. Pure."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise IrttError(f"not irtt JSON output: {text.strip()[:120]!r}") from None
    if not isinstance(doc, dict) or "round_trips" not in doc:
        raise IrttError("irtt output without round_trips")
    params = ((doc.get("config") or {}).get("params") or {})
    interval_s = float(params.get("interval") or 0) / 1e9
    trips = []
    for rt in doc.get("round_trips") or []:
        lost = str(rt.get("lost", "false"))
        rtt_ns = (rt.get("delay") or {}).get("rtt")
        trips.append(RoundTrip(int(rt["seqno"]), None if lost != "false" or rtt_ns is None else rtt_ns / 1e6, lost))
    return IrttResult(interval_s, tuple(sorted(trips, key=lambda t: t.seq)))


class Irtt(Tool):
    """What irtt's server and client share: the program and how it says its version."""

    name: ClassVar[str] = "irtt"
    binary: ClassVar[str] = "irtt"
    needs_names: ClassVar[bool] = False
    version_flag: ClassVar[str] = "version"
    version_pattern: ClassVar[str | None] = r"irtt version: (\S+)"


@dataclass(frozen=True)
class IrttServer(Irtt):
    """`irtt server` bound to one address (the node's own, so nothing else it has listens)."""

    READY: ClassVar[str] = "[ListenerStart]"  # the line it prints once bound

    address: str
    port: int = DEFAULT_PORT
    min_interval_ms: int = 10  # the server's floor on a client's interval (its default)

    def argv(self) -> list[str]:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return ["irtt", "server", "-b", f"{host}:{self.port}", "-i", f"{self.min_interval_ms}ms"]

    @staticmethod
    def parse(text: str) -> Any:
        return text


@dataclass(frozen=True)
class IrttClient(Irtt):
    """`irtt client`: one round trip every `interval_s` for `duration_s`, JSON on stdout."""

    address: str
    duration_s: float
    interval_s: float = 0.1
    port: int = DEFAULT_PORT
    length: int = PACKET_BYTES
    wait_ms: int = 500  # after the last packet, for late replies: a full FIFO's length and more

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.duration_s <= 0:
            raise ValueError("irtt needs a positive interval and duration")

    def argv(self) -> list[str]:
        # irtt 0.9's own flag parser takes a long option's value only after "=" (`--wait 500ms`
        # is "flag needs an argument"); its short options take the next word.
        host = f"[{self.address}]" if ":" in self.address else self.address
        return ["irtt", "client", "-i", f"{round(self.interval_s * 1e3)}ms", "-d", f"{round(self.duration_s * 1e3)}ms",
                "-l", str(self.length), f"--wait={self.wait_ms}ms", "-Q", "-o", "-", f"{host}:{self.port}"]

    @staticmethod
    def parse(text: str) -> IrttResult:
        return parse_irtt(text)
