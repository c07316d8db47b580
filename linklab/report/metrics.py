"""What each reported metric is, as data: where it comes from in a row, its unit, which
direction is better, whether it is a rate that scales with the lab, and how `compare` judges
it: on which scale its noise is measured, which side of its band fails, the declared floors
that stand in until a noise floor is measured (`linklab noise`), and its resolution.

Unknown columns are not an error: the report lists every other numeric column too (see
`other_columns`), so fields added to the rows later appear without touching this table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from linklab.report.points import axis_value

Row = dict[str, Any]


def num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def col(name: str, factor: float = 1.0) -> Callable[[Row], float | None]:
    def get(row: Row) -> float | None:
        v = num(row.get(name))
        return None if v is None else v * factor
    return get


def busiest_core(row: Row) -> tuple[str, float] | None:
    """(core, busy %) of the busiest single core in a row's measurement window."""
    cores = core_busy(row)
    return max(cores.items(), key=lambda c: c[1]) if cores else None


def core_busy(row: Row) -> dict[str, float]:
    """{"0": 41.2, "1": 88.0}: each core's busy % (keys cpu<N>_busy_pct)."""
    out = {}
    for k, raw in row.items():
        if k.startswith("cpu") and k.endswith("_busy_pct") and k[3:4].isdigit():
            v = num(raw)
            if v is not None:
                out[k[3:-len("_busy_pct")]] = v
    return dict(sorted(out.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0))


def packet_size(row: Row) -> float | None:
    """The size the sender's packets had: the varied "MTU" (interface MTU, or iperf3's -M/-l
    when those were the axis), else the interface MTU recorded in the row."""
    varied = row.get("mtu_varied")
    for key in ([varied] if isinstance(varied, str) else []) + ["length", "mss", "mtu", "preflight_mtu"]:
        v = num(axis_value(row, key))
        if v:
            return v
    return None


def packets_per_s(row: Row) -> float | None:
    """E1's model input: R = throughput / (MTU * 8)."""
    bps, size = num(row.get("throughput_bps")), packet_size(row)
    return bps / (size * 8) if bps is not None and size else None


def _ratio(a: str, b: str, factor: float = 1.0) -> Callable[[Row], float | None]:
    def get(row: Row) -> float | None:
        x, y = num(row.get(a)), num(row.get(b))
        return x / y * factor if x is not None and y else None
    return get


