"""Grades a teacher can trust (a saved result refused for another checks file, seed or --student;
inconclusive checks neither points nor zero; --remeasure), exports (Moodle, Canvas), what
--selftest says of a stage not as written (and its JUnit), options of another mode refused, output
files through the lab VM, and checkpoints (--restore: which steps for which stage)."""

import csv
import io
import json
from pathlib import Path
from types import SimpleNamespace

import junitparser
import pytest
import yaml

from linklab.check import exercise, output, roster
from linklab.check.run import Report, Result
from linklab.check.spec import file_sha256
from linklab.cli import main
from linklab.errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE, UsageError, ValidationFailed

ROOT = Path(__file__).resolve().parents[2]
MTU = ROOT / "exercises" / "mtu_path"


def _result(id_, verdict, points=1.0, requires=(), detail="", hint=None, stage=1) -> Result:
    return Result(id=id_, kind="goodput", title=None, stage=stage, verdict=verdict, expected=f"{id_} as written",
                  observed=f"{id_} as seen", hint=hint, points=points if verdict == "pass" else 0.0,
                  max_points=points, hidden=False, severity="fail", requires=list(requires), detail=detail)


def _report(*results, seed="s17", student=False, sha="0" * 64) -> Report:
    return Report("lab", "checks.yaml", "lab.yaml", seed, list(results), "2026-12-02T00:00:00+0000", 1.0,
                  student=student, checks_sha256=sha)


@pytest.fixture
def checks(tmp_path) -> Path:
    """A copy of mtu_path's checks (it declares variables: the seed is compared) and its lab."""
    for f in ("lab.yaml", "checks.yaml"):
        (tmp_path / f).write_text((MTU / f).read_text())
    return tmp_path / "checks.yaml"


def _saved(directory: Path, name: str, report: Report) -> None:
    directory.mkdir(exist_ok=True)
    output.write_json(report, directory / f"{name}.json")


# ---- grades to trust --------------------------------------------------------------------------

def test_a_saved_result_carries_its_checks_hash_seed_mode_and_version():
    doc = output.as_json(_report(_result("a", "pass"), student=True, sha="ab" * 32))
    assert (doc["checks_sha256"], doc["seed"], doc["mode"], doc["linklab"]) == ("ab" * 32, "s17", "student", "0.1.0")
    assert output.as_json(_report(_result("a", "pass")))["mode"] == "teacher"


def test_the_roster_refuses_a_foreign_checks_file_a_foreign_seed_and_a_student_run_each_with_its_reason(checks, tmp_path):
    sha = file_sha256(checks)
    d = tmp_path / "class"
    _saved(d, "s17", _report(_result("a", "pass"), _result("b", "fail"), sha=sha))
    _saved(d, "s18", _report(_result("a", "pass"), seed="s18", sha="f" * 64))
    _saved(d, "s19", _report(_result("a", "pass"), seed="s17", sha=sha))
    _saved(d, "s20", _report(_result("a", "pass"), seed="s20", sha=sha, student=True))
    doc = json.loads((d / "s20.json").read_text())
    del doc["checks_sha256"]
    (d / "s21.json").write_text(json.dumps({**doc, "seed": "s21", "student": False, "mode": "teacher"}))
    rows = {r.student: r for r in roster.grade(d, str(checks), lambda _m: None)}
    assert (rows["s17"].percent, rows["s17"].note, rows["s17"].graded) == (50.0, "", "self-reported")
    assert rows["s18"].percent is None and rows["s18"].note.startswith("refused: made for another checks file")
    assert "ffffffffffff" in rows["s18"].note and sha[:12] in rows["s18"].note
    assert rows["s19"].note == "refused: made for seed 's17', not this student's 's19'"
    assert rows["s20"].note == "refused: made with --student (hidden checks not run)"
    assert rows["s21"].note.startswith("refused: no checks file hash in it")
    assert all(r.exit_code == EXIT_USAGE for n, r in rows.items() if n != "s17")
    assert roster.exit_code(list(rows.values())) == EXIT_FAILURE
    text = roster.table(list(rows.values()))
    assert "refused: made for seed 's17'" in text and "self-reported" in text


