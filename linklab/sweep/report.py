"""A run's results as a readable report: one line per matrix point (mean and 95 % CI over
repetitions), then linklab beside the published figures when the experiment names a reference.

Reads only what a run directory holds (manifest.json + the per-repetition rows), so a report can
be made anywhere, long after the lab is gone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.measure.stats import summarize
from linklab.sweep.compare import compare, compare_relative, render, render_relative
from linklab.sweep.store import ResultsStore, write_text_atomic

REPORT_FILE = "report.md"


def find_run(target: str | None, results_root: Path) -> Path:
    """A run directory from what users type: a run dir, an experiment's results dir (its newest
    run), an experiment file or name (its newest run under results_root), or nothing (the newest
    run of any experiment)."""
    if target:
        path = Path(target)
        if (path / "manifest.json").is_file():
            return path
        if path.is_dir() and (newest := _newest_run(path)):
            return newest
        name = path.stem if path.suffix in (".yaml", ".yml") else path.name
        if newest := _newest_run(results_root / name):
            return newest
        raise UsageError(f"no results found for {target!r}",
                         hint=f"give a run directory (results/<experiment>/<timestamp>) or an experiment that "
                              f"has run; experiments with results under {results_root}: "
                              f"{', '.join(_experiments(results_root)) or 'none'}")
    runs = [r for d in _experiment_dirs(results_root) if (r := _newest_run(d))]
    if not runs:
        raise UsageError(f"no results under {results_root}", hint="run `linklab sweep EXPERIMENT` first")
    return max(runs, key=lambda r: ResultsStore.open(r).manifest.get("created_at", ""))


def _experiment_dirs(root: Path) -> list[Path]:
    return sorted(d for d in root.iterdir() if d.is_dir()) if root.is_dir() else []


def _experiments(root: Path) -> list[str]:
    return [d.name for d in _experiment_dirs(root) if _newest_run(d)]


def _newest_run(exp_dir: Path) -> Path | None:
    newest = ResultsStore.latest(exp_dir.parent, exp_dir.name)  # orders run-2 … run-11 numerically
    return newest.path if newest else None


def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _mean_ci(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return format(values[0], fmt)
    s = summarize(values)
    return f"{format(s.mean, fmt)} ±{format(s.half_width, fmt)}"


def busiest_core(row: dict[str, Any]) -> tuple[str, float] | None:
    """(core, busy %) of the busiest single core in a row's measurement window."""
    cores = [(k[3:-len("_busy_pct")], v) for k, raw in row.items()
             if k.startswith("cpu") and k.endswith("_busy_pct") and k[3:4].isdigit() and (v := _num(raw)) is not None]
    return max(cores, key=lambda c: c[1]) if cores else None


def point_lines(rows: list[dict[str, Any]], axes: list[str]) -> list[dict[str, Any]]:
    """One summary per matrix point, in matrix order."""
    by_point: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: (int(r.get("point_index") or 0), int(r.get("rep") or 0))):
        by_point.setdefault(r["point_id"], []).append(r)
    out = []
    for reps in by_point.values():
        ok = [r for r in reps if not r.get("error") and str(r.get("preflight_ok", True)) not in ("False", "false")]

        def col(name: str, factor: float = 1.0) -> list[float]:
            return [v * factor for r in ok if (v := _num(r.get(name))) is not None]

        cores = [c for r in ok if (c := busiest_core(r))]
        out.append({
            "point": {a: reps[0].get(a) for a in axes},
            "reps": len(reps), "failed": len(reps) - len(ok),
            "throughput_mbps": col("throughput_bps", 1e-6), "retransmits": col("retransmits"),
            "busiest_core_pct": [c[1] for c in cores],
            "sender_cpu_pct": col("cpu_client_iperf3_pct"), "receiver_cpu_pct": col("cpu_server_iperf3_pct"),
            "member_tx_max_share": col("client_member_tx_max_share"),
            "jitter_ms": col("jitter_ms"), "lost_percent": col("lost_percent"),
            "rtt_mean_us": col("rtt_mean_us"),
            "ping_rtt_mean_ms": col("ping_rtt_mean_ms"), "ping_rtt_p95_ms": col("ping_rtt_p95_ms"),
            "ping_loss_pct": col("ping_loss_pct"),
        })
    return out


