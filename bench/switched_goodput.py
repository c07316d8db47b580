#!/usr/bin/env python3
"""Benchmark: TCP goodput through chains of switches, against theory, before and after a change.

A path h1 - s1 - ... - sN - h2 (N = 0 is a direct link), every link `rate: 1gbit` (100 Mbit/s
at the lab VM's scale 0.1), for Linux bridges and Open vSwitch (standalone, kernel datapath),
at several MTUs, one stream and several. Each case reports goodput / theory, where theory is
the bottleneck rate x linklab's goodput theory (linklab/model/paths.py: goodput_fraction, the
TCP payload per wire byte at the MTU, as the shapers count a frame), the sender's retransmits, the packets the lab's queues
dropped on the way, and the RTT a ping h1 -> h2 gains under the load (median, +RTT ms).

"Before and after" in one run: every `--variant NAME=REV` builds its labs with linklab's code as
of git revision REV (exported to bench/results/src-REV; `.` is the working tree), measured
alternately case by case, so both see the same machine.

    .venv/bin/python bench/switched_goodput.py [--variant before=b64d062 --variant after=.]
        [--hops 0,1,2,3] [--kinds bridge,ovs] [--mtus 1500,4000,9000] [--streams 1,8]
        [--duration 6] [--reps 1] [--lag]

It runs inside the lab VM when this kernel lacks bonding/netem/openvswitch (one boot for all
cases). Results: bench/results/switched_goodput.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import io
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this tree's goodput theory; each variant's labs run from its own sources

from linklab.model.paths import goodput_bps as theory_bps  # noqa: E402

RESULTS = ROOT / "bench" / "results"
RATE_WRITTEN = 1e9  # every link's `rate:`


def topology(kind: str, hops: int, mtu: int, lag: bool) -> str:
    """A chain h1 - s1 - ... - s<hops> - h2, as YAML. `lag`: h1's uplink is a two-member
    802.3ad bond (the switch side becomes an LACP bond: a switch-side LAG)."""
    sw = {"bridge": "{kind: bridge}", "ovs": "{kind: ovs, fail_mode: standalone}"}[kind]
    nodes = ["h1", *[f"s{i}" for i in range(1, hops + 1)], "h2"]
    lines = ["name: sg", "scale: auto", "hosts: {h1: {}, h2: {}}"]
    if hops:
        lines.append("switches:")
        lines += [f"  s{i}: {sw}" for i in range(1, hops + 1)]
    lines.append("links:")
    for i, (a, b) in enumerate(zip(nodes, nodes[1:])):
        bond = ", bond: {members: 2, mode: 802.3ad, options: {xmit_hash_policy: layer3+4}}" if lag and i == 0 else ""
        lines.append(f"  - {{name: l{i}, endpoints: [{a}, {b}], mtu: {mtu}, impair: {{rate: 1gbit}}{bond}}}")
    return "\n".join(lines) + "\n"


def source_tree(rev: str) -> Path:
    """linklab's sources as of `rev` (a directory importable with PYTHONPATH); `.` = this tree."""
    if rev == ".":
        return ROOT
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, text=True, capture_output=True,
                         check=True).stdout.strip()
    dest = RESULTS / f"src-{sha}"
    if not (dest / "linklab").is_dir():
        blob = subprocess.run(["git", "archive", sha, "linklab", "controllers"], cwd=ROOT, capture_output=True,
                              check=True).stdout
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            tar.extractall(dest)
    return dest


def linklab_cli(src: Path, state: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src), "LINKLAB_STATE_DIR": str(state)}
    return subprocess.run([sys.executable, "-m", "linklab", *args], cwd=src if src != ROOT else ROOT, env=env,
                          text=True, capture_output=True, timeout=timeout)


def lab_scale(state: Path) -> float:
    """The scale the lab was built at, from its state file (its resolved model)."""
    def find(obj):
        if isinstance(obj, dict):
            if isinstance(obj.get("scale"), (int, float)):
                return float(obj["scale"])
            for v in obj.values():
                got = find(v)
                if got is not None:
                    return got
        return None
    return find(json.loads((state / "labs" / "sg.json").read_text())) or 1.0


def ns(node: str) -> str:
    return f"ll-sg-{node}"


def qdisc_drops(node: str) -> int:
    """Packets the leaf qdiscs of a node dropped so far (`tc -s qdisc`: bfifo/netem leaves)."""
    out = subprocess.run(["tc", "-n", ns(node), "-s", "qdisc", "show"], text=True, capture_output=True).stdout
    total, leaf = 0, False
    for line in out.splitlines():
        if line.startswith("qdisc "):
            leaf = line.split()[1] in ("bfifo", "netem", "pfifo")
        elif leaf and "dropped" in line:
            total += int(line.split("dropped ")[1].split(",")[0])
    return total


