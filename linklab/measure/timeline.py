"""Faults on a timeline: iperf3's short intervals (-i 0.1) as a time series, and per fault the
outage it caused. Pure functions on iperf3's JSON.

Definitions (stated in every row, so a reader can judge them):
  pre-fault rate   mean rate of the intervals in the PRE_S seconds before the fault
  outage_s         time the rate stayed below OUTAGE_FRACTION of the pre-fault rate, from the
                   first such interval at or after the fault (within SEARCH_S: iperf3 starts its
                   clock after connecting, so the fault's time on its clock is known only to
                   about the connect time) until the first interval back above it
  recover_s        from the fault to the first of RECOVERED_RUN consecutive intervals at
                   RECOVERED_FRACTION of the pre-fault rate or more
  retransmits      TCP retransmits in the intervals from the fault to recovery
  lost_packets     UDP datagrams lost in those intervals (iperf3's receiver count)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OUTAGE_FRACTION = 0.5
RECOVERED_FRACTION = 0.9
RECOVERED_RUN = 3
PRE_S = 1.0
SEARCH_S = 1.0


@dataclass(frozen=True)
class Interval:
    start: float
    end: float
    bps: float
    retransmits: int = 0
    lost_packets: int = 0


def series(doc: dict) -> list[Interval]:
    """iperf3 JSON -> the non-omitted intervals' sums, on iperf3's clock (seconds from its start)."""
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

    def row(self, prefix: str) -> dict[str, Any]:
        return {f"{prefix}at_s": self.at_s, f"{prefix}pre_bps": self.pre_bps, f"{prefix}min_bps": self.min_bps,
                f"{prefix}outage_s": self.outage_s, f"{prefix}recover_s": self.recover_s,
                f"{prefix}retransmits": self.retransmits, f"{prefix}lost_packets": self.lost_packets}


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
