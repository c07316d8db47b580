#!/usr/bin/env python3
"""Benchmark: what the regression gate (`linklab compare`) catches, and what it cries wolf at.

1. Injected changes. Known changes are written into copies of real runs and each copy is
   compared with the baseline, as CI compares a fresh run: throughput -/+10, 20, 30 % (every
   point, and one point at a time), RTT +1 and +5 ms, loss +0.5 %, a bond's traffic spread over
   both members where it used one, a missing point, a path MTU change, a new flag, a failed and a
   disturbed point. A change is caught when the comparison fails on something the same copy
   without the change did not fail on (so a run that already differs counts for nothing).
   The copies are made from the quiet reruns (--reruns) when given: their own noise is then in
   every trial, and a rate is the share of trials caught. Without reruns, from the stored runs
   (--runs, default the baseline itself): one trial per change and place, so a rate is 0 or 1
   and says where the band edges lie.
2. False alarms: each quiet rerun compared with the baseline as it is.
3. The smallest throughput change (every point, each sign) caught in 95 % of the trials.
4. The gate as CI runs it (.ci/run): a failed gate is confirmed by measuring again in a new lab
   VM, and only the checks that failed both times fail it (`compare --confirms`). Here each
   rerun is paired with every rerun from another boot of the lab VM (manifest:
   placement.vm.started_at): a false alarm is a pair failing a same check, each run judged with
   a floor measured from the reruns other than the two; a change is caught when injected into
   both runs of a pair (the next rerun from another boot) it fails a same check both times that
   the pair without it did not.

The noise floor: with reruns, each rerun is judged with a floor measured from the other reruns
(leave one out: a rerun never judges itself); else the baseline's own noise.json, else the
metrics' declared floors. With --slower (runs on a machine of another speed, e.g. CI's), each
run is judged with the baseline's noise floor and a speed response (linklab/report/speed.py)
measured from the other slower runs, leave one out the same way: the false alarms and the
changes caught are then what CI's gate gives on such a machine. With --as-ci (runs made on the
machine CI runs on, whatever its speed), each run is judged exactly as `linklab compare` judges
it there: with the baseline's stored noise floor and speed response, nothing measured from the
runs themselves, alone and confirmed by a run from another boot. Goal (issue 19): every +/-20 %
and every structural change caught, at most 1 false alarm in 10 quiet reruns.

    .venv/bin/python bench/gate_power.py [--baseline baselines/e1_bonding_mtu-quick-vm-tcg]
        [--reruns results-noise/e1_bonding_mtu | --slower RUNS | --as-ci RUNS] [--runs RUN ...]
        [--tolerance PCT] [--json FILE]

Machine-readable: bench/results/gate_power.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linklab.report.compare import compare  # noqa: E402
from linklab.report.noise import MIN_RERUNS, NoiseFloor, for_baseline, load_reruns, measure, point_key  # noqa: E402
from linklab.report.points import group  # noqa: E402
from linklab.report.runs import Run  # noqa: E402
from linklab.report.speed import SpeedResponse  # noqa: E402
from linklab.report.speed import for_baseline as speed_for_baseline  # noqa: E402
from linklab.report.speed import measure as measure_speed  # noqa: E402

Rows = list[dict]
BYTES = ("sent_bytes", "received_bytes", "sent_bps", "received_bps")
MEMBER_SIDES = [f"{s}_member_{d}" for s in ("client", "server") for d in ("tx", "rx")]


@dataclass(frozen=True)
class Change:
    name: str          # what changed
    size: str          # how much
    where: str         # "every point" or "one point"
    apply: Callable[[Rows, str | None], Rows]   # rows, point id (one point) -> changed rows
    group: str = "metric"                        # metric | structure
    # Is it a change at this point? (the baseline's rows, the run's rows, the flags quiet reruns showed there)
    applies: Callable[[list[dict], list[dict], set], bool] = lambda base, rows, seen: True


def _each(rows: Rows, pid: str | None, fn) -> Rows:
    out = copy.deepcopy(rows)
    for r in out:
        if pid is None or r.get("point_id") == pid:
            fn(r)
    return out


def throughput(f: float):
    def fn(r):
        for k in ("throughput_bps", *BYTES):
            if isinstance(r.get(k), (int, float)):
                r[k] = r[k] * f
    return lambda rows, pid: _each(rows, pid, fn)


def rtt(ms: float):
    def fn(r):
        if isinstance(r.get("rtt_mean_us"), (int, float)):
            r["rtt_mean_us"] += 1000 * ms
        for k in ("ping_rtt_mean_ms", "ping_rtt_p50_ms", "ping_rtt_p95_ms"):
            if isinstance(r.get(k), (int, float)):
                r[k] += ms
    return lambda rows, pid: _each(rows, pid, fn)


def loss(pct: float):
    """A lossy link: TCP retransmits the lost share of its segments; UDP and ping lose it."""
    def fn(r):
        if isinstance(r.get("retransmits"), (int, float)):
            segs = r.get("client_nstat_TcpOutSegs") or (r.get("sent_bytes") or 0) / 1448
            r["retransmits"] = r["retransmits"] + round(pct / 100 * segs)
        for k in ("lost_percent", "ping_loss_pct"):
            if isinstance(r.get(k), (int, float)):
                r[k] += pct
    return lambda rows, pid: _each(rows, pid, fn)


def spread(rows: Rows, pid: str | None) -> Rows:
    def fn(r):
        for side in MEMBER_SIDES:
            if r.get(f"{side}_active") == 1:
                r[f"{side}_active"] = 2
                r[f"{side}_max_share"] = 0.5
                for k in [k for k in r if k.startswith(f"{side}_share_")]:
                    r[k] = 0.5
    return _each(rows, pid, fn)


def one_member(base: list[dict], rows: list[dict], seen: set) -> bool:
    return any(r.get("client_member_tx_active") == 1 for r in rows)


def flag_is_new(name: str):
    """A flag the point carries nowhere yet: not in the baseline, the run, nor the quiet reruns."""
    return lambda base, rows, seen: name not in seen and not any(name in str(r.get("flags") or "") for r in base + rows)


def drop_point(rows: Rows, pid: str | None) -> Rows:
    return [copy.deepcopy(r) for r in rows if r.get("point_id") != pid]


def mtu(rows: Rows, pid: str | None) -> Rows:
    def fn(r):
        m = r.get("path_mtu")
        if isinstance(m, int):
            r["path_mtu"] = 1500 if m > 1500 else m - 50  # e.g. one member left at 1500 under jumbo frames
    return _each(rows, pid, fn)


def flag(name: str):
    def fn(r):
        have = [f for f in str(r.get("flags") or "").split(";") if f]
        if name not in have:
            r["flags"] = ";".join(have + [name])
            r["flag_evidence"] = (str(r.get("flag_evidence") or "") + "; injected by gate_power").lstrip("; ")
    return lambda rows, pid: _each(rows, pid, fn)


def failed(rows: Rows, pid: str | None) -> Rows:
    return _each(rows, pid, lambda r: r.update(error="iperf3: control socket closed (injected by gate_power)"))


def changes() -> list[Change]:
    out = []
    for pct in (10, 20, 30):
        for sign in (-1, 1):
            size = f"{'+' if sign > 0 else '-'}{pct} %"
            out.append(Change("throughput", size, "every point", throughput(1 + sign * pct / 100)))
            out.append(Change("throughput", size, "one point", throughput(1 + sign * pct / 100)))
    out += [Change("RTT", "+1 ms", "every point", rtt(1.0)), Change("RTT", "+5 ms", "every point", rtt(5.0)),
            Change("loss", "+0.5 %", "every point", loss(0.5)),
            Change("bond members spread", "1.0 -> 0.5", "every point", spread, "structure", one_member),
            Change("bond members spread", "1.0 -> 0.5", "one point", spread, "structure", one_member),
            Change("point missing", "-", "one point", drop_point, "structure"),
            Change("path MTU", "9200 -> 1500, else -50", "one point", mtu, "structure"),
            Change("new flag queue_dropped", "-", "one point", flag("queue_dropped"), "structure",
                   flag_is_new("queue_dropped")),
            Change("new flag emulator_rtt", "-", "one point", flag("emulator_rtt"), "structure",
                   flag_is_new("emulator_rtt")),
            Change("point failed", "-", "one point", failed, "structure"),
            Change("point disturbed", "-", "one point", flag("host_disturbed"), "structure",
                   lambda base, rows, seen: not any("host_disturbed" in str(r.get("flags") or "") for r in rows))]
    return out


def with_rows(run: Run, rows: Rows) -> Run:
    return Run(run.path, run.manifest, rows)


def failure_keys(res) -> set[tuple[str, str, str]]:
    return {(c.point, c.rule, c.what) for c in res.failures}


@dataclass
class Source:
    run: Run
    noise: NoiseFloor | None
    clean: set           # failures of the run as it is
    speed: SpeedResponse | None = None


def judged(base: Run, run: Run, noise: NoiseFloor | None, tolerance: float,
           speed: SpeedResponse | None = None) -> Source:
    """The run as a source of trials, with the failures it has as it is under these bands."""
    return Source(run, noise, failure_keys(compare(base, run, noise=noise, tolerance=tolerance, speed=speed)), speed)


def floor_words(nf: NoiseFloor | None) -> str:
    return nf.describe() if nf else "the metrics' declared floors (no noise floor measured)"


def slower_sources(base: Run, slower: list[Run], tolerance: float) -> tuple[list[Source], str]:
    nf = for_baseline(base)
    out = []
    for i, r in enumerate(slower):
        sr = measure_speed(base, slower[:i] + slower[i + 1:]) if len(slower) > 1 else None
        out.append(judged(base, r, nf, tolerance, sr))
    how = floor_words(nf) + (
        f"; leave-one-out speed responses from the other {len(slower) - 1} slower runs" if len(slower) > 1 else
        "; no speed response (one slower run)")
    return out, how


def as_ci_sources(base: Run, runs: list[Run], tolerance: float) -> tuple[list[Source], str]:
    """Each run judged as `linklab compare` judges it: the baseline's own floor and speed response."""
    nf, sr = for_baseline(base), speed_for_baseline(base)
    how = (floor_words(nf) + "; " + (f"the baseline's speed response ({sr.path})" if sr else "no speed response")
           + ", as `linklab compare`")
    return [judged(base, r, nf, tolerance, sr) for r in runs], how


