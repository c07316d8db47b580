import csv
import json
import re
from datetime import datetime

import pytest

from linklab.sweep.matrix import expand
from linklab.results.store import AlreadyRecorded, ResultsStore, RunLocked

NOW = datetime(2024, 5, 6, 7, 8, 9)
POINTS = expand({"bond_mode": ["802.3ad", "balance-rr"], "mtu": [1500, 9000]})


def make(tmp_path, fingerprint="fp1", now=NOW, **extra):
    return ResultsStore.create(tmp_path, "bond", {"fingerprint": fingerprint, **extra}, now=now)


def rec(store, point, rep, **row):
    return store.record(point, rep, {"iperf3.json": b'{"end": {}}', "ping.txt": "64 bytes\n"},
                        {"throughput_bps": 1e9, **row})


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


# -- create / find --------------------------------------------------------------------------

def test_create_makes_timestamped_dir_with_manifest(tmp_path):
    store = make(tmp_path, quick=True)
    assert store.path == tmp_path / "bond" / "20240506-070809"
    on_disk = json.loads((store.path / "manifest.json").read_text())
    assert on_disk == store.manifest
    assert on_disk["fingerprint"] == "fp1" and on_disk["quick"] is True
    assert on_disk["complete"] is False and on_disk["experiment"] == "bond"
    assert not list(store.path.glob(".*tmp*"))


def test_create_never_reuses_a_dir(tmp_path):
    names = [make(tmp_path).path.name for _ in range(3)]
    assert names == ["20240506-070809", "20240506-070809-2", "20240506-070809-3"]


def test_create_rejects_unsafe_experiment_name(tmp_path):
    with pytest.raises(ValueError, match="not a safe file name"):
        ResultsStore.create(tmp_path, "../escape", {}, now=NOW)


def test_latest_orders_suffixes_numerically(tmp_path):
    stores = [make(tmp_path) for _ in range(11)]
    assert ResultsStore.latest(tmp_path, "bond").path == stores[-1].path
    assert stores[-1].path.name.endswith("-11")
    assert ResultsStore.latest(tmp_path, "other") is None


def test_find_resumable_matches_fingerprint_and_skips_complete(tmp_path):
    a = make(tmp_path, "fp1", now=datetime(2024, 1, 1))
    b = make(tmp_path, "fp2", now=datetime(2024, 1, 2))
    assert ResultsStore.find_resumable(tmp_path, "bond", "fp1").path == a.path
    assert ResultsStore.find_resumable(tmp_path, "bond", "fp2").path == b.path
    assert ResultsStore.find_resumable(tmp_path, "bond", "fp3") is None
    b.mark_complete()
    assert ResultsStore.find_resumable(tmp_path, "bond", "fp2") is None
    assert json.loads((b.path / "manifest.json").read_text())["complete"] is True
    assert "finished_at" in b.manifest


def test_find_resumable_takes_newest_and_never_a_superseded_run(tmp_path):
    make(tmp_path, "fp1", now=datetime(2024, 1, 1))
    newer = make(tmp_path, "fp1", now=datetime(2024, 1, 2))
    assert ResultsStore.find_resumable(tmp_path, "bond", "fp1").path == newer.path
    # The newer run (e.g. made by --force) finished: the older unfinished one stays superseded.
    newer.mark_complete()
    assert ResultsStore.find_resumable(tmp_path, "bond", "fp1") is None


def test_run_without_manifest_is_ignored(tmp_path):
    good = make(tmp_path, now=datetime(2024, 1, 1))
    (tmp_path / "bond" / "20250101-000000").mkdir()  # crashed between mkdir and manifest
    assert ResultsStore.latest(tmp_path, "bond").path == good.path
    assert ResultsStore.find_resumable(tmp_path, "bond", "fp1").path == good.path


def test_update_manifest_is_persisted(tmp_path):
    store = make(tmp_path)
    store.update_manifest(points_total=4)
    assert ResultsStore.open(store.path).manifest["points_total"] == 4
    assert store.manifest["fingerprint"] == "fp1"


# -- record ---------------------------------------------------------------------------------

def test_record_writes_raw_row_and_point(tmp_path):
    store = make(tmp_path)
    p = POINTS[1]
    final = rec(store, p, 1)
    assert final == store.path / "points" / p.id / "rep1"
    assert (final / "iperf3.json").read_bytes() == b'{"end": {}}'
    assert (final / "ping.txt").read_text() == "64 bytes\n"
    row = json.loads((final / "row.json").read_text())
    assert row == {"point_index": 1, "point_id": p.id, "rep": 1, "bond_mode": "802.3ad", "mtu": 9000,
                   "throughput_bps": 1e9}
    info = json.loads((final.parent / "point.json").read_text())
    assert info["key"] == p.key and info["axis_order"] == ["bond_mode", "mtu"]
    assert store.done(p.id, 1) and not store.done(p.id, 2)
    assert store.completed() == {(p.id, 1)}
    assert not list(final.parent.glob(".*"))  # no temp left behind


