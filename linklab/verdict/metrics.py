"""What each metric is, as data, one row per metric: where it comes from in a row, its unit, and
how the verdict judges it (docs/verdicts.md): on which scale, which side is harmless, and the
smallest change that counts. The few fields only the report reads (which direction is better,
whether it is a rate the lab's scale multiplied, whether it is a column of the per-point table)
sit in the same row, so a new metric is added in one place.

Unknown columns are not an error: the report lists every other numeric column too
(linklab/report/columns.py), so fields added to the rows later appear without touching this table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from linklab.results.points import axis_value

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


def queue_marked_share(row: Row) -> float | None:
    """The bottleneck queue's marks / (marks + drops) over the window (queue_marks, queue_drops)."""
    marks, drops = num(row.get("queue_marks")), num(row.get("queue_drops")) or 0.0
    return marks / (marks + drops) if marks is not None and marks + drops > 0 else None


def _ratio(a: str, b: str, factor: float = 1.0) -> Callable[[Row], float | None]:
    def get(row: Row) -> float | None:
        x, y = num(row.get(a)), num(row.get(b))
        return x / y * factor if x is not None and y else None
    return get


# How the verdict (docs/verdicts.md, step 1) measures a metric's change:
#   rel   as a ratio B/A (rates, delays, windows): on log(value)
#   log   as a ratio of value + offset: counts and rare-event shares, whose repetitions are skewed
#         (a handful of retransmits one run, three times as many the next); the offset keeps zero finite
#   abs   as a difference in the metric's own unit (CPU percentage points, shares, seconds)
SCALES = ("rel", "log", "abs")
# Which move is a difference: "both" by default; "upper" only where falling is harmless (stated).
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
    table: bool = True              # a column of the per-point table
    scale: str = "rel"              # SCALES
    offset: float = 0.0             # log scale: log(value + offset), so zero counts are fine
    sides: str = "both"             # SIDES
    sides_why: str = ""             # why a one-sided metric's other side is harmless
    judged: bool = True             # the verdict judges it (False: derived from another judged metric)
    # The smallest change the verdict calls a difference, stated per metric: a ratio for "rel" and
    # "log" metrics (0.05: B/A beyond x1.05 or /1.05), the unit for "abs" ones. Smaller changes,
    # however certain, are not worth a red build.
    min_effect: float = 0.0
    rule: str = "metric"            # the verdict's rule that judges it ("members": bond member shares)

    @property
    def title(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


METRICS: tuple[Metric, ...] = (
    # Two-sided: +30 % is a shaper that stopped limiting.
    Metric("throughput_mbps", "throughput", "Mbit/s", col("throughput_bps", 1e-6), ".1f", "higher", True,
           min_effect=0.05),
    # Judged per GB sent (below): the count moves with the rate.
    Metric("retransmits", "retransmits", "segments", col("retransmits"), ".0f", "lower", scale="log", offset=10.0,
           judged=False),
    # A difference only when they double (or halve): repetitions with nothing changed move them by
    # several times at some points. The offset (200/GB) is ~10 segments of a quick run (~0.06 GB).
    # Two-sided: none where there were hundreds means a loss or a queue that no longer acts.
    Metric("retrans_per_gb", "retransmits per GB sent", "/GB", _ratio("retransmits", "sent_bytes", 1e9), ".0f",
           "lower", scale="log", offset=200.0, min_effect=1.0),
    # Reordering measured directly (sequence-numbered probe, RFC 4737 / RFC 5236), beside the
    # retransmits it causes.
    Metric("reorder_pct", "reordered probe packets", "%", col("reorder_ratio", 100.0), ".2f", None,
           scale="log", offset=0.1, min_effect=1.0),
    Metric("reorder_extent", "reorder extent (max)", "packets", col("reorder_extent_max"), ".0f", None,
           scale="log", offset=1.0, min_effect=1.0),
    Metric("cwnd_kb", "mean cwnd", "kB", col("cwnd_mean", 1e-3), ".0f", None, True, min_effect=0.10),
    Metric("cwnd_ms", "cwnd at the measured rate", "ms",
           lambda r: (c * 8 / b * 1e3) if (c := num(r.get("cwnd_mean"))) is not None and (b := num(r.get("throughput_bps"))) else None,
           ".2f", None, judged=False),
    # Two-sided: a shorter RTT can be a delay no longer applied.
    Metric("tcp_rtt_ms", "iperf3 TCP RTT", "ms", col("rtt_mean_us", 1e-3), ".2f", "lower", min_effect=0.10),
    Metric("busiest_core_pct", "busiest core", "%", lambda r: (c[1] if (c := busiest_core(r)) else None), ".0f",
           "lower", scale="abs", sides="upper", sides_why=_LESS_CPU, min_effect=5.0),
    Metric("sender_cpu_pct", "sender iperf3 CPU", "% of a core", col("cpu_client_iperf3_pct"), ".0f", "lower",
           scale="abs", sides="upper", sides_why=_LESS_CPU, min_effect=5.0),
    Metric("receiver_cpu_pct", "receiver iperf3 CPU", "% of a core", col("cpu_server_iperf3_pct"), ".0f", "lower",
           scale="abs", sides="upper", sides_why=_LESS_CPU, min_effect=5.0),
    # The whole machine's CPU, every core and the kernel's softirq time included: where a packet's
    # cost lands (the stack's per-packet work after a process's send returns) and what a host's CPU
    # counter shows. Every namespace of a lab shares one kernel, so both ends are in it. Not judged:
    # the verdict judges the busiest core, which moves with it.
    Metric("machine_cpu_pct", "machine CPU", "% of all cores", col("cpu_all_busy_pct"), ".0f", "lower",
           scale="abs", judged=False),
    # The sender's tx share, for the tables; the verdict judges every side and direction below.
    Metric("member_max_share", "busiest bond member's share", "of bytes", col("client_member_tx_max_share"), ".2f",
           None, scale="abs", judged=False),
    # Each side's busiest bond member's share, per direction: 1.0 on one member, 0.5 split over
    # two; judged as the verdict's "members" rule (one member where the other arm split it).
    *(Metric(f"member_share_{side}_{d}", f"busiest member's share ({side} {d})", "of bytes",
             col(f"{side}_member_{d}_max_share"), ".2f", None, scale="abs", table=False, min_effect=0.1,
             rule="members")
      for side in ("client", "server") for d in ("tx", "rx")),
    # measure: link_counters: the busiest of the counted paths (a bond's members, parallel routed
    # links), from each link's first end: 1.0 all on one path, 0.5 split evenly over two.
    Metric("path_max_share", "busiest path's share", "of bytes", col("path_tx_max_share"), ".2f", None,
           scale="abs", min_effect=0.1, rule="members"),
    Metric("jitter_ms", "UDP jitter", "ms", col("jitter_ms"), ".3f", "lower", scale="log", offset=0.05,
           min_effect=1.0),
    Metric("lost_percent", "UDP loss", "%", col("lost_percent"), ".2f", "lower", scale="log", offset=0.1,
           min_effect=1.0),
    Metric("ping_rtt_ms", "ping RTT", "ms", col("ping_rtt_mean_ms"), ".3f", "lower", min_effect=0.10),
    # The tail of idle pings under emulation spikes (a descheduled VM).
    Metric("ping_p95_ms", "ping RTT p95", "ms", col("ping_rtt_p95_ms"), ".3f", "lower", scale="log",
           min_effect=0.25),
    Metric("ping_loss_pct", "ping loss", "%", col("ping_loss_pct"), ".1f", "lower", scale="abs", min_effect=5.0),
    # Can be negative (the loaded RTT's median below the idle one's): judged in its unit, not as a ratio.
    Metric("load_added_ms", "RTT added under load (p50)", "ms", col("load_ping_added_p50_ms"), ".2f", "lower",
           scale="abs", min_effect=2.0),
    # irtt's UDP round trips beside the load ping (measure: [udp_rtt]), past slow start: under load
    # they spread as the load ping's do, judged like its tail.
    Metric("udp_rtt_p50_ms", "UDP RTT under load (p50)", "ms", col("udp_rtt_p50_ms"), ".2f", "lower", scale="log",
           offset=0.1, min_effect=0.25),
    Metric("udp_loss_pct", "UDP round trips lost under load", "%", col("udp_rtt_loss_pct"), ".1f", "lower",
           scale="abs", min_effect=5.0),
    # The bottleneck's queue through the window (measure: [queue], linklab/measure/queue_evidence.py):
    # its backlog in ms of the link's rate (what a packet arriving then waits), judged in its unit:
    # 2 ms is under half of CoDel's 5 ms target, well inside one FIFO's length.
    Metric("queue_p50_ms", "queue backlog p50", "ms", col("queue_backlog_p50_ms"), ".2f", "lower", scale="abs",
           min_effect=2.0),
    Metric("queue_p95_ms", "queue backlog p95", "ms", col("queue_backlog_p95_ms"), ".2f", "lower", scale="abs",
           min_effect=2.0),
    # Of the packets the queue signalled congestion to, the share it marked (ECN CE) rather than
    # dropped: 1 where every signal was a mark, 0 where every one was a drop; none where the
    # discipline cannot mark (a FIFO) or signalled nothing.
    Metric("marked_share", "congestion signals marked (not dropped)", "of signals", queue_marked_share, ".2f",
           None, scale="abs", min_effect=0.1),
    # Several flows at once (flows:): how evenly they shared. Judged in its unit: 0.05 is one flow
    # of four taking 1.4 times an equal share, the others sharing the rest (linklab/sweep/kinds/flows.py).
    Metric("jain_index", "Jain's fairness index", "", col("jain_index"), ".3f", "higher", scale="abs",
           min_effect=0.05),
    # A fault on the timeline (events:): the first one's outage and recovery. Two-sided: no outage
    # at all where there was one can be a fault that was never applied.
    Metric("outage_s", "outage (first fault)", "s", col("fault1_outage_s"), ".2f", "lower", scale="abs",
           min_effect=0.5),
    Metric("recover_s", "time to recover (first fault)", "s", col("fault1_recover_s"), ".2f", "lower", scale="abs",
           min_effect=0.5),
    # The first fault's longest stall of one flow (a stream below a tenth of its own rate): a path
    # failing among several stops only the flows hashed onto it.
    Metric("flow_stall_s", "longest flow stall (first fault)", "s", col("fault1_flow_stall_s"), ".2f", "lower",
           scale="abs", min_effect=0.5),
    # A change on the timeline (an impairment set in place): how long the flow took to settle.
    Metric("settle_s", "time to settle (first change)", "s", col("fault1_settle_s"), ".2f", "lower", scale="abs",
           min_effect=0.5),
    # Throughput / packet size: judged through throughput (and the path MTU, as structure).
    Metric("packets_per_s", "packets", "pkt/s", packets_per_s, ".0f", None, True, table=False, judged=False),
)
BY_KEY = {m.key: m for m in METRICS}

# A declared metric's `harmless` side (linklab/sweep/experiment.py: DeclaredMetric) as the sides it is judged on.
HARMLESS_SIDES = {"below": "upper", "above": "lower"}


def declared(manifest: dict[str, Any]) -> tuple[Metric, ...]:
    """The metrics a run's experiment declared (`tool.kind: command`, as its manifest records
    them): each a row of this table like the built-in ones, read from the row's column of its
    name. A name that is a built-in metric's is left to the built-in (the experiment refuses it)."""
    tool = manifest.get("tool") or {}
    out = []
    for name, spec in (tool.get("metrics") or {}).items() if isinstance(tool, dict) else ():
        if name in BY_KEY or not isinstance(spec, dict):
            continue
        harmless = spec.get("harmless")
        sides = HARMLESS_SIDES.get(harmless, "both")
        better = {"upper": "lower", "lower": "higher"}.get(sides)
        out.append(Metric(name, name, str(spec.get("unit") or ""), col(name), ".4g", better,
                          scale=spec.get("scale") or "rel", offset=float(spec.get("offset") or 0.0), sides=sides,
                          sides_why=f"the experiment states a move {harmless} harmless" if harmless else "",
                          min_effect=float(spec.get("min_effect") or 0.0)))
    return tuple(out)


def table_of(*manifests: dict[str, Any]) -> tuple[Metric, ...]:
    """Every metric of these runs: the built-in ones, then each declared one (the first run's
    declaration of a name wins)."""
    seen: dict[str, Metric] = {}
    for manifest in manifests:
        for m in declared(manifest):
            seen.setdefault(m.key, m)
    return METRICS + tuple(seen.values())


def check_declared(names) -> list[str]:
    """Problems with declared metric names: one a built-in metric already has."""
    return [f"tool.metrics.{n}: a built-in metric's name (choose another; built-in: {', '.join(BY_KEY)})"
            for n in names if n in BY_KEY]

def get(metric: str | Metric, row: Row) -> float | None:
    m = metric if isinstance(metric, Metric) else BY_KEY[metric]
    return m.get(row)