# How `compare` measures a metric's change (linklab/report/bands.py):
#   rel   relative to the baseline mean (rates, delays, windows): the band is a fraction of it
#   log   on log(value + offset): counts and rare-event ratios, whose repetitions are skewed (a
#         handful of retransmits one run, three times as many the next); bands are multiplicative
#   abs   in the metric's own unit (CPU percentage points, shares, seconds of outage)
SCALES = ("rel", "log", "abs")
# Which move fails the gate: "both" by default; "upper" only where falling is harmless (stated).
SIDES = ("both", "upper", "lower")
_LESS_CPU = "less CPU for the same work is an efficiency gain; the throughput it carried is judged on its own"


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    get: Callable[[Row], float | None]
    fmt: str = ".3g"
    better: str | None = None       # "higher", "lower", or None: words only ("+30 %, the better way")
    scaled: bool = False            # a rate that the lab's scale multiplied
    # Declared floors, used only when no noise floor was measured for the baseline (`linklab noise`):
    rel_floor: float = 0.10         # a band never narrower than this fraction of the baseline mean …
    abs_floor: float = 0.0          # … nor than this, in the metric's unit
    table: bool = True              # a column of the per-point table
    scale: str = "rel"              # SCALES
    offset: float = 0.0             # log scale: log(value + offset), so zero counts are fine
    sides: str = "both"             # SIDES
    sides_why: str = ""             # why a one-sided metric's other side is harmless
    resolution: float = 0.0         # the smallest difference the figure expresses (not its noise)
    judged: bool = True             # compare judges it (False: derived from another judged metric)
    # What the emulating machine's speed does to it (linklab/report/machine.py): "cost" (CPU:
    # judged relative to the run's CPU level), "rate" (more room on another machine), "queue"
    # (includes the emulator's own queueing: room growing with the level squared), "" (none).
    machine: str = ""
    # The smallest change `linklab ab`'s verdict fails for (linklab/report/verdict.py): a ratio
    # for "rel" and "log" metrics (0.05: B/A beyond x1.05 or /1.05), the unit for "abs" ones.
    min_effect: float = 0.0
    check: str = "metric"           # the verdict's name for its checks ("members": bond member shares)

    @property
    def title(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


# Declared floors are wide on purpose: they stand in until a noise floor is measured on the
# machine kind (the stored 1-repetition baselines come from a shared 2-core machine running the
# lab VM under software emulation, where throughput moves ~5-10 % between quiet and busy minutes
# and retransmit counts by several times).
METRICS: tuple[Metric, ...] = (
    # Two-sided: +30 % is a shaper that stopped limiting.
    Metric("throughput_mbps", "throughput", "Mbit/s", col("throughput_bps", 1e-6), ".1f", "higher", True, 0.15, 2.0,
           resolution=0.1, machine="rate", min_effect=0.05),
    # Retransmits may triple before they count (rel_floor 2.0): between one-repetition quick runs
    # with nothing changed, a CI machine measured 654 -> 1602 /GB (2.45x) at 802.3ad, MTU 450, one
    # stream. What the gate is for (a bond that reorders, a queue that overflows) moves them 10x.
    # Two-sided: none where there were hundreds means a loss or a queue that no longer acts.
    Metric("retransmits", "retransmits", "segments", col("retransmits"), ".0f", "lower", rel_floor=2.0, abs_floor=50,
           scale="log", offset=10.0, resolution=1.0, judged=False),
    # abs_floor 500/GB: a quick run sends ~0.06 GB per point, so a handful of retransmits (5 -> 14
    # seen between two quiet E1 runs at 802.3ad, 20 streams) is already ~150/GB of noise; the
    # offset (200/GB) is ~10 segments of such a run.
    Metric("retrans_per_gb", "retransmits per GB sent", "/GB", _ratio("retransmits", "sent_bytes", 1e9), ".0f",
           "lower", rel_floor=2.0, abs_floor=500, scale="log", offset=200.0, resolution=1.0, min_effect=1.0),
    # Reordering measured directly (sequence-numbered probe, RFC 4737 / RFC 5236), beside the
    # retransmits it causes.
    Metric("reorder_pct", "reordered probe packets", "%", col("reorder_ratio", 100.0), ".2f", None, abs_floor=1.0,
           scale="log", offset=0.1, resolution=0.01, min_effect=1.0),
    Metric("reorder_extent", "reorder extent (max)", "packets", col("reorder_extent_max"), ".0f", None, abs_floor=2.0,
           scale="log", offset=1.0, resolution=1.0, min_effect=1.0),
    Metric("cwnd_kb", "mean cwnd", "kB", col("cwnd_mean", 1e-3), ".0f", None, True, resolution=1.0, machine="queue", min_effect=0.10),
    Metric("cwnd_ms", "cwnd at the measured rate", "ms",
           lambda r: (c * 8 / b * 1e3) if (c := num(r.get("cwnd_mean"))) is not None and (b := num(r.get("throughput_bps"))) else None,
           ".2f", None, resolution=0.01, machine="queue", judged=False),
    # Two-sided: a shorter RTT can be a delay no longer applied.
    Metric("tcp_rtt_ms", "iperf3 TCP RTT", "ms", col("rtt_mean_us", 1e-3), ".2f", "lower", rel_floor=1.0, abs_floor=5.0,
           resolution=0.01, machine="queue", min_effect=0.10),
    Metric("busiest_core_pct", "busiest core", "%", lambda r: (c[1] if (c := busiest_core(r)) else None), ".0f",
           "lower", abs_floor=15.0, scale="abs", sides="upper", sides_why=_LESS_CPU, resolution=1.0, machine="cost", min_effect=5.0),
    Metric("sender_cpu_pct", "sender iperf3 CPU", "% of a core", col("cpu_client_iperf3_pct"), ".0f", "lower",
           abs_floor=15.0, scale="abs", sides="upper", sides_why=_LESS_CPU, resolution=1.0, machine="cost", min_effect=5.0),
    Metric("receiver_cpu_pct", "receiver iperf3 CPU", "% of a core", col("cpu_server_iperf3_pct"), ".0f", "lower",
           abs_floor=15.0, scale="abs", sides="upper", sides_why=_LESS_CPU, resolution=1.0, machine="cost", min_effect=5.0),
    # Besides its band, one member vs spread over several is judged as structure (compare.py).
    Metric("member_max_share", "busiest bond member's share", "of bytes", col("client_member_tx_max_share"), ".2f",
           None, abs_floor=0.1, scale="abs", resolution=0.01, judged=False),
    # Each side's busiest bond member's share, per direction: 1.0 on one member, 0.5 spread over
    # two; judged as the verdict's "members" check (one member where the other arm spread it).
    *(Metric(f"member_share_{side}_{d}", f"busiest member's share ({side} {d})", "of bytes",
             col(f"{side}_member_{d}_max_share"), ".2f", None, abs_floor=0.1, scale="abs", resolution=0.01,
             table=False, min_effect=0.1, check="members")
      for side in ("client", "server") for d in ("tx", "rx")),
    Metric("jitter_ms", "UDP jitter", "ms", col("jitter_ms"), ".3f", "lower", rel_floor=1.0, abs_floor=0.5,
           scale="log", offset=0.05, resolution=0.001, min_effect=1.0),
    Metric("lost_percent", "UDP loss", "%", col("lost_percent"), ".2f", "lower", rel_floor=0.5, abs_floor=5.0,
           scale="log", offset=0.1, resolution=0.01, min_effect=1.0),
    Metric("ping_rtt_ms", "ping RTT", "ms", col("ping_rtt_mean_ms"), ".3f", "lower", rel_floor=1.0, abs_floor=1.0,
           resolution=0.001, min_effect=0.10),
    # The tail of idle pings under emulation spikes (descheduled VM): judged on a log scale.
    Metric("ping_p95_ms", "ping RTT p95", "ms", col("ping_rtt_p95_ms"), ".3f", "lower", rel_floor=1.0, abs_floor=1.0,
           scale="log", offset=0.0, resolution=0.001, min_effect=0.25),
    Metric("ping_loss_pct", "ping loss", "%", col("ping_loss_pct"), ".1f", "lower", rel_floor=0.0, abs_floor=10.0,
           scale="abs", resolution=0.1, min_effect=5.0),
    # Can be negative (the loaded RTT's median below the idle one's): judged in its unit, not as a ratio.
    Metric("load_added_ms", "RTT added under load (p50)", "ms", col("load_ping_added_p50_ms"), ".2f", "lower",
           rel_floor=1.0, abs_floor=2.0, scale="abs", resolution=0.01, min_effect=2.0),
    # A fault on the timeline (events:): the first one's outage and recovery. Two-sided: no outage
    # at all where there was one can be a fault that was never applied.
    Metric("outage_s", "outage (first fault)", "s", col("fault1_outage_s"), ".2f", "lower", rel_floor=1.0,
           abs_floor=0.5, scale="abs", resolution=0.1, min_effect=0.5),
    Metric("recover_s", "time to recover (first fault)", "s", col("fault1_recover_s"), ".2f", "lower", rel_floor=1.0,
           abs_floor=0.5, scale="abs", resolution=0.1, min_effect=0.5),
    # A change on the timeline (an impairment set in place): how long the flow took to settle.
    Metric("settle_s", "time to settle (first change)", "s", col("fault1_settle_s"), ".2f", "lower", rel_floor=1.0,
           abs_floor=0.5, scale="abs", resolution=0.1, min_effect=0.5),
    # Throughput / packet size: judged through throughput (and the path MTU, as structure).
    Metric("packets_per_s", "packets", "pkt/s", packets_per_s, ".0f", None, True, table=False, judged=False),
)
BY_KEY = {m.key: m for m in METRICS}

# Columns that are settings or identities, not measurements: never listed as "other columns".
NOT_MEASURED = {"point_index", "rep", "scale", "repetitions", "duration_s", "omit_s", "streams", "parallel",
                "processes", "sender_threads", "mss", "length", "ip", "mtu", "port", "reverse", "preflight_mtu",
                "window_s", "sent_bytes", "received_bytes", "sent_bps", "received_bps", "packets", "udp_rate"}
_COVERED = {"throughput_bps", "retransmits", "cwnd_mean", "rtt_mean_us", "cpu_client_iperf3_pct",
            "cpu_server_iperf3_pct", "client_member_tx_max_share", "jitter_ms", "lost_percent", "ping_rtt_mean_ms",
            "ping_rtt_p95_ms", "ping_loss_pct", "reorder_ratio", "reorder_extent_max", "load_ping_added_p50_ms",
            "fault1_outage_s", "fault1_recover_s", "fault1_settle_s"}


def get(metric: str | Metric, row: Row) -> float | None:
    m = metric if isinstance(metric, Metric) else BY_KEY[metric]
    return m.get(row)


def present(rows: list[Row]) -> list[Metric]:
    return [m for m in METRICS if any(m.get(r) is not None for r in rows)]


def other_columns(rows: list[Row], axes: list[str]) -> list[str]:
    """Numeric columns no metric covers (e.g. fields added to rows after this was written)."""
    names: set[str] = set()
    for r in rows:
        for k, v in r.items():
            # phase_*_s: the sweep's own timings (linklab/sweep/phases.py), not the network's.
            if (k in axes or k in NOT_MEASURED or k in _COVERED or num(v) is None or k.startswith("tool.")
                    or k.startswith("phase_") or (k.startswith("cpu") and k[3:4].isdigit())):
                continue
            names.add(k)
    return sorted(names)