def test_double_record_raises_and_keeps_the_first(tmp_path):
    store = make(tmp_path)
    rec(store, POINTS[0], 1, throughput_bps=1.0)
    with pytest.raises(AlreadyRecorded):
        rec(store, POINTS[0], 1, throughput_bps=2.0)
    assert store.rows()[0]["throughput_bps"] == 1.0
    assert not list((store.path / "points" / POINTS[0].id).glob(".*tmp*"))


def test_record_that_fails_midway_leaves_nothing(tmp_path):
    store = make(tmp_path)
    with pytest.raises(TypeError, match="must be str or bytes"):
        store.record(POINTS[0], 1, {"a.txt": "ok", "b.txt": 5}, {})
    pdir = store.path / "points" / POINTS[0].id
    assert not store.done(POINTS[0].id, 1)
    assert not (pdir / "rep1").exists()
    assert not list(pdir.glob(".rep*"))


def test_crash_leftovers_are_not_done_and_are_cleaned(tmp_path):
    store = make(tmp_path)
    rec(store, POINTS[0], 1)
    pdir = store.path / "points" / POINTS[0].id
    # What SIGKILL mid-record leaves: a temp dir, complete or not, never the final one.
    tmp = pdir / ".rep2.tmp-99999"
    tmp.mkdir()
    (tmp / "row.json").write_text("{}")
    stray_manifest = store.path / ".manifest.json.tmp-99999"
    stray_manifest.write_text("{")
    stray_csv = store.path / ".results.csv.tmp-99999"
    stray_csv.write_text("half")
    hollow = store.path / "points" / POINTS[1].id / "rep1"
    hollow.mkdir(parents=True)
    assert not store.done(POINTS[0].id, 2)
    assert not store.done(POINTS[1].id, 1)
    assert store.completed() == {(POINTS[0].id, 1)}

    removed = store.clean_partial()
    assert removed == sorted([tmp, stray_manifest, stray_csv, hollow])
    assert not tmp.exists() and not stray_manifest.exists() and not hollow.exists()
    assert store.done(POINTS[0].id, 1)  # finished results survive
    rec(store, POINTS[0], 2)
    rec(store, POINTS[1], 1)
    assert store.completed() == {(POINTS[0].id, 1), (POINTS[0].id, 2), (POINTS[1].id, 1)}
    assert store.clean_partial() == []


def test_record_validates_names_and_row(tmp_path):
    store = make(tmp_path)
    with pytest.raises(ValueError, match="not a safe file name"):
        store.record(POINTS[0], 1, {"../x": "no"}, {})
    with pytest.raises(ValueError, match="reserved"):
        store.record(POINTS[0], 1, {"row.json": "no"}, {})
    with pytest.raises(ValueError, match="non-negative integer"):
        store.record(POINTS[0], -1, {}, {})
    assert store.completed() == set()


def test_point_id_reused_for_another_point_is_refused(tmp_path):
    store = make(tmp_path)
    rec(store, POINTS[0], 1)
    other = expand({"bond_mode": ["active-backup"], "mtu": [1500]})[0]
    impostor = type(other)(index=0, axes=other.axes, key=other.key, id=POINTS[0].id)
    with pytest.raises(ValueError, match="is for 'bond_mode=802.3ad,mtu=1500'"):
        rec(store, impostor, 2)


def test_lock_excludes_a_second_holder(tmp_path):
    store = make(tmp_path)
    with store.lock():
        with pytest.raises(RunLocked):
            with ResultsStore.open(store.path).lock():
                pass
    with store.lock():  # released on exit
        pass


# -- table ----------------------------------------------------------------------------------

def test_table_one_row_per_point_rep_in_order_with_column_order(tmp_path):
    store = make(tmp_path)
    # Recorded out of order, rep 10 included: rows sort numerically, not by directory name.
    rec(store, POINTS[2], 2, zeta=1, alpha=None)
    rec(store, POINTS[0], 10, jitter={"p50": 1})
    rec(store, POINTS[0], 2)
    rec(store, POINTS[2], 1)
    store.write_table()
    path = store.write_table()  # regenerating must not duplicate anything
    assert path == store.path / "results.csv"
    table = read_csv(path)
    assert table[0] == ["point_index", "point_id", "rep", "bond_mode", "mtu",
                        "alpha", "jitter", "throughput_bps", "zeta"]
    body = table[1:]
    assert [(r[0], r[2]) for r in body] == [("0", "2"), ("0", "10"), ("2", "1"), ("2", "2")]
    assert len({(r[1], r[2]) for r in body}) == len(body) == 4
    assert body[0][3:5] == ["802.3ad", "1500"]
    last = dict(zip(table[0], body[3]))
    assert last["alpha"] == "" and last["zeta"] == "1" and last["bond_mode"] == "balance-rr"
    assert dict(zip(table[0], body[1]))["jitter"] == '{"p50": 1}'
    assert [r["rep"] for r in store.rows()] == [2, 10, 1, 2]
    assert not list(store.path.glob(".*tmp*"))


