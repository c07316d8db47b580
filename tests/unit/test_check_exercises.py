"""The shipped exercises, read and validated without a lab (the kernel tier runs their
selftests): every file complete, every named check real, every step a step."""

from pathlib import Path

import pytest

from linklab.check import exercise
from linklab.check.exercise import judge_stage, parse_step
from linklab.check.run import Report, Result
from linklab.errors import ValidationFailed

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/exercise.yaml"))


def test_at_least_three_exercises_ship_each_complete():
    assert len(NAMES) >= 3
    for name in NAMES:
        d = ROOT / "exercises" / name
        assert {"README.md", "lab.yaml", "checks.yaml", "exercise.yaml"} <= {p.name for p in d.iterdir()}, name


@pytest.mark.parametrize("name", NAMES)
def test_an_exercise_loads_for_its_seed_and_others(name):
    loaded = exercise.load(name)
    assert loaded.exercise.variants and loaded.exercise.solution
    for seed in ("s1", "s2", "s3"):
        again = exercise.load(name, seed)
        steps = exercise.steps_for(again, again.exercise.solution)
        assert steps and all(verb in ("set", "exec", "ovs") for verb, _ in steps)
        assert "${" not in repr(steps)  # every variable has its value


def test_a_solution_step_takes_the_students_values():
    a = exercise.load("mtu_path", "s17")
    assert exercise.steps_for(a, a.exercise.solution) == [("set", [("links[core].mtu", a.checks.values["mtu"])])]


def test_steps_parse_as_the_cli_takes_them():
    assert parse_step("linklab set 'links[0].mtu=9000' defaults.mtu=1500") == (
        "set", [("links[0].mtu", 9000), ("defaults.mtu", 1500)])
    assert parse_step("linklab exec h1 -- ip link set dev eth1 mtu 1500") == (
        "exec", ("h1", ["ip", "link", "set", "dev", "eth1", "mtu", "1500"]))
    assert parse_step("ovs s1 -- del-flows") == ("ovs", ("s1", ["del-flows"]))
    for bad in ("linklab up x.yaml", "linklab exec h1 ip a", "linklab set", "linklab set 'unclosed"):
        with pytest.raises(ValueError):
            parse_step(bad)


def test_a_broken_exercise_says_every_problem_with_its_line(tmp_path):
    src = ROOT / "exercises" / "mtu_path"
    for f in ("lab.yaml", "checks.yaml"):
        (tmp_path / f).write_text((src / f).read_text())
    (tmp_path / "exercise.yaml").write_text(
        "title: t\nlab: lab.yaml\nchecks: checks.yaml\nstart: {fails: [core-mtu, nosuch]}\n"
        "solution: [\"linklab set 'links[core].mtu=${mtu}'\"]\n"
        "variants:\n  - {name: a, steps: [\"linklab set 'links[h2up].mtu=${nope}'\"], fails: [h2-mtu]}\n"
        "  - {name: a, steps: [\"linklab set 'links[h2up].mtu=1400'\"], fails: [h2-mtu]}\n")
    with pytest.raises(ValidationFailed) as err:
        exercise.load(str(tmp_path))
    text = "\n".join(err.value.problems)
    assert "start.fails[1] (line 4): unknown check 'nosuch'" in text
    assert "variants[1].name (line 8): variant 'a' is named twice" in text
    assert "variants[0].steps[0] (line 7): unknown variable 'nope'" in text


def _report(verdicts: dict[str, tuple[str, list[str]]]) -> Report:
    results = [Result(id=i, kind="x", title=None, stage=1, verdict=v, expected="", observed="", hint=None, points=0,
                      max_points=1, hidden=False, severity="fail", requires=r) for i, (v, r) in verdicts.items()]
    return Report("lab", "c", "t", None, results, "", 0.0)


def test_a_stage_passes_only_when_exactly_its_checks_fail():
    rep = _report({"a": ("fail", []), "b": ("skip", ["a"]), "c": ("pass", [])})
    assert judge_stage(exercise.Stage("v", ["a"]), rep).verdict == "pass"
    assert judge_stage(exercise.Stage("v", ["a", "c"]), rep).verdict == "fail"
    assert judge_stage(exercise.Stage("v", []), rep).verdict == "fail"
    slow = _report({"a": ("fail", []), "m": ("inconclusive", [])})
    assert judge_stage(exercise.Stage("v", ["a"]), slow).verdict == "inconclusive"
    # An expected failure that came out inconclusive is not a wrong lab: inconclusive, checked again.
    assert judge_stage(exercise.Stage("v", ["a", "m"]), slow).verdict == "inconclusive"
    assert judge_stage(exercise.Stage("v", ["m"]), slow).verdict == "fail"  # a failed that should not


def test_a_stage_goes_back_to_the_start_and_sets_its_settings_in_one_reconfiguration(monkeypatch):
    """A selftest stage after the first: one `set_params(replace=True)` with every leading set
    step, in order (a later step on the same path wins, as it would step by step); a set after an
    exec step still runs after it."""
    calls = []
    monkeypatch.setattr(exercise.lablib, "set_params", lambda lab, o, replace=False, say=None: calls.append(("set", list(o), replace)))
    monkeypatch.setattr(exercise.lablib, "exec_argv", lambda lab, node, argv: ["exec", node, *argv])
    monkeypatch.setattr(exercise.runner, "run", lambda argv, timeout=None: calls.append(("run", argv)))
    steps = [parse_step("linklab set a=1 b=2"), parse_step("linklab set a=3"),
             parse_step("linklab exec h1 -- ip link"), parse_step("linklab set c=4")]
    said = []
    exercise.apply_steps("lab", steps, said.append, replace=True)
    assert calls == [("set", [("a", 1), ("b", 2), ("a", 3)], True), ("run", ["exec", "h1", "ip", "link"]),
                     ("set", [("c", 4)], False)]
    assert said == ["    linklab set a=1 b=2", "    linklab set a=3", "    linklab exec h1 -- ip link", "    linklab set c=4"]
    calls.clear()
    exercise.apply_steps("lab", [], said.append, replace=True)  # the solution-free start of a stage
    assert calls == [("set", [], True)]
