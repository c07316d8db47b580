"""`linklab ab` and `linklab aa` as a user meets them: bad input refused before any lab VM boots,
a measured A/B run judged and reported, A/A runs told from A/B runs."""

import json
import shutil
from pathlib import Path

import pytest

from linklab.ab import cli as ab_cli
from linklab.cli import main

ROOT = Path(__file__).resolve().parents[2]
E1 = ROOT / "experiments" / "e1_bonding_mtu.yaml"
RUNS = ROOT / "tests" / "data" / "runs"


@pytest.fixture(autouse=True)
def _nowhere_to_boot(monkeypatch):
    """Any attempt to reach a lab VM or start an arm fails the test: bad input must stop first."""
    from linklab import placement
    from linklab.ab import session
    monkeypatch.setattr(placement, "forward_booting", lambda *a, **k: pytest.fail("a lab VM was asked for"))
    monkeypatch.setattr(session, "drive", lambda *a, **k: pytest.fail("arms were started"))


@pytest.mark.parametrize("argv,says", [
    (["ab", str(E1), "--quick", "--b", "links[nope].mtu=9000"], "nope"),
    (["ab", str(E1), "--quick", "--b", "links[*].mtu=huge"], "mtu"),
    (["ab", str(E1), "--quick", "--a-rev", "no-such-revision-anywhere"], "unknown revision"),
    (["ab", str(E1), "--quick", "--pairs", "0"], "--pairs 0"),
    (["ab", str(E1), "--quick", "--confirm", "21"], "--confirm 21"),
    (["ab", str(E1), "--quick", "--only", "mtu=1000"], "valid: 450, 1500, 9200"),  # the quick matrix's
    (["ab", "experiments/none.yaml"], "none.yaml"),
])
def test_bad_input_is_exit_2_before_any_vm_or_arm(argv, says, tmp_path, capsys, monkeypatch):
    from linklab import placement
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(placement, "shared_with_vm", lambda: [tmp_path])  # where a lab VM would write its runs
    assert main([*argv, "--results", str(tmp_path / "results")]) == 2
    assert says in capsys.readouterr().err


def _ab_dir(tmp_path, a: Path, b: Path, **arms) -> Path:
    d = tmp_path / "results" / "ab" / "e2_rr_tuning" / "20261128-120000"
    d.mkdir(parents=True)
    for name, src in (("a", a), ("b", b)):
        shutil.copytree(src, d / name / "e2_rr_tuning" / "run")
    a_arm = {"commit": None, "overrides": [], "words": "the working tree"}
    (d / "ab.json").write_text(json.dumps({
        "format": 1, "kind": "ab", "experiment": "e2_rr_tuning", "quick": True, "complete": True, "pairs": 2,
        "arms": {"a": a_arm, "b": {**a_arm, **arms}}, "wall_s": 600,
        "runs": {k: str(d / k / "e2_rr_tuning" / "run") for k in "ab"}}))
    return d


def test_a_measured_run_is_judged_into_verdict_json_and_a_report(tmp_path, capsys):
    # two stored E2 quick runs as the arms (the second on a quieter machine: faster everywhere)
    d = _ab_dir(tmp_path, RUNS / "e2-quick-a", RUNS / "e2-quick-b")
    rc = ab_cli.judge_run(d, report=True)
    out = capsys.readouterr().out
    verdict = json.loads((d / "verdict.json").read_text())
    assert rc == (0 if verdict["ok"] else 1) and ("result: no difference found" in out) == verdict["ok"]
    assert verdict["paired"] is True and verdict["judgments"]
    html = (d / "report.html").read_text()
    assert "Verdict: B against A" in html and 'id="fig-ab_ratios"' in html


def test_where_a_run_was_measured_again_that_decides_and_the_first_verdict_is_kept_beside(tmp_path, capsys):
    # First: E1 quick against itself at half the rate: B differs. Measured again (confirm/): A
    # against itself, so nothing differs there, at every point.
    d = _ab_dir(tmp_path, RUNS / "e1-quick", RUNS / "e1-quick-halfrate")
    c = d / "confirm"
    for name in "ab":
        shutil.copytree(RUNS / "e1-quick", c / name / "e2_rr_tuning" / "run")
    (c / "ab.json").write_text(json.dumps({"kind": "ab-confirm", "complete": True, "pairs": 6, "again": ["x"],
                                           "runs": {k: str(c / k / "e2_rr_tuning" / "run") for k in "ab"}}))
    rc = ab_cli.judge_run(d, report=False)
    out = capsys.readouterr().out
    first = json.loads((d / "verdict-first.json").read_text())
    final = json.loads((d / "verdict.json").read_text())
    assert not first["ok"] and "first measurement: DIFFERS" in out and "measured again (" in out
    assert final["ok"] and rc == 0 and "\nresult: no difference found\n" in out
    assert out.rstrip().endswith("600 s measuring + ? s measuring again; verdict: no difference found")
    assert json.loads((c / "verdict.json").read_text())["ok"]
    assert {j["point"] for j in final["judgments"]} == {j["point"] for j in first["judgments"]}
    assert any(n.startswith("measured again (confirm/)") and "6 pairs a side" in n for n in final["notes"])


