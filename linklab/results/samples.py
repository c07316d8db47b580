"""Per-packet and per-second samples for distributions and time series: from the row when it
carries them (a list field), else from the repetition's raw tool output when the run directory
still has it. A baseline (runs.export) copies them into its rows, so its report draws them too.

A repetition's window as time series (what the report draws and `linklab export --to flent`
writes) comes from its raw output: each flow's iperf3 JSON (flow-NAME.json of a flows run, else
iperf3*.json) with the receiver's intervals, the ping through the window (ping-load.txt) and the
UDP round trips beside it (irtt.json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from linklab.measure.iperf3 import split_json_stream
from linklab.measure.irtt import parse_irtt
from linklab.measure.ping import parse_ping
from linklab.measure.probes.ping import LOAD_INTERVAL_S

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


FLOW_PREFIX = "flow-"  # linklab/sweep/kinds/flows.py: each flow's iperf3 JSON is raw file flow-<name>.json


def receiver_series(doc: dict[str, Any], offset: float = 0.0) -> tuple[list[tuple[float, float]], list[float]]:
    """An iperf3 client's JSON as [(end of interval s since the window opened, Mbit/s)] from the
    receiver's report, and each interval's length. iperf3 counts time again from 0 after its omitted
    warm-up: those intervals are moved past it. `offset`: when the flow started in the window."""
    reverse = bool((doc.get("start") or {}).get("test_start", {}).get("reverse"))
    server = doc.get("server_output_json") if isinstance(doc.get("server_output_json"), dict) else None
    source = doc if reverse or not (server and server.get("intervals")) else server
    omit = float(((doc.get("start") or {}).get("test_start") or {}).get("omit") or 0)
    points, spans = [], []
    for iv in source.get("intervals") or []:
        s = iv.get("sum") if isinstance(iv, dict) else None
        if not s or "end" not in s:
            continue
        shift = 0.0 if s.get("omitted") else omit
        points.append((round(offset + shift + float(s["end"]), 6), float(s["bits_per_second"]) / 1e6))
        spans.append(float(s["end"]) - float(s.get("start", 0.0)))
    return points, spans


def ping_series(text: str) -> list[tuple[float, float]]:
    """The load ping's replies as [(s since the window opened, RTT ms)]: it started with the
    window and sent one probe every LOAD_INTERVAL_S (reply N left (N-1) x the interval in)."""
    res = parse_ping(text)
    seen, out = set(), []
    for r in res.replies:
        if r.duplicate or r.seq in seen:
            continue
        seen.add(r.seq)
        out.append((round((r.seq - 1) * LOAD_INTERVAL_S, 6), r.rtt_ms))
    return sorted(out)


def udp_series(text: str) -> list[tuple[float, float]]:
    """irtt's round trips as [(s since the window opened, RTT ms)], the lost ones left out: it
    started with the window, and round trip k left k x its interval in."""
    res = parse_irtt(text)
    return [(round(t.seq * res.interval_s, 6), t.rtt_ms) for t in res.trips if t.rtt_ms is not None]


def rep_flows(d: Path, row: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, direction, iperf3 JSON) of each flow a repetition ran: a flows run's flow-NAME.json
    files (their directions in the row), else the iperf3 kind's iperf3.json / iperf3-K.json."""
    out = []
    flows = sorted(d.glob(f"{FLOW_PREFIX}*.json"))
    files = flows or sorted(d.glob("iperf3*.json"))
    for f in files:
        docs = [x for x in split_json_stream(f.read_text()) if isinstance(x, dict)]
        if not docs or not docs[0].get("intervals"):
            continue
        name = f.stem[len(FLOW_PREFIX):] if flows else f.stem
        reverse = bool(((docs[0].get("start") or {}).get("test_start") or {}).get("reverse"))
        direction = row.get(f"flow_{name}_direction") or ("down" if reverse else "up")
        out.append((name, direction, docs[0]))
    return out


def flow_start(doc: dict[str, Any]) -> float | None:
    """When an iperf3 client started (epoch seconds), from its JSON."""
    ts = (doc.get("start") or {}).get("timestamp") or {}
    return float(ts["timesecs"]) if "timesecs" in ts else None


def window(run_path: Path, row: dict[str, Any]) -> dict[str, Any] | None:
    """One repetition's window as time series, or None where its raw output has no flow's series:
    {"t0": epoch s the first flow started, "flows": [(name, direction, [(s, Mbit/s)], [span s])],
    "ping": [(s, RTT ms)] (empty without ping-load.txt), "udp": [(s, RTT ms)] (empty without
    irtt.json)}; times in seconds since t0."""
    d = rep_dir(run_path, row)
    flows = rep_flows(d, row) if d.is_dir() else []
    if not flows:
        return None
    starts = [s for s in (flow_start(doc) for _, _, doc in flows) if s is not None]
    t0 = min(starts) if starts else None
    out = []
    for name, direction, doc in flows:
        start = flow_start(doc)
        pts, spans = receiver_series(doc, (start - t0) if start is not None and t0 is not None else 0.0)
        out.append((name, direction, pts, spans))
    return {"t0": t0, "flows": out, "ping": _series(d / "ping-load.txt", ping_series),
            "udp": _series(d / "irtt.json", udp_series)}


def _series(path: Path, read) -> list[tuple[float, float]]:
    try:
        return read(path.read_text()) if path.is_file() else []
    except Exception:  # a raw file a newer/older tool wrote differently: no samples, no crash
        return []