def sources(base: Run, reruns: list[Run], runs: list[Run], tolerance: float) -> tuple[list[Source], str]:
    if len(reruns) > MIN_RERUNS:
        out = []
        for i, r in enumerate(reruns):
            out.append(judged(base, r, measure(base, reruns[:i] + reruns[i + 1:]), tolerance))
        return out, f"leave-one-out noise floors from the other {len(reruns) - 1} reruns"
    nf = for_baseline(base)
    how = floor_words(nf)
    pool = reruns or runs
    if nf and {str(r.path.resolve()) for r in pool} & {str(Path(p).resolve()) for p in nf.meta.get("rerun_paths", [])}:
        how += (f" -- measured on these same runs: false alarms are in-sample (optimistic); "
                f"more than {MIN_RERUNS} reruns give leave-one-out floors")
    return [judged(base, r, nf, tolerance) for r in pool], how


def trial(base: Run, src: Source, change: Change, pid: str | None, tolerance: float,
          partner: Source | None = None) -> bool:
    """Is the change caught in src; with a partner, in both (a same check failing in each, as
    .ci/run's confirmation decides)?"""
    def failed(s: Source) -> set:
        changed = with_rows(s.run, change.apply(s.run.rows, pid))
        return failure_keys(compare(base, changed, noise=s.noise, tolerance=tolerance, speed=s.speed))

    if partner is None:
        return bool(failed(src) - src.clean)
    return bool((failed(src) & failed(partner)) - (src.clean & partner.clean))


