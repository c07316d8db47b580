#!/usr/bin/env python3
"""Benchmark: `linklab up` and `down` of Mininet's `linear,N` shape (N switches in a chain, one
host on each) with its hosts as namespace nodes and as container nodes (image linklab/base), in
one run and one table; and the memory each container node costs (with the container lab up: the
machine's used memory over the namespace lab's, and the resident memory of the container's own
processes and its containerd shim, per node).

Runs where labs run: inside the lab VM when this kernel lacks bonding/netem (it re-executes
itself there with --inside). Needs `make images`. linklab's Docker engine is started (and the
image imported), and one namespace lab built and removed, before the first timing, so no row
pays for them.

    .venv/bin/python bench/containers_up.py [--sizes 2 10 20] [--repeat 2]

Writes bench/results/containers_up.json and prints one table.
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
QUIET = dict(say=lambda *_: None)


def linear(n: int, containers: bool) -> str:
    spec = "{kind: container, image: linklab/base}" if containers else "{}"
    name = f"ctrb{n}" if containers else f"nsb{n}"
    hosts = "\n".join(f"  h{i}: {spec}" for i in range(1, n + 1))
    switches = "\n".join(f"  s{i}: {{}}" for i in range(1, n + 1))
    links = [f"  - endpoints: [h{i}, s{i}]" for i in range(1, n + 1)]
    links += [f"  - endpoints: [s{i}, s{i + 1}]" for i in range(1, n)]
    return f"name: {name}\nhosts:\n{hosts}\nswitches:\n{switches}\nlinks:\n" + "\n".join(links) + "\n"


def mem_used_kb() -> int:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])


def rss_kb(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def container_pids(record: dict) -> list[int]:
    """Each container's processes (its first process and its children) and its containerd shim
    (the first process's parent)."""
    from linklab import runner
    firsts = [runner.container_pid(w) for w in record["netns"].values()]
    firsts = [p for p in firsts if p]
    shims = []
    for p in firsts:
        try:
            shims.append(int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1]))
        except (OSError, ValueError, IndexError):
            pass
    kids = []
    for p in firsts:
        try:
            kids += [int(x) for x in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            pass
    return firsts + kids + shims


def one(n: int, containers: bool, d: str, measure_memory: bool) -> dict:
    from linklab import lab
    path = Path(d) / f"linear{n}{'c' if containers else ''}.yaml"
    path.write_text(linear(n, containers))
    base = mem_used_kb()
    t0 = time.monotonic()
    rec = lab.up(path, **QUIET)
    up_s = time.monotonic() - t0
    out = {"n": n, "containers": containers, "up_s": round(up_s, 2)}
    if measure_memory:
        time.sleep(2)  # let page cache and lazily started threads settle
        out["mem_used_delta_kb"] = mem_used_kb() - base
        if containers:
            out["container_rss_kb"] = rss_kb(container_pids(rec))
    t0 = time.monotonic()
    lab.down(rec["lab"], **QUIET)
    out["down_s"] = round(time.monotonic() - t0, 2)
    return out


def inside(sizes: list[int], repeat: int) -> dict:
    from linklab.docker import engine, images
    t0 = time.monotonic()
    api = engine.connect(**QUIET)
    images.ensure(api, images.BASE, **QUIET)
    warm_s = time.monotonic() - t0
    rows = []
    with tempfile.TemporaryDirectory() as d:
        # Untimed: the first lab of a fresh VM (measured once: 59 s for linear,2 right after the
        # image import, 1.1 s for linear,10 next) pays for what the first `up` loads and settles.
        one(2, False, d, measure_memory=False)
        for n in sizes:
            for containers in (False, True):
                runs = [one(n, containers, d, measure_memory=(k == 0)) for k in range(repeat)]
                row = {"n": n, "containers": containers,
                       "up_s": statistics.median(r["up_s"] for r in runs),
                       "down_s": statistics.median(r["down_s"] for r in runs), "runs": runs}
                row.update({k: v for k, v in runs[0].items() if k.startswith(("mem_", "container_rss"))})
                rows.append(row)
    for r in rows:  # memory per container node: over the namespace lab of the same size
        if r["containers"]:
            ns = next(x for x in rows if x["n"] == r["n"] and not x["containers"])
            r["mem_per_container_kb"] = round((r["mem_used_delta_kb"] - ns["mem_used_delta_kb"]) / r["n"])
            r["rss_per_container_kb"] = round(r["container_rss_kb"] / r["n"])
    return {"engine_start_and_image_s": round(warm_s, 1), "rows": rows,
            "placement": "lab VM" if os.environ.get("LINKLAB_IN_VM") == "1" else "native",
            "accel": os.environ.get("LINKLAB_VM_ACCEL_USED")}


def table(result: dict) -> str:
    lines = [f"linklab up/down of linear,N: namespace hosts vs container hosts ({result['placement']}"
             f"{', ' + result['accel'] if result.get('accel') else ''}); engine start + image import "
             f"before the timings: {result['engine_start_and_image_s']} s",
             f"{'N':>4} {'hosts':<10} {'up s':>7} {'down s':>7} {'per-node up s':>14} {'MiB/container':>14} {'RSS MiB/ctr':>12}"]
    for r in result["rows"]:
        kind = "container" if r["containers"] else "namespace"
        mem = f"{r['mem_per_container_kb'] / 1024:.1f}" if "mem_per_container_kb" in r else "-"
        rss = f"{r['rss_per_container_kb'] / 1024:.1f}" if "rss_per_container_kb" in r else "-"
        lines.append(f"{r['n']:>4} {kind:<10} {r['up_s']:>7.2f} {r['down_s']:>7.2f} {r['up_s'] / r['n']:>14.2f} "
                     f"{mem:>14} {rss:>12}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2, 10, 20])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--inside", action="store_true", help="(internal) run the timings here")
    args = ap.parse_args()
    from linklab import kernel
    if not args.inside and kernel.missing_features() and not kernel.in_lab_vm():
        argv = [sys.executable, "-m", "linklab", "vm", "run", "--if-needed", "--stop-after", "--",
                sys.executable, __file__, "--inside", "--sizes", *map(str, args.sizes), "--repeat", str(args.repeat)]
        return subprocess.call(argv, cwd=ROOT)
    result = inside(args.sizes, args.repeat)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "containers_up.json").write_text(json.dumps(result, indent=1))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