def test_aa_runs_are_those_whose_arms_are_alike(tmp_path):
    aa = _ab_dir(tmp_path, RUNS / "e2-quick-a", RUNS / "e2-quick-b")
    ab = _ab_dir(tmp_path / "other", RUNS / "e2-quick-a", RUNS / "e2-quick-b", overrides=["links[*].mtu=9000"])
    shutil.move(str(ab), str(aa.parent / "20261128-130000"))
    assert ab_cli.aa_runs(tmp_path / "results", "e2_rr_tuning", quick=True) == [aa]
    assert ab_cli.aa_runs(tmp_path / "results", "e2_rr_tuning", quick=False) == []


def test_the_verdict_reads_the_experiments_aa_spread_and_report_makes_an_ab_report(tmp_path, capsys, monkeypatch):
    from linklab.verdict import aa
    from linklab.results.runs import Run
    d = _ab_dir(tmp_path, RUNS / "e2-quick-a", RUNS / "e2-quick-b")
    a = Run.load(d / "a" / "e2_rr_tuning" / "run")
    spread = aa.measure([("x", a, Run.load(d / "b" / "e2_rr_tuning" / "run"))])
    monkeypatch.chdir(tmp_path)
    path = aa.default_path(a.experiment, bool(a.manifest.get("quick")), a.placement)
    path.parent.mkdir(parents=True)
    spread.save(path)
    assert main(["report", str(d), "--no-figures", "--quiet"]) == 0  # the report command: its verdict, then A and B
    assert "A/A spread from 1 A/A runs" in " ".join(json.loads((d / "verdict.json").read_text())["notes"])
    assert "Verdict: B against A" in (d / "report.html").read_text()


def test_a_results_directory_the_lab_vm_cannot_write_is_refused_before_anything(tmp_path, capsys, monkeypatch):
    # Where the arms run in the lab VM, their runs must land where the VM writes through to the
    # host: elsewhere they would vanish with the VM. Exit 2, no run directory, no VM.
    from linklab import kernel, placement
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(placement, "want_vm_for_up", lambda *a: (True, "this kernel lacks bonding"))
    monkeypatch.setattr(kernel, "in_lab_vm", lambda: False)
    monkeypatch.setattr(placement, "shared_with_vm", lambda: [ROOT])
    assert main(["ab", str(E1), "--quick", "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert "not shared with the lab VM" in err and str(ROOT) in err
    assert not (tmp_path / "results").exists()


MATRIX = {"bond_mode": ["802.3ad", "balance-rr"], "mtu": [450, 1500, 9200], "streams": [1, 20]}


def test_only_keeps_the_values_named_as_the_matrix_writes_them():
    assert ab_cli.parse_subset(["mtu=450,9200"], MATRIX) == {"mtu": {"450", "9200"}}
    assert ab_cli.parse_subset(["mtu=450,9200", "mtu=9200", "bond_mode=802.3ad"], MATRIX) == {
        "mtu": {"9200"}, "bond_mode": {"802.3ad"}}
    assert ab_cli.parse_subset([], MATRIX) == {}


def test_only_names_every_bad_axis_and_value_with_the_valid_ones():
    with pytest.raises(ab_cli.UsageError) as e:
        ab_cli.parse_subset(["speed=1", "mtu=450,1000", "streams"], MATRIX)
    msg = str(e.value)
    assert "unknown axis 'speed' (valid: bond_mode, mtu, streams)" in msg
    assert "mtu has no value '1000' (valid: 450, 1500, 9200)" in msg
    assert "--only 'streams': AXIS=VALUE" in msg
    with pytest.raises(ab_cli.UsageError, match="leaves no value of mtu"):
        ab_cli.parse_subset(["mtu=450", "mtu=9200"], MATRIX)