Pair = tuple[Source, "Source | None"]  # a run, and the run confirming it (None: the gate alone)


def power(base: Run, pairs: list[Pair], tolerance: float) -> list[dict]:
    """Per change, the share of trials that caught it (in both runs of a pair, where paired)."""
    table = []
    base_rows = {p.key(): p.rows for p in group(base)}
    for ch in changes():
        caught = trials = 0
        missed: dict[str, int] = {}
        for s, other in pairs:
            points = [p for p in group(s.run) if p.ok and ch.applies(
                base_rows.get(p.key(), []), p.rows, set(s.noise.seen(point_key(p)).get("flags", []) if s.noise else []))]
            if ch.where == "every point":
                if points:
                    trials += 1
                    caught += trial(base, s, ch, None, tolerance, other)
            else:
                for p in points:
                    trials += 1
                    got = trial(base, s, ch, p.id, tolerance, other)
                    caught += got
                    if not got:
                        missed[p.label] = missed.get(p.label, 0) + 1
        table.append({"change": ch.name, "size": ch.size, "where": ch.where, "group": ch.group, "trials": trials,
                      "caught": caught, "rate": caught / trials if trials else None, "missed_at": missed})
    return table


def smallest_caught(base: Run, pairs: list[Pair], tolerance: float, need: float = 0.95) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for sign, name in ((-1, "down"), (1, "up")):
        out[name] = None
        for pct in range(1, 61):
            ch = Change("throughput", "", "every point", throughput(1 + sign * pct / 100))
            rate = sum(trial(base, s, ch, None, tolerance, o) for s, o in pairs) / len(pairs)
            if rate >= need:
                out[name] = pct
                break
    return out


