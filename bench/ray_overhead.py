#!/usr/bin/env python3
"""Benchmark: the Ray scheduler's own overhead per point, with the dry-run workload.

A sweep of 64 points (8 groups of 8: `streams` outermost, then `length`) whose repetitions
sleep 1 s each (`--dry-run 1`: no lab) runs on a local Ray cluster of 1, 2, 4 and 8 nodes.
ideal = points x 1 s / nodes; measured = the driver's wall time from the first unit submitted to
the last repetition recorded (the manifest's timing.sweep_wall_s: the cluster's start and stop
are not counted); efficiency = ideal / measured, goal >= 0.9 at 8 nodes. Overhead per point =
(measured - ideal) x nodes / points. Run it on a quiet machine (the lead takes the quiet lock).

    .venv/bin/python bench/ray_overhead.py [--nodes 1,2,4,8] [--seconds 1] [--groups 8] [--per-group 8]
        [--json bench/results/ray_overhead.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def experiment(dir_: Path, groups: int, per_group: int) -> Path:
    path = dir_ / "ray_overhead.yaml"
    path.write_text(
        "name: ray_overhead\n"
        f"topology: {ROOT / 'topologies' / 'bond2.yaml'}\n"
        "client: h1\nserver: h2\n"
        "matrix:\n"
        f"  streams: {list(range(1, groups + 1))}\n"
        f"  length: {[1000 + 100 * i for i in range(per_group)]}\n"
        "repetitions: 1\n")
    return path


def one(exp: Path, nodes: int, seconds: float, results: Path) -> dict:
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "linklab", "sweep", str(exp), "--cluster", f"local:{nodes}",
                          "--dry-run", str(seconds), "--results", str(results / f"n{nodes}")],
                         cwd=ROOT, text=True, capture_output=True)
    total = time.monotonic() - t0
    if res.returncode != 0:
        sys.exit(f"ray_overhead: the sweep on {nodes} nodes failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    from linklab.results.runs import Run
    run = Run.load(next((results / f"n{nodes}" / "ray_overhead").iterdir()))
    points = len(run.rows)
    measured = float(run.manifest["timing"]["sweep_wall_s"])
    ideal = points * seconds / nodes
    return {"nodes": nodes, "points": points, "ideal_s": round(ideal, 3), "measured_s": round(measured, 3),
            "efficiency": round(ideal / measured, 3),
            "overhead_per_point_s": round((measured - ideal) * nodes / points, 4),
            "workers_used": len({r["worker_node"] for r in run.rows}), "command_s": round(total, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="1,2,4,8")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--per-group", type=int, default=8)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="linklab-ray-bench-") as d:
        exp = experiment(Path(d), args.groups, args.per_group)
        print(f"{'nodes':>5} {'points':>6} {'ideal s':>8} {'measured s':>10} {'efficiency':>10} "
              f"{'overhead/point s':>16} {'workers':>7} {'command s':>9}")
        for n in (int(x) for x in args.nodes.split(",")):
            r = one(exp, n, args.seconds, Path(d))
            rows.append(r)
            print(f"{r['nodes']:>5} {r['points']:>6} {r['ideal_s']:>8.2f} {r['measured_s']:>10.2f} "
                  f"{r['efficiency']:>10.3f} {r['overhead_per_point_s']:>16.4f} {r['workers_used']:>7} "
                  f"{r['command_s']:>9.1f}", flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    worst = next((r for r in rows if r["nodes"] == 8), None)
    if worst is not None:
        print(f"goal: efficiency >= 0.9 at 8 nodes: {'met' if worst['efficiency'] >= 0.9 else 'NOT met'} "
              f"({worst['efficiency']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
