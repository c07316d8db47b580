"""The cluster driver's bookkeeping when a unit's worker dies, without Ray: what is submitted
again, the evidence on the point that was running, and a point failing on every try."""

import io
from pathlib import Path

from linklab.cluster.run import MAX_TRIES, Driver, Unit
from linklab.results.store import ResultsStore
from linklab.sweep.plan import load_experiment
from linklab.sweep.matrix import expand
from linklab.sweep.progress import Progress

E1 = Path(__file__).resolve().parents[2] / "experiments" / "e1_bonding_mtu.yaml"
WORKER = {"node_id": "abcdef0123456789", "hostname": "n1", "kernel": "6.1", "pid": 1}


class WorkerCrashedError(Exception):
    """Named as Ray's is: the evidence names the kind of death."""


def _driver(tmp_path):
    exp = load_experiment(E1, quick=True)
    points = expand(exp.matrix, exclude=exp.exclude)
    store = ResultsStore.create(tmp_path, exp.name, {"fingerprint": "f"})
    d = Driver(exp, points, store, {"workload": "dry"}, 2, set(), say=lambda *_: None)
    d.progress = Progress(len(points), stream=io.StringIO())
    d.workers[WORKER["node_id"]] = dict(WORKER)
    return d, points


def _rep(d, unit, point, rep=1):
    d._record(unit, {"point": point.id, "rep": rep, "raw": {"dry_run.txt": "x"}, "row": {"slept_s": 0.1}})


def test_a_dead_workers_unit_goes_again_without_what_it_recorded_and_the_point_carries_the_death(tmp_path):
    d, points = _driver(tmp_path)
    unit = Unit(1, [(p.id, 1) for p in points[:3]], worker=dict(WORKER))
    _rep(d, unit, points[0])
    again = d._ended(unit, WorkerCrashedError("the worker died unexpectedly"))
    assert again is not None and again.todo == [(points[1].id, 1), (points[2].id, 1)]
    assert len(d.evidence[points[1].id]) == 1 and not d.evidence[points[2].id]
    assert "WorkerCrashedError" in d.evidence[points[1].id][0] and "n1/abcdef01" in d.evidence[points[1].id][0]
    again.worker = dict(WORKER)
    _rep(d, again, points[1])
    _rep(d, again, points[1])  # a second copy of a repetition is never recorded
    _rep(d, again, points[2])
    assert d._ended(again, None) is None
    rows = {r["point_id"]: r for r in d.store.rows()}
    assert len(rows) == 3 and len(d.store.rows()) == 3
    assert rows[points[1].id]["worker_failures"] == 1 and "worker_failures" not in rows[points[2].id]
    assert rows[points[0].id]["worker_host"] == "n1"
    raw = d.store.rep_dir(points[1].id, 1) / "worker_failures.txt"
    assert raw.read_text().strip() == rows[points[1].id]["worker_failure_evidence"]


def test_a_point_whose_unit_dies_every_time_is_recorded_failed_with_the_evidence(tmp_path):
    d, points = _driver(tmp_path)
    unit = Unit(1, [(points[0].id, 1), (points[1].id, 1)], worker=dict(WORKER))
    for attempt in range(1, MAX_TRIES + 1):
        nxt = d._ended(unit, WorkerCrashedError(f"death {attempt}"))
        if attempt < MAX_TRIES:
            assert nxt.todo == unit.todo  # nothing recorded: all of it again
            nxt.worker = dict(WORKER)
            unit = nxt
    assert nxt is not None and nxt.todo == [(points[1].id, 1)]  # the rest goes on without it
    (row,) = d.store.rows()
    assert row["point_id"] == points[0].id and f"failed on each of {MAX_TRIES} tries" in row["error"]
    assert row["worker_failures"] == MAX_TRIES and row["worker_failure_evidence"].count("WorkerCrashedError") == MAX_TRIES
    assert d.store.failed() == {(points[0].id, 1)}


def _lab_driver(tmp_path, allow=frozenset()):
    d, points = _driver(tmp_path)
    d.spec = {"workload": "lab"}
    d.allow = set(allow)
    return d, points


def _lab_msg(kind="vm", scale=0.1):
    placement = {"kind": kind, "vm": {"accel": "tcg"}} if kind == "vm" else {"kind": kind}
    return {"kind": "lab", "placement": placement, "scale": scale,
            "manifest": {"placement": placement, "scale": scale, "tool_versions": {"iperf3": "3.12"},
                         "reference": "e1_bonding_mtu.reference.yaml", "fingerprint": "theirs", "points": 6}}


def test_the_first_workers_lab_describes_the_run_and_a_different_one_is_refused(tmp_path):
    import pytest
    from linklab.errors import UsageError
    d, _ = _lab_driver(tmp_path)
    unit = Unit(1, [], worker=dict(WORKER))
    d._check_lab(unit, _lab_msg())
    m = d.store.manifest
    assert m["placement"]["kind"] == "vm" and m["scale"] == 0.1 and m["tool_versions"] == {"iperf3": "3.12"}
    assert m["fingerprint"] == "f" and m["reference"] == "e1_bonding_mtu.reference.yaml"  # its own identity kept
    other = dict(WORKER, node_id="ffff0000ffff0000", hostname="n2")
    d.workers[other["node_id"]] = dict(other)
    with pytest.raises(UsageError) as e:
        d._check_lab(Unit(2, [], worker=other), _lab_msg(kind="native", scale=1.0))
    assert "placement vm (tcg) vs native" in str(e.value) and "scale 0.1 vs 1.0" in str(e.value)
    assert "--allow-different placement,scale" in e.value.render()


def test_allow_different_accepts_a_worker_whose_lab_differs(tmp_path):
    d, _ = _lab_driver(tmp_path, allow={"placement", "scale"})
    d._check_lab(Unit(1, [], worker=dict(WORKER)), _lab_msg())
    other = dict(WORKER, node_id="ffff0000ffff0000", hostname="n2")
    d.workers[other["node_id"]] = dict(other)
    d._check_lab(Unit(2, [], worker=other), _lab_msg(kind="native", scale=1.0))
    assert d.workers[other["node_id"]]["placement"] == {"kind": "native"} and d.workers[other["node_id"]]["scale"] == 1.0