def test_a_student_directory_with_a_seed_file_gives_the_seed_its_saved_result_must_have(checks, tmp_path):
    d = tmp_path / "class"
    _saved(d, "ana", _report(_result("a", "pass"), seed="s42", sha=file_sha256(checks)))
    (d / "ana").mkdir()
    (d / "ana" / "seed").write_text("s42\n")
    (row,) = roster.grade(d, str(checks), lambda _m: None)
    assert (row.student, row.percent, row.note) == ("ana", 100.0, "")


def test_inconclusive_checks_are_neither_points_nor_zero_and_are_listed_to_measure_again():
    checks = [r.public() for r in (_result("a", "pass", 2), _result("b", "fail"), _result("c", "inconclusive", 3),
                                   _result("d", "skip", requires=["c"]), _result("e", "skip", requires=["b"]))]
    row = roster.row("s17", "s17", roster.REBUILT, checks, EXIT_INCONCLUSIVE, "x")
    # judged: a (2 of 2), b (0 of 1), e (0 of 1: what it requires failed); c and d are not judged
    assert (row.points, row.max_points, row.percent, row.remeasure, row.failed_ids) == (2.0, 4.0, 50.0, "c d", "b")
    assert roster.exit_code([row]) == EXIT_INCONCLUSIVE
    assert roster.exit_code([roster.row("s", "s", roster.REBUILT, checks[:2], 1, "x")]) == EXIT_OK


def test_remeasure_measures_a_rebuilt_labs_inconclusive_checks_again_before_removing_it(checks, tmp_path, monkeypatch):
    from linklab.check import roster as r
    d = tmp_path / "class" / "s17"
    d.mkdir(parents=True)
    (d / "steps").write_text("# the fix\nlinklab set 'links[core].mtu=${mtu}'\n")
    events = []
    monkeypatch.setattr(r.lablib, "up", lambda *a, **k: events.append("up"))
    monkeypatch.setattr(r.lablib, "down", lambda *a, **k: events.append("down"))
    monkeypatch.setattr(r.lablib, "handle", lambda name: name)
    monkeypatch.setattr(r, "apply_steps", lambda name, steps, say: events.append(("steps", steps)))
    monkeypatch.setattr(r.time, "sleep", lambda _s: None)
    monkeypatch.setattr(r.state, "load", lambda _n: None)
    runs = iter([_report(_result("a", "pass"), _result("g", "inconclusive", 2, detail="limited by host_stolen"),
                         _result("h", "skip", requires=["g"])),
                 _report(_result("g", "pass", 2), _result("h", "pass"))])

    def run_checks(spec, handle, only=None, say=None):
        events.append(("run", only))
        return next(runs)
    monkeypatch.setattr(r, "run_checks", run_checks)
    (row,) = roster.grade(tmp_path / "class", str(checks), lambda _m: None, remeasure=True)
    assert events[0] == "up" and events[-1] == "down"
    assert [e for e in events if e[0] == "run"] == [("run", None), ("run", ["g", "h"])]
    assert (row.graded, row.points, row.max_points, row.percent, row.remeasure) == ("rebuilt", 4.0, 4.0, 100.0, "")


def test_merged_keeps_the_first_runs_order_with_the_new_results():
    first = _report(_result("a", "pass"), _result("g", "inconclusive"), _result("z", "fail"))
    again = roster.merged(first, _report(_result("g", "pass")))
    assert [(x.id, x.verdict) for x in again.results] == [("a", "pass"), ("g", "pass"), ("z", "fail")]
    assert again.seconds == 2.0


