"""The shipped exercises, read and validated without a lab (the kernel tier runs their
selftests): every file complete, every named check real, every step a step."""

from pathlib import Path

import pytest

from linklab.check import exercise
from linklab.check.exercise import judge_stage, parse_step
from linklab.check.run import Report, Result
from linklab.errors import UsageError, ValidationFailed

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/exercise.yaml"))


def test_at_least_six_exercises_ship_each_complete():
    assert len(NAMES) >= 6 and {"static_routing", "bufferbloat", "ospf_reroute"} <= set(NAMES)
    for name in NAMES:
        d = ROOT / "exercises" / name
        assert {"README.md", "lab.yaml", "checks.yaml", "exercise.yaml"} <= {p.name for p in d.iterdir()}, name


@pytest.mark.parametrize("name", NAMES)
def test_an_exercise_loads_for_its_seed_and_others(name):
    loaded = exercise.load(name)
    assert loaded.exercise.variants and loaded.exercise.solution
    for seed in ("s1", "s2", "s3"):
        again = exercise.load(name, seed)
        steps = exercise.steps_for(again, again.exercise.steps())
        assert steps and all(verb in ("set", "exec", "ovs") for verb, _ in steps)
        assert "${" not in repr(steps)  # every variable has its value


@pytest.mark.parametrize("name", NAMES)
def test_an_exercise_names_only_its_checks_and_stages_and_restores_every_stage(name):
    """What `linklab validate` refuses, asserted of every shipped exercise from its files: the
    ids `start` and each variant name are checks of its checks file, its solution is given per
    stage (checkpoints) and only for stages its checks have, and `--restore N` takes the steps of
    stages 1..N for every stage N: nothing past it."""
    import yaml

    loaded = exercise.load(name)
    ex, ids = loaded.exercise, {c.id for c in loaded.checks.checks}
    written = yaml.safe_load((ROOT / "exercises" / name / "exercise.yaml").read_text())
    named = written["start"]["fails"] + [f for v in written["variants"] for f in v["fails"]]
    assert named and set(named) <= ids, set(named) - ids
    stages = sorted({c.stage for c in loaded.checks.checks})
    assert isinstance(ex.solution, dict) and set(ex.solution) <= set(stages), (ex.solution, stages)
    assert len(ex.variants) >= 2
    for stage in stages:
        steps = exercise.restore_steps(loaded, stage)
        assert steps == [s for k, v in ex.solution.items() if k <= stage for s in v]
        assert all(parse_step(s)[0] in ("set", "exec", "ovs") for s in steps)
    assert exercise.restore_steps(loaded, stages[-1]) == ex.steps()  # the last checkpoint: the whole solution
    for stage in (0, stages[-1] + 1):
        with pytest.raises(UsageError, match="no such stage"):
            exercise.restore_steps(loaded, stage)


def test_the_routing_exercise_fixes_a_route_per_stage_and_its_variants_break_a_solved_lab():
    """static_routing's checkpoints as the lab's routes: the start lacks r2's route back to
    h1's subnet and sends h3's subnet back to r1 (a loop); stage 1 adds the first, stage 2 turns
    the second to r3; each set-variant moves exactly what its description says."""
    from linklab import lab as lablib
    loaded = exercise.load("static_routing")
    ex = loaded.exercise

    def routes(steps):
        ov = [o for verb, arg in exercise.steps_for(loaded, steps) if verb == "set" for o in arg]
        lab = lablib.build_lab(loaded.lab, ov, seed=loaded.seed)
        return {(n.name, r.to): [h.node for h in r.nexthops] for n in lab.nodes for r in n.routes if ":" not in r.to}, lab

    lan1, lan3 = "10.77.0.0/24", "10.77.4.0/24"
    start, _ = routes([])
    assert ("r2", lan1) not in start and start[("r2", lan3)] == ["r1"] and start[("r1", "0.0.0.0/0")] == ["r2"]
    one, _ = routes(exercise.restore_steps(loaded, 1))
    assert one[("r2", lan1)] == ["r1"] and one[("r2", lan3)] == ["r1"]
    two, lab = routes(exercise.restore_steps(loaded, 2))
    assert two[("r2", lan1)] == ["r1"] and two[("r2", lan3)] == ["r3"]
    assert next(link.mtu for link in lab.links if link.name == "core") == loaded.checks.values["mtu"] < 1500
    by = {v.name: v for v in ex.variants}
    back, _ = routes(ex.steps() + by["return-via-r3"].steps)
    assert back[("r2", lan1)] == ["r3"] and back[("r3", "0.0.0.0/0")] == ["r2"]  # a loop r2 <-> r3
    _, narrow = routes(ex.steps() + by["narrow-core"].steps)
    assert next(link.mtu for link in narrow.links if link.name == "core") == 1300 < min(
        [1400, 1420, 1450])  # below every seed's core MTU: the path_mtu check must fail


