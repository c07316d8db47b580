#!/usr/bin/env python3
"""Benchmark: where a sweep's time goes, per phase of each repetition, and the overhead beyond
what the experiment asks for; E1 quick's results beside the published E1.

Every repetition records its phases (linklab/sweep/phases.py: `timings.json` in its raw
directory, `phase_<name>_s` columns in its row): reconfigure, settle, preflight, qdisc_dump and
server_start once per point (charged to its first repetition), then counters, cc_read,
cpu_sampling, window, window_tail, parse, host_cpu, pause; the sweep's own start-up, recording
and restoring the lab are in the manifest's `timing`.

overhead = time beyond what the experiment asks for: settle once per point, the window
(duration + iperf3's omitted warm-up) per repetition, pause between repetitions. It is shown per
phase, per repetition, and as (wall - windows) / windows as before. The time outside the sweep
engine (forwarding the command into the lab VM, the host's report) is shown apart. The lab is
brought up first, so VM boot and lab build are not counted.

The anchor, in the same run and the same lab: iperf3 run bare (bench/iperf_anchor.py), its own
start and end beyond -t + -O, which any script that measures with iperf3 pays; what is left of
the per-repetition overhead is linklab's own. The last line shares every phase of the engine out
over the repetitions (a quick sweep pays its per-point and per-sweep work in one repetition per
point), less the anchor and the time the bonds took to negotiate (pre-flight waits for LACP:
the kernel's time, not linklab's): linklab's own cost per quick repetition.

    .venv/bin/python bench/sweep_overhead.py [--experiment experiments/e1_bonding_mtu.yaml]
        [--baseline bench/results/sweep_overhead-before.json] [--no-report]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def linklab(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "linklab", *args], cwd=ROOT, text=True, capture_output=True)


def per_rep_table(rows: list[dict], names: list[str]) -> str:
    from linklab.sweep.phases import from_row
    head = f"{'point':44} {'rep':>3} " + " ".join(f"{n[:11]:>11}" for n in names)
    lines = [head]
    for r in rows:
        ph = from_row(r)
        if not ph:
            continue
        cells = " ".join(f"{ph[n]:>11.2f}" if n in ph else f"{'-':>11}" for n in names)
        lines.append(f"{str(r.get('point_key'))[:44]:44} {r.get('rep'):>3} {cells}")
    return "\n".join(lines)


def summary_table(b: dict, before: dict | None) -> str:
    n = b["repetitions"] or 1
    lines = [f"{'phase':14} {'total s':>9} {'asked s':>9} {'overhead s':>11} {'per rep s':>10}"
             + (f" {'before/rep':>11}" if before else "")]
    bn = (before or {}).get("repetitions") or 1
    for name, s in b["seconds"].items():
        line = (f"{name:14} {s:>9.2f} {b['asked'].get(name, 0.0):>9.2f} {b['overhead'][name]:>11.2f} "
                f"{b['overhead'][name] / n:>10.2f}")
        if before:
            was = before.get("overhead", {}).get(name)
            line += f" {was / bn:>11.2f}" if was is not None else f" {'-':>11}"
        lines.append(line)
    lines.append(f"{'all':14} {b['accounted_s']:>9.2f} {b['asked_s']:>9.2f} {b['overhead_s']:>11.2f} "
                 f"{b['overhead_per_rep_s']:>10.2f}"
                 + (f" {before['overhead_s'] / bn:>11.2f}" if before and before.get("overhead_s") is not None else ""))
    return "\n".join(lines)


def negotiation_beyond_settle(row: dict, settle_s: float) -> float:
    """The part of a point's overhead that was its bonds negotiating (pre-flight's wait): the
    wait, but no more than what pre-flight, the qdisc dump and the settle took beyond the asked
    settle (a wait inside the settle costs nothing beyond it)."""
    group = sum(float(row.get(f"phase_{k}_s") or 0.0) for k in ("preflight", "qdisc_dump", "settle"))
    return min(max(0.0, float(row.get("preflight_wait_s") or 0.0)), max(0.0, group - settle_s))


def iperf_anchor(manifest: dict, rows: list[dict], exp) -> dict | None:
    """bench/iperf_anchor.py run where the lab runs (in the lab VM through `linklab vm run`),
    between the sweep's client and server, for each stream count the rows used."""
    streams = sorted({int(r["streams"]) for r in rows if r.get("streams")})
    if not rows or not streams:
        return None
    argv = [sys.executable, str(ROOT / "bench/iperf_anchor.py"), str(manifest.get("lab")), rows[0]["client"],
            rows[0]["server"], "--duration", str(int(exp.tool.duration)), "--omit", str(int(exp.warmup)),
            "--streams", *map(str, streams)]
    if (manifest.get("placement") or {}).get("kind") == "vm":
        argv = [sys.executable, "-m", "linklab", "vm", "run", "--", *argv]
    res = subprocess.run(argv, cwd=ROOT, text=True, capture_output=True)
    if res.returncode:
        print(f"anchor failed ({res.returncode}): {res.stderr[-1500:]}")
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiment", default="experiments/e1_bonding_mtu.yaml")
    p.add_argument("--results", default="bench/results/sweeps")
    p.add_argument("--baseline", help="an earlier bench/results/sweep_overhead*.json to print beside this run")
    p.add_argument("--out", default="bench/results/sweep_overhead.json")
    p.add_argument("--no-report", action="store_true", help="skip the results-vs-published report")
    args = p.parse_args()
    from linklab.sweep.experiment import topology_path
    from linklab.sweep.plan import load_experiment
    from linklab.sweep.phases import breakdown, from_row

    exp = load_experiment(args.experiment, quick=True)
    up = linklab("up", str(topology_path(args.experiment, exp)))
    if up.returncode:
        print(up.stdout + up.stderr)
        return up.returncode
    t0 = time.monotonic()
    sweep = subprocess.run([sys.executable, "-m", "linklab", "sweep", args.experiment, "--quick", "--force",
                            "--results", args.results], cwd=ROOT)  # streams its progress
    wall = time.monotonic() - t0
    if sweep.returncode:
        return sweep.returncode
    from linklab.results.store import ResultsStore
    run_dir = ResultsStore.latest(ROOT / args.results, exp.name).path
    rows = ResultsStore.open(run_dir).rows()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    timing = manifest.get("timing") or {}
    windows = sum(float(r["window_s"]) for r in rows if r.get("window_s"))
    overhead_ratio = (wall - windows) / windows
    b = breakdown(rows, window_asked_s=exp.tool.duration + exp.warmup, settle_s=exp.settle, pause_s=exp.pause,
                  outside=timing.get("seconds"))
    engine_wall = timing.get("sweep_wall_s")
    outside_engine = wall - engine_wall if engine_wall is not None else None
    before = json.loads(Path(args.baseline).read_text()).get("breakdown") if args.baseline else None

    names = list(dict.fromkeys(n for r in rows for n in from_row(r)))
    print(f"\nper repetition, seconds per phase ({exp.name} --quick):")
    print(per_rep_table(rows, names))
    print(f"\nper phase, over the run ({b['repetitions']} repetitions, {b['points']} points):")
    print(summary_table(b, before))
    print(f"\nsweep wall {wall:.1f} s (the engine {engine_wall} s; outside it — forwarding into the VM, "
          f"the host's report — {outside_engine:.1f} s), measurement windows {windows:.1f} s, "
          f"(wall - windows) / windows = {overhead_ratio:.2f}; overhead beyond the experiment's own waits "
          f"{b['overhead_per_rep_s']:.2f} s per repetition"
          f" ({manifest.get('placement', {}).get('kind')}, kernel {manifest.get('kernel')}, scale {manifest.get('scale')})\n"
          if outside_engine is not None else f"\nsweep wall {wall:.1f} s, overhead {overhead_ratio:.2f}\n")
    if timing.get("record_background_s") is not None:
        print(f"recording in the background (linklab/sweep/recording.py): {timing['record_background_s']:.2f} s "
              f"written behind the sweep's waits, {b['seconds'].get('record', 0.0):.2f} s of it waited for\n")
    print(f"paid by every repetition {b['paid_per_rep_s']:.2f} s; by each point once {b['paid_per_point_s']:.2f} s "
          f"(reconfigure, pre-flight, qdisc dump, servers); by the sweep once {b['paid_per_sweep_s']:.2f} s. "
          f"With R repetitions per point: {b['paid_per_rep_s']:.2f} + {b['paid_per_point_s']:.2f}/R s per repetition\n")
    anchor = iperf_anchor(manifest, rows, exp)
    own_per_rep = None
    if anchor:
        own = {n: a["beyond_s"] for n, a in anchor["streams"].items()}
        bare = sum(own.get(str(r.get("streams")), 0.0) for r in rows) / max(len(rows), 1)
        print("anchor: iperf3 bare in the same lab (bench/iperf_anchor.py), beyond its -t + -O, by streams: "
              + ", ".join(f"{n}: {v:.2f} s {anchor['streams'][n]['walls_s']}" for n, v in own.items())
              + f"\npaid by every repetition {b['paid_per_rep_s']:.2f} s, of which iperf3's own start and end "
              f"{bare:.2f} s (the anchor, weighted by the rows' streams; the window's excess was "
              f"{b['overhead'].get('window', 0.0) / max(b['repetitions'], 1):.2f} s); linklab's own "
              f"{b['paid_per_rep_s'] - bare:.2f} s\n")
        # Everything the engine spent beyond the asked waits, per repetition: the per-point and
        # per-sweep work shared out too, as a quick sweep (one repetition a point) pays it. Less
        # iperf3's own start and end (the anchor) and the bonds' negotiation that pre-flight
        # waited for (LACP's time, the lab's, not linklab's): what is left is linklab's own.
        negotiation = sum(negotiation_beyond_settle(r, exp.settle) for r in rows)
        own_per_rep = (b["overhead_s"] - bare * len(rows) - negotiation) / max(len(rows), 1)
        print(f"linklab's own per repetition, every phase of the engine shared out: {own_per_rep:.2f} s "
              f"({b['overhead_s']:.2f} s beyond the asked waits, less iperf3's own {bare * len(rows):.2f} s and the "
              f"bonds' negotiation {negotiation:.2f} s, over {len(rows)} repetitions)\n")
    if not args.no_report:
        from linklab.report.build import write_report
        print(write_report(run_dir)[1])  # per point, and beside the published figures
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"experiment": exp.name, "wall_s": wall, "windows_s": windows,
                               "overhead": overhead_ratio, "rows": len(rows), "run_dir": str(run_dir),
                               "placement": manifest.get("placement"), "kernel": manifest.get("kernel"),
                               "per_rep_overhead_s": (wall - windows) / max(len(rows), 1),
                               "engine_wall_s": engine_wall, "outside_engine_s": outside_engine,
                               "breakdown": b, "iperf_anchor": anchor, "own_per_rep_s": own_per_rep, "per_rep_phases": [{"point": r.get("point_key"), "rep": r.get("rep"),
                                                                    **from_row(r)} for r in rows]}, indent=1))
    linklab("down")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
