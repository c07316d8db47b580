#!/usr/bin/env python3
"""Benchmark: sweep overhead for E1's quick variant, and its results beside the published E1.

overhead = (sweep wall time - sum of measurement windows) / sum of measurement windows,
where a measurement window is the time iperf3 ran (including its --omit warm-up). The lab is
brought up first, so VM boot and lab build are not counted; lab reconfiguration between points,
pre-flight checks, settle time, snapshots and result writing are.

    .venv/bin/python bench/sweep_overhead.py [--experiment experiments/e1_bonding_mtu.yaml]
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiment", default="experiments/e1_bonding_mtu.yaml")
    p.add_argument("--results", default="bench/results/sweeps")
    args = p.parse_args()
    from linklab.sweep.experiment import load_experiment, topology_path

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
    from linklab.sweep.store import ResultsStore
    run_dir = ResultsStore.latest(ROOT / args.results, exp.name).path
    rows = ResultsStore.open(run_dir).rows()
    windows = sum(float(r["window_s"]) for r in rows if r.get("window_s"))
    overhead = (wall - windows) / windows
    manifest = json.loads((run_dir / "manifest.json").read_text())
    print(f"\nsweep overhead, {exp.name} --quick: {len(rows)} repetitions, wall {wall:.1f} s, "
          f"measurement windows {windows:.1f} s, overhead {overhead:.2f} "
          f"({manifest.get('placement', {}).get('kind')}, kernel {manifest.get('kernel')}, scale {manifest.get('scale')})\n")
    from linklab.report.build import write_report
    print(write_report(run_dir)[1])  # per point, and beside the published figures
    out = ROOT / "bench" / "results" / "sweep_overhead.json"
    out.write_text(json.dumps({"experiment": exp.name, "wall_s": wall, "windows_s": windows, "overhead": overhead,
                               "rows": len(rows), "run_dir": str(run_dir), "placement": manifest.get("placement"),
                               "per_rep_overhead_s": (wall - windows) / max(len(rows), 1)}, indent=1))
    linklab("down")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
