"""Events on a timeline: iperf3's short intervals (-i 0.1) as a time series, and per event its
effect on the flow. Pure functions on iperf3's JSON.

Two kinds of event, judged differently:
  a failure (a member's cable pulled or replugged, the active member moved) is an *outage*:
    how long the flow stayed below half its rate, and how long until it was back;
  a change (an impairment set in place: rate, delay, loss, ...) is not a failure: the flow is
    meant to run at a new level afterwards, so it is judged by how long it took to *settle*
    there. Reporting a rate cut to a fifth as an "outage" (below half the old rate for good)
    said the link failed when it was doing what it was asked.

The series is the receiver's when iperf3 carries it (--get-server-output, the server reporting
at the same interval): a sender's 0.1 s intervals count bytes handed to its socket, which
stalls in bursts against the queue (bench/README.md#measurement) although the link delivered
all along. Otherwise the client's own intervals.

Definitions for failures (stated in every row, so a reader can judge them):
  pre-fault rate   mean rate of the intervals in the PRE_S seconds before the fault
  outage_s         time the rate stayed below OUTAGE_FRACTION of the pre-fault rate, from the
                   first such interval at or after the fault (within SEARCH_S: iperf3 starts its
                   clock after connecting, so the fault's time on its clock is known only to
                   about the connect time) until the first interval back above it
  recover_s        from the fault to the first of RECOVERED_RUN consecutive intervals at
                   RECOVERED_FRACTION of the pre-fault rate or more
  retransmits      TCP retransmits in the intervals from the fault to recovery
  lost_packets     UDP datagrams lost in those intervals (iperf3's receiver count)
  flow_stall_s     per stream (iperf3 -P N: one flow each), the time it stayed below
                   STALL_FRACTION of its own pre-fault rate, as outage_s; the longest of them:
                   a fault on one of several paths stops the flows hashed onto it while the
                   others carry on, which the sum's outage (below half) does not see
  flows_stalled    how many streams stalled at all
and for changes:
  post_bps         the median rate of the intervals in the POST_S seconds before the next event
                   (or the window's end): the level the flow settled at. A median, not a mean:
                   one stalled interval there (the emulated CPU paused, or iperf3's short last
                   interval) pulls a mean below a steady flow (bench/README.md#measurement)
  settle_s         from the change to the first interval from which the flow, averaged over
                   RECOVERED_RUN intervals (0.3 s), stays within SETTLE_BAND of post_bps for
                   RECOVERED_RUN such windows in a row (0.5 s; None: never steady there)
A change is judged on 0.3 s means, not single 0.1 s intervals: a shaper releases its bucket in
bursts (64 kB at 10 Mbit/s is half an interval), so a receiver's 0.1 s intervals at a steady low
rate spread by +-25 % (captured: tests/data/tools/iperf3_tcp_rate_cut_server_series.json).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any

OUTAGE_FRACTION = 0.5
STALL_FRACTION = 0.1
RECOVERED_FRACTION = 0.9
RECOVERED_RUN = 3
PRE_S = 1.0
SEARCH_S = 1.0
POST_S = 1.0
SETTLE_BAND = 0.1  # +-10 % of the settled level: the sawtooth of a shaped TCP flow stays inside


@dataclass(frozen=True)
class Interval:
    start: float
    end: float
    bps: float
    retransmits: int = 0
    lost_packets: int = 0


def series(doc: dict) -> list[Interval]:
    """iperf3 JSON -> the non-omitted intervals' sums, on iperf3's clock (seconds from its start):
    the receiver's (the server's output, for a client sending) when it is there at the client's
    granularity, else the client's own."""
    own = _intervals(doc)
    server = doc.get("server_output_json")
    sending = not doc.get("start", {}).get("test_start", {}).get("reverse")
    if sending and isinstance(server, dict):
        theirs = _intervals(server)
        if theirs and own and len(theirs) >= 0.8 * len(own):
            return [replace(iv, retransmits=mine.retransmits) for iv, mine in zip(theirs, own)] + theirs[len(own):]
    return own


def stream_series(doc: dict) -> list[list[Interval]]:
    """Each stream's own series (iperf3 -P N), the receiver's when the server's output has as
    many streams at the client's granularity (as `series` chooses), else the client's."""
    own = _streams(doc)
    server = doc.get("server_output_json")
    sending = not doc.get("start", {}).get("test_start", {}).get("reverse")
    if sending and isinstance(server, dict):
        theirs = _streams(server)
        if len(theirs) == len(own) and all(t and o and len(t) >= 0.8 * len(o) for t, o in zip(theirs, own)):
            return theirs
    return own


def _streams(doc: dict) -> list[list[Interval]]:
    out: dict[int, list[Interval]] = {}
    for iv in doc.get("intervals", []):
        for k, st in enumerate(iv.get("streams", [])):
            if not st.get("omitted"):
                out.setdefault(k, []).append(Interval(start=float(st.get("start", 0.0)), end=float(st.get("end", 0.0)),
                                                      bps=float(st.get("bits_per_second", 0.0))))
    return [out[k] for k in sorted(out)]


def stalls(streams: list[list[Interval]], at_s: float) -> tuple[float | None, int | None]:
    """(the longest stall of any stream after a fault at `at_s`, how many streams stalled);
    (None, None) without per-stream series."""
    times = [o.outage_s for ivs in streams if (o := outage(ivs, at_s, STALL_FRACTION)).outage_s is not None]
    if not times:
        return None, None
    return max(times), sum(1 for t in times if t > 0)


