"""The runner: order, requires, stages, hidden checks, severity, points, exit codes; and what it
writes (JSON, JUnit read back by a JUnit parser)."""

import json
import re
from dataclasses import dataclass
from pathlib import Path

import junitparser
import pytest

from linklab.check import kinds, output
from linklab.check.kinds.base import FAIL, INCONCLUSIVE, PASS, Check, Judgement, Kind
from linklab.check.run import run_checks, selected
from linklab.check.spec import ChecksFile, order
from linklab.errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_WARNINGS, check_exit_code
from linklab.lab import build_lab
from linklab.measure.base import MeasurementError

ROOT = Path(__file__).resolve().parents[2]


class Scripted(Check):
    outcome: str = PASS


class ScriptedKind(Kind):
    """A kind whose verdict is its parameter: the runner's logic, without a lab."""

    name = "scripted"
    Params = Scripted
    seen: list[str] = []

    def expected(self, p, lab):
        return "as scripted"

    def observe(self, p, ctx):
        ScriptedKind.seen.append(p.id)
        if p.outcome == "raise":
            raise MeasurementError("iperf3: unable to connect to server")
        return p.outcome

    def judge(self, p, raw, lab):
        return Judgement(raw, f"scripted {raw}")


@dataclass
class FakeHandle:
    lab: object
    name: str = "bond2"
    record: dict = None


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setitem(kinds.REGISTRY, "scripted", ScriptedKind())
    ScriptedKind.seen = []
    lab = build_lab(ROOT / "topologies" / "bond2.yaml", [])

    def run(checks, **kw):
        spec = ChecksFile("c.yaml", "t.yaml", None, tuple(Scripted(kind="scripted", **c) for c in checks))
        return run_checks(spec, FakeHandle(lab), **kw)
    return run


def test_a_check_runs_after_what_it_requires_and_is_skipped_when_that_fails(scripted):
    report = scripted([{"id": "b", "requires": ["a"]}, {"id": "a", "outcome": FAIL}, {"id": "c", "requires": ["b"]}])
    assert ScriptedKind.seen == ["a"]
    by = {r.id: r for r in report.results}
    assert [r.id for r in report.results] == ["b", "a", "c"]  # reported in file order
    assert by["a"].verdict == FAIL and by["b"].verdict == "skip" and by["c"].verdict == "skip"
    assert "requires a (fail)" in by["b"].observed and "requires b (skip)" in by["c"].observed
    assert report.exit_code == EXIT_FAILURE


def test_severity_warn_turns_a_failure_into_a_warning_exit(scripted):
    report = scripted([{"id": "a"}, {"id": "w", "outcome": FAIL, "severity": "warn"}])
    assert [r.verdict for r in report.results] == [PASS, "warn"]
    assert report.exit_code == EXIT_WARNINGS == 7


def test_inconclusive_is_its_own_exit_unless_something_failed(scripted):
    assert scripted([{"id": "a"}, {"id": "m", "outcome": INCONCLUSIVE}]).exit_code == EXIT_INCONCLUSIVE == 6
    assert scripted([{"id": "f", "outcome": FAIL}, {"id": "m", "outcome": INCONCLUSIVE}]).exit_code == EXIT_FAILURE
    assert scripted([{"id": "m", "outcome": INCONCLUSIVE},
                     {"id": "w", "outcome": FAIL, "severity": "warn"}]).exit_code == EXIT_INCONCLUSIVE


def test_a_tool_failing_in_the_lab_is_the_checks_failure_with_its_words(scripted):
    report = scripted([{"id": "g", "outcome": "raise"}])
    assert report.results[0].verdict == FAIL
    assert "unable to connect" in report.results[0].observed


def test_points_count_only_what_passed(scripted):
    s = scripted([{"id": "a", "points": 2}, {"id": "b", "points": 3, "outcome": FAIL}, {"id": "c", "points": 0.5}]).summary()
    assert (s["points"], s["max_points"], s["passed"], s["failed"]) == (2.5, 5.5, 2, 1)


def test_stages_and_hidden_checks_and_only_select_what_runs(scripted):
    checks = [{"id": "s1"}, {"id": "s2", "stage": 2, "requires": ["s1"]}, {"id": "h", "hidden": True},
              {"id": "s3", "stage": 3}]
    spec = ChecksFile("c", "t", None, tuple(Scripted(kind="scripted", **c) for c in checks))
    assert [c.id for c in selected(spec, stage=2)] == ["s1", "s2", "h"]
    assert [c.id for c in selected(spec, student=True)] == ["s1", "s2", "s3"]
    assert [c.id for c in selected(spec, only=["s2"])] == ["s1", "s2"]  # and what it requires
    report = scripted(checks, stage=1, student=True)
    assert [r.id for r in report.results] == ["s1"]


