"""Shards of a sweep (`linklab sweep --shard K/N`) and joining them (`linklab merge`), with the
dry-run workload: no lab, each repetition sleeps (here 0 s)."""

from pathlib import Path

import pytest

from linklab.errors import UsageError
from linklab.report.merge import merge
from linklab.results.store import ResultsStore, split_row
from linklab.sweep import engine, shard
from linklab.sweep.plan import load_experiment
from linklab.sweep.matrix import expand

ROOT = Path(__file__).resolve().parents[2]
E1 = ROOT / "experiments" / "e1_bonding_mtu.yaml"
E1_LOGICAL = ROOT / "experiments" / "e1_logical_mtu.yaml"


def _points(exp=E1, quick=True):
    e = load_experiment(exp, quick=quick)
    return expand(e.matrix, exclude=e.exclude)


def _dry(tmp_path, exp=E1, **kw):
    opts = engine.Options(quick=True, results=tmp_path / "results", dry_run=0.0, **kw)
    return engine.run(exp, opts, say=lambda *_: None)


def test_parse_shard_accepts_k_of_n_and_refuses_the_rest():
    assert shard.parse_shard("2/4") == (2, 4) and shard.parse_shard(" 1 / 1 ") == (1, 1)
    for bad in ("0/2", "3/2", "2", "a/b", "1/0", ""):
        with pytest.raises(UsageError):
            shard.parse_shard(bad)


def test_groups_keep_the_outermost_axis_together_and_split_further_only_when_needed():
    points = _points()  # bond_mode (2) x mtu (3) x streams (2)
    two = shard.groups(points, 2)
    assert [len(g) for g in two] == [6, 6]
    assert all(len({p.axes["bond_mode"] for p in g}) == 1 for g in two)
    four = shard.groups(points, 4)  # bond_mode alone gives 2 < 4: bond_mode x mtu gives 6
    assert [len(g) for g in four] == [2] * 6
    assert all(len({(p.axes["bond_mode"], p.axes["mtu"]) for p in g}) == 1 for g in four)
    assert len(shard.groups(points, 100)) == 12  # more parts than points: each point alone


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 12, 13])
def test_shards_partition_the_points_deterministically_and_balanced(n):
    points = _points()
    parts = [shard.shard(points, k, n) for k in range(1, n + 1)]
    ids = [p.id for part in parts for p in part]
    assert sorted(ids) == sorted(p.id for p in points) and len(set(ids)) == len(ids)
    assert parts == [shard.shard(_points(), k, n) for k in range(1, n + 1)]  # same split every time
    sizes = sorted(len(part) for part in parts)
    biggest_group = max(len(g) for g in shard.groups(points, n))
    assert sizes[-1] - sizes[0] <= biggest_group  # balanced to within one group


def test_split_row_undoes_what_the_store_adds(tmp_path):
    points = _points()
    store = ResultsStore.create(tmp_path, "e", {"fingerprint": "f"})
    store.record(points[3], 2, {"a.txt": "A"}, {"throughput_bps": 1.5, "streams": 7}, tool={"streams": 20})
    raw, row, tool = store.read_rep(points[3].id, 2)
    assert raw == {"a.txt": b"A"} and row == {"throughput_bps": 1.5, "streams": 7} and tool == {"streams": 20}
    full = store.rows()[0]
    assert split_row(full, points[3].axes) == (row, tool)


def test_shards_merged_give_the_unsharded_runs_points(tmp_path):
    whole = _dry(tmp_path / "whole")
    one = _dry(tmp_path / "s", shard=(1, 2))
    two = _dry(tmp_path / "s", shard=(2, 2))
    assert one.path != two.path and len(one.rows()) == len(two.rows()) == 6
    assert one.manifest["shard"] == "1/2" and one.manifest["points_total"] == 12
    merged, notes = merge([one.path, two.path], tmp_path / "merged")
    key = lambda r: (r["point_id"], r["rep"], r["bond_mode"], r["mtu"], r["streams"])
    assert sorted(map(key, merged.rows())) == sorted(map(key, whole.rows()))
    assert len(merged.rows()) == 12 and merged.manifest["complete"] and merged.manifest["points"] == 12
    assert (merged.path / "results.csv").read_text().count("\n") == 13
    assert all((merged.rep_dir(r["point_id"], 1) / "dry_run.txt").is_file() for r in merged.rows())  # raw files too
    assert [s["shard"] for s in merged.manifest["shards"]] == ["1/2", "2/2"] and notes == []


