#!/usr/bin/env python3
"""Benchmark: what `linklab ab`'s verdict catches, and how often it cries wolf, on real A/B runs.

Input: a results root holding `linklab ab` runs of one experiment (RESULTS/ab/<experiment>/*):
  - A/A runs (both arms alike): the false alarms, each judged with the A/A spread measured from
    the *other* A/A runs (leave one out: a run never judges itself with what it taught), and
    with no A/A spread at all (the run's own repetitions only);
  - B-arm runs (`--b PATH=VALUE`, or another revision): what each one's verdict failed, with the
    A/A spread of every A/A run, per rule, and whether what the change must move was
    caught at every point where it must show (throughput at link-bound points, RTT, bond
    members, path MTU), with each run's wall time.
Nothing here measures: it reads runs that `linklab ab` made (see bench/README.md for the
campaign that made them), so the table can be rebuilt from the stored runs at any time.

    .venv/bin/python bench/ab_power.py [--results results] [--experiment e1_bonding_mtu] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linklab.ab.session import alike, complete_runs  # noqa: E402
from linklab import verdict  # noqa: E402
from linklab.model.paths import goodput_fraction  # noqa: E402
from linklab.results.points import group  # noqa: E402
from linklab.results.runs import Run  # noqa: E402
from linklab.verdict import aa  # noqa: E402

# What each kind of change must move, and where (a point's label -> whether it must show there).
LINK_BOUND = 0.95  # a point is link-bound when A carried at least this share of its members' goodput (the shaper held it)


def link_bound(p, member_bps: float) -> bool:
    """A's point carried at least LINK_BOUND of what its busy members can (one member when its
    busiest member took > 90 % of the bytes, both otherwise)."""
    rows = p.ok
    mtu = next((float(r["mtu"]) for r in rows if r.get("mtu") not in (None, "")), None)
    share = [float(r["client_member_tx_max_share"]) for r in rows if r.get("client_member_tx_max_share") not in (None, "")]
    bps = [float(r["throughput_bps"]) for r in rows if r.get("throughput_bps") not in (None, "")]
    if not (mtu and bps and share):
        return False
    members = 1 if sum(share) / len(share) > 0.9 else 2
    return sum(bps) / len(bps) >= LINK_BOUND * members * member_bps * goodput_fraction(mtu)


def load(root: Path, experiment: str) -> list[dict]:
    out = []
    for d, m in complete_runs(root, experiment):
        arms, same = m["arms"], alike(m)
        name = "A/A" if same else "; ".join(arms["b"]["overrides"]) or f"{arms['a']['words']} -> {arms['b']['words']}"
        out.append({"dir": d, "name": name, "alike": same, "wall_s": m.get("wall_s"),
                    "a": Run.load(m["runs"]["a"]), "b": Run.load(m["runs"]["b"])})
    return out


def only_rep(run: Run, rep: int) -> Run:
    """The run as if it had measured only its repetition `rep` at every point."""
    return Run(run.path, run.manifest, [r for r in run.rows if int(r.get("rep") or 0) == rep])


def spread_without(aas: list[dict], leave: dict | None) -> aa.Spread | None:
    others = [(str(x["dir"]), x["a"], x["b"]) for x in aas if x is not leave]
    return aa.measure(others) if others else None


def failures(res: verdict.Result) -> list[str]:
    return [f"{c.rule}:{c.what} @ {c.point}" for c in res.failures]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="results")
    ap.add_argument("--experiment", default="e1_bonding_mtu")
    ap.add_argument("--member-bps", type=float, default=100e6, help="one bond member's rate in the lab (bond2 at scale 0.1)")
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--one-pair", action="store_true",
                    help="also judge each run as if it had measured one pair per point (A B, or B A): its first "
                         "repetitions of each arm, then its second, each judged alone (what --pairs 1 would give)")
    args = ap.parse_args()
    runs = load(Path(args.results), args.experiment)
    aas = [r for r in runs if r["alike"]]
    bs = [r for r in runs if not r["alike"]]
    if len(aas) < 2:
        print(f"need at least 2 complete A/A runs under {args.results}/ab/{args.experiment}, found {len(aas)}")
        return 2
    out: dict = {"aa_runs": len(aas), "false_alarms": {}, "changes": []}
    print(f"{len(aas)} A/A runs, {len(bs)} B-arm runs of {args.experiment} under {args.results}/ab/")
    print("\n## False alarms: A/A runs, each judged with the A/A spread of the others (leave one out)")
    loo, bare = [], []
    for r in aas:
        res = verdict.judge(r["a"], r["b"], paired=True, aa=spread_without(aas, r))
        alone = verdict.judge(r["a"], r["b"], paired=True)
        loo.append(failures(res))
        bare.append(failures(alone))
        print(f"  {r['dir'].name}: {'FALSE ALARM ' + '; '.join(loo[-1]) if loo[-1] else 'no difference'}"
              f"   (without an A/A spread: {len(bare[-1])} failed)")
    n_loo, n_bare = sum(bool(f) for f in loo), sum(bool(f) for f in bare)
    print(f"  false alarms: {n_loo} of {len(aas)} with the A/A spread; {n_bare} of {len(aas)} without one")
    out["false_alarms"] = {"with_aa_spread": n_loo, "without": n_bare, "runs": len(aas),
                           "which": [f for f in loo if f]}
    if args.one_pair:
        one = []
        for r in aas:
            sp = spread_without(aas, r)
            for rep in (1, 2):
                a, b = only_rep(r["a"], rep), only_rep(r["b"], rep)
                one.append(failures(verdict.judge(a, b, paired=True, aa=sp)))
        n_one = sum(bool(f) for f in one)
        print(f"  one pair per point (each run's first and second pairs alone): {n_one} of {len(one)} false alarms"
              + (f": {[f for f in one if f]}" if n_one else ""))
        out["false_alarms"]["one_pair"] = {"false": n_one, "runs": len(one), "which": [f for f in one if f]}
    walls = [r["wall_s"] for r in runs if r["wall_s"]]
    if walls:
        print(f"  time per A/B run (wall, both arms, lab VM boot excluded): {min(walls):.0f}-{max(walls):.0f} s, "
              f"median {sorted(walls)[len(walls) // 2]:.0f} s")
        out["wall_s"] = {"min": min(walls), "max": max(walls), "median": sorted(walls)[len(walls) // 2]}
    spread = spread_without(aas, None)
    print("\n## Changes: each B arm judged with the A/A spread of every A/A run")
    print(f"  {'change (B)':58} {'caught where it must show':42} {'failed judgments (what: count)':40} wall")
    for r in bs:
        res = verdict.judge(r["a"], r["b"], paired=True, aa=spread)
        kinds: dict[str, int] = {}
        for c in res.failures:
            k = c.what if c.rule == "metric" else c.rule
            kinds[k] = kinds.get(k, 0) + 1
        must = expected(r, res, args.member_bps)
        if args.one_pair:
            halves = [verdict.judge(only_rep(r["a"], k), only_rep(r["b"], k), paired=True, aa=spread) for k in (1, 2)]
            must["one_pair"] = [expected(r, h, args.member_bps)["words"] for h in halves]
        print(f"  {r['name'][:58]:58} {must['words'][:42]:42} "
              f"{', '.join(f'{k}: {v}' for k, v in sorted(kinds.items()))[:60]:40} {r['wall_s'] or 0:.0f} s")
        out["changes"].append({"change": r["name"], "dir": str(r["dir"]), "ok": res.ok, "failed": kinds,
                               "must": must, "wall_s": r["wall_s"]})
        if must.get("missed"):
            print(f"    missed at: {'; '.join(must['missed'])}")
        if args.one_pair:
            print(f"    one pair per point (first pair; second pair): {'; '.join(must['one_pair'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


def expected(r: dict, res: verdict.Result, member_bps: float) -> dict:
    """Where this change must show, and whether the verdict failed it there."""
    text = r["name"]
    a_points = {p.label: p for p in group(r["a"])}
    failed = {(c.point, c.what if c.metric is None else c.metric.key, c.rule) for c in res.failures}

    def caught(points: list[str], key: str, rule: str = "metric") -> dict:
        hit = [p for p in points if (p, key, rule) in failed]
        return {"points": len(points), "caught": len(hit), "missed": [p for p in points if p not in hit],
                "words": f"{key}: {len(hit)} of {len(points)} points"}

    if "impair.rate" in text:
        bound = [lab for lab, p in a_points.items() if link_bound(p, member_bps)]
        return caught(bound, "throughput_mbps") | {"where": "link-bound points"}
    if "impair.delay" in text:
        return caught(list(a_points), "tcp_rtt_ms")
    if "mtu" in text:
        return caught(list(a_points), "path MTU", "path_mtu")
    if "bond.mode" in text:
        changed = [lab for lab, p in a_points.items() if "balance-rr" in lab]
        hits = [p for p in changed if any(pp == p and rule == "members" for pp, _, rule in failed)]
        return {"points": len(changed), "caught": len(hits),
                "words": f"members: {len(hits)} of {len(changed)} split points"}
    return {"points": 0, "caught": 0, "words": "any judgment: " + ("caught" if not res.ok else "MISSED")}


if __name__ == "__main__":
    sys.exit(main())
