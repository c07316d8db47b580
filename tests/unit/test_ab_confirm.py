"""What `linklab ab` measures again before it believes a difference (linklab/ab/confirm.py), and
the verdict it then gives: the second measurement's alone at those points."""

import json

import pytest

from linklab import verdict
from linklab.ab import confirm, session
from linklab.verdict.model import EVERY_POINT
from tests.unit.test_ab_session import _arm, _commands, _manifest
from tests.unit.test_verdict import _noisy, _run

FLAT = 1e8


def _drop(points, to=0.9):
    return lambda m, u: FLAT * to if (m, u) in points else FLAT


def _judged(b_rate, a_seed=1, b_seed=2, reps=2, **b_more):
    a = _run("a", _noisy(lambda m, u: FLAT, seed=a_seed, reps=reps), reps=reps)
    b = _run("b", _noisy(b_rate, seed=b_seed, reps=reps, **b_more), reps=reps)
    return verdict.judge(a, b, paired=True)


def test_a_difference_at_one_point_is_measured_again_there_only():
    first = _judged(_drop({("ad", 1500)}))
    assert [p.label for p in confirm.points(first)] == ["mode=ad mtu=1500"]
    keep = confirm.keeps(confirm.points(first))
    # an arm's sweep names its points by their axes as its matrix writes them, in any order
    assert keep({"mtu": 1500, "mode": "ad"}) and not keep({"mode": "rr", "mtu": 1500}) and not keep({"mode": "ad"})


def test_nothing_to_measure_again_where_nothing_differs():
    assert confirm.points(_judged(lambda m, u: FLAT)) == []


def test_differences_at_more_points_than_chance_moves_stand_as_they_are():
    first = _judged(_drop({("ad", 1500), ("rr", 1500), ("rr", 9000)}))
    assert len({j.point for j in first.failures if j.point != EVERY_POINT}) == confirm.MAX_POINTS + 1
    assert confirm.points(first) == []


def test_a_structural_or_every_point_difference_stands_as_it_is():
    first = _judged(_drop({("ad", 1500)}))
    first.judgments.append(verdict.Judgment("mode=rr mtu=1500", "missing", "point", verdict.FAIL))
    assert confirm.points(first) == []
    small = _judged(lambda m, u: FLAT * 0.93, reps=3)  # 7 % everywhere: shows over every point
    assert EVERY_POINT in {j.point for j in small.failures}
    assert confirm.points(small) == []


def _again(b_rate, seed):
    """A second measurement of mode=ad mtu=1500 alone, six a side."""
    only = {("ad", 1500)}
    a = _run("a2", {k: v for k, v in _noisy(lambda m, u: FLAT, seed=seed, reps=6).items() if k in only}, reps=6)
    b = _run("b2", {k: v for k, v in _noisy(b_rate, seed=seed + 1, reps=6).items() if k in only}, reps=6)
    return verdict.judge(a, b, paired=True)


def test_a_difference_not_measured_again_is_not_believed_and_the_other_points_keep_their_judgments():
    first = _judged(_drop({("ad", 1500)}))
    second = _again(lambda m, u: FLAT, seed=5)
    assert second.ok and {j.point for j in second.judgments} == {"mode=ad mtu=1500"}
    res = confirm.combine(first, second, 6)
    assert res.ok and res.exit_code() == 0 and res.words() == "no difference found"
    at = {j.point for j in res.judgments}
    assert at == {j.point for j in first.judgments}  # every point judged, under the first run's labels
    tp = [j for j in res.judgments if j.point == "mode=ad mtu=1500" and j.what.startswith("throughput")]
    assert len(tp) == 1 and len(tp[0].a) == 6  # the second measurement's, alone
    kept = [j for j in res.judgments if j.point == "mode=rr mtu=9000" and j.what.startswith("throughput")]
    assert kept and len(kept[0].a) == 2
    assert any("measured again (confirm/): mode=ad mtu=1500, 6 pairs a side" in n for n in res.notes)


def test_a_difference_measured_again_stands():
    first = _judged(_drop({("ad", 1500)}))
    res = confirm.combine(first, _again(_drop({("ad", 1500)}), seed=5), 6)
    assert [(j.point, j.what) for j in res.failures] == [("mode=ad mtu=1500", "throughput (Mbit/s)")]
    assert res.failures[0].ratio == pytest.approx(0.9, abs=0.02) and res.exit_code() == 1


def test_the_second_measurement_is_a_run_of_its_own_inside_the_first(tmp_path):
    (tmp_path / "ab.json").write_text(json.dumps({"kind": "ab", "pairs": 2, "arms": {}, "runs": {"a": "x", "b": "y"},
                                                  "complete": True, "experiment": "t"}))
    first = _judged(_drop({("ad", 1500)}))
    arms = [_arm(tmp_path, "a", ["p1", "p2"]), _arm(tmp_path, "b", ["p2", "p1"])]
    cdir, again = confirm.prepare(tmp_path, arms, confirm.points(first), 6)
    m = json.loads((cdir / "ab.json").read_text())
    assert cdir == tmp_path / "confirm" and m["pairs"] == 6 and not m["complete"] and "runs" not in m
    assert m["again"] == ["mode=ad mtu=1500"] and m["confirms"] == str(tmp_path)
    assert [a.results for a in again] == [cdir / "a", cdir / "b"]
    assert confirm.second(tmp_path) is None  # not measured yet
    with pytest.raises(FileExistsError):  # measured again once
        confirm.prepare(tmp_path, arms, confirm.points(first), 6)


def test_the_driver_measures_only_the_points_kept(tmp_path):
    _manifest(tmp_path)
    a, b = _arm(tmp_path, "a", ["p1", "p2", "p3"]), _arm(tmp_path, "b", ["p3", "p2", "p1"])
    manifest = session.drive([a, b], tmp_path, pairs=3, quick=True, say=lambda *_: None,
                             keep=lambda axes: axes["x"] == "p2")
    assert manifest["complete"] and manifest["points"] == 1
    for arm in (a, b):
        assert [(c["point"], c["rep"]) for c in _commands(arm) if c["do"] == "measure"] == [("p2-id", r) for r in (1, 2, 3)]
