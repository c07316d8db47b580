"""linklab compare: a stored run against another by the verdict model, advisory (the runs were
not measured side by side). Real stored runs (baselines/, tests/data/runs/, lab VM under software
emulation) with known changes injected into a copy."""

import copy
import json
from pathlib import Path

import pytest

from linklab.cli import main
from linklab.errors import UsageError
from linklab import verdict
from linklab.verdict import metrics
from linklab.verdict.compare import compare
from linklab.results.runs import Run

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "runs"
E1 = ROOT / "baselines" / "e1_bonding_mtu-quick-vm-tcg"  # 5 repetitions per point
THR = metrics.BY_KEY["throughput_mbps"]


@pytest.fixture(scope="module")
def e1() -> Run:
    return Run.load(E1)


def changed(run: Run, fn=None, rows=None) -> Run:
    """A copy of a stored run with `fn(row)` applied to each row (or other rows)."""
    new_rows = copy.deepcopy(run.rows if rows is None else rows)
    for r in new_rows:
        if fn:
            fn(r)
    return Run(run.path.with_name(run.path.name + "-changed"), copy.deepcopy(run.manifest), new_rows)


def scale_throughput(f, where=lambda r: True):
    def fn(r):
        if where(r):
            for k in ("throughput_bps", "sent_bytes", "received_bytes"):
                r[k] *= f
    return fn


def write(tmp_path, run: Run, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(run.manifest))
    (d / "rows.json").write_text(json.dumps(run.rows))
    return d


def _spread(r):
    if r["bond_mode"] == "802.3ad":  # one stream's bytes on one member -> on both
        r.update(client_member_tx_active=2, client_member_tx_max_share=0.5)


TABLE = [("none", None, 0), ("throughput -25 %", scale_throughput(0.75), 1),
         ("throughput +30 % (a shaper that stopped limiting)", scale_throughput(1.30), 1),
         ("one point missing", "drop", 1), ("802.3ad spread over both members", _spread, 1)]


@pytest.mark.parametrize("what,fn,want", TABLE, ids=[t[0] for t in TABLE])
def test_a_known_change_in_a_copy_of_the_stored_baseline(tmp_path, e1, capsys, what, fn, want):
    new = changed(e1, rows=[r for r in e1.rows if r["point_index"] != 11]) if fn == "drop" else changed(e1, fn)
    code = main(["compare", str(E1), str(write(tmp_path, new, "new"))])
    out = capsys.readouterr().out
    assert code == want, out
    assert ("result: no difference found" in out) == (want == 0)
    assert "advisory" in out


def test_one_changed_point_fails_alone_with_its_ratio(e1):
    at = {"bond_mode": "802.3ad", "mtu": 9200, "streams": 1}
    res = compare(e1, changed(e1, scale_throughput(0.6, lambda r: all(r[k] == v for k, v in at.items()))))
    assert [(c.point, c.what) for c in res.failures] == [("802.3ad mtu=9200 streams=1", THR.title)]
    assert res.failures[0].ratio == pytest.approx(0.6, abs=0.005)
    assert not res.paired and any(n.startswith("advisory") for n in res.notes)


def test_points_matched_by_parameters_not_order(e1):
    rev = changed(e1, rows=list(reversed(e1.rows)))
    for r in rev.rows:
        r["point_index"], r["point_id"] = 99 - int(r["point_index"]), f"other-{r['point_id']}"
    res = compare(e1, rev)
    assert res.ok and len([c for c in res.judgments if c.metric]) == len([c for c in compare(e1, e1).judgments if c.metric])


def test_refuses_different_experiment_scale_placement_unless_told(e1, capsys):
    e4 = ROOT / "baselines" / "e4_jumbo_ipv6-quick-vm-tcg"
    assert main(["compare", str(E1), str(e4)]) == 2
    assert "not comparable: experiment" in capsys.readouterr().err
    native = changed(e1)
    native.manifest["placement"] = {"kind": "native"}
    with pytest.raises(UsageError, match="not comparable: placement"):
        compare(e1, native)
    assert compare(e1, native, allow={"placement"}).ok
    other = changed(e1, rows=[dict(r, mtu=1) for r in e1.rows])
    with pytest.raises(UsageError, match="no point of the new run matches"):
        compare(e1, other)


def test_a_lab_set_differently_is_noted_and_its_halved_rate_found(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # baselines/ as a checkout holds them
    # The same E1 quick sweep on a lab with the bond's rate halved (one repetition each). With one
    # repetition a side, what says how far a metric moves by chance is the A/A spread stored for
    # E1 quick in the lab VM (baselines/e1_bonding_mtu-quick-vm-tcg/aa.json): the rate is found.
    assert (ROOT / "baselines" / "e1_bonding_mtu-quick-vm-tcg" / "aa.json").is_file()
    assert main(["compare", str(DATA / "e1-quick"), str(DATA / "e1-quick-halfrate"), "--json"]) == 1
    js = json.loads(capsys.readouterr().out)
    assert any("A/A spread from" in n for n in js["notes"]) and not js["paired"]
    every = [c for c in js["failures"] if c["point"] == verdict.EVERY_POINT and c["metric"] == "throughput_mbps"]
    assert len(every) == 1 and 0.3 <= every[0]["ratio"] <= 0.5, every  # half the rate, less where CPU held it
    assert main(["compare", str(DATA / "e1-quick"), str(DATA / "e1-quick-halfrate")]) == 1
    assert "lab overrides differ" in capsys.readouterr().out


def test_json_and_bad_input(tmp_path, e1, capsys):
    assert main(["compare", str(tmp_path / "nothing"), str(E1)]) == 2
    assert "no results found" in capsys.readouterr().err
    assert main(["compare", str(E1), str(E1), "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["ok"] is True and js["paired"] is False and js["format"] == 2
    assert {c["rule"] for c in js["judgments"]} >= {"metric", "members", "path_mtu"}


def test_every_metric_states_its_scale_sides_and_minimum_effect():
    for m in metrics.METRICS:
        assert m.scale in metrics.SCALES and m.sides in metrics.SIDES, m.key
        assert m.sides == "both" or m.sides_why, m.key  # a harmless side is stated, with why
        assert (m.min_effect > 0) == m.judged, m.key  # every judged metric states what counts
    assert {m.key for m in metrics.METRICS if m.sides != "both"} == {"busiest_core_pct", "sender_cpu_pct",
                                                                      "receiver_cpu_pct"}
    assert verdict.ALPHA == 0.05
