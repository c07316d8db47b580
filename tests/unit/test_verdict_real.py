"""The verdict on real A/B runs (tests/data/ab/README.md): nothing found where nothing changed,
each real change found where it must show, and a regression that gets worse found whatever its
repetitions carry (the old gate's confirmation passed such a point as "not confirmed")."""

import copy
import json
from pathlib import Path

import pytest

from linklab import verdict
from linklab.errors import EXIT_INCONCLUSIVE
from linklab.results.runs import Run
from linklab.verdict import aa

DATA = Path(__file__).resolve().parents[1] / "data" / "ab"
SPREAD = aa.Spread.load(DATA / "e1-aa-spread.json")


def arms(name: str) -> tuple[Run, Run]:
    return Run.load(DATA / name / "a"), Run.load(DATA / name / "b")


def judge(a: Run, b: Run) -> verdict.Result:
    return verdict.judge(a, b, paired=True, aa=SPREAD)


def points(res: verdict.Result, key: str) -> dict[str, verdict.Judgment]:
    return {c.point: c for c in res.judgments if c.metric is not None and c.metric.key == key}


def test_nothing_changed_nothing_found():
    res = judge(*arms("e1-aa"))
    assert res.ok, verdict.render(res)
    assert len([c for c in res.judgments if c.metric is not None]) > 100  # every point and judged metric


def test_every_link_at_nine_tenths_is_found_at_every_link_bound_point_with_its_ratio():
    res = judge(*arms("e1-rate090"))
    tp = points(res, "throughput_mbps")
    bound = [p for p in tp if p.startswith("802.3ad")]  # one member each, held by its shaper (0.99 of theory)
    assert len(bound) == 6
    for p in bound + [verdict.EVERY_POINT]:
        assert tp[p].verdict == verdict.FAIL, (p, tp[p].interval_text())
        assert 0.88 <= tp[p].ratio <= 0.92 and tp[p].high < 0  # x0.90 measured, "no change" excluded


def test_two_milliseconds_more_delay_is_found_in_the_tcp_rtt_at_nearly_every_point():
    res = judge(*arms("e1-delay2ms"))
    rtt = points(res, "tcp_rtt_ms")
    up = [p for p, c in rtt.items() if c.verdict == verdict.FAIL and c.effect > 0]
    assert len(up) >= 10 and verdict.EVERY_POINT in up, {p: c.interval_text() for p, c in rtt.items()}


def _scaled(rows, at, factor, column="throughput_bps"):
    for r in rows:
        if all(str(r.get(k)) == str(v) for k, v in at.items()):
            r[column] = float(r[column]) * factor


AT = {"bond_mode": "802.3ad", "mtu": 9200, "streams": 1}  # two quiet repetitions in each arm


@pytest.mark.parametrize("also", ["", "host_disturbed", "retransmits"])
def test_a_regression_that_gets_worse_fails_whatever_else_its_repetitions_carry(also):
    # The real A/A run with B's point 40 % slower in every repetition: alone, with every one of
    # them measured on a busy host, or failing another metric too. None passes: it fails at that
    # point, or, where a busy host may be what slowed it, the run is inconclusive.
    a, b = arms("e1-aa")
    rows = copy.deepcopy(b.rows)
    _scaled(rows, AT, 0.6)
    if also == "host_disturbed":
        for r in rows:
            if all(str(r.get(k)) == str(v) for k, v in AT.items()):
                r["flags"], r["flag_evidence"] = "host_disturbed", "host 99 % busy, other work 60 %"
    if also == "retransmits":  # a queue that now overflows: thousands of segments sent again
        for r in rows:
            if all(str(r.get(k)) == str(v) for k, v in AT.items()):
                r["retransmits"] = float(r.get("retransmits") or 0) + 3000
    res = judge(a, Run(b.path, b.manifest, rows))
    failed = {(c.point, c.what) for c in (res.inconclusive if also == "host_disturbed" else res.failures)}
    assert ("802.3ad mtu=9200 streams=1", "throughput (Mbit/s)") in failed, verdict.render(res)
    assert res.exit_code() == (EXIT_INCONCLUSIVE if also == "host_disturbed" else 1)
    assert points(res, "throughput_mbps")["802.3ad mtu=9200 streams=1"].ratio == pytest.approx(0.6, abs=0.05)  # x0.6 on what A/A measured there (x0.95-1.0)
    if also == "retransmits":
        assert ("802.3ad mtu=9200 streams=1", "retransmits per GB sent (/GB)") in failed
    assert json.dumps(verdict.as_json(res))  # and it says so, machine-readable too


def test_a_bond_made_balance_xor_on_the_mac_hash_is_found_on_one_member_where_rr_split():
    # B's bond balance-xor with the layer2 hash at every point: one member carries everything,
    # where A's balance-rr points split it 0.50/0.50; at 802.3ad points (one member each already)
    # the members rule has nothing to find.
    res = judge(*arms("e1-xor-l2"))
    members = {(c.point, c.what) for c in res.failures if c.rule == "members"}
    rr = {c.point for c in res.judgments if c.point.startswith("balance-rr")}
    assert len(rr) == 6 and {p for p, _ in members} == rr | {verdict.EVERY_POINT}, sorted(members)
    assert len(members) == 4 * 7  # each direction of each end's bond: client/server, tx/rx
    assert not [c for c in res.failures if c.rule in ("missing", "failed", "preflight", "path_mtu")]