def ping_rtts(count: int, interval: float = 0.1) -> list[float]:
    out = subprocess.run(["ip", "netns", "exec", ns("h1"), "ping", "-n", "-c", str(count), "-i", str(interval), "h2"],
                         text=True, capture_output=True, timeout=count * interval + 30).stdout
    return [float(line.split("time=")[1].split()[0]) for line in out.splitlines() if "time=" in line]


def iperf3(streams: int, duration: float) -> dict:
    """One iperf3 run h1 -> h2 (1 s omitted), with pings h1 -> h2 through its measured seconds:
    the latency under load beside the goodput (the queue rule must keep it within a few ms)."""
    idle = ping_rtts(10)
    server = subprocess.Popen(["ip", "netns", "exec", ns("h2"), "iperf3", "-s", "-1", "-p", "5301"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        client = subprocess.Popen(["ip", "netns", "exec", ns("h1"), "iperf3", "-c", "h2",
                                   "-p", "5301", "-J", "-t", str(duration), "-O", "1", "-P", str(streams)],
                                  text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(2.0)  # connected, past the omitted second
        loaded = ping_rtts(max(int((duration - 1.5) / 0.1), 5))
        stdout, _ = client.communicate(timeout=duration + 60)
        res = subprocess.CompletedProcess(client.args, client.returncode, stdout, "")
    finally:
        server.kill()
        server.wait()
    data = json.loads(res.stdout)
    if "error" in data:
        raise RuntimeError(data["error"])
    end = data["end"]
    return {"received_bps": end["sum_received"]["bits_per_second"],
            "retransmits": end["sum_sent"].get("retransmits", 0),
            "ping_idle_ms": statistics.median(idle) if idle else None,
            "ping_load_ms": statistics.median(loaded) if loaded else None}


def one_case(src: Path, state: Path, kind: str, hops: int, mtu: int, lag: bool, streams_list: list[int],
             duration: float, scale_seen: dict) -> list[dict]:
    topo = state / f"sg-{kind}-{hops}-{mtu}-{int(lag)}.yaml"
    topo.write_text(topology(kind, hops, mtu, lag))
    up = linklab_cli(src, state, "up", str(topo), "--name", "sg", timeout=600)
    if up.returncode:
        raise RuntimeError(f"up failed: {up.stderr[-2000:]}")
    rows = []
    try:
        scale = lab_scale(state)
        # Pre-flight: the path answers (an 802.3ad bond needs a few seconds to distribute).
        for _ in range(60):
            if subprocess.run(["ip", "netns", "exec", ns("h1"), "ping", "-c1", "-W1", "h2"],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        if lag:
            time.sleep(3.0)
        for streams in streams_list:
            nodes = ["h1", *[f"s{i}" for i in range(1, hops + 1)]]
            before = {n: qdisc_drops(n) for n in nodes}
            got = iperf3(streams, duration)
            drops = {n: qdisc_drops(n) - before[n] for n in nodes}
            th = theory_bps(RATE_WRITTEN * scale, mtu)
            rows.append({"kind": kind if hops else "direct", "hops": hops, "mtu": mtu, "lag": lag,
                         "streams": streams, "scale": scale, "goodput_bps": got["received_bps"],
                         "theory_bps": th, "ratio": got["received_bps"] / th,
                         "retransmits": got["retransmits"], "queue_drops": drops,
                         "ping_idle_ms": got["ping_idle_ms"], "ping_load_ms": got["ping_load_ms"]})
    finally:
        linklab_cli(src, state, "down", "sg", timeout=300)
    return rows


def inside(args) -> int:
    variants = [v.split("=", 1) for v in args.variant]
    srcs = {name: source_tree(rev) for name, rev in variants}
    out: list[dict] = []
    cases = []
    for hops in args.hops:
        for kind in (["direct"] if hops == 0 else args.kinds):
            for mtu in args.mtus:
                cases.append((kind, hops, mtu, False))
    if args.lag:
        for kind in args.kinds:
            for mtu in args.mtus:
                cases.append((kind, 2, mtu, True))
    seen: dict = {}
    total = len(cases) * len(variants) * args.reps
    done, t0 = 0, time.monotonic()
    for rep in range(args.reps):
        for kind, hops, mtu, lag in cases:
            for name, _rev in variants:
                state = RESULTS / f"state-{name}"
                state.mkdir(parents=True, exist_ok=True)
                try:
                    rows = one_case(srcs[name], state, "bridge" if kind == "direct" else kind, hops, mtu, lag,
                                    args.streams, args.duration, seen)
                except Exception as e:  # a failed case is a result too: say it, go on
                    rows = [{"kind": kind, "hops": hops, "mtu": mtu, "lag": lag, "error": str(e)[-500:]}]
                for r in rows:
                    r.update(variant=name, rep=rep)
                    out.append(r)
                done += 1
                eta = (time.monotonic() - t0) / done * (total - done)
                for r in rows:
                    if "error" in r:
                        print(f"[{done}/{total}] {name:7} {kind:6} hops={hops} mtu={mtu} lag={lag}: ERROR {r['error'][:200]}",
                              flush=True)
                    else:
                        print(f"[{done}/{total}] {name:7} {r['kind']:6} hops={hops} mtu={mtu:5} lag={int(lag)} "
                              f"P={r['streams']:2} {r['goodput_bps'] / 1e6:7.2f} Mbit/s = {r['ratio']:.3f} of theory, "
                              f"{r['retransmits']:4} retr, drops {sum(r['queue_drops'].values())}  (ETA {eta / 60:.0f} min)",
                              flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


def table(rows: list[dict]) -> str:
    """One line per case: goodput / theory (median over reps) and retransmits per variant."""
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    keys = list(dict.fromkeys((r["kind"], r["hops"], r["lag"], r["mtu"], r.get("streams")) for r in rows))
    head = f"{'path':16} {'MTU':>5} {'P':>2} " + " ".join(f"{v + ' ratio':>14} {'retr':>6} {'+RTT ms':>7}"
                                                          for v in variants)
    lines = [head, "-" * len(head)]
    for kind, hops, lag, mtu, streams in keys:
        path = "direct" if hops == 0 else f"{hops} x {kind}" + (" +LAG" if lag else "")
        cells = []
        for v in variants:
            got = [r for r in rows if r["variant"] == v and (r["kind"], r["hops"], r["lag"], r["mtu"], r.get("streams"))
                   == (kind, hops, lag, mtu, streams)]
            ok = [r for r in got if "ratio" in r]
            if ok:
                added = [r["ping_load_ms"] - r["ping_idle_ms"] for r in ok
                         if r.get("ping_load_ms") is not None and r.get("ping_idle_ms") is not None]
                cells.append(f"{statistics.median(r['ratio'] for r in ok):>14.3f} "
                             f"{int(statistics.median(r['retransmits'] for r in ok)):>6} "
                             + (f"{statistics.median(added):>7.1f}" if added else f"{'-':>7}"))
            else:
                cells.append(f"{'failed':>14} {'-':>6} {'-':>7}")
        lines.append(f"{path:16} {mtu:>5} {streams if streams else '-':>2} " + " ".join(cells))
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", action="append", help="NAME=REV: linklab's code at git revision REV ('.' = this tree)")
    p.add_argument("--hops", default="0,1,2,3")
    p.add_argument("--kinds", default="bridge,ovs")
    p.add_argument("--mtus", default="1500,4000,9000")
    p.add_argument("--streams", default="1,8")
    p.add_argument("--duration", type=float, default=6.0, help="seconds measured per case (plus 1 s omitted)")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--lag", action="store_true", help="also a 2-switch path whose first link is an 802.3ad LAG")
    p.add_argument("--out", default=str(RESULTS / "switched_goodput.json"))
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.variant = args.variant or ["now=."]
    args.hops = [int(x) for x in args.hops.split(",")]
    args.kinds = args.kinds.split(",")
    args.mtus = [int(x) for x in args.mtus.split(",")]
    args.streams = [int(x) for x in args.streams.split(",")]
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.inside:
        return inside(args)
    from linklab.kernel import missing_features  # noqa: E402
    argv = [sys.executable, str(Path(__file__).resolve()), "--inside", *sys.argv[1:]]
    if missing_features():
        print("bench: this kernel lacks what labs need: the cases run inside the lab VM", flush=True)
        argv = [sys.executable, "-m", "linklab", "vm", "run", "--if-needed", "--stop-after", "--", *argv]
    t0 = time.monotonic()
    rc = subprocess.call(argv, cwd=ROOT)
    if rc:
        return rc
    rows = json.loads(Path(args.out).read_text())
    print(f"\nswitched goodput, {time.monotonic() - t0:.0f} s in all; goodput / theory (median of reps), "
          f"sender retransmits:")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
