#!/usr/bin/env python3
"""Benchmark: `linklab up` and `down` of Mininet's `linear,N` shape (N switches in a chain, one
host on each) beside Mininet building the same shape, in one run and one table; the cost per
node (slope); the lab VM's and its guest agent's resident memory with `linear,50` up; and how
long a command forwarded into the VM takes (`linklab exec h1 -- true`, `linklab status`).

Where this kernel lacks bonding/netem the labs are built in the lab VM: the script re-executes
itself there (`--inside`) for the timings, then measures memory and forwarded-command latency
from the host while `linear,50` is still up, and stops the VM if it started it. Where the host
kernel has veth and bridges (as here), the same linklab timings are also taken natively
(`LINKLAB_IN_VM=1`: this kernel is treated as the lab's own; linear labs need no module it
lacks), up to `--native-sizes` (default to 200). Mininet is never run on the host: its
switches' ports live in the host's own namespace and `mn -c` cleans the whole machine.

    .venv/bin/python bench/lab_up.py [--sizes 2 10 20 50] [--repeat 2] [--mininet-sizes 2 10 20 50]
        [--native-sizes 2 10 20 50 200] [--no-mininet] [--no-native] [--no-vm]

Writes bench/results/lab_up.json and prints one table.
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
RESULTS = ROOT / "bench" / "results"
MEMORY_N = 50  # the lab kept up for the memory and latency figures


def linear_topology(n: int, name: str | None = None) -> str:
    hosts = "\n".join(f"  h{i}: {{}}" for i in range(1, n + 1))
    switches = "\n".join(f"  s{i}: {{}}" for i in range(1, n + 1))
    links = [f"  - endpoints: [h{i}, s{i}]" for i in range(1, n + 1)]
    links += [f"  - endpoints: [s{i}, s{i + 1}]" for i in range(1, n)]
    return (f"name: {name or f'bench{n}'}\nhosts:\n{hosts}\nswitches:\n{switches}\nlinks:\n"
            + "\n".join(links) + "\n")


def topology_file(d: str, n: int, name: str | None = None) -> Path:
    path = Path(d) / f"linear{n}.yaml"
    path.write_text(linear_topology(n, name))
    return path


def time_linklab(n: int, repeat: int, keep_up: bool = False) -> dict:
    from linklab import lab, runner
    ups, downs, checks = [], [], []
    with tempfile.TemporaryDirectory() as d:
        path = topology_file(d, n)
        for i in range(repeat):
            t0 = time.monotonic()
            lab.up(path, say=lambda *_: None)
            ups.append(time.monotonic() - t0)
            # The lab works end to end: the first host reaches the last through every switch.
            res = runner.run(["ping", "-c", "1", "-W", "5", f"h{n}"], netns=f"ll-bench{n}-h1", check=False, timeout=30)
            checks.append(res.ok)
            if keep_up and i == repeat - 1:
                downs.append(None)
                break
            t0 = time.monotonic()
            lab.down(f"bench{n}", say=lambda *_: None)
            downs.append(time.monotonic() - t0)
            print(f"  linklab linear,{n}: up {ups[-1]:.2f} s, down {downs[-1]:.2f} s, ping h1->h{n} "
                  f"{'ok' if checks[-1] else 'FAILED'}", flush=True)
    done = [x for x in downs if x is not None]
    return {"tool": "linklab", "size": n, "up_s": ups, "down_s": done, "ping_first_to_last_ok": checks,
            "up_median_s": statistics.median(ups), "down_median_s": statistics.median(done) if done else None}


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


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares seconds per node of (N, seconds) points."""
    if len({x for x, _ in points}) < 2:
        return None
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def agent_memory() -> dict:
    """Resident memory of the guest agent and its pre-imported Python (zygote), in the VM."""
    out: dict = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        for role, word in (("agent", "linklab.vm.agent"), ("zygote", "linklab.vm.zygote")):
            if word in cmd and (kb := rss_kb(int(entry.name))) is not None:
                out.setdefault(f"{role}_rss_kb", []).append(kb)
    return out


def inside(args) -> int:
    """The timings where labs are built (the VM, or natively with --native)."""
    rows = []
    # One untimed linear,2 first: the first lab after the VM boots pays for a cold page cache and
    # guest agent (measured: 14 s for linear,2, against 3 s for linear,10 right after).
    print("  (warm-up: linear,2, not timed)", flush=True)
    time_linklab(2, 1)
    for n in args.sizes:
        rows.append(time_linklab(n, args.repeat, keep_up=args.keep_up and n == MEMORY_N))
    mn = [] if args.no_mininet else [m for n in args.mininet_sizes if (m := time_mininet(n))]
    from linklab import kernel
    env = {"kernel": platform.release(), "in_lab_vm": kernel.in_lab_vm(),
           "accel": os.environ.get("LINKLAB_VM_ACCEL_USED") or "native", "cpus": os.cpu_count()}
    out = {"env": env, "linklab": rows, "mininet": mn}
    if args.keep_up:
        out["guest_memory"] = agent_memory()
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