def boot(run: Run) -> str:
    """Which boot of the lab VM measured the run (its start time), or the run itself."""
    vm = (run.manifest.get("placement") or {}).get("vm") or {}
    return str(vm.get("started_at") or run.name)


def confirmed_pairs(base: Run, reruns: list[Run], tolerance: float,
                    fixed: list[Source] | None = None) -> tuple[list[Pair], list[dict]]:
    """Each rerun with a partner (the next rerun from another boot), the two judged with a floor
    from the reruns other than them (or as `fixed` judged them: --as-ci); and the false alarms
    of every pair from different boots."""
    done: dict[tuple[int, int], tuple[Source, Source]] = {}  # each pair's floor measured once

    def pair(i: int, j: int) -> tuple[Source, Source]:
        if fixed is not None:
            return fixed[i], fixed[j]
        lo, hi = sorted((i, j))
        if (lo, hi) not in done:
            nf = measure(base, [r for k, r in enumerate(reruns) if k not in (lo, hi)])
            done[lo, hi] = tuple(judged(base, reruns[k], nf, tolerance) for k in (lo, hi))
        a, b = done[lo, hi]
        return (a, b) if i == lo else (b, a)

    n = len(reruns)
    alarms = []
    for i in range(n):
        for j in range(i + 1, n):
            if boot(reruns[i]) != boot(reruns[j]):
                a, b = pair(i, j)
                alarms.append({"runs": [a.run.name, b.run.name], "failed": sorted(" / ".join(k) for k in a.clean & b.clean),
                               "failed_once": sorted(" / ".join(k) for k in a.clean ^ b.clean)})
    pairs: list[Pair] = []
    for i in range(n):
        j = next((k % n for k in range(i + 1, i + n) if boot(reruns[k % n]) != boot(reruns[i])), None)
        if j is not None:
            pairs.append(pair(i, j))
    return pairs, alarms


def false_alarms(srcs: list[Source]) -> list[dict]:
    return [{"run": s.run.name, "failed": sorted(" / ".join(k) for k in s.clean)} for s in srcs]


def print_table(table: list[dict]) -> None:
    print(f"\n{'change':26} {'size':24} {'where':12} {'caught':>8} {'rate':>6}")
    for t in table:
        rate = "-" if t["rate"] is None else f"{100 * t['rate']:.0f} %"
        print(f"{t['change']:26} {t['size']:24} {t['where']:12} {t['caught']:>3}/{t['trials']:<4} {rate:>6}"
              + (f"   missed at: {', '.join(f'{k} ({v})' for k, v in t['missed_at'].items())}" if t["missed_at"] else ""))


def print_smallest(small: dict[str, int | None]) -> None:
    print(f"smallest throughput change (every point) caught in 95 % of trials: "
          f"down {small['down'] or '> 60'} %, up {small['up'] or '> 60'} %")


