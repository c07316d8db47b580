"""The shipped exercises whose labs this host's kernel builds (network namespaces, veth pairs,
forwarding, FRR: routed and plain labs, tests/integration/exercise_tiers.py decides as `linklab
check --selftest` does), proved natively through the CLI, no lab VM: each one's `--selftest`
(the kernel tier selftests the others, each exercise exactly once); `--restore N` of every stage
brings a lab a student took elsewhere to that stage's checkpoint; a roster of REAL saved results,
made by `linklab check --json` on a running lab, grades the good one and refuses, each with its
reason, one made for another checks file, one for another seed and one made with `--student`.

Needs root, and Debian's frr for a routing exercise (the test set-up group installs it). Each
test's labs are its own (names apart from the selftest's defaults), in a state directory of its
own, taken down whatever happened; their times: docs/coursework.md ("Where each selftest runs")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pyroute2 import netns

from linklab import lab as lablib
from linklab.backends.linux import frrd
from linklab.check import exercise
from linklab.check.spec import file_sha256
from tests.integration import exercise_tiers
from tests.integration.host import cli

ROOT = Path(__file__).resolve().parents[3]
NATIVE, IN_VM = exercise_tiers.split()
ROSTER_EXERCISE = "static_routing"  # a routed lab with a variable (mtu): a result's seed matters


def linklab(*args: str, state_dir: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return cli.linklab(*args, timeout=timeout, state_dir=state_dir)


def _or_none_here(params: list, arity: int = 1) -> list:
    """`params`, or one skipped case saying why this tier has none (the kernel tier tests them)."""
    return params or [pytest.param(*[None] * arity, marks=pytest.mark.skip(
        reason=f"every exercise's lab needs what this kernel lacks ({', '.join(IN_VM)}): the kernel tier tests them"))]


@pytest.fixture
def labs(tmp_path, monkeypatch):
    """make(name): a lab name of this test's, its state directory this test's own (in-process
    steps too); every lab named is taken down and its leftovers cleaned, none may be left."""
    state_dir = tmp_path / "state"
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(state_dir))
    names: list[str] = []

    def make(name: str) -> str:
        names.append(name)
        return name
    yield state_dir, make
    for name in names:
        linklab("down", name, state_dir=state_dir)
        linklab("clean", name, state_dir=state_dir)
    left = [n for n in netns.listnetns() if any(n.startswith(f"ll-{name}-") for name in names)]
    assert not left, f"namespaces left behind: {left}"


def _needs_frr(loaded: exercise.Loaded) -> None:
    # A failure, not a skip: the test set-up group installs frr.
    built = lablib.build_lab(loaded.lab, [], seed=loaded.seed)
    if any(n.frr is not None for n in built.nodes) and not frrd.installed():
        pytest.fail(f"FRR is not installed: {loaded.path.parent.name} did NOT run (scripts/setup.sh --with frr)",
                    pytrace=False)


def _short(name: str, prefix: str) -> str:
    return f"{prefix}{name.replace('_', '')}"[:12]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", _or_none_here(NATIVE))
def test_an_exercise_the_host_builds_passes_its_selftest_natively(labs, tmp_path, name):
    """`linklab check --selftest NAME`, run where the CLI decides (here: the lab needs nothing
    this kernel lacks): the starting lab fails exactly its named checks, the solution passes
    every check, each broken variant fails exactly its own."""
    assert sorted(NATIVE + IN_VM) == exercise_tiers.EXERCISES
    state_dir, make = labs
    _needs_frr(exercise.load(name))
    out = tmp_path / "selftest.json"
    res = linklab("check", "--selftest", name, "--name", make(_short(name, "st")), "--json", str(out),
                  state_dir=state_dir, timeout=880)
    print(res.stdout, res.stderr)
    assert "lab VM" not in res.stdout + res.stderr  # run here, natively
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(out.read_text())
    stages = doc["stages"]
    assert [s["name"] for s in stages][:2] == ["start", "solution"] and len(stages) >= 3
    assert [(s["name"], s["verdict"]) for s in stages] == [(s["name"], "pass") for s in stages]
    assert all(c["verdict"] == "pass" for c in stages[1]["report"]["checks"])


def _every_stage() -> list[tuple[str, int]]:
    """Every stage but each exercise's last: restoring that is the selftest's solution stage, which
    the selftest above proves (each case costs a lab build and its checks, 20-50 s)."""
    return [(name, stage) for name in NATIVE
            for stage in sorted({c.stage for c in exercise.load(name).checks.checks})[:-1]]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name, stage", _or_none_here(_every_stage(), arity=2))
def test_restore_brings_a_lab_taken_elsewhere_to_each_stages_checkpoint(labs, tmp_path, name, stage):
    """A lab a student took elsewhere (the whole solution and the exercise's first variant
    applied: later stages' fixes, and a break), then `linklab check CHECKS --restore N`: every
    check of stages 1..N passes, and each later one is as at the start (a check the starting lab
    fails, exercise.yaml's start.fails, fails; any other passes, or is skipped because one it
    requires failed), for every stage N but the last (_every_stage)."""
    state_dir, make = labs
    loaded = exercise.load(name)
    _needs_frr(loaded)
    ex, checks = loaded.exercise, str(loaded.checks.source)
    lab_name = make(_short(name, f"re{stage}"))
    res = linklab("up", loaded.lab, "--name", lab_name, "--seed", str(loaded.seed), "--native", state_dir=state_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    exercise.apply_steps(lab_name, exercise.steps_for(loaded, ex.steps() + ex.variants[0].steps), print)

    res = linklab("check", checks, "--lab", lab_name, "--restore", str(stage), state_dir=state_dir)
    print(res.stdout, res.stderr)
    assert res.returncode == 0 and f"is at the end of stage {stage}" in res.stderr + res.stdout, res.stdout + res.stderr
    out = tmp_path / "after.json"
    for _ in range(2):  # an inconclusive check (a busy host) is measured once more, as the selftest does
        res = linklab("check", checks, "--lab", lab_name, "--json", str(out), state_dir=state_dir)
        doc = json.loads(out.read_text())
        if not any(c["verdict"] == "inconclusive" for c in doc["checks"]):
            break
    print(res.stdout)
    mine = [c for c in doc["checks"] if c["stage"] <= stage]
    later = [c for c in doc["checks"] if c["stage"] > stage]
    assert mine and all(c["verdict"] == "pass" for c in mine), [(c["id"], c["verdict"], c["observed"]) for c in mine]
    start_fails = set(ex.start.fails)
    wrong = [(c["id"], c["verdict"], c["observed"]) for c in later
             if (c["verdict"] not in ("fail", "warn") if c["id"] in start_fails
                 else not (c["verdict"] == "pass" or (c["verdict"] == "skip" and c.get("requires"))))]
    assert not wrong, wrong
    # Before the last stage something is left to do: a later check the start fails fails still.
    assert stage == max(c["stage"] for c in doc["checks"]) or any(c["id"] in start_fails for c in later)
    assert res.returncode == (1 if any(c["id"] in start_fails for c in later) else 0), res.stdout


@pytest.mark.timeout(600)
def test_a_roster_grades_a_real_saved_result_and_refuses_foreign_ones_each_with_its_reason(labs, tmp_path):
    """One running lab of static_routing for seed `alice`, solved; its real `linklab check --json`
    results handed in as: alice.json (as asked: graded, self-reported, 100 %), bob.json (alice's
    lab: another seed than bob's), carol.json (carol's seed is alice's, but checked with another
    checks file: the exercise's with one check's points changed), dave.json (dave's seed is
    alice's, checked with --student). `linklab check CHECKS --roster DIR` grades alice and
    refuses each other row with exactly its reason, and exits 1 (a row without a grade)."""
    if ROSTER_EXERCISE not in NATIVE:
        pytest.fail(f"{ROSTER_EXERCISE}'s lab needs {', '.join(exercise_tiers.host_lacks(ROSTER_EXERCISE))}, which this "
                    "kernel lacks: the roster test did NOT run", pytrace=False)
    state_dir, make = labs
    loaded = exercise.load(ROSTER_EXERCISE, "alice")
    checks = str(loaded.checks.source)
    lab_name = make("hsroster")
    res = linklab("up", loaded.lab, "--name", lab_name, "--seed", "alice", "--native", state_dir=state_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    exercise.apply_steps(lab_name, exercise.steps_for(loaded, loaded.exercise.steps()), print)

    d = tmp_path / "class"
    for student in ("carol", "dave"):
        (d / student).mkdir(parents=True)
        (d / student / "seed").write_text("alice\n")
    foreign = tmp_path / "checks.yaml"
    text = Path(checks).read_text().replace("topology: lab.yaml", f"topology: {Path(loaded.lab).resolve()}")
    assert "    points: 2\n" in text
    foreign.write_text(text.replace("    points: 2\n", "    points: 3\n", 1))
    made = {"alice": [checks], "bob": [checks], "carol": [str(foreign)], "dave": [checks, "--student"]}
    for student, how in made.items():
        res = linklab("check", how[0], "--lab", lab_name, *how[1:], "--json", str(d / f"{student}.json"),
                      state_dir=state_dir)
        assert res.returncode == 0, (student, res.stdout + res.stderr)  # the solved lab passes every check
    assert json.loads((d / "dave.json").read_text())["mode"] == "student"

    res = linklab("check", checks, "--roster", str(d), "--json", str(tmp_path / "roster.json"), state_dir=state_dir)
    print(res.stdout, res.stderr)
    assert res.returncode == 1, res.stdout + res.stderr
    rows = {r["student"]: r for r in json.loads((tmp_path / "roster.json").read_text())["students"]}
    assert sorted(rows) == ["alice", "bob", "carol", "dave"]
    alice = rows["alice"]
    assert (alice["graded"], alice["seed"], alice["percent"], alice["failed_ids"], alice["note"]) == (
        "self-reported", "alice", 100.0, "", "")
    assert alice["max_points"] == sum(c.points for c in loaded.checks.checks) > 0
    assert rows["bob"]["note"] == "refused: made for seed 'alice', not this student's 'bob'"
    assert rows["carol"]["note"] == (f"refused: made for another checks file ({foreign}, sha256 "
                                     f"{file_sha256(foreign)[:12]}; {checks} is {file_sha256(checks)[:12]})")
    assert rows["dave"]["note"] == "refused: made with --student (hidden checks not run)"
    # Exactly one reason each (the notes above, whole): nothing else is wrong with those results.
    for student in ("bob", "carol", "dave"):
        assert (rows[student]["percent"], rows[student]["points"]) == (None, 0.0), rows[student]
