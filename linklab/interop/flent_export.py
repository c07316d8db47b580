"""A run's repetitions as flent data files (`linklab export --to flent RUN`): one `.flent.gz` per
repetition, in flent's own format (flent/resultset.py, file format version 4), so `flent -i FILE
-p all_scaled` (or `flent-gui FILE`) plots linklab's flows and latency under load like its own.

A flent data file is gzipped JSON: {version, metadata, x_values, results, raw_values}.
  metadata    flent's recorded settings: NAME (the flent test whose plots apply), TIME and T0
              (UTC, "%Y-%m-%dT%H:%M:%S.%fZ"), LENGTH, TOTAL_LENGTH, STEP_SIZE, HOST(S), IP_VERSION,
              TEST_PARAMETERS, SERIES_META (each series' UNITS), and linklab's own under LINKLAB
  x_values    seconds since T0, every STEP_SIZE
  results     each series sampled at every x (None where it has no sample): what flent plots
  raw_values  each series' samples as measured, [{"t": epoch seconds, "val": v}]

The series are named as flent's tests name theirs, which chooses the test (NAME):
  rrul_be         four TCP flows each way (`flows: rrul`): "TCP upload BE", "TCP upload BE2".."BE4",
                  "TCP download BE".."BE4", "Ping (ms) ICMP" and "Ping (ms) UDP BE1"
  rrul_be_nflows  any other flows, or one iperf3 flow: "TCP upload BE::N", "TCP download BE::N"
                  (TEST_PARAMETERS upload_streams, download_streams), "Ping (ms) ICMP" and
                  "Ping (ms) UDP BE1"
Goodput is the receiver's (iperf3's server report for a flow up, the client's for one down) in
Mbit/s; the ping is the 10 Hz ping through the window (`measure: [ping_load]`), the UDP round
trips irtt's 10 Hz ones beside it (`measure: [udp_rtt]`): rrul_be names its UDP series "Ping (ms)
UDP BE1".."BE3" (netperf UDP_RR, or irtt in flent's rrul_be_irtt) and plots them with the ICMP
ping in its `ping` plot; linklab sends one, the first. Each shaped
direction's queue (`measure: [queue]`) is there too as "Queue backlog (ms) NODE/IF" and, where
the discipline reports one, "Queue delay (ms) NODE/IF": series flent keeps and lists, no test
of its plots. flent computes its sums, averages and fairness from these when it loads the file.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from linklab import __version__
from linklab.errors import UsageError
from linklab.fsutil import write_atomic
from linklab.measure.probes.ping import LOAD_INTERVAL_S as PING_INTERVAL_S
from linklab.results import samples
from linklab.results.runs import Run

FILEFORMAT_VERSION = 4  # flent/resultset.py FILEFORMAT_VERSION
SUFFIX = ".flent.gz"
STEP_SIZE_S = 0.2  # flent's default step
RRUL_NAMES = tuple(f"up{i}" for i in range(1, 5)) + tuple(f"down{i}" for i in range(1, 5))
PING_SERIES = "Ping (ms) ICMP"
UDP_SERIES = "Ping (ms) UDP BE1"  # rrul_be's first UDP round-trip series (irtt in its rrul_be_irtt)


@dataclass
class Series:
    """One series as measured: (seconds since T0, value), each value covering `span` seconds up
    to its time (a ping reply is one instant, held for its probe interval), or its own span where
    `spans` gives one per value (an iperf3 interval's length)."""

    name: str
    units: str
    points: list[tuple[float, float]] = field(default_factory=list)
    span: float = STEP_SIZE_S
    spans: list[float] | None = None


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def queue_series(doc: dict[str, Any]) -> list[Series]:
    """queues.json (linklab/measure/probes/queues.py): each direction's backlog in ms of its rate,
    and the discipline's own delay where it reports one."""
    cols = doc.get("series_columns") or []
    interval = float(doc.get("interval_s") or 0.1)
    out = []
    for key, d in sorted((doc.get("directions") or {}).items()):
        rate = float(d.get("rate_bps") or 0)
        rows = [dict(zip(cols, r)) for r in d.get("series") or []]
        if rate:
            out.append(Series(f"Queue backlog (ms) {key}", "ms",
                              [(r["t_s"], r["backlog_bytes"] * 8 / rate * 1e3) for r in rows], interval))
        delays = [(r["t_s"], r["delay_s"] * 1e3) for r in rows if r.get("delay_s") is not None]
        if delays:
            out.append(Series(f"Queue delay (ms) {key}", "ms", delays, interval))
    return out


def sample(series: Series, x: float) -> float | None:
    """The series at x: the value whose interval (its time - its span, its time] holds x, else None."""
    for i, (t, v) in enumerate(series.points):
        span = series.spans[i] if series.spans is not None else series.span
        if t - span + 1e-9 < x <= t + 1e-9:
            return v
    return None


def repetition(run: Path, manifest: dict[str, Any], row: dict[str, Any]) -> dict[str, Any] | None:
    """One repetition as flent's data (the module's text), or None where it has no time series."""
    win = samples.window(run, row)
    if win is None:
        return None
    t0 = win["t0"] if win["t0"] is not None else datetime.now(timezone.utc).timestamp()
    names = [n for n, _, _, _ in win["flows"]]
    rrul = sorted(names) == sorted(RRUL_NAMES)
    series: list[Series] = []
    ups = [f for f in win["flows"] if f[1] == "up"]
    downs = [f for f in win["flows"] if f[1] == "down"]
    for which, group in (("upload", ups), ("download", downs)):
        if rrul:  # flent's order: up1 is "TCP upload BE", up2 "TCP upload BE2", ...
            group = sorted(group, key=lambda f: f[0])
        for i, (name, _, pts, spans) in enumerate(group, 1):
            label = (f"TCP {which} BE" + (str(i) if i > 1 else "")) if rrul else f"TCP {which} BE::{i}"
            series.append(Series(label, "Mbits/s", pts, spans=spans))
    if win["ping"]:
        series.append(Series(PING_SERIES, "ms", win["ping"], PING_INTERVAL_S))
    if win["udp"]:
        series.append(Series(UDP_SERIES, "ms", win["udp"], PING_INTERVAL_S))
    d = samples.rep_dir(run, row)
    queues = d / "queues.json"
    if queues.is_file():
        series += queue_series(json.loads(queues.read_text()))
    step = STEP_SIZE_S
    length = float(row.get("tool.duration_s") or (manifest.get("tool") or {}).get("duration") or 0)
    total = max([t for s in series for t, _ in s.points] + [length])
    xs = [round(i * step, 6) for i in range(int(total / step + 1e-9) + 1)]
    key = row.get("point_key") or row.get("point_id")
    title = f"{manifest.get('experiment', 'linklab')} {key} rep {row.get('rep')}"
    when = _utc(t0)
    metadata = {
        "NAME": "rrul_be" if rrul else "rrul_be_nflows", "TITLE": title, "NOTE": f"linklab {__version__}: {run}",
        "TIME": when, "T0": when, "LENGTH": length, "TOTAL_LENGTH": round(total, 3), "STEP_SIZE": step,
        "HOST": row.get("server"), "HOSTS": [row.get("server")], "LOCAL_HOST": row.get("client"),
        "IP_VERSION": int(row.get("tool.ip") or 4), "FLENT_VERSION": f"linklab {__version__}",
        "TEST_PARAMETERS": {} if rrul else {"upload_streams": str(len(ups)), "download_streams": str(len(downs))},
        "BATCH_NAME": None, "BATCH_TIME": None, "BATCH_TITLE": None, "BATCH_UUID": None,
        "DATA_FILENAME": None,  # set by write(): the file's own name
        "SERIES_META": {s.name: {"UNITS": s.units} for s in series},
        "LINKLAB": {"run": str(run), "experiment": manifest.get("experiment"), "point_id": row.get("point_id"),
                    "point_key": key, "rep": row.get("rep"), "flows": names,
                    "jain_index": row.get("jain_index")},
    }
    return {"version": FILEFORMAT_VERSION, "metadata": metadata, "x_values": xs,
            "results": {s.name: [sample(s, x) for x in xs] for s in series},
            "raw_values": {s.name: [{"t": round(t0 + t, 6), "val": v} for t, v in s.points] for s in series}}


def file_name(data: dict[str, Any]) -> str:
    """As flent names its files: NAME-TIME.TITLE.flent.gz (only [A-Za-z0-9-] in the title)."""
    meta = data["metadata"]
    when = meta["TIME"][:-1].replace(":", "")
    title = "".join(c if c.isalnum() or c == "-" else "_" for c in meta["TITLE"])
    return f"{meta['NAME']}-{when}.{title}{SUFFIX}"


def write(data: dict[str, Any], out_dir: Path) -> Path:
    """One data file, gzipped as flent writes it (sorted keys, indent 2); not over an existing one."""
    name = file_name(data)
    data["metadata"]["DATA_FILENAME"] = name
    path = out_dir / name
    if path.exists():
        raise UsageError(f"{path} exists: export into another directory (-o DIR), or remove it")
    body = json.dumps(data, indent=2, sort_keys=True).encode()
    write_atomic(path, gzip.compress(body, mtime=0))
    return path


def export(run: Path, out_dir: Path | None = None) -> tuple[list[Path], list[str]]:
    """Every measured repetition of a run as a data file in `out_dir` (default RUN/flent); the
    files written, and the repetitions left out with why."""
    loaded = Run.load(run)  # a run directory or a trimmed copy (a baseline: rows, no raw output)
    out_dir = out_dir or run / "flent"
    written, skipped = [], []
    for row in loaded.rows:
        label = f"{row.get('point_key') or row.get('point_id')} rep {row.get('rep')}"
        if row.get("error"):
            skipped.append(f"{label}: failed ({row['error'][:80]})")
            continue
        data = repetition(run, loaded.manifest, row)
        if data is None:
            skipped.append(f"{label}: no iperf3 time series in its raw output (a baseline keeps none)")
            continue
        written.append(write(data, out_dir))
    return written, skipped
