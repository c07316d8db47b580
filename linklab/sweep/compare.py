"""linklab's results beside the published ones: mean over repetitions per published point,
rescaled to the original link rate, with the ratio. The shape is what must agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from linklab.model.loader import read_yaml

from linklab.measure.stats import summarize
from linklab.sweep.store import ResultsStore

# Which result column answers a reference metric, and how to convert it.
METRICS = {"throughput_mbps": ("throughput_bps", 1e-6), "throughput_MBps": ("throughput_bps", 1.25e-7),
           "throughput_bps": ("throughput_bps", 1.0), "retransmits": ("retransmits", 1.0),
           "cwnd_bytes": ("cwnd_mean", 1.0)}
RATE_METRICS = {"throughput_mbps", "throughput_MBps", "throughput_bps"}


def _matches(row: dict[str, Any], point: dict[str, Any]) -> bool:
    for k, v in point.items():
        if k in METRICS or k in ("approx", "note", "case"):
            continue
        if k not in row or str(row[k]) != str(v):
            return False
    return True


def compare(run_dir: Path, reference: Path) -> list[dict[str, Any]]:
    store = ResultsStore.open(run_dir)
    rows = [r for r in store.rows() if not r.get("error")]
    ref = read_yaml(reference)[0]
    scale = float(store.manifest.get("scale") or 1.0)
    entries = ref.get("throughput") or ref.get("runs") or []
    out = []
    for point in entries:
        metric = next((m for m in METRICS if m in point), None)
        if metric is None:
            continue
        if point[metric] is None:  # the source shows it only in a figure
            continue
        column, factor = METRICS[metric]
        got = [float(r[column]) * factor for r in rows if _matches(r, point) and r.get(column) not in (None, "")]
        if not got:
            continue
        s = summarize(got) if len(got) > 1 else None
        mean = sum(got) / len(got)
        rescaled = mean / scale if metric in RATE_METRICS else mean
        published = float(point[metric])
        out.append({"point": {k: v for k, v in point.items() if k not in METRICS and k not in ("approx", "note")},
                    "metric": metric, "linklab": mean, "linklab_rescaled": rescaled, "n": len(got),
                    "ci95": (s.low, s.high) if s else None, "published": published,
                    "ratio": rescaled / published if published else None, "approx": bool(point.get("approx"))})
    return out


def compare_relative(run_dir: Path, reference: Path) -> list[dict[str, Any]]:
    """Published ratios such as jumbo_over_normal: throughput at the run's largest MTU over its
    smallest, within the entry's protocol. Scale cancels out of a ratio."""
    rows = [r for r in ResultsStore.open(run_dir).rows() if not r.get("error") and r.get("throughput_bps") not in (None, "")]
    out = []
    for entry in read_yaml(reference)[0].get("relative") or []:
        if entry.get("metric") != "throughput" or "jumbo_over_normal" not in entry:
            continue
        point = {k: v for k, v in entry.items() if k not in ("metric", "jumbo_over_normal")}
        mine = [r for r in rows if _matches(r, point)]
        mtus = sorted({int(r["mtu"]) for r in mine if r.get("mtu") not in (None, "")})
        if len(mtus) < 2:
            continue

        def mean_at(mtu: int) -> float:
            vals = [float(r["throughput_bps"]) for r in mine if int(r["mtu"]) == mtu]
            return sum(vals) / len(vals)

        ratio = mean_at(mtus[-1]) / mean_at(mtus[0])
        out.append({"point": {k: v for k, v in point.items() if k != "note"},
                    "what": f"throughput MTU {mtus[-1]} / MTU {mtus[0]}", "linklab": ratio,
                    "published": float(entry["jumbo_over_normal"])})
    return out


def render_relative(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'point':30} {'ratio':34} {'linklab':>8} {'published':>10}"]
    for r in rows:
        pt = " ".join(f"{k}={v}" for k, v in r["point"].items())
        lines.append(f"{pt:30} {r['what']:34} {r['linklab']:>8.3f} {r['published']:>10.3f}")
    return "\n".join(lines)


def render(rows: list[dict[str, Any]], scale: float) -> str:
    lines = [f"{'point':52} {'metric':16} {'linklab':>10} {'÷scale':>10} {'published':>10} {'ratio':>6}"]
    for r in rows:
        pt = " ".join(f"{k}={v}" for k, v in r["point"].items())
        lines.append(f"{pt:52} {r['metric']:16} {r['linklab']:>10.4g} {r['linklab_rescaled']:>10.4g} "
                     f"{('~' if r['approx'] else '') + format(r['published'], '.4g'):>10} "
                     + (f"{r['ratio']:>6.2f}" if r["ratio"] is not None else f"{'-':>6}"))
    lines.append(f"(linklab ran at scale {scale:g}: '÷scale' puts its rates back on the original links' scale)")
    return "\n".join(lines)


def run_summary(run_dir: Path) -> dict[str, Any]:
    store = ResultsStore.open(run_dir)
    return {"rows": len(store.rows()), "manifest": {k: store.manifest.get(k) for k in ("experiment", "scale", "kernel")},
            "windows_s": sum(float(r.get("window_s") or 0) for r in store.rows())}


def dumps(obj) -> str:
    return json.dumps(obj, indent=1, default=str)
