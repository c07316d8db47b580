"""ping (iputils): argv, and parsing that tells loss apart from refusal.

RTT statistics are computed from the per-reply lines, not taken from ping's summary: the
summary has no percentiles, and its min/avg/max/mdev include duplicate replies (mdev is a
population deviation). Reply lines print 3 significant digits ("time=44.4 ms"), the summary
prints microseconds, so the row carries ping's avg/mdev too.

For path-MTU checks a DF ping that is too big is *refused*, not lost, and iputils says so in
three ways (all captured in tests/data/tools/):
- "From R icmp_seq=1 Frag needed and DF set (mtu = 1400)"  (IPv4 router on the path, stdout)
- "From R icmp_seq=1 Packet too big: mtu=1400"             (IPv6 router on the path, stdout)
- "ping: local error: message too long, mtu=1400"          (stderr: the local route's MTU or
  a PMTU the kernel already learned; no icmp_seq)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from linklab import runner
from linklab.measure import stats
from linklab.measure.base import MeasurementError, Tool

TOO_BIG = ("frag_needed", "packet_too_big", "local_too_big")

_REPLY = re.compile(
    r"^(?P<bytes>\d+) bytes from (?P<src>.+?): icmp_seq=(?P<seq>\d+) ttl=(?P<ttl>\d+)"
    r" time=(?P<rtt>[\d.]+) ms(?P<dup> \(DUP!\))?"
)
_FROM = re.compile(r"^From (?P<src>\S+)(?: \([^)]*\))? icmp_seq=(?P<seq>\d+) (?P<msg>.+)$")
_LOCAL_TOO_BIG = re.compile(r"^ping: local error: message too long, mtu[=:] ?(?P<mtu>\d+)", re.I)
_SENDMSG_TOO_BIG = re.compile(r"^ping: sendmsg: Message too long", re.I)
_MTU = re.compile(r"mtu ?[=:] ?(?P<mtu>\d+)", re.I)
# "PING 10.0.0.2 (10.0.0.2) 56(84) bytes", and for IPv6 "PING fd00::2(fd00::2) 56 data bytes"
_HEADER = re.compile(r"^PING (?P<target>[^\s(]+)")
_SUMMARY = re.compile(r"^(?P<tx>\d+) packets transmitted, (?P<rx>\d+) (?:packets )?received(?P<rest>.*)$")
_RTT = re.compile(r"^rtt min/avg/max/mdev = (?P<min>[\d.]+)/(?P<avg>[\d.]+)/(?P<max>[\d.]+)/(?P<mdev>[\d.]+) ms")
_FATAL = re.compile(r"^ping: (?P<msg>.*(?:Name or service not known|Network is unreachable|"
                    r"Temporary failure in name resolution|Cannot assign requested address|"
                    r"Address family not supported|unknown host|invalid argument|Operation not permitted).*)$", re.I)


class PingError(MeasurementError):
    """ping could not run the measurement at all (unknown host, no route, bad option)."""


@dataclass(frozen=True)
class Reply:
    seq: int
    rtt_ms: float
    ttl: int
    bytes: int
    source: str
    duplicate: bool = False


@dataclass(frozen=True)
class ErrorReply:
    """A packet answered with an error instead of an echo reply. seq is None for local errors."""

    kind: str  # frag_needed | packet_too_big | local_too_big | unreachable | ttl_exceeded | other
    seq: int | None
    source: str | None
    mtu: int | None
    message: str


def _classify(msg: str) -> str:
    low = msg.lower()
    if "frag needed" in low:
        return "frag_needed"
    if "packet too big" in low:
        return "packet_too_big"
    if "unreachable" in low:
        return "unreachable"
    if "time to live exceeded" in low or "time exceeded" in low:
        return "ttl_exceeded"
    return "other"


@dataclass(frozen=True)
class PingResult:
    target: str | None
    transmitted: int
    received: int  # distinct sequence numbers answered (duplicates not counted)
    duplicates: int
    errors: int  # ping's own "+N errors" count
    rtts_ms: tuple[float, ...]  # first reply per sequence number, in arrival order
    replies: tuple[Reply, ...] = field(repr=False, default=())
    error_replies: tuple[ErrorReply, ...] = field(repr=False, default=())
    summary_rtt_ms: tuple[float, float, float, float] | None = None  # ping's min/avg/max/mdev

    @property
    def lost(self) -> int:
        """Sent and neither answered nor refused: what the path dropped."""
        return max(self.transmitted - self.received - self.too_big, 0)

    @property
    def loss_percent(self) -> float | None:
        return 100.0 * (self.transmitted - self.received) / self.transmitted if self.transmitted else None

    @property
    def too_big(self) -> int:
        """Packets refused because they exceed an MTU (counted once per packet sent)."""
        by_seq = {e.seq for e in self.error_replies if e.kind in TOO_BIG and e.seq is not None}
        local = sum(1 for e in self.error_replies if e.kind in TOO_BIG and e.seq is None)
        return min(len(by_seq) + local, self.transmitted) if self.transmitted else len(by_seq) + local

    @property
    def mtu(self) -> int | None:
        """Smallest MTU any too-big error named: the path MTU as far as this ping learned."""
        mtus = [e.mtu for e in self.error_replies if e.kind in TOO_BIG and e.mtu]
        return min(mtus) if mtus else None

    @property
    def verdict(self) -> str:
        """ok | too_big | unreachable | lost | partial_loss (what a path-MTU check branches on)."""
        if self.transmitted and self.received == self.transmitted:
            return "ok"
        if self.received == 0 and self.too_big:
            return "too_big"
        if self.received == 0 and any(e.kind == "unreachable" for e in self.error_replies):
            return "unreachable"
        return "lost" if self.received == 0 else "partial_loss"

    def _stat(self, fn) -> float | None:
        return fn(self.rtts_ms) if self.rtts_ms else None

    @property
    def rtt_min_ms(self) -> float | None:
        return self._stat(min)

    @property
    def rtt_mean_ms(self) -> float | None:
        return self._stat(stats.mean)

    @property
    def rtt_max_ms(self) -> float | None:
        return self._stat(max)

    @property
    def rtt_std_ms(self) -> float | None:
        """Sample standard deviation (nan for one reply)."""
        return self._stat(stats.std)

    def rtt_percentile(self, p: float) -> float | None:
        return stats.percentile(self.rtts_ms, p) if self.rtts_ms else None

    def row(self, prefix: str = "ping_") -> dict[str, Any]:
        return {
            f"{prefix}sent": self.transmitted,
            f"{prefix}received": self.received,
            f"{prefix}duplicates": self.duplicates,
            f"{prefix}errors": self.errors,
            f"{prefix}too_big": self.too_big,
            f"{prefix}lost": self.lost,
            f"{prefix}loss_pct": self.loss_percent,
            f"{prefix}verdict": self.verdict,
            f"{prefix}mtu": self.mtu,
            f"{prefix}rtt_min_ms": self.rtt_min_ms,
            f"{prefix}rtt_mean_ms": self.rtt_mean_ms,
            f"{prefix}rtt_max_ms": self.rtt_max_ms,
            f"{prefix}rtt_std_ms": self.rtt_std_ms,
            f"{prefix}rtt_p50_ms": self.rtt_percentile(50),
            f"{prefix}rtt_p95_ms": self.rtt_percentile(95),
            f"{prefix}rtt_p99_ms": self.rtt_percentile(99),
            # ping's own figures, at microsecond resolution (reply lines have 3 significant digits)
            f"{prefix}summary_avg_ms": self.summary_rtt_ms[1] if self.summary_rtt_ms else None,
            f"{prefix}summary_mdev_ms": self.summary_rtt_ms[3] if self.summary_rtt_ms else None,
        }


def _count(rest: str, word: str) -> int:
    m = re.search(r"\+(\d+) " + word, rest)
    return int(m.group(1)) if m else 0


def parse_ping(stdout: str, stderr: str = "") -> PingResult:
    target = None
    replies: list[Reply] = []
    errs: list[ErrorReply] = []
    summary = rtt = None
    for line in stdout.splitlines() + stderr.splitlines():
        line = line.strip()
        if m := _REPLY.match(line):
            replies.append(Reply(int(m["seq"]), float(m["rtt"]), int(m["ttl"]), int(m["bytes"]), m["src"], bool(m["dup"])))
        elif m := _FROM.match(line):
            mtu = _MTU.search(m["msg"])
            errs.append(ErrorReply(_classify(m["msg"]), int(m["seq"]), m["src"], int(mtu["mtu"]) if mtu else None, m["msg"]))
        elif m := _LOCAL_TOO_BIG.match(line):
            errs.append(ErrorReply("local_too_big", None, None, int(m["mtu"]), line))
        elif _SENDMSG_TOO_BIG.match(line):
            errs.append(ErrorReply("local_too_big", None, None, None, line))
        elif m := _HEADER.match(line):
            target = m["target"]
        elif m := _SUMMARY.match(line):
            summary = m
        elif m := _RTT.match(line):
            rtt = tuple(float(m[k]) for k in ("min", "avg", "max", "mdev"))
    if summary is None:
        fatal = next((m["msg"] for ln in (stderr + "\n" + stdout).splitlines() if (m := _FATAL.match(ln.strip()))), None)
        raise PingError(f"ping: {fatal}" if fatal else "ping printed no statistics: " +
                        repr((stderr or stdout).strip().splitlines()[-1:] or ""))
    # Duplicates are recognised by sequence number: iputils 20221126 does not always print
    # "(DUP!)" (it did not for broadcast replies here), but its summary still counts them.
    seen: set[int] = set()
    first: list[float] = []
    marked: list[Reply] = []
    for r in replies:
        dup = r.duplicate or r.seq in seen
        seen.add(r.seq)
        if not dup:
            first.append(r.rtt_ms)
        marked.append(Reply(r.seq, r.rtt_ms, r.ttl, r.bytes, r.source, dup))
    return PingResult(
        target=target,
        transmitted=int(summary["tx"]),
        received=int(summary["rx"]),
        duplicates=_count(summary["rest"], "duplicates"),
        errors=_count(summary["rest"], "errors"),
        rtts_ms=tuple(first),
        replies=tuple(marked),
        error_replies=tuple(errs),
        summary_rtt_ms=rtt,
    )


@dataclass(frozen=True)
class Ping(Tool):
    name: ClassVar[str] = "ping"
    binary: ClassVar[str] = "ping"
    version_flag: ClassVar[str] = "-V"
    version_pattern: ClassVar[str] = r"(iputils[- ]?\S+)"  # 'ping from iputils 20221126' -> 'iputils 20221126'

    target: str
    count: int = 10
    interval: float | None = None  # -i seconds; below 0.2 needs root (we are)
    size: int | None = None  # -s payload bytes (the packet adds IP and ICMP headers: model/paths.py headers)
    dont_fragment: bool = False  # -M do: refuse rather than fragment (path-MTU checks)
    family: int | None = None  # 4 or 6
    # -w: stop after this many seconds. With -w, iputils reads count as replies to wait for, so
    # an unanswered target gets more than count probes (7 sent for -c 3 -w 4 in the captures).
    deadline: float | None = None
    wait: float | None = None  # -W: seconds to wait for each reply
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.family not in (None, 4, 6):
            raise ValueError(f"family must be 4 or 6, got {self.family!r}")
        if self.count < 1:
            raise ValueError("count must be >= 1")

    def argv(self) -> list[str]:
        argv = ["ping", "-n", "-c", str(self.count)]  # -n: no reverse DNS stalls between replies
        if self.family:
            argv.append(f"-{self.family}")
        if self.interval is not None:
            argv += ["-i", f"{self.interval:g}"]
        if self.size is not None:
            argv += ["-s", str(self.size)]
        if self.dont_fragment:
            argv += ["-M", "do"]
        if self.deadline is not None:
            argv += ["-w", f"{self.deadline:g}"]
        if self.wait is not None:
            argv += ["-W", f"{self.wait:g}"]
        return [*argv, *self.extra, self.target]

    @staticmethod
    def parse(text: str, stderr: str = "") -> PingResult:
        return parse_ping(text, stderr)

    def parse_result(self, res: runner.Result) -> PingResult:
        # Exit 1 = no reply at all, a normal outcome here (loss, too big); judge by the output.
        return parse_ping(res.stdout, res.stderr)


def largest_passing(results: Sequence[tuple[int, PingResult]]) -> int | None:
    """From (size, result) pairs of DF pings, the largest size that got replies."""
    ok = [size for size, r in results if r.received > 0]
    return max(ok) if ok else None


def load_window(load: PingResult, interval_s: float, skip_s: float) -> PingResult:
    """The part of a ping that ran through a throughput window from `skip_s` into it: replies
    picked by icmp_seq (seq k was sent at (k-1) * interval), each once; a probe sent past the
    skip without a reply counts as lost. Pure."""
    first = int(skip_s / interval_s) + 1
    seen, rtts = set(), []
    for r in load.replies:
        if r.seq >= first and not r.duplicate and r.seq not in seen:
            seen.add(r.seq)
            rtts.append(r.rtt_ms)
    sent = max(load.transmitted - first + 1, 0)
    return PingResult(target=load.target, transmitted=sent, received=len(rtts), duplicates=0, errors=0,
                      rtts_ms=tuple(rtts))


def under_load_row(load: PingResult, interval_s: float, skip_s: float, idle: PingResult | None = None,
                   prefix: str = "load_ping_") -> dict[str, Any]:
    """Latency under load (flent's RRUL view): the RTT distribution of a ping that ran during the
    throughput window, counted from `skip_s` into it (slow start and iperf3's omitted seconds
    are not the steady state), beside the idle RTT. Pure.

    Replies are picked by icmp_seq (seq k was sent at (k-1) * interval); a sent probe past the
    skip without a reply counts as lost under load (a full dropping queue)."""
    window = load_window(load, interval_s, skip_s)
    row = {k: v for k, v in window.row(prefix).items()
           if not k.endswith(("too_big", "mtu", "summary_avg_ms", "summary_mdev_ms", "verdict", "errors", "duplicates"))}
    row[f"{prefix}skip_s"] = skip_s
    idle_p50 = idle.rtt_percentile(50) if idle is not None else None
    load_p50 = window.rtt_percentile(50)
    row[f"{prefix}added_p50_ms"] = (round(load_p50 - idle_p50, 4)
                                    if load_p50 is not None and idle_p50 is not None else None)
    row[f"{prefix}added_min_ms"] = (round(window.rtt_min_ms - idle.rtt_min_ms, 4)
                                    if window.rtts_ms and idle is not None and idle.rtt_min_ms is not None else None)
    return row
