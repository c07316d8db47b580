"""linklab compare: bands from the baseline's spread with a floor, direction per metric,
points matched by parameters, refusal of runs that measure different things; on rows built
here and on real stored runs (tests/data/runs/, lab VM under software emulation)."""

from pathlib import Path

import pytest

from linklab.cli import main
from linklab.errors import UsageError
from linklab.report import metrics
from linklab.report.compare import DISTURBED, REGRESSED, WITHIN, band, compare, render
from linklab.report.runs import Run
from linklab.report.stats import describe

DATA = Path(__file__).resolve().parents[1] / "data" / "runs"


def run(tmp_path, points: dict[int, list[float]], *, retrans=10, experiment="e", scale=0.1, kind="vm", order=1) -> Run:
    rows = []
    for i, (mtu, rates) in enumerate(sorted(points.items(), reverse=order < 0)):
        for rep, mbps in enumerate(rates, 1):
            rows.append({"point_index": i, "point_id": f"p{i}", "rep": rep, "mtu": mtu, "throughput_bps": mbps * 1e6,
                         "retransmits": retrans, "cpu0_busy_pct": 50.0})
    return Run(tmp_path, {"experiment": experiment, "matrix": {"mtu": list(points)}, "scale": scale,
                          "placement": {"kind": kind, "vm": {"accel": "tcg"}}}, rows)


def test_band_is_spread_based_with_floors():
    m = metrics.BY_KEY["throughput_mbps"]
    wide = describe([80.0, 100.0, 90.0])      # sd 10: t(0.975,2)=4.303 * 10 * sqrt(1/3+1/3) = 35.1
    assert band(m, wide, 3) == pytest.approx(35.13, abs=0.01)
    tight = describe([90.0, 90.2, 89.8])      # spread 0.33 -> the 15 % floor wins
    assert band(m, tight, 3) == pytest.approx(0.15 * 90)
    assert band(m, describe([1.0]), 1) == pytest.approx(m.abs_floor)  # one repetition: the absolute floor


def test_points_matched_by_parameters_not_order(tmp_path):
    base = run(tmp_path, {1500: [90, 92], 9000: [98, 99]})
    new = run(tmp_path, {1500: [91], 9000: [97]}, order=-1)  # same points, listed the other way round
    res = compare(base, new)
    assert res.ok and all(d.verdict == WITHIN for d in res.deltas)
    thr = {d.point: d for d in res.deltas if d.metric.key == "throughput_mbps"}
    assert thr["mtu=9000"].new.mean == 97


def test_direction_lower_throughput_regresses_lower_retransmits_improves(tmp_path):
    base = run(tmp_path, {1500: [90, 92]}, retrans=1000)
    res = compare(base, run(tmp_path, {1500: [60]}, retrans=10))
    verdicts = {d.metric.key: d.verdict for d in res.deltas}
    assert verdicts["throughput_mbps"] == REGRESSED and verdicts["retransmits"] == "improved" and not res.ok
    res = compare(base, run(tmp_path, {1500: [130]}, retrans=5000))
    verdicts = {d.metric.key: d.verdict for d in res.deltas}
    assert verdicts["throughput_mbps"] == "improved" and verdicts["retransmits"] == REGRESSED


def test_refuses_different_experiment_scale_placement_unless_told(tmp_path):
    base = run(tmp_path, {1500: [90]})
    for other, what in ((run(tmp_path, {1500: [90]}, experiment="f"), "experiment"),
                        (run(tmp_path, {1500: [900]}, scale=1.0), "scale"),
                        (run(tmp_path, {1500: [90]}, kind="native"), "placement")):
        with pytest.raises(UsageError, match=f"not comparable: {what}"):
            compare(base, other)
    res = compare(base, run(tmp_path, {1500: [900]}, scale=1.0), allow={"scale"})
    # rates are compared on one scale: 900 at scale 1 is 90 at scale 0.1
    assert res.ok and "allowed difference: scale: baseline 0.1, new 1" in res.notes
    with pytest.raises(UsageError, match="no point of the new run matches"):
        compare(base, run(tmp_path, {9000: [90]}))


# -- real stored runs ----------------------------------------------------------------------------

def test_real_runs_without_regression_pass(capsys):
    # Two consecutive E2 quick runs of the same lab. Measured under contention: the second ran on a
    # less loaded machine and is faster (improved), which a regression gate must let pass.
    code = main(["compare", str(DATA / "e2-quick-a"), str(DATA / "e2-quick-b")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "result: within tolerance" in out and "0 regressed" in out and "REGRESSED" not in out


def test_real_run_with_slower_links_fails(capsys):
    # The same E1 quick sweep on a lab brought up with the bond's rate halved (`--set
    # links[bond].impair.rate=500mbit`): throughput leaves the band at every point.
    code = main(["compare", str(DATA / "e1-quick"), str(DATA / "e1-quick-halfrate")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "REGRESSION" in out and "lab overrides differ" in out
    assert "throughput (Mbit/s)" in out and "REGRESSED" in out


def test_real_runs_of_different_experiments_are_bad_input(capsys):
    e4 = Path(__file__).resolve().parents[2] / "baselines" / "e4_jumbo_ipv6-quick-vm-tcg"
    assert main(["compare", str(DATA / "e1-quick"), str(e4)]) == 2
    assert "not comparable: experiment" in capsys.readouterr().err


def test_compare_cli_bad_input_is_exit_2(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "nothing"), str(DATA / "e1-quick")]) == 2
    assert "no results found" in capsys.readouterr().err


def test_disturbed_point_is_not_judged_and_tolerance_widens_the_floor(tmp_path):
    base = run(tmp_path, {1500: [90], 9000: [98]})
    new = run(tmp_path, {1500: [60], 9000: [60]})
    new.rows[1]["flags"] = "host_disturbed"           # 9000 measured beside other work
    new.rows[1]["flag_evidence"] = "other work 31% of 2 cores"
    res = compare(base, new)
    thr = {d.point: d.verdict for d in res.deltas if d.metric.key == "throughput_mbps"}
    assert thr == {"mtu=1500": REGRESSED, "mtu=9000": DISTURBED} and not res.ok
    assert "1 not judged" in render(res)
    # A 20 % drop is outside the 15 % floor, inside a 35 % tolerance; a 40 % drop is outside both.
    drop20 = run(tmp_path, {1500: [72], 9000: [78.4]})
    assert not compare(base, drop20).ok and compare(base, drop20, tolerance=0.35).ok
    drop40 = run(tmp_path, {1500: [54], 9000: [98]})
    assert not compare(base, drop40, tolerance=0.35).ok
    assert band(metrics.BY_KEY["throughput_mbps"], describe([90.0]), 1, 0.35) == pytest.approx(0.35 * 90)
