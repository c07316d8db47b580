"""ss (iproute2): the kernel's tcp_info of a namespace's TCP connections, as `ss -ti` prints it.

What limited a sender is in its tcp_info (tcp_chrono, since Linux 4.10): `busy` is how long the
socket had data to send, `rwnd_limited` how much of that the receiver's advertised window held it
back, `sndbuf_limited` how much its own send buffer did. Whatever is left of `busy` the congestion
window held it (or the network, which is the same thing to a sender that fills it).

ss rather than a sock_diag dump of our own: struct tcp_info grows with the kernel (busy and the
limited times came in 4.10, snd_wnd in 5.4), and ss decodes what this kernel fills in by name,
leaving out what is zero (`rwnd_limited` appears only once the window held the sender back).

iproute2 6.1's ss with -H prints per connection one line of queues and addresses (its state too,
unless the command named one), then one tab-indented line of tcp_info: `cubic wscale:7,7 rto:228 rtt:26.945/1.85 mss:8948 ... cwnd:40 ... busy:3932ms
rwnd_limited:36ms(0.9%) ... snd_wnd:3145728`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from linklab.measure.base import Tool

# The state column is left out when the command names one state (`state established`).
_ADDRS = re.compile(r"^(?:(?P<state>[A-Z][A-Z0-9-]*)\s+)?(?P<recvq>\d+)\s+(?P<sendq>\d+)\s+(?P<local>\S+)\s+(?P<peer>\S+)")
_MS = re.compile(r"(?P<key>busy|rwnd_limited|sndbuf_limited):(?P<ms>\d+)ms")
# TcpConn's integer fields, by the names ss gives them ("mss" not inside "advmss", "rtt" not in "minrtt").
_INT = re.compile(r"(?<!\w)(?P<key>mss|cwnd|snd_wnd|bytes_sent|bytes_acked|bytes_retrans|unacked):(?P<v>\d+)")
_RTT = re.compile(r"(?<!\w)rtt:(?P<rtt>[\d.]+)/[\d.]+")
_APP_LIMITED = re.compile(r"(?<![\w])app_limited(?![\w:])")
_RETRANS = re.compile(r"(?<![\w])retrans:\d+/(?P<total>\d+)")


@dataclass(frozen=True)
class TcpConn:
    """One connection's tcp_info. Times in ms, sizes in bytes; absent fields 0 (ss leaves zeros out)."""

    local: str
    peer: str
    bytes_sent: int = 0
    bytes_acked: int = 0
    bytes_retrans: int = 0
    retrans: int = 0  # segments retransmitted over the connection's life
    mss: int = 0
    cwnd: int = 0  # segments
    snd_wnd: int = 0  # the receiver's last advertised window
    rtt_ms: float | None = None
    busy_ms: int = 0
    rwnd_limited_ms: int = 0
    sndbuf_limited_ms: int = 0
    unacked: int = 0  # segments in flight
    app_limited: bool = False  # the last delivery-rate sample found the sender with less to send than cwnd

    @property
    def port(self) -> int:
        return int(self.peer.rsplit(":", 1)[1])


@dataclass(frozen=True)
class TcpInfo(Tool):
    """`ss -tinH` in a namespace: its established TCP connections to `ports` (the peer's port)."""

    name: ClassVar[str] = "ss"
    binary: ClassVar[str] = "ss"
    version_flag: ClassVar[str] = "-V"
    version_pattern: ClassVar[str] = r"iproute2-(\S+)"  # 'ss utility, iproute2-6.1.0'
    needs_names: ClassVar[bool] = False

    ports: tuple[int, ...] = ()

    def argv(self) -> list[str]:
        argv = ["ss", "-tinH", "state", "established"]
        if self.ports:
            lo, hi = min(self.ports), max(self.ports)
            argv += ["(", "dport", "=", f":{lo}", ")"] if lo == hi else \
                ["(", "dport", ">=", f":{lo}", "and", "dport", "<=", f":{hi}", ")"]
        return argv

    @staticmethod
    def parse(text: str) -> list[TcpConn]:
        return parse_tcp_info(text)


def parse_tcp_info(text: str) -> list[TcpConn]:
    """`ss -ti[H]` output -> one TcpConn per connection (a header line, if any, is skipped)."""
    conns: list[TcpConn] = []
    head: re.Match | None = None
    for line in text.splitlines():
        m = _ADDRS.match(line)
        if m:
            head = m
            continue
        if head is None or not line.strip():
            continue
        kw: dict[str, Any] = {k: int(v) for k, v in _INT.findall(line)}
        kw.update({f"{k}_ms": int(v) for k, v in _MS.findall(line)})
        if r := _RTT.search(line):
            kw["rtt_ms"] = float(r["rtt"])
        if r := _RETRANS.search(line):
            kw["retrans"] = int(r["total"])
        kw["app_limited"] = _APP_LIMITED.search(line) is not None
        conns.append(TcpConn(local=head["local"], peer=head["peer"], **kw))
        head = None
    return conns


def data_streams(conns: Sequence[TcpConn]) -> list[TcpConn]:
    """The connections that carried the test's data: iperf3 keeps a control connection to the same
    port beside each test, which sends a few hundred bytes."""
    most = max((c.bytes_acked for c in conns), default=0)
    return [c for c in conns if most and c.bytes_acked >= most / 100]


def limits_row(conns: Sequence[TcpConn], prefix: str = "sender_tcp_") -> dict[str, Any]:
    """The data streams' limited times summed (ms), for a repetition's row; {} with none."""
    data = data_streams(conns)
    if not data:
        return {}
    return {f"{prefix}streams": len(data),
            f"{prefix}busy_ms": sum(c.busy_ms for c in data),
            f"{prefix}rwnd_limited_ms": sum(c.rwnd_limited_ms for c in data),
            f"{prefix}sndbuf_limited_ms": sum(c.sndbuf_limited_ms for c in data),
            f"{prefix}snd_wnd": min(c.snd_wnd for c in data),
            # what the senders had in flight of what their congestion windows allowed, when read
            f"{prefix}inflight_pct": round(100.0 * sum(c.unacked for c in data) / cwnd, 1) if (
                cwnd := sum(c.cwnd for c in data)) else None,
            f"{prefix}app_limited": sum(c.app_limited for c in data)}
