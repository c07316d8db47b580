"""Exercises (exercises/<name>/exercise.yaml): a starting lab that is broken, its checks, the
steps of a reference solution and broken variants, each naming the checks it must fail:

    title: Jumbo frames die on one hop
    lab: lab.yaml                  # the starting lab (relative to this file)
    checks: checks.yaml
    seed: demo                     # the variant --selftest builds (vars: of lab and checks)
    settle: 3                      # seconds to wait after steps (LACP, a controller's restart)
    start: {fails: [core-mtu, path-mtu]}
    solution:                      # steps per stage of the checks (or one list: the whole solution)
      1: ["linklab set 'links[core].mtu=${mtu}'"]
      2: ["linklab exec h1 -- ip route add 10.0.2.0/24 via 10.0.1.1"]
    variants:
      - name: access-hop
        description: h2's own link left at 1500
        steps: [linklab set 'links[h2up].mtu=1500']
        fails: [h2-mtu, path-mtu]

A step is a `linklab set PATH=VALUE...`, `linklab exec NODE -- CMD...` or `linklab ovs SWITCH --
CMD...` line, with ${name} of the lab's variables. `linklab check --selftest` builds the lab,
checks it as it starts, after the solution (every check passes) and after each variant applied
to the solved lab (exactly the checks it names fail; others pass, or are skipped because one they
require failed). `linklab check --restore N` brings a running lab to the reference at the end of
stage N: built again for its seed, the solution's steps of stages 1..N applied (restore_steps).
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable

from pydantic import Field, ValidationError, field_validator

from linklab import bundled
from linklab import lab as lablib
from linklab import runner, state
from linklab.check.run import Report, Result, run_checks
from linklab.check.spec import ChecksFile, load_checks, topology_of, with_topology_vars
from linklab.errors import StateError, UsageError, ValidationFailed, check_exit_code
from linklab.model import variables
from linklab.model.loader import _located, line_map, pydantic_problems, read_yaml
from linklab.model.overrides import split_assignment
from linklab.model.topology import Model

EXERCISES = bundled.folder("exercises")
STEP_HINT = ("write `linklab set PATH=VALUE ...`, `linklab exec NODE -- COMMAND ...` or "
             "`linklab ovs SWITCH -- COMMAND ...`")


def _parsed(steps: list[str]) -> list[str]:
    """A field of steps, each parsed (a bad one raises with its text) and kept as written."""
    for s in steps:
        parse_step(s)
    return steps


def parse_step(text: str) -> tuple[str, Any]:
    """'linklab set a=1 b=2' -> ('set', [(a, 1), (b, 2)]); 'linklab exec h1 -- ip ...' ->
    ('exec', (h1, [ip, ...])); same for ovs. Raises ValueError with what is wrong."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise ValueError(f"cannot split {text!r} into words: {e}") from None
    if words[:1] == ["linklab"]:
        words = words[1:]
    if not words or words[0] not in ("set", "exec", "ovs"):
        raise ValueError(f"unknown step {text!r}: {STEP_HINT}")
    verb, rest = words[0], words[1:]
    if verb == "set":
        if not rest:
            raise ValueError("linklab set needs PATH=VALUE")
        try:
            return "set", [split_assignment(a) for a in rest]
        except UsageError as e:
            raise ValueError(str(e)) from None
    if len(rest) < 3 or rest[1] != "--":
        raise ValueError(f"linklab {verb} needs {'NODE' if verb == 'exec' else 'SWITCH'} -- COMMAND")
    return verb, (rest[0], rest[2:])


class Variant(Model):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,40}$")]
    description: str | None = None
    steps: Annotated[list[str], Field(min_length=1)]
    fails: Annotated[list[str], Field(min_length=1)]

    @field_validator("steps")
    @classmethod
    def _steps(cls, v):
        return _parsed(v)


class Start(Model):
    fails: Annotated[list[str], Field(min_length=1)]