def test_attempts_kept_aside_in_a_shard_are_merged_too(tmp_path):
    one = _dry(tmp_path / "s", shard=(1, 2))
    two = _dry(tmp_path / "s", shard=(2, 2))
    pid = one.rows()[0]["point_id"]
    aside = one.set_aside_failed(pid, 1, why="disturbed")  # as a resume keeps a disturbed attempt
    one.record(next(p for p in _points() if p.id == pid), 1, {"dry_run.txt": "again"}, {"slept_s": 0.0})
    merged, _ = merge([one.path, two.path], tmp_path / "merged")
    kept = merged.points_dir / pid / aside.name
    assert (kept / "dry_run.txt").is_file() and (kept / "row.json").is_file()
    assert merged.rep_dir(pid, 1).joinpath("dry_run.txt").read_text() == "again"
    assert len(merged.rows()) == 12


def test_merge_refuses_shards_of_different_experiments_and_writes_nothing(tmp_path):
    one = _dry(tmp_path / "a", shard=(1, 2))
    other = _dry(tmp_path / "b", exp=E1_LOGICAL, shard=(2, 2))
    with pytest.raises(UsageError) as e:
        merge([one.path, other.path], tmp_path / "merged")
    assert "experiment" in str(e.value) and e.value.exit_code == 2
    assert not (tmp_path / "merged").exists() and not list(tmp_path.glob(".merged*"))


def test_merge_names_missing_and_duplicated_points(tmp_path):
    one = _dry(tmp_path / "s", shard=(1, 2))
    with pytest.raises(UsageError) as e:
        merge([one.path], tmp_path / "m1")
    text = str(e.value)
    assert "missing from every run" in text and text.count("bond_mode=balance-rr") == 6
    assert "bond_mode=802.3ad" not in text
    with pytest.raises(UsageError) as e:
        merge([one.path, one.path], tmp_path / "m2")
    assert "recorded twice" in str(e.value) and str(e.value).count("bond_mode=802.3ad") == 6
    assert not (tmp_path / "m1").exists() and not (tmp_path / "m2").exists()


def test_a_shard_resumes_into_its_own_run_not_the_other_shards(tmp_path):
    one = _dry(tmp_path, shard=(1, 2))
    two = _dry(tmp_path, shard=(2, 2))
    assert one.path != two.path
    again = _dry(tmp_path, shard=(1, 2))  # complete: said, nothing redone
    assert again.path == one.path and len(again.rows()) == 6


def test_points_by_id_measure_only_those_and_an_unknown_id_lists_the_valid_ones(tmp_path, capsys):
    # `linklab sweep --points` (a failed gate's points measured again, a cluster's unit of work)
    from linklab.cli import main
    ids = [p.id for p in _points()]
    run = _dry(tmp_path, points=(ids[7], ids[2]))
    assert sorted(r["point_id"] for r in run.rows()) == sorted([ids[2], ids[7]])
    assert run.manifest["point_ids"] == [ids[2], ids[7]] and run.manifest["points_total"] == len(ids)
    with pytest.raises(UsageError, match=f"unknown point id.*valid: {ids[0]}"):
        _dry(tmp_path, points=("p999-nothing",))
    for bad in ("", " , "):
        assert main(["sweep", str(E1), "--quick", "--dry-run", "0", "--points", bad,
                     "--results", str(tmp_path / "cli")]) == 2
        assert "--points: no point id given" in capsys.readouterr().err
    assert not (tmp_path / "cli").exists()
