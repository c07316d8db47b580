"""Per-packet and per-second samples for distributions and time series: from the row when it
carries them (a list field), else from the repetition's raw tool output when the run directory
still has it (a trimmed baseline does not: then these figures are left out)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from linklab.measure.iperf3 import split_json_stream
from linklab.measure.ping import parse_ping
from linklab.report.points import Point

# Row fields other code may add with the same samples; read first when present.
RTT_FIELDS = ("ping_rtts_ms", "ping_rtt_samples_ms")
INTERVAL_FIELDS = ("interval_bps", "intervals_bps")


def rep_dir(run_path: Path, row: dict[str, Any]) -> Path:
    return run_path / "points" / str(row.get("point_id")) / f"rep{row.get('rep')}"


def ping_rtts(run_path: Path, point: Point) -> list[float]:
    out: list[float] = []
    for r in point.ok:
        field = next((r[f] for f in RTT_FIELDS if isinstance(r.get(f), list)), None)
        if field is not None:
            out += [float(v) for v in field]
            continue
        f = rep_dir(run_path, r) / "ping.txt"
        if f.is_file():
            try:
                out += [rep.rtt_ms for rep in parse_ping(f.read_text()).replies if not rep.duplicate]
            except Exception:  # a raw file a newer/older ping wrote differently: no samples, no crash
                continue
    return out


def intervals(run_path: Path, point: Point) -> list[list[tuple[float, float]]]:
    """Per repetition, [(end of interval s, bit/s summed over streams)]."""
    out = []
    for r in point.ok:
        field = next((r[f] for f in INTERVAL_FIELDS if isinstance(r.get(f), list)), None)
        if field is not None:
            out.append([(float(i + 1), float(v)) for i, v in enumerate(field)])
            continue
        d = rep_dir(run_path, r)
        files = sorted(d.glob("iperf3*.json")) if d.is_dir() else []
        per_file = [_intervals_of(f) for f in files]
        per_file = [s for s in per_file if s]
        if not per_file:
            continue
        # several processes (parallel: processes): add them up interval by interval
        n = min(len(s) for s in per_file)
        out.append([(per_file[0][i][0], sum(s[i][1] for s in per_file)) for i in range(n)])
    return out


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