class Exercise(Model):
    title: str
    lab: str
    checks: str
    seed: str | int | None = None
    settle: Annotated[float, Field(ge=0, le=120)] = 0
    start: Start
    # One list (the whole solution), or the steps of each stage of the checks: {1: [...], 2: [...]}.
    solution: Annotated[list[str], Field(min_length=1)] | dict[Annotated[int, Field(ge=1, le=100)], list[str]]
    variants: Annotated[list[Variant], Field(min_length=1)]

    @field_validator("solution")
    @classmethod
    def _steps(cls, v):
        if isinstance(v, dict):
            if not any(v.values()):
                raise ValueError("no step in any stage")
            for steps in v.values():
                _parsed(steps)
            return dict(sorted(v.items()))
        return _parsed(v)

    def steps(self, upto: int | None = None) -> list[str]:
        """The solution's steps, of stages 1..`upto` when given (a solution given as one list has
        no stages: all of it)."""
        if isinstance(self.solution, list):
            return list(self.solution)
        return [s for stage, steps in self.solution.items() if upto is None or stage <= upto for s in steps]


@dataclass(frozen=True)
class Loaded:
    path: Path
    exercise: Exercise
    lab: str  # topology path
    checks: ChecksFile
    seed: str | None


def find(name: str) -> Path:
    """An exercise by name (exercises/<name>/) or by path (its directory or exercise.yaml)."""
    p = Path(name)
    for candidate in (p / "exercise.yaml", p, EXERCISES / name / "exercise.yaml"):
        if candidate.is_file():
            # Named as the user would from here: reports then name exercises/x/checks.yaml.
            rel = os.path.relpath(candidate)
            return Path(rel) if not rel.startswith("..") else candidate
    have = sorted(d.name for d in EXERCISES.iterdir() if (d / "exercise.yaml").is_file()) if EXERCISES.is_dir() else []
    raise UsageError(f"no exercise {name!r} (valid: {', '.join(have) or 'none shipped'})",
                     hint="an exercise is a directory with an exercise.yaml; see exercises/README.md")


def load(name: str, seed: str | None = None, exact_seed: bool = False) -> Loaded:
    """Read and validate an exercise: its file, its lab and checks (for `seed`, else its own;
    `exact_seed`: for `seed` even when None, a lab built without one), and that every id it names
    is a check and every stage of its solution a stage of its checks. Every problem at once."""
    path = find(name)
    data, text = read_yaml(path)
    lines = line_map(text)
    problems: list[tuple[tuple, str]] = []
    try:
        ex = Exercise.model_validate(data)
    except ValidationError as e:
        problems = pydantic_problems(e, Exercise)
        raise ValidationFailed(str(path), [_located(loc, msg, lines) for loc, msg in problems]) from None
    if not exact_seed and seed is None and ex.seed is not None:
        seed = str(ex.seed)
    lab_path, checks_path = path.parent / ex.lab, path.parent / ex.checks
    for key, p in (("lab", lab_path), ("checks", checks_path)):
        if not p.is_file():
            problems.append(((key,), f"no file {p}"))
    if problems:
        raise ValidationFailed(str(path), [_located(loc, msg, lines) for loc, msg in problems])
    if Path(topology_of(checks_path)).resolve() != lab_path.resolve():
        problems.append((("checks",), f"{checks_path} is about {topology_of(checks_path)}, not this exercise's lab {lab_path}"))
    spec = load_checks(checks_path, seed=seed, lab_for=lambda t, s: lablib.build_lab(t, [], seed=s))
    ids = [c.id for c in spec.checks]
    named = [(("start", "fails", j), f) for j, f in enumerate(ex.start.fails)]
    named += [(("variants", i, "fails", j), f) for i, v in enumerate(ex.variants) for j, f in enumerate(v.fails)]
    for loc, f in named:
        if f not in ids:
            problems.append((loc, f"unknown check {f!r} (valid: {', '.join(ids)})"))
    stages = sorted({c.stage for c in spec.checks})
    if isinstance(ex.solution, dict):
        for stage in ex.solution:
            if stage not in stages:
                problems.append((("solution", stage), f"stage {stage} has no checks (stages of "
                                 f"{checks_path.name}: {', '.join(map(str, stages))})"))
    names = [v.name for v in ex.variants]
    for i, n in enumerate(names):
        if n in names[:i]:
            problems.append((("variants", i, "name"), f"variant {n!r} is named twice"))
    vals = with_topology_vars(checks_path, seed)
    solution = ex.solution.items() if isinstance(ex.solution, dict) else [(None, ex.solution)]
    keyed = [(("solution",) if stage is None else ("solution", stage), steps) for stage, steps in solution]
    for key, steps in [*keyed, *((("variants", i, "steps"), v.steps) for i, v in enumerate(ex.variants))]:
        _, unknown = variables.substitute(steps, vals, path=key)
        problems += unknown
    if problems:
        raise ValidationFailed(str(path), [_located(loc, msg, lines) for loc, msg in problems])
    return Loaded(path, ex, str(lab_path), spec, seed)