def test_the_bufferbloat_exercises_bounds_follow_from_its_lab_at_every_scale():
    """bufferbloat's rtt bound (50 ms beside 4 flows) against its lab's figures: a full FIFO on
    the wan adds 121 ms at scale 1 and at the lab VM's 0.1 (queues are bounded in time), the path
    asks 20 ms; the bound lies between the path's RTT and the path plus the least a FIFO kept
    ~65 % full by 4 backing-off flows adds. Each stage's fix puts fq_codel on one direction."""
    from linklab import lab as lablib
    from linklab.model import paths
    loaded = exercise.load("bufferbloat")
    bound = {c.id: c for c in loaded.checks.checks}
    for scale in (1.0, 0.1):
        lab = lablib.build_lab(loaded.lab, [], scale=scale)
        fifo = {e.end.node: e.queue for e in lab.egress_queues() if e.queue is not None and e.queue.rate_bps}
        assert set(fifo) == {"r1", "r2"}
        for q in fifo.values():
            assert q.rate_bps == pytest.approx(100e6 * scale) and q.queue_s == pytest.approx(1000 * 1514 * 8 / 100e6)
            assert q.aqm in (None, "fifo")
        rtt = paths.asked_rtt_s(lab, "h1", "h2")
        assert rtt == pytest.approx(0.020, abs=0.001)  # 10 ms each way on lan1, and the frames' own time
        least_fifo = rtt + 0.65 * fifo["r1"].queue_s
        for cid in ("latency-up", "latency-down"):
            hi = bound[cid].max * (1 + bound[cid].tolerance)
            assert rtt + 0.02 < bound[cid].max and hi < least_fifo - 0.04, (cid, hi, least_fifo)
    for stage, node in ((1, "r1"), (2, "r2")):
        ov = [o for verb, arg in exercise.steps_for(loaded, exercise.restore_steps(loaded, stage)) if verb == "set" for o in arg]
        lab = lablib.build_lab(loaded.lab, ov, scale=0.1)
        aqm = {e.end.node: e.queue.aqm for e in lab.egress_queues() if e.queue is not None and e.queue.rate_bps}
        assert aqm[node] == "fq_codel" and (stage == 2 or aqm["r2"] in (None, "fifo"))


def test_a_solution_step_takes_the_students_values():
    a = exercise.load("mtu_path", "s17")
    assert exercise.steps_for(a, a.exercise.steps()) == [("set", [("links[core].mtu", a.checks.values["mtu"])])]


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


def test_the_docs_list_every_shipped_exercise():
    """docs/coursework.md's table and exercises/README.md's name every exercise a teacher can hand out."""
    course = (ROOT / "docs" / "coursework.md").read_text()
    listing = (ROOT / "exercises" / "README.md").read_text()
    for name in NAMES:
        assert f"| `{name}` |" in course and f"| `{name}` |" in listing, name


def test_a_selftest_of_stages_it_lacks_names_them_and_its_own_before_building_anything(monkeypatch, tmp_path):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(exercise.lablib, "up", lambda *a, **k: pytest.fail("built a lab"))
    with pytest.raises(UsageError) as e:
        exercise.selftest("bond_hash", only=("solution", "no-such", "also-not"))
    assert str(e.value) == ("exercise bond_hash has no stage also-not, no-such (its stages: start, solution, "
                            "active-backup, ip-only-hash, member-cable)")


def test_a_selftest_of_some_stages_checks_those_alone_in_order(monkeypatch, tmp_path):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    ran = []
    monkeypatch.setattr(exercise.lablib, "up", lambda *a, **k: None)
    monkeypatch.setattr(exercise.lablib, "handle", lambda name: name)
    monkeypatch.setattr(exercise.time, "sleep", lambda s: None)
    monkeypatch.setattr(exercise, "apply_steps", lambda lab, steps, say, replace: ran.append(("steps", replace)))
    monkeypatch.setattr(exercise, "run_checks", lambda checks, handle, say, keep_raw: Report(handle, "c", "t", None, [], "", 0.0))
    stages = exercise.selftest("bond_hash", only=("ip-only-hash", "start"), say=lambda m: None)
    assert [s.name for s in stages] == ["start", "ip-only-hash"]  # the exercise's order, not the caller's
    assert ran == [("steps", False), ("steps", True)]  # the second from the starting lab again
