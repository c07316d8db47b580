"""Queue evidence over a window: each shaped direction's queue sampled (backlog in bytes and
packets, drops, ECN marks, and the delay where the discipline reports one), and what the row
keeps of it. Pure functions on the samples; linklab/measure/probes/queues.py takes them.

A direction is summarised as:
  backlog_p50_ms, backlog_p95_ms  the backlog in milliseconds of the direction's rate (bytes x 8 /
                  rate): the delay a packet arriving then waits behind it, in the unit ping's
                  added delay is read in. From the samples past `skip_s` (slow start is not the
                  steady queue, as the load ping skips it)
  delay_p50_ms, delay_p95_ms      the discipline's own sojourn or delay (codel, pie, cake), past
                  `skip_s`; None where it reports none
  drops, marks    counted over the whole sampled window (last sample - first); marks None where
                  the discipline reports none (a FIFO, netem)
The row keeps the busiest direction's figures (the largest p95 backlog: the bottleneck's queue)
under queue_*, and names it (queue_at); every direction's are in the raw output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linklab.measure.stats import percentile

SAMPLE_INTERVAL_S = 0.1  # 10 Hz: a 100 ms FIFO drains in one sample's time; CoDel's interval is 100 ms


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the traffic started
    backlog_bytes: int
    backlog_pkts: int
    drops: int  # the holder's counter since it was made
    marks: int | None = None
    delay_s: float | None = None


def _pct(values: list[float], p: float) -> float | None:
    return round(percentile(values, p), 3) if values else None


def direction(samples: list[Sample], rate_bps: float, skip_s: float) -> dict[str, Any]:
    """One direction's summary (the module's text)."""
    if not samples:
        return {"samples": 0}
    steady = [s for s in samples if s.t >= skip_s]
    backlog_ms = [s.backlog_bytes * 8 / rate_bps * 1e3 for s in steady] if rate_bps else []
    delays = [s.delay_s * 1e3 for s in steady if s.delay_s is not None]
    first, last = samples[0], samples[-1]
    marks = last.marks - first.marks if last.marks is not None and first.marks is not None else None
    return {"samples": len(samples), "backlog_p50_ms": _pct(backlog_ms, 50), "backlog_p95_ms": _pct(backlog_ms, 95),
            "backlog_pkts_p95": _pct([float(s.backlog_pkts) for s in steady], 95),
            "delay_p50_ms": _pct(delays, 50), "delay_p95_ms": _pct(delays, 95),
            "drops": max(last.drops - first.drops, 0), "marks": None if marks is None else max(marks, 0)}


def row(summaries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The row's queue_* fields: the busiest direction's summary (the module's text)."""
    ranked = [(s.get("backlog_p95_ms") or 0.0, key) for key, s in summaries.items() if s.get("samples")]
    if not ranked:
        return {}
    _, at = max(ranked)
    s = summaries[at]
    return {"queue_at": at, **{f"queue_{k}": s[k] for k in ("backlog_p50_ms", "backlog_p95_ms", "delay_p50_ms",
                                                            "delay_p95_ms", "drops", "marks")},
            "queue_samples": s["samples"]}