COLUMNS = (  # (summary key, header, format)
    ("throughput_mbps", "Mbit/s", ".1f"), ("retransmits", "retrans", ".0f"),
    ("busiest_core_pct", "top core %", ".0f"), ("sender_cpu_pct", "snd iperf3 %", ".0f"),
    ("receiver_cpu_pct", "rcv iperf3 %", ".0f"), ("member_tx_max_share", "max member share", ".2f"),
    ("jitter_ms", "jitter ms", ".3f"), ("lost_percent", "loss %", ".2f"), ("rtt_mean_us", "tcp rtt us", ".0f"),
    ("ping_rtt_mean_ms", "ping ms", ".3f"), ("ping_rtt_p95_ms", "ping p95 ms", ".3f"),
    ("ping_loss_pct", "ping loss %", ".1f"),
)


def axis_text(value: Any) -> str:
    """A matrix value as a table cell: a bond setting by its mode (the full value is in the CSV)."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return str(value["mode"]) if "mode" in value else json.dumps(value, sort_keys=True)
    return "" if value is None else str(value)


def render_points(points: list[dict[str, Any]], axes: list[str]) -> str:
    cols = [c for c in COLUMNS if any(p[c[0]] for p in points)]
    header = [*axes, "reps", *(h for _, h, _ in cols)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for p in points:
        reps = f"{p['reps']}" + (f" ({p['failed']} failed)" if p["failed"] else "")
        cells = [axis_text(p["point"].get(a, "")) for a in axes] + [reps] + [_mean_ci(p[k], f) for k, _, f in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_report(run_dir: Path, experiments_dir: Path | None = None) -> str:
    store = ResultsStore.open(run_dir)
    m = store.manifest
    rows = store.rows()
    axes = list((m.get("matrix") or {}).keys())
    placement = m.get("placement") or {}
    where = placement.get("kind", "?")
    if where == "vm":
        where += f" ({(placement.get('vm') or {}).get('accel', '?')})"
    scale = float(m.get("scale") or 1.0)
    lines = [
        f"# {m.get('experiment')}{' (quick)' if m.get('quick') else ''}: run {m.get('run')}",
        "",
        f"{m.get('description', '')}",
        "",
        f"- kernel {m.get('kernel')}, {where}, scale {scale:g}"
        + (f" ({m.get('scale_source')})" if m.get("scale_source") else ""),
        "- tools: " + ", ".join(f"{k} {v}" for k, v in (m.get("tool_versions") or {}).items()),
        f"- {len(rows)} of {int(m.get('points') or 0) * int(m.get('repetitions') or 1)} repetitions recorded"
        + ("" if m.get("complete") else " — run incomplete: `linklab sweep` with the same experiment resumes it"),
        f"- mean over repetitions, ± half-width of the 95 % confidence interval; rates as measured "
        f"(at scale {scale:g})",
    ]
    if m.get("streams_note"):
        lines.append(f"- {m['streams_note']}")
    lines += ["", "## Per point", "", render_points(point_lines(rows, axes), axes)]
    ref_name = m.get("reference")
    exp_file = Path(m.get("experiment_file") or "")
    ref_dir = experiments_dir or exp_file.parent
    ref = ref_dir / ref_name if ref_name else None
    if ref and ref.is_file():
        lines += ["", f"## Beside the published figures ({m.get('source') or ref.name})", ""]
        absolute, relative = compare(run_dir, ref), compare_relative(run_dir, ref)
        if absolute or not relative:
            lines += ["```", render(absolute, scale), "```"]
        if relative:
            lines += ["", "Published ratios, against the same ratio in this run:", "", "```",
                      render_relative(relative), "```"]
    elif ref_name:
        lines += ["", f"(reference {ref_name} not found in {ref_dir}: no comparison)"]
    return "\n".join(lines) + "\n"


def write_report(run_dir: Path, experiments_dir: Path | None = None) -> tuple[Path, str]:
    text = build_report(run_dir, experiments_dir)
    path = run_dir / REPORT_FILE  # derived from the rows, so rewriting it loses nothing measured
    write_text_atomic(path, text)
    return path, text
