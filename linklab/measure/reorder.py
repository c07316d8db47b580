"""Reordering measured directly: a sequence-numbered UDP probe, and the metrics of RFC 4737
(reordered-packet ratio, reordering extent) and RFC 5236 (reorder density), computed by pure
functions from the receiver's arrival log.

The probe (`python -m linklab.measure.reorder recv|send`) sends bursts of back-to-back datagrams
(so consecutive packets leave closer together than a bond's member delay skew, the way a TCP
flow's segments do) and the receiver prints one line per datagram: `seq <n>`. It runs during the
throughput window, so it sees the queues the flow builds.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from linklab.measure.base import Tool

DISPLACEMENT_THRESHOLD = 3  # RFC 5236's DT: displacements beyond +-DT are counted at the edge


@dataclass(frozen=True)
class ReorderResult:
    sent: int | None
    received: int  # distinct sequence numbers
    duplicates: int
    reordered: int  # RFC 4737 Type-P-Reordered: arrived with seq below the next expected
    extents: tuple[int, ...]  # RFC 4737 reordering extent of each reordered packet
    density: dict[int, float] = field(default_factory=dict)  # RFC 5236 RD: displacement -> fraction

    @property
    def ratio(self) -> float | None:
        return self.reordered / self.received if self.received else None

    def row(self, prefix: str = "reorder_") -> dict[str, Any]:
        return {
            f"{prefix}sent": self.sent,
            f"{prefix}received": self.received,
            f"{prefix}duplicates": self.duplicates,
            f"{prefix}packets": self.reordered,
            f"{prefix}ratio": self.ratio,
            f"{prefix}extent_max": max(self.extents) if self.extents else 0,
            f"{prefix}extent_mean": sum(self.extents) / len(self.extents) if self.extents else 0.0,
            f"{prefix}density_d0": self.density.get(0),
            f"{prefix}density": ";".join(f"{k}:{v:.4f}" for k, v in sorted(self.density.items())),
        }


def parse_arrivals(text: str) -> tuple[list[int], int | None]:
    """The receiver's log -> (sequence numbers in arrival order, packets the sender said it sent)."""
    seqs: list[int] = []
    sent = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "seq" and parts[1].isdigit():
            seqs.append(int(parts[1]))
        elif len(parts) == 2 and parts[0] == "sent" and parts[1].isdigit():
            sent = int(parts[1])
    return seqs, sent


def metrics(arrivals: list[int], sent: int | None = None, dt: int = DISPLACEMENT_THRESHOLD) -> ReorderResult:
    """RFC 4737 section 3/4 and RFC 5236 section 5 on an arrival sequence. Pure.

    Reordered (4737): seq < NextExp, where NextExp is one past the largest seq seen so far.
    Extent (4737 4.2.3): for a reordered packet at arrival index i, i - j where j is the first
    arrival with a larger seq. Density (5236): displacement of each packet = its arrival index
    minus its expected index, the expected index being its rank among the received sequence
    numbers (so lost packets do not count as displaced); |D| > dt counts at +-dt."""
    seen: set[int] = set()
    order: list[int] = []
    dups = 0
    for s in arrivals:
        if s in seen:
            dups += 1
            continue
        seen.add(s)
        order.append(s)
    next_exp = None
    reordered = 0
    extents: list[int] = []
    for i, s in enumerate(order):
        if next_exp is None or s >= next_exp:
            next_exp = s + 1
            continue
        reordered += 1
        j = next(k for k in range(i) if order[k] > s)
        extents.append(i - j)
    rank = {s: r for r, s in enumerate(sorted(order))}
    hist: dict[int, int] = {}
    for i, s in enumerate(order):
        d = max(-dt, min(dt, i - rank[s]))
        hist[d] = hist.get(d, 0) + 1
    n = len(order)
    density = {k: v / n for k, v in hist.items()} if n else {}
    return ReorderResult(sent=sent, received=n, duplicates=dups, reordered=reordered, extents=tuple(extents),
                         density=density)


@dataclass(frozen=True)
class ReorderProbe(Tool):
    """argv for both ends of the probe; run with the same Python that runs linklab."""

    target: str = ""
    port: int = 5301
    bursts: int = 200
    burst: int = 8  # datagrams sent back to back
    gap_s: float = 0.01  # between bursts
    size: int = 200  # payload bytes
    listen_s: float = 3.0  # the receiver stops this long after the last datagram

    name: ClassVar[str] = "reorder-probe"
    binary: ClassVar[str] = sys.executable  # part of linklab: its version is linklab's

    def receiver_argv(self) -> list[str]:
        return [sys.executable, "-m", "linklab.measure.reorder", "recv", "--port", str(self.port),
                "--idle", f"{self.listen_s:g}"]

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "linklab.measure.reorder", "send", "--to", self.target, "--port", str(self.port),
                "--bursts", str(self.bursts), "--burst", str(self.burst), "--gap", f"{self.gap_s:g}",
                "--size", str(self.size)]

    @staticmethod
    def parse(text: str) -> ReorderResult:
        seqs, sent = parse_arrivals(text)
        return metrics(seqs, sent)


def _send(args) -> None:
    fam = socket.AF_INET6 if ":" in args.to else socket.AF_INET
    sock = socket.socket(fam, socket.SOCK_DGRAM)
    pad = b"\0" * max(args.size - 8, 0)
    seq = 0
    for _ in range(args.bursts):
        for _ in range(args.burst):
            seq += 1
            sock.sendto(struct.pack("!Q", seq) + pad, (args.to, args.port))
        time.sleep(args.gap)
    # The count travels in-band too, so the receiver's log alone gives loss.
    for _ in range(3):
        sock.sendto(struct.pack("!Q", 0) + struct.pack("!Q", seq), (args.to, args.port))
        time.sleep(0.05)
    print(f"sent {seq}")


def _recv(args) -> None:
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("::", args.port))
    print("listening", flush=True)
    sock.settimeout(args.first)
    out = sys.stdout
    sent = None
    while True:
        try:
            data, _ = sock.recvfrom(65536)
        except socket.timeout:
            break
        sock.settimeout(args.idle)
        (seq,) = struct.unpack("!Q", data[:8])
        if seq == 0 and len(data) >= 16:
            sent = struct.unpack("!Q", data[8:16])[0]
            continue
        out.write(f"seq {seq}\n")
    if sent is not None:
        out.write(f"sent {sent}\n")
    out.flush()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m linklab.measure.reorder",
                                description="sequence-numbered UDP probe for reordering (RFC 4737/5236)")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, default=5301)
    r.add_argument("--idle", type=float, default=3.0, help="stop after this many seconds without a datagram")
    r.add_argument("--first", type=float, default=60.0, help="wait this long for the first datagram")
    s = sub.add_parser("send")
    s.add_argument("--to", required=True)
    s.add_argument("--port", type=int, default=5301)
    s.add_argument("--bursts", type=int, default=200)
    s.add_argument("--burst", type=int, default=8)
    s.add_argument("--gap", type=float, default=0.01)
    s.add_argument("--size", type=int, default=200)
    args = p.parse_args(argv)
    (_recv if args.cmd == "recv" else _send)(args)


if __name__ == "__main__":
    main()