def test_the_students_table_shows_an_inconclusive_checks_evidence_not_its_hint():
    rep = _report(_result("g", "inconclusive", detail="limited by host_stolen: 31 % stolen", hint="check the bond"),
                  _result("f", "fail", hint="look at the MTU"))
    text = output.table(rep, width=200)
    assert "limited by host_stolen: 31 % stolen" in text and "measure again" in text
    assert "check the bond" not in text and "hint: look at the MTU" in text


# ---- exports ------------------------------------------------------------------------------------

def _rows():
    good = roster.row("s17", "s17", roster.REBUILT, [_result("a", "pass", 3).public(), _result("b", "fail").public()],
                      1, "x")
    refused = roster.ungraded("s18", "s1", roster.SELF_REPORTED, EXIT_USAGE, "y", "refused: made with --student")
    return [good, refused]


def test_the_moodle_layout_has_an_identifier_a_grade_out_of_100_and_feedback():
    got = list(csv.DictReader(io.StringIO(roster.csv_text(_rows(), "moodle"))))
    assert list(got[0]) == ["Student", "Grade", "Feedback"]
    assert (got[0]["Student"], got[0]["Grade"]) == ("s17", "75")
    assert got[0]["Feedback"] == "3/4 points (rebuilt); failed: b"
    assert (got[1]["Grade"], got[1]["Feedback"]) == ("", "refused: made with --student")  # no grade, not 0