def steps_for(loaded: Loaded, steps: list[str]) -> list[tuple[str, Any]]:
    vals = with_topology_vars(loaded.checks.source, loaded.seed)
    return [parse_step(s) for s in variables.substitute(steps, vals)[0]]


def apply_steps(lab_name: str, steps: list[tuple[str, Any]], say: Callable[[str], None],
                replace: bool = False) -> None:
    """Each step in turn. `replace`: the lab first goes back to its starting settings, and the
    leading `set` steps are applied with that in one reconfiguration (a bond rebuilt, a
    controller restarted once, not once to go back and again per step): the same lab."""
    def announce(arg: list[tuple[str, Any]]) -> None:
        say("    linklab set " + " ".join(f"{p}={v}" for p, v in arg))

    if replace:
        k = next((i for i, (verb, _) in enumerate(steps) if verb != "set"), len(steps))
        for _, arg in steps[:k]:
            announce(arg)
        lablib.set_params(lab_name, [o for _, arg in steps[:k] for o in arg], replace=True, say=lambda _m: None)
        steps = steps[k:]
    for verb, arg in steps:
        if verb == "set":
            announce(arg)
            lablib.set_params(lab_name, arg, say=lambda _m: None)
        else:
            node, argv = arg
            say(f"    linklab {verb} {node} -- {' '.join(argv)}")
            full = lablib.exec_argv(lab_name, node, argv) if verb == "exec" else lablib.switch_tool_argv(lab_name, node, argv)
            runner.run(full, timeout=120)


@dataclass
class Stage:
    name: str
    expected: list[str]  # the ids that must fail
    failed: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)  # checks that did not pass and should have
    inconclusive: list[str] = field(default_factory=list)
    report: Report | None = None
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        """fail: a check failed that should not have, or one that should have failed passed;
        inconclusive: otherwise, when a measurement could not tell (it may hide either)."""
        failed, expected = set(self.failed), set(self.expected)
        if not failed <= expected or not expected <= failed | set(self.inconclusive) or self.unexpected:
            return "fail"
        return "inconclusive" if self.inconclusive else "pass"


def judge_stage(stage: Stage, report: Report) -> Stage:
    """What a stage's report says against what it expected: exactly the named checks fail, the
    rest pass or are skipped because one they require did not pass. Pure."""
    stage.report = report
    stage.failed = [r.id for r in report.results if r.verdict in ("fail", "warn")]
    stage.inconclusive = [r.id for r in report.results if r.verdict == "inconclusive"]
    stage.unexpected = [r.id for r in report.results if r.verdict == "skip" and not r.requires]
    return stage


