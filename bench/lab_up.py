#!/usr/bin/env python3
"""Benchmark: time `linklab up` and `down` for growing topologies, next to Mininet building a
comparable one in the same environment.

Topology shape: Mininet's `linear,N` — N switches in a chain, one host on each. Runs where labs
are built: inside the lab VM when this kernel lacks bonding/netem (re-executing itself there),
natively otherwise. Prints a table and writes bench/results/lab_up.json.

    .venv/bin/python bench/lab_up.py [--sizes 2 10 50] [--repeat 2] [--no-mininet]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def linear_topology(n: int) -> str:
    hosts = "\n".join(f"  h{i}: {{}}" for i in range(1, n + 1))
    switches = "\n".join(f"  s{i}: {{}}" for i in range(1, n + 1))
    links = [f"  - endpoints: [h{i}, s{i}]" for i in range(1, n + 1)]
    links += [f"  - endpoints: [s{i}, s{i + 1}]" for i in range(1, n)]
    return f"name: bench{n}\nhosts:\n{hosts}\nswitches:\n{switches}\nlinks:\n" + "\n".join(links) + "\n"


def time_linklab(n: int, repeat: int) -> dict:
    from linklab import lab, runner
    ups, downs, checks = [], [], []
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"linear{n}.yaml"
        path.write_text(linear_topology(n))
        for _ in range(repeat):
            t0 = time.monotonic()
            lab.up(path, say=lambda *_: None)
            ups.append(time.monotonic() - t0)
            # The lab works end to end: the first host reaches the last through every switch.
            res = runner.run(["ping", "-c", "1", "-W", "5", f"h{n}"], netns=f"ll-bench{n}-h1", check=False, timeout=30)
            checks.append(res.ok)
            t0 = time.monotonic()
            lab.down(f"bench{n}", say=lambda *_: None)
            downs.append(time.monotonic() - t0)
            print(f"  linklab linear,{n}: up {ups[-1]:.2f} s, down {downs[-1]:.2f} s, ping h1->h{n} "
                  f"{'ok' if checks[-1] else 'FAILED'}", flush=True)
    return {"tool": "linklab", "size": n, "up_s": ups, "down_s": downs, "ping_first_to_last_ok": checks,
            "up_median_s": statistics.median(ups), "down_median_s": statistics.median(downs)}


def time_mininet(n: int) -> dict | None:
    """`mn --topo linear,N --test none`: builds and tears down in one command (Linux bridges,
    no controller, as the substrate measurements did for >16 switches)."""
    if not shutil.which("mn") or not shutil.which("brctl"):  # lxbr switches need bridge-utils
        return None
    argv = ["mn", "--topo", f"linear,{n}", "--switch", "lxbr", "--controller", "none", "--test", "none"]
    subprocess.run(["mn", "-c"], capture_output=True, timeout=300)
    t0 = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    total = time.monotonic() - t0
    subprocess.run(["mn", "-c"], capture_output=True, timeout=300)
    print(f"  mininet linear,{n}: up+down {total:.1f} s (exit {res.returncode})", flush=True)
    return {"tool": "mininet", "size": n, "argv": argv, "up_plus_down_s": total, "exit": res.returncode,
            "tail": (res.stdout + res.stderr)[-300:]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[2, 10, 20, 50])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--mininet-sizes", type=int, nargs="*", default=[2, 10, 20])
    p.add_argument("--no-mininet", action="store_true")
    args = p.parse_args()

    from linklab import kernel
    if kernel.missing_features() and not kernel.in_lab_vm():
        # Run where labs are built: the same script, inside the lab VM.
        print("bench: this kernel lacks bonding/netem: running inside the lab VM", flush=True)
        return subprocess.call([sys.executable, "-m", "linklab", "vm", "run", "--stop-after", "--",
                                sys.executable, *sys.argv], cwd=ROOT)

    rows = [time_linklab(n, args.repeat) for n in args.sizes]
    mn = [] if args.no_mininet else [m for n in args.mininet_sizes if (m := time_mininet(n))]
    env = {"kernel": platform.release(), "in_lab_vm": kernel.in_lab_vm(),
           "accel": os.environ.get("LINKLAB_VM_ACCEL_USED") or "native", "cpus": os.cpu_count()}
    print(f"\nlab up/down, linear,N topologies (N switches + N hosts), {env}")
    print(f"{'tool':8} {'N':>4} {'up (s)':>9} {'down (s)':>9} {'up+down':>9} {'check':>8}")
    for r in rows:
        print(f"{'linklab':8} {r['size']:>4} {r['up_median_s']:>9.2f} {r['down_median_s']:>9.2f} "
              f"{r['up_median_s'] + r['down_median_s']:>9.2f} {'ping ' + str(all(r['ping_first_to_last_ok'])):>8}")
    for m in mn:  # mn builds and tears down in one command
        print(f"{'mininet':8} {m['size']:>4} {'-':>9} {'-':>9} {m['up_plus_down_s']:>9.2f} {'exit ' + str(m['exit']):>8}")
    if not mn and not args.no_mininet:
        print("mininet: not installed here (`make bench` or `scripts/setup.sh --bench` installs it)")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "lab_up.json").write_text(json.dumps({"env": env, "linklab": rows, "mininet": mn}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