def goals(table: list[dict], alarms: list[dict] | None) -> dict[str, bool | None]:
    """Issue 19's goal: every +/-20 % (every point) and every structural change caught, at most 1
    false alarm in 10."""
    at20 = [t for t in table if t["change"] == "throughput" and t["size"] in ("-20 %", "+20 %")
            and t["where"] == "every point"]
    struct = [t for t in table if t["group"] == "structure" and t["trials"]]
    return {"throughput_20pct_every_point": all(t["rate"] == 1.0 for t in at20),
            "every_structural_change": all(t["rate"] == 1.0 for t in struct),
            "false_alarms_at_most_1_in_10": None if alarms is None else
            sum(1 for a in alarms if a["failed"]) <= max(1, len(alarms) // 10)}


def goal_words(goal: dict[str, bool | None]) -> str:
    return ", ".join(f"{k} {'met' if v else 'NOT met' if v is False else 'not measured'}" for k, v in goal.items())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="baselines/e1_bonding_mtu-quick-vm-tcg")
    ap.add_argument("--reruns", nargs="*", default=[], help="quiet reruns: run directories or directories of runs")
    ap.add_argument("--runs", nargs="*", default=None,
                    help="without reruns: stored runs to inject into (default: the baseline itself)")
    ap.add_argument("--slower", nargs="*", default=[],
                    help="runs on a machine of another speed (judged with leave-one-out speed responses) instead of "
                         "quiet reruns")
    ap.add_argument("--as-ci", nargs="*", default=[],
                    help="runs made on the machine CI runs on, judged as `linklab compare` does there (the "
                         "baseline's stored noise floor and speed response), alone and confirmed across boots")
    ap.add_argument("--tolerance", type=float, default=0.0, metavar="PCT", help="as `linklab compare --tolerance`")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "gate_power.json"))
    args = ap.parse_args()
    t0 = time.monotonic()
    base = Run.load(Path(args.baseline))
    slower = load_reruns(args.slower) if args.slower else []
    as_ci = load_reruns(args.as_ci) if args.as_ci else []
    reruns = (load_reruns(args.reruns) if args.reruns else []) or slower or as_ci  # each is judged as it is, too
    runs = [Run.load(Path(p)) for p in args.runs] if args.runs else [base]
    tol = args.tolerance / 100
    srcs, how = (slower_sources(base, slower, tol) if slower else as_ci_sources(base, as_ci, tol) if as_ci
                 else sources(base, reruns, runs, tol))
    print(f"baseline {base.path} ({base.name}, {max(len(p.ok) for p in group(base))} repetitions per point)")
    kind = "slower run" if slower else "CI-machine run" if as_ci else "quiet rerun" if reruns else "stored run"
    print(f"changes injected into {len(srcs)} {kind}"
          f"{'s' if len(srcs) != 1 else ''}: {', '.join(s.run.name for s in srcs)}")
    print(f"bands: {how}" + (f"; --tolerance {args.tolerance:g}" if tol else ""))
    single = [(x, None) for x in srcs]
    table = power(base, single, tol)
    print_table(table)
    alarms = false_alarms(srcs) if reruns else []
    if reruns:
        n_alarm = sum(1 for a in alarms if a["failed"])
        print(f"\nfalse alarms: {n_alarm} of {len(alarms)} {kind}s failed the gate")
        for a in alarms:
            if a["failed"]:
                print(f"  {a['run']}: " + "; ".join(a["failed"][:6]) + (" ..." if len(a["failed"]) > 6 else ""))
    else:
        print("\nfalse alarms: not measured (give --reruns: quiet reruns of the baseline's experiment)")
    small = smallest_caught(base, single, tol)
    print_smallest(small)
    goal = goals(table, alarms if reruns else None)
    out = {"baseline": str(base.path), "sources": [s.run.name for s in srcs], "reruns": bool(reruns),
           "slower": bool(slower), "as_ci": bool(as_ci), "bands": how, "tolerance_pct": args.tolerance,
           "changes": table, "false_alarms": alarms, "smallest_throughput_change_pct_caught_95": small, "goal": goal}
    # The gate as .ci/run runs it: confirmed in a new lab VM.
    boots = len({boot(r) for r in reruns})
    if reruns and not slower and boots > 1:
        pairs, pair_alarms = confirmed_pairs(base, reruns, tol, srcs if as_ci else None)
        print(f"\nconfirmed as CI confirms a failed gate (a rerun from another of the {boots} lab VM boots; "
              + ("bands as above):" if as_ci else f"floors from the other {len(reruns) - 2} reruns):"))
        ctable = power(base, pairs, tol)
        print_table(ctable)
        n_alarm = sum(1 for a in pair_alarms if a["failed"])
        print(f"\nfalse alarms: {n_alarm} of {len(pair_alarms)} pairs of quiet reruns from different boots failed a "
              f"same check ({sum(1 for a in pair_alarms if a['failed_once'])} pairs had a check failing in one run only)")
        for a in pair_alarms:
            if a["failed"]:
                print(f"  {' + '.join(a['runs'])}: " + "; ".join(a["failed"][:6]))
        csmall = smallest_caught(base, pairs, tol)
        print_smallest(csmall)
        out["confirmed"] = {"boots": boots, "pairs": [[a.run.name, b.run.name] for a, b in pairs], "changes": ctable,
                            "false_alarms": pair_alarms, "smallest_throughput_change_pct_caught_95": csmall,
                            "goal": goals(ctable, pair_alarms)}
    elif reruns and not slower:
        print("\nconfirmed gate: not measured (the reruns come from one lab VM boot; CI confirms in a new one)")
    print("goal, the gate alone: " + goal_words(goal))
    if "confirmed" in out:
        print("goal, confirmed as CI runs it: " + goal_words(out["confirmed"]["goal"]))
    out["seconds"] = round(time.monotonic() - t0, 1)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"\n({time.monotonic() - t0:.0f} s; {args.json})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
