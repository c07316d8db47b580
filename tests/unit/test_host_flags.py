"""The flags a row carries and the one policy for a repetition flagged about the host
(linklab/measure/flags.py), asserted through the module and through each of its callers: a sweep
and a check measure the same repetitions again, the verdict and a baseline count the same ones
as quiet."""

from types import SimpleNamespace

import pytest

from linklab.check.kinds import REGISTRY
from linklab.lab import build_lab
from linklab.measure import flags
from linklab.measure.disturbance import flags as judge_flags
from linklab.results.points import group
from tests.unit.test_sweep_phases import _flagged, _sweep

# (the first attempt's flags, measured once more?): the one answer for sweeps and checks.
POLICY = [("host_disturbed", True), ("core_saturated;host_disturbed", True), ("host_disturbed;host_stolen", True),
          ("host_stolen", False), ("core_saturated;host_stolen", False), ("queue_dropped", False), ("", False)]


def test_a_row_stores_its_flags_and_their_evidence_in_order():
    row = judge_flags({"host_other_pct": 40.0, "host_steal_pct": 20.0, "host_cpus": 2})
    assert row["flags"] == "host_disturbed;host_stolen"
    assert list(flags.row_flags(row)) == ["host_disturbed", "host_stolen"]
    assert flags.row_flags(row)["host_stolen"].startswith("the hypervisor took 20.0%")
    assert flags.row_flags(flags.stored([("a", "x"), ("b", "y")])) == {"a": "x", "b": "y"}
    # rows from elsewhere: a list of names or of {name, evidence}, a mapping name -> evidence
    assert flags.row_flags({"flags": ["host_stolen"]}) == {"host_stolen": ""}
    assert flags.row_flags({"flags": [{"name": "host_stolen", "evidence": "steal"}]}) == {"host_stolen": "steal"}
    assert flags.row_flags({"flags": {"queue_dropped": "eth0"}}) == {"queue_dropped": "eth0"}
    assert flags.row_flags({"flags": ""}) == {} and flags.row_flags({}) == {}


@pytest.mark.parametrize("first, again", POLICY)
def test_the_policy_measures_again_only_what_other_work_on_the_host_disturbed(first, again):
    row = {"flags": first}
    assert flags.measure_again(row) == again
    assert flags.host_busy(row) == ("host_" in first)  # either host flag: not a quiet host
    assert flags.quiet([row]) == ([] if "host_" in first else [row])


@pytest.mark.parametrize("first, again", POLICY)
def test_a_sweep_measures_a_repetition_again_as_the_policy_says(tmp_path, monkeypatch, first, again):
    from linklab.sweep import engine
    from linklab.sweep.matrix import Point
    _flagged(monkeypatch, [first, ""])
    sweep = _sweep(tmp_path, monkeypatch)
    sweep.rerun_disturbed = True
    engine._run_point(sweep, Point(index=0, id="p0", key="k", axes={}), [1])
    sweep.recording.close()
    (row,) = sweep.store.rows()
    assert row["flags"] == ("" if again else first)  # the attempt that stands
    kept = sorted(d.name for d in (sweep.store.points_dir / "p0").iterdir() if d.is_dir())
    assert kept == (["rep1", "rep1.disturbed-1"] if again else ["rep1"])


@pytest.fixture(scope="module")
def bond2():
    from pathlib import Path
    return build_lab(Path(__file__).resolve().parents[2] / "topologies" / "bond2.yaml", [])


def _check_attempts(bond2, monkeypatch, attempts: list[str]):
    """One goodput check of one repetition whose attempts come flagged as `attempts` says:
    (attempts made, the rows judged, the attempts kept aside)."""
    from linklab.check.kinds.base import Context
    from linklab.measure import traffic
    from linklab.sweep import measure_rep
    given = iter(attempts)
    made = []

    def fake_measure(rep, traf, probes, clock=None):
        made.append(next(given))
        return {}, {"throughput_bps": 900e6 * bond2.scale, "flags": made[-1], "flag_evidence": made[-1] and "busy"}

    monkeypatch.setattr(measure_rep, "measure", fake_measure)
    monkeypatch.setattr(traffic, "start_servers", lambda *a, **k: SimpleNamespace(stop=lambda: None))
    ctx = Context(SimpleNamespace(lab=bond2, ns=lambda n: f"ns-{n}", backend=None, record={}))
    p = REGISTRY["goodput"].Params.model_validate({"id": "g", "kind": "goodput", "from": "h1", "to": "h2",
                                                   "min": "500mbit", "repeat": 1})
    raw = REGISTRY["goodput"].observe(p, ctx)
    return made, raw["rows"], raw["disturbed"]


@pytest.mark.parametrize("first, again", POLICY)
def test_a_check_measures_a_repetition_again_as_a_sweep_does(bond2, monkeypatch, first, again):
    made, rows, aside = _check_attempts(bond2, monkeypatch, [first, ""])
    assert len(made) == (2 if again else 1)
    assert [r["flags"] for r in rows] == ["" if again else first]
    assert [r["flags"] for r in aside] == ([first] if again else [])


def test_a_second_disturbed_attempt_stands_in_a_check_as_in_a_sweep(bond2, monkeypatch):
    made, rows, aside = _check_attempts(bond2, monkeypatch, ["host_disturbed", "host_disturbed", ""])
    assert len(made) == 2 and [r["flags"] for r in rows] == ["host_disturbed"] and len(aside) == 1


def test_the_verdict_and_a_baseline_count_the_same_repetitions_as_quiet():
    # A point with one repetition of each: the verdict judges it on the unflagged ones only, and a
    # baseline counts those (a stolen repetition was once counted there, not by the verdict).
    from linklab.verdict import effect
    from linklab.report.cli import _thin_points
    rows = [{"point_id": "p0", "point_index": 0, "rep": i, "throughput_bps": 1e6, "flags": f}
            for i, f in enumerate(["", "host_disturbed", "host_stolen", "queue_dropped"], 1)]
    run = SimpleNamespace(rows=rows, axes=[])
    (point,) = group(run)
    assert [r["rep"] for r in effect.quiet(point)] == [1, 4] == [r["rep"] for r in point.quiet]
    assert _thin_points(run, 2) == [] and _thin_points(run, 3) == ["(one point): 2"]