def _intervals(doc: dict) -> list[Interval]:
    out = []
    for iv in doc.get("intervals", []):
        s = iv.get("sum", {})
        if s.get("omitted"):
            continue
        out.append(Interval(start=float(s.get("start", 0.0)), end=float(s.get("end", 0.0)),
                            bps=float(s.get("bits_per_second", 0.0)), retransmits=int(s.get("retransmits", 0) or 0),
                            lost_packets=int(s.get("lost_packets", 0) or 0)))
    return out


@dataclass(frozen=True)
class Outage:
    at_s: float
    pre_bps: float | None
    min_bps: float | None
    outage_s: float | None
    recover_s: float | None  # None: not back within the window
    retransmits: int
    lost_packets: int
    flow_stall_s: float | None = None  # the longest a stream stalled (None: no per-stream series)
    flows_stalled: int | None = None

    def row(self, prefix: str) -> dict[str, Any]:
        return {f"{prefix}at_s": self.at_s, f"{prefix}pre_bps": self.pre_bps, f"{prefix}min_bps": self.min_bps,
                f"{prefix}outage_s": self.outage_s, f"{prefix}recover_s": self.recover_s,
                f"{prefix}retransmits": self.retransmits, f"{prefix}lost_packets": self.lost_packets,
                f"{prefix}flow_stall_s": self.flow_stall_s, f"{prefix}flows_stalled": self.flows_stalled}


def outage(ivs: list[Interval], at_s: float, frac: float = OUTAGE_FRACTION) -> Outage:
    """The effect of a fault at `at_s` (iperf3's clock) on the series."""
    pre = [iv for iv in ivs if at_s - PRE_S <= iv.start and iv.end <= at_s + 1e-9]
    pre_bps = sum(iv.bps for iv in pre) / len(pre) if pre else None
    after = [iv for iv in ivs if iv.end > at_s]
    if pre_bps is None or not after:
        return Outage(at_s, pre_bps, None, None, None, 0, 0)
    low = frac * pre_bps
    first = next((k for k, iv in enumerate(after) if iv.bps < low and iv.start <= at_s + SEARCH_S), None)
    out_s = 0.0
    if first is not None:
        k = first
        while k < len(after) and after[k].bps < low:
            out_s += after[k].end - after[k].start
            k += 1
    good = RECOVERED_FRACTION * pre_bps
    recover_idx = None
    for k in range(len(after) - RECOVERED_RUN + 1):
        if all(iv.bps >= good for iv in after[k:k + RECOVERED_RUN]):
            recover_idx = k
            break
    span = after[:recover_idx] if recover_idx is not None else after
    recover_s = max(after[recover_idx].start - at_s, 0.0) if recover_idx is not None else None
    return Outage(at_s=at_s, pre_bps=pre_bps, min_bps=min(iv.bps for iv in after[:max(len(span), 1)]),
                  outage_s=round(out_s, 3), recover_s=None if recover_s is None else round(recover_s, 3),
                  retransmits=sum(iv.retransmits for iv in span), lost_packets=sum(iv.lost_packets for iv in span))


@dataclass(frozen=True)
class Settle:
    at_s: float
    pre_bps: float | None
    post_bps: float | None
    settle_s: float | None  # None: never steady at post_bps within the series
    retransmits: int
    lost_packets: int

    def row(self, prefix: str) -> dict[str, Any]:
        return {f"{prefix}at_s": self.at_s, f"{prefix}pre_bps": self.pre_bps, f"{prefix}post_bps": self.post_bps,
                f"{prefix}settle_s": self.settle_s, f"{prefix}retransmits": self.retransmits,
                f"{prefix}lost_packets": self.lost_packets}


def settle(ivs: list[Interval], at_s: float, until_s: float | None = None) -> Settle:
    """How the flow took a change at `at_s` (iperf3's clock): the level it settled at before
    `until_s` (the next event; None: the series' end) and how long it took to get there."""
    pre = [iv for iv in ivs if at_s - PRE_S <= iv.start and iv.end <= at_s + 1e-9]
    pre_bps = sum(iv.bps for iv in pre) / len(pre) if pre else None
    after = [iv for iv in ivs if iv.end > at_s and (until_s is None or iv.start < until_s)]
    if not after:
        return Settle(at_s, pre_bps, None, None, 0, 0)
    end = after[-1].end
    tail = [iv.bps for iv in after if iv.start >= end - POST_S]
    post = statistics.median(tail) if tail else None
    settled = None
    if post is not None:
        band = SETTLE_BAND * max(post, 1.0)
        means = [sum(iv.bps for iv in after[k:k + RECOVERED_RUN]) / RECOVERED_RUN
                 for k in range(len(after) - RECOVERED_RUN + 1)]
        for k in range(len(means) - RECOVERED_RUN + 1):
            if all(abs(m - post) <= band for m in means[k:k + RECOVERED_RUN]):
                settled = k
                break
    span = after[:settled] if settled is not None else after
    settle_s = None if settled is None else round(max(after[settled].start - at_s, 0.0), 3)
    return Settle(at_s=at_s, pre_bps=pre_bps, post_bps=post, settle_s=settle_s,
                  retransmits=sum(iv.retransmits for iv in span), lost_packets=sum(iv.lost_packets for iv in span))


def effect(ivs: list[Interval], at_s: float, failure: bool, until_s: float | None = None,
           streams: list[list[Interval]] | None = None) -> Outage | Settle:
    """A failure's outage (with `streams`, each stream's stall), or a change's settling (see
    the module's text)."""
    if not failure:
        return settle(ivs, at_s, until_s)
    stall_s, stalled = stalls(streams or [], at_s)
    return replace(outage(ivs, at_s), flow_stall_s=stall_s, flows_stalled=stalled)
