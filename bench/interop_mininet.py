#!/usr/bin/env python3
"""Benchmark: E3's setup in linklab and as its exported Mininet script, side by side.

E3 (experiments/e3_sdn_mtu.yaml): two hosts on one Open vSwitch switch with the l2_learning
os-ken controller. At each point, TCP goodput h1 -> h2 (iperf3, one stream) in linklab's lab
and in `linklab export --to mininet`'s script (Mininet's OVSSwitch, the same app as its
RemoteController), alternately, `--reps` times: MTU 1500, MTU 2000 everywhere, and hosts at 2000
behind switch ports left at 1500 (the mismatch that collapses TCP in linklab's E3).

    .venv/bin/python bench/interop_mininet.py [--reps 3] [--seconds 5] [--controller l2_learning]

It runs inside the lab VM when this kernel lacks openvswitch (one boot); Mininet's switches use
an OVS of the bench's own in the VM's root namespace. Results: bench/results/interop_mininet.json
and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results"
INNER_OUT = RESULTS / "interop_mininet.inner.json"  # in the project directory, which the lab VM shares (its /tmp is its own)
TOPOLOGY = ROOT / "topologies" / "sdn_pair.yaml"
SCALE = 0.1
POINTS = {"mtu 1500": [("links[*].mtu", 1500)],
          "mtu 2000": [("links[*].mtu", 2000)],
          "2000, ports 1500": [("links[*].mtu", 2000), ("switches.s1.port_mtu", 1500)]}


def mininet_bps(script: Path, seconds: int, env: dict[str, str]) -> float | None:
    res = subprocess.run(["/usr/bin/python3", str(script), "--iperf3", "h1", "h2", "--seconds", str(seconds)],
                         capture_output=True, text=True, timeout=1200, env={**os.environ, **env})
    for line in res.stdout.splitlines():
        if line.startswith("LINKLAB-IPERF3 "):
            return json.loads(line.split(" ", 1)[1])["bps"]
    print(f"  mininet {script.name}: exit {res.returncode}\n{(res.stdout + res.stderr)[-1500:]}", flush=True)
    return None


def linklab_bps(name: str, seconds: int) -> float | None:
    from linklab import runner
    from linklab.backends.linux.names import netns_name
    from linklab.measure.iperf3 import Iperf3Client
    runner.run(["iperf3", "-s", "-1", "-D"], netns=netns_name(name, "h2"), timeout=30)
    time.sleep(1)
    res = runner.run(["timeout", str(seconds + 30), "iperf3", "-c", "h2", "-t", str(seconds), "-J"],
                     netns=netns_name(name, "h1"), check=False, timeout=seconds + 40)
    return Iperf3Client.parse(res.stdout).received_bps if res.ok else None


def inside(args) -> int:
    from linklab import controllers, lab
    from linklab.backends.linux import ovsd
    from linklab.interop import mininet_export
    from linklab.interop.common import resolved_lab

    base = [("switches.s1.controller", args.controller)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-mn-"))
    scripts = {}
    for k, (point, overrides) in enumerate(POINTS.items()):
        scripts[point] = tmp / f"e3_{k}_mn.py"
        scripts[point].write_text(mininet_export.export(resolved_lab(TOPOLOGY, base + overrides, scale=SCALE),
                                                        str(TOPOLOGY), osken_manager=controllers.manager()))
    d = ovsd.OvsDirs(ns=None, lab="bench", node="mininet")
    recs = ovsd.start(d, "kernel")
    rows = []
    name = "benchmne3"
    try:
        lab.up(TOPOLOGY, name=name, overrides=base, scale=SCALE, say=lambda *_: None)
        for rep in range(args.reps):
            for point, overrides in POINTS.items():
                lab.set_params(name, base + overrides, replace=True, say=lambda *_: None)
                ll = linklab_bps(name, args.seconds)
                mn = mininet_bps(scripts[point], args.seconds, d.env())
                rows.append({"point": point, "rep": rep, "linklab_bps": ll, "mininet_bps": mn})
                print(f"  {point} rep {rep}: linklab {ll}, mininet {mn}", flush=True)
    finally:
        if lab.state.load(name):
            lab.down(name, say=lambda *_: None)
        ovsd.stop(recs)
        ovsd.remove_rundir(d.run.name)
    INNER_OUT.write_text(json.dumps({"controller": args.controller, "seconds": args.seconds, "rows": rows}))
    return 0


def table(doc: dict) -> str:
    def cell(values):
        vals = [v / 1e6 for v in values if v is not None]
        if not vals:
            return "failed"
        return f"{statistics.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})"

    lines = [f"E3 TCP goodput h1 -> h2, Mbit/s: median (min-max) of {len(doc['rows']) // len(POINTS)} "
             f"{doc['seconds']} s runs, controller {doc['controller']}",
             f"{'point':<18} | {'linklab':>26} | {'Mininet script':>26}"]
    for point in POINTS:
        rows = [r for r in doc["rows"] if r["point"] == point]
        lines.append(f"{point:<18} | {cell(r['linklab_bps'] for r in rows):>26} | "
                     f"{cell(r['mininet_bps'] for r in rows):>26}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--controller", default="l2_learning")
    p.add_argument("--out", default=str(RESULTS / "interop_mininet.json"))
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.inside:
        return inside(args)
    from linklab import kernel
    inner = [sys.executable, str(Path(__file__).resolve()), "--inside", "--reps", str(args.reps),
             "--seconds", str(args.seconds), "--controller", args.controller]
    if kernel.missing_features() and not kernel.in_lab_vm():
        inner = [sys.executable, "-m", "linklab", "vm", "run", "--if-needed", "--stop-after", "--", *inner]
    rc = subprocess.call(inner, cwd=ROOT)
    if rc == 0:
        doc = json.loads(INNER_OUT.read_text())
        Path(args.out).write_text(json.dumps(doc, indent=1))
        INNER_OUT.unlink()
        print(table(doc))
    return rc


if __name__ == "__main__":
    sys.exit(main())