def host_side_vm_figures(n: int) -> dict:
    """With linear,N up in the VM: QEMU's resident memory, and forwarded commands' latency."""
    from linklab import placement
    out: dict = {"qemu_rss_kb": placement.lab_vm().host_rss_kb()}
    # The anchor: a bare round trip into the VM (`vm run -- true`: the agent starts `true`), the
    # floor any forwarded command stands on.
    for name, argv in (("exec_true", ["exec", "--lab", f"bench{n}", "h1", "--", "true"]),
                       ("vm_run_true", ["vm", "run", "--", "true"]),
                       ("status", ["status", f"bench{n}"])):
        times, codes = [], []
        for _ in range(5):
            t0 = time.monotonic()
            codes.append(subprocess.run([sys.executable, "-m", "linklab", *argv], cwd=ROOT,
                                        capture_output=True).returncode)
            times.append(time.monotonic() - t0)
        out[f"{name}_s"] = times
        out[f"{name}_median_s"] = statistics.median(times)
        out[f"{name}_exit"] = codes
    return out


def fmt(x, digits=2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def table(vm: dict | None, native: dict | None) -> str:
    sizes = sorted({r["size"] for src in (vm, native) if src for r in src["linklab"]}
                   | {m["size"] for m in (vm or {}).get("mininet", [])})
    by = lambda src, n: next((r for r in (src or {}).get("linklab", []) if r["size"] == n), None)  # noqa: E731
    mn = {m["size"]: m for m in (vm or {}).get("mininet", [])}
    where = "lab VM" if vm else "here"
    lines = [f"{'N':>4} | {'linklab up':>10} {'down':>6} {'up+down':>8} {'ping':>5} | {'Mininet':>8} {'× faster':>8} "
             f"| {'native up':>9} {'down':>6} {'up+down':>8}",
             f"{'':>4} | {where + ' (s)':>32} | {'up+down':>8} {'':>8} | {'(s)':>26}"]
    for n in sizes:
        r, m, nat = by(vm, n), mn.get(n), by(native, n)
        tot = r["up_median_s"] + r["down_median_s"] if r and r["down_median_s"] is not None else None
        mtot = m["up_plus_down_s"] if m and m["exit"] == 0 else None
        ntot = nat["up_median_s"] + nat["down_median_s"] if nat and nat["down_median_s"] is not None else None
        lines.append(f"{n:>4} | {fmt(r and r['up_median_s']):>10} {fmt(r and r['down_median_s']):>6} {fmt(tot):>8} "
                     f"{('ok' if r and all(r['ping_first_to_last_ok']) else ('FAIL' if r else '-')):>5} | "
                     f"{fmt(mtot, 1):>8} {fmt(mtot / tot if mtot and tot else None, 1):>8} | "
                     f"{fmt(nat and nat['up_median_s']):>9} {fmt(nat and nat['down_median_s']):>6} {fmt(ntot):>8}")
    return "\n".join(lines)


def slopes(vm: dict | None, native: dict | None) -> dict:
    def pts(src):
        return [(r["size"], r["up_median_s"] + r["down_median_s"]) for r in (src or {}).get("linklab", [])
                if r["down_median_s"] is not None]
    return {"linklab_vm_s_per_node": slope(pts(vm)), "linklab_native_s_per_node": slope(pts(native)),
            "mininet_vm_s_per_node": slope([(m["size"], m["up_plus_down_s"]) for m in (vm or {}).get("mininet", [])
                                            if m["exit"] == 0])}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[2, 10, 20, 50])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--mininet-sizes", type=int, nargs="*", default=[2, 10, 20, 50])
    p.add_argument("--native-sizes", type=int, nargs="*", default=[2, 10, 20, 50, 200])
    p.add_argument("--no-mininet", action="store_true")
    p.add_argument("--no-native", action="store_true")
    p.add_argument("--no-vm", action="store_true", help="only the native figures (no lab VM, no Mininet)")
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)  # where labs are built
    p.add_argument("--keep-up", action="store_true", help=argparse.SUPPRESS)  # leave linear,50 up after
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.inside:
        return inside(args)

    from linklab import kernel, placement
    RESULTS.mkdir(parents=True, exist_ok=True)
    vm = native = host_figs = None
    if kernel.missing_features() and not args.no_vm:
        print("bench: this kernel lacks bonding/netem: the linklab and Mininet timings run inside the lab VM", flush=True)
        was_running = placement.lab_vm().running()
        vm_out = RESULTS / "lab_up-vm.json"
        keep = MEMORY_N in args.sizes
        inner = [sys.executable, "bench/lab_up.py", "--inside", "--out", str(vm_out), "--repeat", str(args.repeat),
                 "--sizes", *map(str, args.sizes), "--mininet-sizes", *map(str, args.mininet_sizes),
                 *(["--no-mininet"] if args.no_mininet else []), *(["--keep-up"] if keep else [])]
        try:
            rc = subprocess.call([sys.executable, "-m", "linklab", "vm", "run", "--", *inner], cwd=ROOT)
            if rc == 0:
                vm = json.loads(vm_out.read_text())
                if keep:
                    host_figs = host_side_vm_figures(MEMORY_N)
        finally:
            if keep:
                # Kept: the last lab's `down` would stop the VM too, and time that (the script
                # stops it below if it started it).
                placement.keep_vm()
                t0 = time.monotonic()
                subprocess.run([sys.executable, "-m", "linklab", "down", f"bench{MEMORY_N}"], cwd=ROOT,
                               capture_output=True)
                if host_figs is not None:  # linear,50's down, forwarded from the host (its up was timed inside)
                    host_figs["down_forwarded_s"] = time.monotonic() - t0
            if not was_running:
                subprocess.run([sys.executable, "-m", "linklab", "vm", "stop"], cwd=ROOT, capture_output=True)
        if rc:
            return rc
    # veth built in leaves no trace in /sys/module: bridges are looked for, a missing veth fails the run.
    if not args.no_native and kernel.feature_available("bridge") and args.native_sizes:
        print("bench: this kernel has veth and bridges: linklab natively too", flush=True)
        nat_out = RESULTS / "lab_up-native.json"
        rc = subprocess.call([sys.executable, "bench/lab_up.py", "--inside", "--no-mininet", "--out", str(nat_out),
                              "--repeat", str(args.repeat), "--sizes", *map(str, args.native_sizes)],
                             cwd=ROOT, env={**os.environ, "LINKLAB_IN_VM": "1"})
        if rc == 0:
            native = json.loads(nat_out.read_text())
    if vm is None and native is None and not kernel.missing_features():  # a kernel with everything: labs are built here
        vm_out = RESULTS / "lab_up-here.json"
        inner = [sys.executable, "bench/lab_up.py", "--inside", "--out", str(vm_out), "--repeat", str(args.repeat),
                 "--sizes", *map(str, args.sizes), "--mininet-sizes", *map(str, args.mininet_sizes),
                 *(["--no-mininet"] if args.no_mininet else [])]
        if subprocess.call(inner, cwd=ROOT) == 0:
            vm = json.loads(vm_out.read_text())

    s = slopes(vm, native)
    print(f"\nlab up/down, linear,N (N switches + N hosts); medians of {args.repeat} runs; Mininet: "
          "`mn --topo linear,N --switch lxbr --controller none --test none` (one command, up+down)")
    if vm:
        print(f"where: {vm['env']}")
    print(table(vm, native))
    print(f"cost per node (least-squares slope of up+down): linklab {fmt(s['linklab_vm_s_per_node'], 3)} s, "
          f"Mininet {fmt(s['mininet_vm_s_per_node'], 3)} s, linklab natively {fmt(s['linklab_native_s_per_node'], 4)} s")
    if host_figs:
        gm = (vm or {}).get("guest_memory", {})
        print(f"with linear,{MEMORY_N} up: QEMU resident {fmt((host_figs['qemu_rss_kb'] or 0) / 1024, 0)} MiB on the host; "
              f"guest agent {gm.get('agent_rss_kb')} KiB, zygote {gm.get('zygote_rss_kb')} KiB resident")
        print(f"forwarded commands (median of 5): `linklab exec h1 -- true` {fmt(host_figs['exec_true_median_s'])} s "
              f"(a bare round trip, `linklab vm run -- true`: {fmt(host_figs['vm_run_true_median_s'])} s), "
              f"`linklab status` {fmt(host_figs['status_median_s'])} s")
        print(f"linear,{MEMORY_N} down, forwarded from the host (the forwarding included): "
              f"{fmt(host_figs.get('down_forwarded_s'))} s")
    if vm and not vm.get("mininet") and not args.no_mininet:
        print("mininet: not installed where labs are built (`make bench` or `scripts/setup.sh --with bench` installs it)")
    (RESULTS / "lab_up.json").write_text(json.dumps({"vm": vm, "native": native, "host_side": host_figs,
                                                     "slopes": s}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