def test_the_canvas_layout_has_its_five_leading_columns_then_the_assignment():
    got = list(csv.reader(io.StringIO(roster.csv_text(_rows(), "canvas", "Jumbo frames"))))
    assert got[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Jumbo frames"]
    assert got[1] == ["s17", "", "", "s17", "", "75"] and got[2][-1] == ""
    with pytest.raises(UsageError, match="unknown CSV layout 'excel' \\(valid: linklab, moodle, canvas\\)"):
        roster.csv_text(_rows(), "excel")


def test_the_parser_offers_the_layouts_the_roster_writes():
    from linklab.check.cli import roster_layouts
    assert roster_layouts() == roster.LAYOUTS


def test_the_linklab_layout_has_every_column_of_a_row():
    head, *body = list(csv.reader(io.StringIO(roster.csv_text(_rows()))))
    assert head == list(roster.Row.__dataclass_fields__) and "remeasure" in head and "graded" in head
    assert body[1][head.index("percent")] == ""


# ---- --selftest says what was not as written ------------------------------------------------------

def _stage(name, must_fail, *results):
    return exercise.judge_stage(exercise.Stage(name, list(must_fail)), _report(*results))


def test_a_stage_not_as_written_names_each_check_with_what_was_expected_and_observed(capsys):
    from linklab.check.cli import _not_as_written
    st = _stage("lossy-core", ["goodput"], _result("goodput", "pass", detail="flagged host_stolen"),
                _result("mtu", "fail"), _result("ok", "pass"))
    assert [(r.id, w) for r, w in exercise.mismatches(st)] == [("goodput", "fail"), ("mtu", "pass")]
    text = "\n".join(_not_as_written(st))
    assert "goodput: must fail, was pass" in text and "observed goodput as seen" in text
    assert "flagged host_stolen" in text  # the flag that limited it, though it passed
    assert "mtu: must pass, was fail" in text and "ok" not in text.replace("look", "")
    assert _not_as_written(_stage("start", ["mtu"], _result("mtu", "fail"))) == []


def test_selftest_junit_has_one_test_case_per_stage(tmp_path):
    stages = [_stage("start", ["mtu"], _result("mtu", "fail")),
              _stage("solution", [], _result("mtu", "fail", detail="1500 on h1")),
              _stage("lossy", ["goodput"], _result("goodput", "inconclusive"))]
    (tmp_path / "s.xml").write_text(exercise.junit("mtu_path", stages))
    (suite,) = list(junitparser.JUnitXml.fromfile(str(tmp_path / "s.xml")))
    cases = {c.name: c for c in suite}
    assert list(cases) == ["start", "solution", "lossy"]
    assert cases["start"].is_passed and cases["lossy"].is_skipped
    failure = cases["solution"].result[0]
    assert isinstance(failure, junitparser.Failure) and "mtu (fail, must pass)" in failure.message
    assert "observed: mtu as seen" in failure.text and "1500 on h1" in failure.text


# ---- options of another mode --------------------------------------------------------------------

@pytest.mark.parametrize("argv,said", [
    (["check", "--csv", "g.csv"], "--csv does not apply to `linklab check` of a running lab: it is for --roster"),
    (["check", "--selftest", "mtu_path", "--stage", "1"], "--stage does not apply to --selftest"),
    (["check", "--selftest", "mtu_path", "--csv", "x"], "--csv does not apply to --selftest"),
    (["check", "x.yaml", "--roster", "d", "--junit", "j.xml"], "--junit does not apply to --roster"),
    (["check", "--roster", "d", "--selftest", "mtu_path"], "--selftest and --roster: one at a time"),
    (["check", "--remeasure"], "--remeasure does not apply to `linklab check` of a running lab"),
    (["check", "--interval", "2"], "--interval is the time between looks of --watch"),
    (["check", "--restore", "1", "--student"], "--student does not apply to --restore"),
])
def test_an_option_of_another_mode_is_refused_naming_the_mode_that_takes_it(argv, said, capsys):
    assert main(argv) == EXIT_USAGE
    assert said in capsys.readouterr().err


# ---- output files through the lab VM -------------------------------------------------------------

def test_output_files_the_vm_does_not_share_are_written_through_a_spool_and_copied_where_named(tmp_path, monkeypatch):
    from linklab import placement
    from linklab.check import cli
    from linklab.results import spool
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(placement, "is_shared_with_vm", lambda p: str(p).startswith(str(tmp_path / "state")))
    out = tmp_path / "elsewhere" / "r.json"
    junit = tmp_path / "elsewhere" / "r.xml"

    args = SimpleNamespace(json=str(out), junit=str(junit), csv=None)
    seen = []

    def in_vm(argv):  # the command in the VM writes its files where the last --json/--junit says
        seen.append(argv)
        last = {a: argv[i + 1] for i, a in enumerate(argv[:-1]) if a.startswith("--")}
        Path(last["--json"]).write_text("{}")
        Path(last["--junit"]).write_text("<x/>")
        return 1
    assert cli._forward(args, ["check", "--json", str(out), "--junit", str(junit)], in_vm) == 1
    assert seen[0][5:] == ["--json", str(spool.spool_for(out.resolve()) / "r.json"),
                           "--junit", str(spool.spool_for(junit.resolve()) / "r.xml")]
    assert out.read_text() == "{}" and junit.read_text() == "<x/>"
    assert not spool.spool_for(out.resolve()).exists()


def test_a_file_the_vm_shares_is_given_as_it_is(tmp_path, monkeypatch):
    from linklab import placement
    from linklab.results import spool
    monkeypatch.setattr(placement, "is_shared_with_vm", lambda p: True)
    with spool.files_through_vm([tmp_path / "a.json"], say=lambda _m: None) as where:
        assert where == [(tmp_path / "a.json").resolve()]


# ---- checkpoints ---------------------------------------------------------------------------------

def _exercise(tmp_path, solution) -> Path:
    for f in ("lab.yaml", "checks.yaml"):
        (tmp_path / f).write_text((MTU / f).read_text())
    doc = yaml.safe_load((MTU / "exercise.yaml").read_text())
    doc["solution"] = solution
    (tmp_path / "exercise.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return tmp_path / "exercise.yaml"


def test_restore_applies_the_solutions_steps_up_to_the_stage(tmp_path):
    path = _exercise(tmp_path, {1: ["linklab set 'links[core].mtu=${mtu}'"], 3: ["linklab exec h1 -- true"]})
    loaded = exercise.load(str(path), "s17")
    fix = "linklab set 'links[core].mtu=${mtu}'"
    assert exercise.restore_steps(loaded, 1) == exercise.restore_steps(loaded, 2) == [fix]
    assert exercise.restore_steps(loaded, 3) == [fix, "linklab exec h1 -- true"]
    assert loaded.exercise.steps() == [fix, "linklab exec h1 -- true"]  # the selftest's solution: all of it
    with pytest.raises(UsageError, match=r"--restore 4: no such stage in .*checks.yaml \(valid: 1, 2, 3\)"):
        exercise.restore_steps(loaded, 4)


def test_a_solution_as_one_list_restores_only_the_last_stage(tmp_path):
    loaded = exercise.load(str(_exercise(tmp_path, ["linklab set 'links[core].mtu=${mtu}'"])), "s17")
    assert exercise.restore_steps(loaded, 3) == loaded.exercise.solution
    with pytest.raises(UsageError, match="gives its solution as one list") as e:
        exercise.restore_steps(loaded, 1)
    assert "solution: {1: [...]" in e.value.hint


def test_a_solution_stage_without_checks_or_a_bad_step_is_refused_with_its_line(tmp_path):
    path = _exercise(tmp_path, {1: ["linklab set 'links[core].mtu=${mtu}'"], 7: ["linklab set 'links[core].mtu=${nope}'"]})
    with pytest.raises(ValidationFailed) as e:
        exercise.load(str(path))
    text = "\n".join(e.value.problems)
    assert "solution[7] (line 10): stage 7 has no checks (stages of checks.yaml: 1, 2, 3)" in text
    assert "solution[7][0] (line 10): unknown variable 'nope'" in text
    path = _exercise(tmp_path, {1: ["rm -rf /"]})
    with pytest.raises(ValidationFailed) as e:
        exercise.load(str(path))
    assert "unknown step 'rm -rf /'" in e.value.problems[0] and "solution" in e.value.problems[0]


def test_restore_builds_the_lab_again_for_its_seed_then_applies_the_steps(tmp_path, monkeypatch):
    _exercise(tmp_path, {1: ["linklab set 'links[core].mtu=${mtu}'"], 2: ["linklab exec h1 -- true"]})
    lab = str(tmp_path / "lab.yaml")
    monkeypatch.setattr(exercise.state, "require", lambda _n: {"topology": {"path": lab, "seed": "s17"}})
    calls = []
    monkeypatch.setattr(exercise.lablib, "down", lambda name, say=None: calls.append(("down", name)))
    monkeypatch.setattr(exercise.lablib, "up", lambda topo, name, seed, say=None: calls.append(("up", topo, name, seed)))
    monkeypatch.setattr(exercise, "apply_steps", lambda name, steps, say: calls.append(("steps", steps)))
    monkeypatch.setattr(exercise.time, "sleep", lambda _s: None)
    loaded = exercise.for_lab(str(tmp_path / "checks.yaml"), "s17")
    assert loaded is not None and loaded.seed == "s17"
    exercise.restore(loaded, "mtu", 1, say=lambda _m: None)
    mtu = loaded.checks.values["mtu"]
    assert calls == [("down", "mtu"), ("up", lab, "mtu", "s17"), ("steps", [("set", [("links[core].mtu", mtu)])])]
    monkeypatch.setattr(exercise.state, "require", lambda _n: {"topology": {"path": "topologies/bond2.yaml"}})
    with pytest.raises(UsageError, match="was built from topologies/bond2.yaml"):
        exercise.restore(loaded, "mtu", 1, say=lambda _m: None)


def test_restore_of_a_lab_no_exercise_names_says_how_to_name_one(tmp_path):
    with pytest.raises(UsageError, match="not an exercise's lab or checks"):
        exercise.for_lab(str(ROOT / "topologies" / "bond2.yaml"), None)