def test_order_keeps_file_order_except_for_requirements():
    cs = [Check(id=i, kind="x", requires=r) for i, r in (("a", ["c"]), ("b", []), ("c", ["b"]))]
    assert [c.id for c in order(cs)] == ["b", "c", "a"]


def test_exit_code_is_decided_by_the_worst_verdict():
    assert check_exit_code([]) == EXIT_OK
    assert check_exit_code(["pass", "skip"]) == EXIT_OK
    assert check_exit_code(["pass", "warn"]) == EXIT_WARNINGS
    assert check_exit_code(["warn", "inconclusive"]) == EXIT_INCONCLUSIVE
    assert check_exit_code(["inconclusive", "fail", "warn"]) == EXIT_FAILURE


def test_json_has_the_versioned_schema_and_every_verdict(scripted, tmp_path):
    report = scripted([{"id": "a", "hint": "h"}, {"id": "b", "outcome": FAIL, "hint": "look at MTUs"}])
    output.write_json(report, tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["schema"] == "linklab-check/2"
    assert doc["summary"]["exit_code"] == 1 and doc["summary"]["failed"] == 1
    assert [(c["id"], c["verdict"], c["hint"]) for c in doc["checks"]] == [("a", "pass", "h"), ("b", "fail", "look at MTUs")]
    assert "raw" not in doc["checks"][0]


def test_junit_is_read_back_by_a_junit_parser_with_each_verdict_where_ci_looks(scripted, tmp_path):
    report = scripted([{"id": "ok"}, {"id": "bad", "outcome": FAIL, "hint": "fix it"},
                       {"id": "dep", "requires": ["bad"]}, {"id": "slow", "outcome": INCONCLUSIVE},
                       {"id": "meh", "outcome": FAIL, "severity": "warn"}])
    output.write_junit(report, tmp_path / "r.xml")
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "r.xml"))
    suites = list(xml)
    assert len(suites) == 1
    cases = {c.name: c for c in suites[0]}
    assert set(cases) == {"ok", "bad", "dep", "slow", "meh"}
    assert cases["ok"].is_passed and cases["meh"].is_passed
    assert isinstance(cases["bad"].result[0], junitparser.Failure) and "fix it" in cases["bad"].result[0].text
    assert cases["dep"].is_skipped and cases["slow"].is_skipped
    assert (suites[0].tests, suites[0].failures, suites[0].skipped) == (5, 1, 2)


def test_the_table_shows_expected_observed_and_the_hint_of_what_failed(scripted):
    text = output.table(scripted([{"id": "good", "hint": "never shown"}, {"id": "bad", "outcome": FAIL, "hint": "look here"}]))
    assert "PASS" in text and "FAIL" in text and "hint: look here" in text and "never shown" not in text
    assert text.splitlines()[-1].startswith("1 passed, 1 failed")


def test_watch_runs_again_only_when_the_lab_changed(monkeypatch):
    from linklab.check import watch
    looks = iter(["a", "a", "a", "b", "b", "b", "c", "c", "c", "c"])  # what the lab looks like, poll by poll
    monkeypatch.setattr(watch, "fingerprint", lambda _name: next(looks))
    monkeypatch.setattr(watch.time, "sleep", lambda _s: None)
    runs = []
    rc = watch.watch("lab", lambda: runs.append(len(runs)) or len(runs), lambda _m: None, rounds=3)
    assert runs == [0, 1, 2] and rc == 3


def _checks_file(tmp_path, vars_=False) -> Path:
    """A checks file of bond2 (the saved results below are graded against it)."""
    f = tmp_path / "checks.yaml"
    f.write_text(f"topology: {ROOT / 'topologies' / 'bond2.yaml'}\n"
                 + ("vars:\n  mtu: {choices: [4000, 9000]}\n" if vars_ else "")
                 + "checks:\n  - {id: a, kind: mtu, link: l1, mtu: 1500}\n")
    return f


def _save(report, path: Path, checks: Path, **changes) -> None:
    from linklab.check.spec import file_sha256
    doc = output.as_json(report)
    doc.update(checks_sha256=file_sha256(checks), **changes)
    path.write_text(json.dumps(doc))