def test_table_follows_new_rows(tmp_path):
    store = make(tmp_path)
    rec(store, POINTS[0], 1)
    assert len(read_csv(store.write_table())) == 2
    rec(store, POINTS[1], 1)
    assert len(read_csv(store.write_table())) == 3


def test_empty_run_table_has_identity_header(tmp_path):
    store = make(tmp_path)
    assert read_csv(store.write_table()) == [["point_index", "point_id", "rep"]]


def test_run_dir_names_are_timestamps(tmp_path):
    store = ResultsStore.create(tmp_path, "bond", {})
    assert re.fullmatch(r"\d{8}-\d{6}", store.path.name)


# -- row layout: chosen apart from measured ----------------------------------------------------

def test_parallel_axis_and_measured_parallel_are_kept_apart(tmp_path):
    """A `parallel` axis, the tool's `parallel` setting and iperf3's own `parallel` field all fit
    in one row (was: ValueError at the first record)."""
    store = make(tmp_path)
    point = expand({"parallel": ["streams", "processes"]})[1]
    final = store.record(point, 1, {}, {"parallel": 4, "throughput_bps": 1e9},
                         tool={"parallel": "processes", "streams": 4})
    row = json.loads((final / "row.json").read_text())
    assert row["parallel"] == "processes"  # the axis, under its own name
    assert row["tool.parallel"] == "processes" and row["tool.streams"] == 4
    assert row["measured.parallel"] == 4  # iperf3's field, which the axis name took
    assert row["throughput_bps"] == 1e9  # measured names that clash with nothing are unchanged
    header = read_csv(store.write_table())[0]
    assert {"parallel", "tool.parallel", "measured.parallel", "throughput_bps"} <= set(header)


def test_measured_field_named_like_an_axis_never_overwrites_it(tmp_path):
    store = make(tmp_path)
    final = store.record(POINTS[0], 1, {}, {"mtu": 9000})
    row = json.loads((final / "row.json").read_text())
    assert row["mtu"] == 1500 and row["measured.mtu"] == 9000


def test_failed_rep_is_recorded_but_not_done_and_set_aside_keeps_it(tmp_path):
    store = make(tmp_path)
    rec(store, POINTS[0], 1)
    store.record(POINTS[0], 2, {"iperf3.json": "{}", "error.txt": "boom\n"}, {"error": "boom"})
    assert store.completed() == {(POINTS[0].id, 1), (POINTS[0].id, 2)}
    assert store.completed(include_failed=False) == {(POINTS[0].id, 1)}
    assert store.failed() == {(POINTS[0].id, 2)}
    kept = store.set_aside_failed(POINTS[0].id, 2)
    assert kept.name == "rep2.failed-1" and (kept / "error.txt").read_text() == "boom\n"
    assert store.failed() == set() and store.clean_partial() == []
    assert [r["rep"] for r in store.rows()] == [1]
    rec(store, POINTS[0], 2)  # re-measured
    store.record(POINTS[0], 3, {}, {"error": "again"})
    store.set_aside_failed(POINTS[0].id, 3)
    store.record(POINTS[0], 3, {}, {"error": "and again"})
    assert store.set_aside_failed(POINTS[0].id, 3).name == "rep3.failed-2"


def test_run_locked_and_already_recorded_are_user_errors(tmp_path):
    from linklab.errors import StateError
    store = make(tmp_path)
    rec(store, POINTS[0], 1)
    with pytest.raises(StateError) as e:
        rec(store, POINTS[0], 1)
    assert "already recorded" in e.value.render()
    assert issubclass(RunLocked, StateError)


def test_rows_kept_in_memory_stay_what_the_disk_says(tmp_path):
    # The sweep rewrites results.csv after every repetition from rows it keeps, not from every
    # row.json read back: after records, a failed rep set aside and a new point, the table and
    # the rows must equal those of a store that reads the run afresh.
    store = make(tmp_path)
    assert store.rows() == []  # loaded (empty) before anything is recorded
    rec(store, POINTS[0], 1, retransmits=3)
    store.record(POINTS[0], 2, {}, {"error": "boom"})
    store.set_aside_failed(POINTS[0].id, 2)
    rec(store, POINTS[1], 1, note=float("nan"))
    rec(store, POINTS[0], 2)
    fresh = ResultsStore.open(store.path)
    assert store.rows() == fresh.rows() and [r["rep"] for r in store.rows()] == [1, 2, 1]
    mine = store.write_table().read_text()
    assert mine == fresh.write_table().read_text() and "retransmits" in mine.splitlines()[0]
    store.rows()[0]["rep"] = 99  # a caller changing its copy changes nothing kept
    assert store.rows() == fresh.rows()
