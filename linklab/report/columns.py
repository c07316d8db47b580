"""Which columns a report's tables show: the metrics a run measured (linklab/verdict/metrics.py),
and every other numeric column its rows hold, so fields added to the rows later appear too."""

from __future__ import annotations

from linklab.verdict.metrics import METRICS, Metric, Row, num

# Columns that are settings or identities, not measurements: never listed as "other columns".
NOT_MEASURED = {"point_index", "rep", "client_exit", "scale", "repetitions", "duration_s", "omit_s", "streams", "parallel",
                "processes", "sender_threads", "mss", "length", "ip", "mtu", "port", "reverse", "preflight_mtu",
                "window_s", "sent_bytes", "received_bytes", "sent_bps", "received_bps", "packets", "udp_rate"}
_COVERED = {"throughput_bps", "retransmits", "cwnd_mean", "rtt_mean_us", "cpu_client_iperf3_pct",
            "cpu_server_iperf3_pct", "client_member_tx_max_share", "jitter_ms", "lost_percent", "ping_rtt_mean_ms",
            "ping_rtt_p95_ms", "ping_loss_pct", "reorder_ratio", "reorder_extent_max", "load_ping_added_p50_ms",
            "fault1_outage_s", "fault1_recover_s", "fault1_settle_s"}


def present(rows: list[Row], table: tuple[Metric, ...] = METRICS) -> list[Metric]:
    """The metrics some row measured, in the table's order; `table`: the run's (metrics.table_of:
    the metrics its experiment declared too)."""
    return [m for m in table if any(m.get(r) is not None for r in rows)]


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