def test_roster_rows_from_saved_results_with_points_and_failed_ids(scripted, tmp_path):
    from linklab.check import roster
    checks = _checks_file(tmp_path)
    d = tmp_path / "class"
    d.mkdir()
    _save(scripted([{"id": "a", "points": 2}, {"id": "b", "outcome": FAIL}]), d / "s17.json", checks)
    _save(scripted([{"id": "a", "points": 2}, {"id": "b"}]), d / "s18.json", checks)
    (d / "notes.txt").write_text("not a student")
    rows = roster.grade(d, str(checks), lambda _m: None)
    assert [(r.student, r.graded, r.points, r.max_points, r.percent, r.failed_ids) for r in rows] == [
        ("s17", "self-reported", 2.0, 3.0, 66.7, "b"), ("s18", "self-reported", 3.0, 3.0, 100.0, "")]
    text = roster.csv_text(rows)
    assert text.splitlines()[0].startswith("student,seed,graded,points,max_points,percent")
    assert roster.exit_code(rows) == 0
    (d / "bad.json").write_text('{"schema": "something-else"}')
    with pytest.raises(Exception, match="not a `linklab check --json` result"):
        roster.grade(d, str(checks), lambda _m: None)


@pytest.mark.parametrize("old,now", [(0, EXIT_OK), (1, EXIT_FAILURE), (3, EXIT_WARNINGS), (4, EXIT_INCONCLUSIVE)])
def test_a_result_saved_in_schema_1_is_read_with_todays_exit_codes(scripted, old, now):
    # linklab-check/1 wrote 3 for only warnings and 4 for inconclusive, codes that meant other
    # things elsewhere; read back, they are the codes of today.
    doc = output.as_json(scripted([{"id": "a"}]))
    doc.update(schema="linklab-check/1", summary={**doc["summary"], "exit_code": old})
    assert output.upgraded(doc)["summary"]["exit_code"] == now


def _bond(aggregated: bool, up: int = 2) -> dict:
    return {"bond": "h1:bond0", "mode": "802.3ad", "members": 2, "members_up": up, "lacp_aggregated": aggregated}


def test_checks_of_an_802_3ad_lab_wait_for_lacp_and_say_so(monkeypatch):
    """A lab just built is still negotiating LACP: the checks start once every 802.3ad bond with
    its members up has aggregated (read again every 0.2 s), and the wait is said."""
    from linklab.sweep import preflight
    monkeypatch.setitem(kinds.REGISTRY, "scripted", ScriptedKind())
    lab = build_lab(ROOT / "topologies" / "bond2.yaml", [("links[bond].bond.mode", "802.3ad")])
    looks = iter([[_bond(False)]] * 4 + [[_bond(True)]])
    monkeypatch.setattr(preflight, "bond_problems", lambda h: ([], next(looks)))
    said: list[str] = []
    spec = ChecksFile("c.yaml", "t.yaml", None, (Scripted(kind="scripted", id="a"),))
    report = run_checks(spec, FakeHandle(lab), say=said.append)
    assert [r.verdict for r in report.results] == [PASS]
    assert next(looks, None) is None  # read until aggregated, not after
    (line,) = [m for m in said if "LACP" in m]
    m = re.fullmatch(r"  waited (\d+\.\d) s for LACP to aggregate the lab's 802.3ad bonds", line)
    assert m and 0.8 <= float(m[1]) <= 10, line  # four looks 0.2 s apart before the fifth found it


def test_a_bond_with_a_member_down_is_not_waited_for_and_one_never_aggregating_is_said(monkeypatch):
    from linklab.sweep import preflight
    assert preflight.lacp_converging([_bond(False, up=1), _bond(True)]) == []
    assert preflight.lacp_converging([_bond(False), {**_bond(False), "mode": "balance-rr"}]) == ["h1:bond0"]
    monkeypatch.setitem(kinds.REGISTRY, "scripted", ScriptedKind())
    monkeypatch.setattr(preflight, "LACP_CONVERGE_S", 0.5)
    lab = build_lab(ROOT / "topologies" / "bond2.yaml", [("links[bond].bond.mode", "802.3ad")])
    monkeypatch.setattr(preflight, "bond_problems", lambda h: ([], [_bond(False)]))
    said: list[str] = []
    run_checks(ChecksFile("c.yaml", "t.yaml", None, (Scripted(kind="scripted", id="a"),)), FakeHandle(lab),
               say=said.append)
    (line,) = [m for m in said if "LACP" in m]
    assert re.fullmatch(r"  LACP had not aggregated h1:bond0 after \d+ s: checking as it is", line), line


def test_a_lab_without_802_3ad_is_not_read_before_its_checks(monkeypatch):
    from linklab.sweep import preflight
    monkeypatch.setitem(kinds.REGISTRY, "scripted", ScriptedKind())
    monkeypatch.setattr(preflight, "bond_problems", lambda h: pytest.fail("read the bonds of a balance-rr lab"))
    lab = build_lab(ROOT / "topologies" / "bond2.yaml", [])
    report = run_checks(ChecksFile("c.yaml", "t.yaml", None, (Scripted(kind="scripted", id="a"),)), FakeHandle(lab))
    assert [r.verdict for r in report.results] == [PASS]