def selftest(name: str, seed: str | None = None, lab_name: str | None = None,
             say: Callable[[str], None] = print, keep: bool = False, keep_raw: bool = False,
             only: Collection[str] | None = None) -> list[Stage]:
    """Build the exercise's lab and check each stage (linklab check --selftest); `keep`: leave the
    lab up; `keep_raw`: keep what the tools printed in each stage's report; `only`: these stages
    alone (start, solution, variants by name; each starts from the starting lab all the same)."""
    loaded = load(name, seed)
    ex = loaded.exercise
    lab_name = lab_name or _lab_name(loaded)
    if state.load(lab_name) is not None:
        raise StateError(f"lab {lab_name!r} is up: the selftest builds and removes its own",
                         hint=f"`linklab down {lab_name}`, or give the selftest's lab another name with --name")
    plan = [("start", [], ex.start.fails), ("solution", ex.steps(), [])]
    plan += [(v.name, ex.steps() + v.steps, v.fails) for v in ex.variants]
    if only is not None:
        unknown = sorted(set(only) - {p[0] for p in plan})
        if unknown:
            raise UsageError(f"exercise {name} has no stage {', '.join(unknown)} (its stages: "
                             f"{', '.join(p[0] for p in plan)})")
        plan = [p for p in plan if p[0] in only]
    stages: list[Stage] = []
    say(f"linklab: selftest of {loaded.path.parent.name} ({ex.title}), seed {loaded.seed}, lab {lab_name}")
    lablib.up(loaded.lab, name=lab_name, seed=loaded.seed, say=lambda _m: None)
    time.sleep(ex.settle)  # LACP, a controller: what `up` starts may need a moment to converge
    try:
        for i, (stage_name, steps, fails) in enumerate(plan):
            t0 = time.monotonic()
            say(f"  {stage_name}: " + (f"must fail {', '.join(fails)}" if fails else "every check must pass"))
            # Each stage after the first starts from the starting lab (whatever the stage before set).
            apply_steps(lab_name, steps_for(loaded, steps), say, replace=i > 0)
            if steps:
                time.sleep(ex.settle)
            report = run_checks(loaded.checks, lablib.handle(lab_name), say=lambda m: say("  " + m), keep_raw=keep_raw)
            st = judge_stage(Stage(stage_name, list(fails)), report)
            if st.verdict == "inconclusive":
                # A measurement the emulator or the host limited says nothing of the lab: once more.
                say(f"  {stage_name}: inconclusive ({', '.join(st.inconclusive)}): checking once more")
                # What the checks just did may need the settle too: a failover check's member, back
                # up, is aggregated again by LACP only after its next exchanges.
                time.sleep(ex.settle)
                report = run_checks(loaded.checks, lablib.handle(lab_name), say=lambda m: say("  " + m), keep_raw=keep_raw)
                st = judge_stage(Stage(stage_name, list(fails)), report)
            st.seconds = round(time.monotonic() - t0, 1)
            stages.append(st)
            say(f"  {stage_name}: {st.verdict.upper()} (failed: {', '.join(st.failed) or 'none'}"
                + (f"; inconclusive: {', '.join(st.inconclusive)}" if st.inconclusive else "") + f"; {st.seconds:.0f} s)")
            if _exec_steps(steps) and i + 1 < len(plan):
                # What exec/ovs steps changed need not be what `set` puts back: a new lab.
                lablib.down(lab_name, say=lambda _m: None)
                lablib.up(loaded.lab, name=lab_name, seed=loaded.seed, say=lambda _m: None)
                time.sleep(ex.settle)
    finally:
        if not keep and state.load(lab_name) is not None:
            lablib.down(lab_name, say=lambda _m: None)
    return stages


def mismatches(stage: Stage) -> list[tuple[Result, str]]:
    """Each check of a stage whose verdict is not the one written, with the one written (fail:
    the stage names it; pass: it does not, and a skip is right only for a check skipped because
    one it requires did not pass). Pure."""
    if stage.report is None:
        return []
    must_fail = set(stage.expected)
    out = []
    for r in stage.report.results:
        if r.id in must_fail:
            if r.verdict not in ("fail", "warn"):
                out.append((r, "fail"))
        elif r.verdict in ("fail", "warn", "inconclusive") or r.id in stage.unexpected:
            out.append((r, "pass"))
    return out


def junit(name: str, stages: list[Stage]) -> str:
    """JUnit XML of a selftest: one testcase per stage. A stage not as written is a <failure>
    listing each check not as written (expected, observed, detail); an inconclusive one is
    <skipped> with the checks to measure again."""
    from xml.etree import ElementTree as ET

    from linklab import junit as junit_xml
    suite = junit_xml.suite(f"selftest {name}")
    for st in stages:
        case = junit_xml.case(suite, f"linklab.selftest.{name}", st.name, st.seconds)
        text = "\n\n".join(
            f"{r.id}: must {written}, was {r.verdict}\nexpected: {r.expected}\nobserved: {r.observed}"
            + (f"\n{r.detail}" if r.detail else "") for r, written in mismatches(st))
        if st.verdict == "fail":
            wrong = ", ".join(f"{r.id} ({r.verdict}, must {w})" for r, w in mismatches(st))
            ET.SubElement(case, "failure", message=f"{st.name}: {wrong}"[:500], type="selftest").text = text
        elif st.verdict == "inconclusive":
            ET.SubElement(case, "skipped", message=f"inconclusive: {', '.join(st.inconclusive)}"[:500])
    return junit_xml.document("linklab check --selftest", suite, sum(s.seconds for s in stages))


