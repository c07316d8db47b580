"""Per-packet and per-second samples for distributions and time series: from the row when it
carries them (a list field), else from the repetition's raw tool output when the run directory
still has it. A baseline (runs.export) copies them into its rows, so its report draws them too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from linklab.measure.iperf3 import split_json_stream
from linklab.measure.ping import parse_ping

# Row fields other code may add with the same samples; read first when present.
RTT_FIELDS = ("ping_rtts_ms", "ping_rtt_samples_ms")
INTERVAL_FIELDS = ("interval_bps", "intervals_bps")


def rep_dir(run_path: Path, row: dict[str, Any]) -> Path:
    return run_path / "points" / str(row.get("point_id")) / f"rep{row.get('rep')}"


def row_ping_rtts(run_path: Path, row: dict[str, Any]) -> list[float]:
    """One repetition's idle ping RTTs: the row's own list, else its raw ping.txt, else none."""
    field = next((row[f] for f in RTT_FIELDS if isinstance(row.get(f), list)), None)
    if field is not None:
        return [float(v) for v in field]
    f = rep_dir(run_path, row) / "ping.txt"
    if not f.is_file():
        return []
    try:
        return [rep.rtt_ms for rep in parse_ping(f.read_text()).replies if not rep.duplicate]
    except Exception:  # a raw file a newer/older ping wrote differently: no samples, no crash
        return []


def row_intervals(run_path: Path, row: dict[str, Any]) -> list[tuple[float, float]]:
    """One repetition's [(end of interval s, bit/s summed over streams)]: from the row's own
    list ([[end_s, bps], ...], or plain per-second values), else from its raw iperf3 output."""
    field = next((row[f] for f in INTERVAL_FIELDS if isinstance(row.get(f), list)), None)
    if field is not None:
        if all(isinstance(v, (list, tuple)) and len(v) == 2 for v in field):
            return [(float(t), float(v)) for t, v in field]
        return [(float(i + 1), float(v)) for i, v in enumerate(field)]
    d = rep_dir(run_path, row)
    files = sorted(d.glob("iperf3*.json")) if d.is_dir() else []
    per_file = [s for s in (_intervals_of(f) for f in files) if s]
    if not per_file:
        return []
    # several processes (parallel: processes): add them up interval by interval
    n = min(len(s) for s in per_file)
    return [(per_file[0][i][0], sum(s[i][1] for s in per_file)) for i in range(n)]


def ping_rtts(run_path: Path, rows: list[dict[str, Any]]) -> list[float]:
    """The idle ping RTTs of these repetitions (a point's measured ones), one list."""
    return [v for r in rows for v in row_ping_rtts(run_path, r)]


def intervals(run_path: Path, rows: list[dict[str, Any]]) -> list[list[tuple[float, float]]]:
    """Per repetition of `rows` (a point's measured ones) that has them, [(end of interval s, bit/s summed over streams)]."""
    return [s for s in (row_intervals(run_path, r) for r in rows) if s]


def _intervals_of(path: Path) -> list[tuple[float, float]]:
    try:
        docs = split_json_stream(path.read_text())
    except Exception:
        return []
    for doc in docs:
        ivs = doc.get("intervals") if isinstance(doc, dict) else None
        if ivs:
            return [(float(i["sum"]["end"]), float(i["sum"]["bits_per_second"])) for i in ivs
                    if isinstance(i, dict) and "sum" in i and not i["sum"].get("omitted")]
    return []