def for_lab(checks_or_topology: str, seed: str | None) -> Loaded:
    """The exercise a running lab is of: the exercise.yaml beside its checks file or topology whose
    checks or lab is that file, loaded for the lab's seed (None: a lab built without one)."""
    target = Path(checks_or_topology).resolve()
    candidate = target.parent / "exercise.yaml"
    if candidate.is_file():
        data, _ = read_yaml(candidate)
        if isinstance(data, dict) and any((candidate.parent / str(data.get(k, ""))).resolve() == target
                                          for k in ("lab", "checks")):
            return load(str(candidate), seed, exact_seed=True)
    raise UsageError(f"{checks_or_topology} is not an exercise's lab or checks: no exercise.yaml beside it names it",
                     hint="--restore brings an exercise's lab to a stage's reference: "
                          "`linklab check exercises/NAME/checks.yaml --restore N`")


def restore_steps(loaded: Loaded, stage: int) -> list[str]:
    """The steps that bring the starting lab to the reference at the end of `stage`: the
    solution's of stages 1..`stage`. Raises UsageError for a stage the checks do not have, or
    an earlier stage of an exercise whose solution is one list (it has no checkpoints)."""
    stages = sorted({c.stage for c in loaded.checks.checks})
    if stage not in stages:
        raise UsageError(f"--restore {stage}: no such stage in {loaded.checks.source} "
                         f"(valid: {', '.join(map(str, stages))})")
    ex = loaded.exercise
    if isinstance(ex.solution, list) and stage != stages[-1]:
        raise UsageError(f"--restore {stage}: {loaded.path} gives its solution as one list, the reference at the "
                         f"end of its last stage ({stages[-1]}) only",
                         hint="give its steps per stage (solution: {1: [...], 2: [...]}) for a checkpoint per stage")
    return ex.steps(stage)


def restore(loaded: Loaded, lab_name: str, stage: int, say: Callable[[str], None] = print) -> None:
    """Bring the running lab `lab_name` to the reference at the end of `stage`: built again for
    its seed (what a student changed by hand, inside a node, no `set` could undo) and the
    solution's steps up to that stage applied, then `settle`."""
    steps = restore_steps(loaded, stage)
    record = state.require(lab_name)
    built_from = (record.get("topology") or {}).get("path")
    if built_from is None or Path(built_from).resolve() != Path(loaded.lab).resolve():
        raise UsageError(f"lab {lab_name} was built from {built_from}, not from {loaded.lab} "
                         f"(the lab of {loaded.path})")
    seed = (record.get("topology") or {}).get("seed")
    say(f"linklab: lab {lab_name} built again (seed {seed}), then the solution's steps of stages 1-{stage}")
    lablib.down(lab_name, say=lambda _m: None)
    lablib.up(loaded.lab, name=lab_name, seed=seed, say=lambda _m: None)
    apply_steps(lab_name, steps_for(loaded, steps), say)
    time.sleep(loaded.exercise.settle)


def _exec_steps(steps: list[str]) -> bool:
    return any(parse_step(s)[0] != "set" for s in steps)


def _lab_name(loaded: Loaded) -> str:
    data, _ = read_yaml(Path(loaded.lab))
    return str(data.get("name"))


def exit_code(stages: list[Stage]) -> int:
    return check_exit_code(s.verdict for s in stages)


def as_json(name: str, stages: list[Stage], raw: bool = False) -> dict[str, Any]:
    from linklab.check.output import as_json as report_json
    return {"schema": "linklab-selftest/2", "exercise": name, "exit_code": exit_code(stages),
            "stages": [{"name": s.name, "verdict": s.verdict, "must_fail": s.expected, "failed": s.failed,
                        "inconclusive": s.inconclusive, "seconds": s.seconds,
                        "report": report_json(s.report, raw) if s.report else None} for s in stages]}



def labs(loaded: Loaded) -> list:
    """The exercise's lab as --selftest builds it: at the start, and with each solution's and
    variant's `set` steps applied (where it runs must host all of them: linklab/placement.py)."""
    ex = loaded.exercise
    out = [lablib.build_lab(loaded.lab, [], seed=loaded.seed)]
    for steps in [ex.steps(), *(ex.steps() + v.steps for v in ex.variants)]:
        sets = [o for verb, arg in steps_for(loaded, steps) if verb == "set" for o in arg]
        if sets:
            out.append(lablib.build_lab(loaded.lab, sets, seed=loaded.seed))
    return out
