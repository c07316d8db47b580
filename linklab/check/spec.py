"""A checks file, or a topology's `checks:` section: read, substituted for a student's seed,
validated (each check by its kind, then against the lab it names), every problem at once with
its path and line:

    topology: lab.yaml          # a separate checks file names its lab (relative to itself)
    vars:                       # optional: its own, or the topology's (declared alike: same values)
      mtu: {choices: [4000, 9000]}
    checks:
      - id: core-mtu
        kind: mtu
        link: core
        mtu: ${mtu}
        points: 2
        stage: 1
        hint: one hop still has the default MTU; `linklab status` shows each interface's
      - id: path-mtu
        kind: path_mtu
        from: h1
        to: h2
        mtu: ${mtu}
        requires: [core-mtu]

Settings every check has: id, kind, title, points, hint, stage, requires, hidden, severity
(fail | warn) (linklab/check/kinds/base.py: Check). The rest are the kind's (linklab/check/kinds/).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from linklab.check.kinds import REGISTRY, get
from linklab.check.kinds.base import Check
from linklab.errors import LinklabError, UsageError, ValidationFailed
from linklab.model import variables
from linklab.model.loader import _located, line_map, pydantic_problems, read_yaml
from linklab.model.resolved import Lab

FILE_KEYS = ("topology", "title", "description", "vars", "checks")
# What tells a topology with a checks: section from a checks file naming one.
TOPOLOGY_KEYS = ("hosts", "switches", "links")


@dataclass(frozen=True)
class ChecksFile:
    source: str  # the file the checks were read from
    topology: str  # the topology they are about
    title: str | None
    checks: tuple[Check, ...]
    seed: str | None = None
    values: dict[str, Any] = field(default_factory=dict)  # each variable's value for the seed
    sha256: str | None = None  # of the file's bytes: a saved result names the checks it was made by

    def by_id(self, check_id: str) -> Check:
        for c in self.checks:
            if c.id == check_id:
                return c
        raise KeyError(check_id)


def is_checks_file(data: dict) -> bool:
    """A checks file (not a topology with checks, not an experiment)."""
    return "checks" in data and not any(k in data for k in TOPOLOGY_KEYS) and "matrix" not in data


def topology_of(path: str | Path, data: dict | None = None) -> str:
    """The topology a checks file is about: its `topology:` relative to the file (a topology
    with a checks: section is about itself)."""
    path = Path(path)
    if data is None:
        data, _ = read_yaml(path)
    if not is_checks_file(data):
        return str(path)
    topo = data.get("topology")
    if not isinstance(topo, str) or not topo:
        raise ValidationFailed(str(path), [_located(("topology",), "required setting is missing: the topology file "
                                                    "these checks are about (relative to this file)",
                                                    line_map(path.read_text()))])
    return str(_relative(path, topo))


def _relative(path: Path, other: str) -> Path:
    p = Path(other)
    return p if p.is_absolute() else Path(os.path.normpath(path.parent / p))


def load_checks(path: str | Path, lab: Lab | None = None, seed: str | None = None,
                lab_for=None) -> ChecksFile:
    """Read `path` (a checks file, or a topology with a checks: section) for `seed`, and
    validate it against `lab` (the running lab), or, without one, against the lab `lab_for(topology
    path, seed)` resolves (linklab.lab.build_lab). Raises ValidationFailed with every problem."""
    path = Path(path)
    data, text = read_yaml(path)
    lines = line_map(text)
    problems: list[tuple[tuple, str]] = []
    separate = is_checks_file(data)
    topo_path: str | None = str(path)
    if separate:
        for key in data:
            if key not in FILE_KEYS:
                problems.append(((key,), f"unknown setting {key!r} (valid: {', '.join(FILE_KEYS)})"))
        try:
            topo_path = topology_of(path, data)
        except ValidationFailed:
            topo_path = None
            problems.append((("topology",), "required setting is missing: the topology file these checks are "
                                            "about (relative to this file)"))
    declared, var_problems = variables.declared(data)
    problems += var_problems
    if separate and topo_path is not None:
        problems += _shared_vars(declared, topo_path)
        declared = {**_topology_vars(topo_path), **declared}  # the topology's, for ${name} in checks
    values = variables.values(declared, seed)
    raw_checks = data.get("checks")
    if raw_checks is None and not separate:
        raw_checks = []
    if not isinstance(raw_checks, list):
        problems.append((("checks",), f"expected a list of checks, got {type(raw_checks).__name__}"))
        raw_checks = []
    subst, unknown = variables.substitute(raw_checks, values, path=("checks",))
    problems += unknown
    checks, item_problems = _validate_items(subst)
    # A setting that names an unknown variable is said once, as that.
    problems += [(loc, msg) for loc, msg in item_problems if loc not in {u for u, _ in unknown}]
    problems += _duplicate_ids(subst) + _relations(checks)
    if lab is None and lab_for is not None and topo_path is not None:
        try:
            lab = lab_for(topo_path, seed)
        except LinklabError as e:
            problems.append((("topology",), f"the topology {topo_path} does not load: {e}"
                             + (f" ({'; '.join(e.problems[:3])})" if isinstance(e, ValidationFailed) else "")))
    if lab is not None:
        for i, c in checks:
            problems += [(("checks", i) + loc, msg) for loc, msg in get(c.kind).problems(c, lab)]
    if problems:
        ordered = sorted(dict.fromkeys(problems), key=lambda p: lines.line(p[0]) or 0)
        raise ValidationFailed(str(path), [_located(loc, msg, lines) for loc, msg in ordered])
    assert topo_path is not None
    return ChecksFile(str(path), topo_path, data.get("title") if separate else data.get("description"),
                      tuple(c for _, c in checks), seed, values, file_sha256(path))


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _shared_vars(declared: dict[str, variables.Variable], topo_path: str) -> list[tuple[tuple, str]]:
    """A variable both files declare must be declared alike, or one seed would give two values."""
    try:
        topo_data, _ = read_yaml(Path(topo_path))
    except (ValidationFailed, OSError, UsageError):
        return [(("topology",), f"cannot read the topology {topo_path} these checks are about")]
    theirs, _ = variables.declared(topo_data)
    out = []
    for name, var in declared.items():
        other = theirs.get(name)
        if other is not None and other.model_dump(exclude={"description"}) != var.model_dump(exclude={"description"}):
            out.append((("vars", name), f"declared differently in {topo_path}: one seed would give the lab and its "
                                        "checks different values (declare it once, in the topology)"))
    return out


def _topology_vars(topo_path: str) -> dict[str, variables.Variable]:
    try:
        return variables.declared(read_yaml(Path(topo_path))[0])[0]
    except (ValidationFailed, OSError, UsageError):
        return {}


def with_topology_vars(path: str | Path, seed: str | None) -> dict[str, Any]:
    """The values a seed gives a checks file's variables and its topology's (for steps written
    with ${name}: a reference solution, a variant)."""
    data, _ = read_yaml(Path(path))
    out: dict[str, Any] = {}
    topo = topology_of(path, data)
    if topo != str(path):
        tdata, _ = read_yaml(Path(topo))
        out.update(variables.values(variables.declared(tdata)[0], seed))
    out.update(variables.values(variables.declared(data)[0], seed))
    return out


def _validate_items(items: list) -> tuple[list[tuple[int, Check]], list[tuple[tuple, str]]]:
    good: list[tuple[int, Check]] = []
    problems: list[tuple[tuple, str]] = []
    for i, item in enumerate(items):
        here = ("checks", i)
        if not isinstance(item, dict):
            problems.append((here, f"expected a mapping of settings (id, kind, ...), got {type(item).__name__}"))
            continue
        kind = item.get("kind")
        if kind is None:
            problems.append((here + ("kind",), f"required setting is missing (valid: {', '.join(REGISTRY)})"))
            continue
        if kind not in REGISTRY:
            problems.append((here + ("kind",), f"unknown kind {kind!r} (valid: {', '.join(REGISTRY)})"))
            continue
        params = REGISTRY[kind].Params
        if "expect" in item and REGISTRY[kind].negation is None:
            problems.append((here + ("expect",), f"a {kind} check cannot be negated ({negatable()})"))
            item = {k: v for k, v in item.items() if k != "expect"}
        try:
            good.append((i, params.model_validate(item)))
        except ValidationError as e:
            problems += pydantic_problems(e, params, prefix=here)
    return good, problems


def negatable() -> str:
    """Which kinds take `expect:`, with the word that negates each (one per family of kinds)."""
    by: dict[str, list[str]] = {}
    for name, k in REGISTRY.items():
        if k.negation:
            by.setdefault(k.negation, []).append(name)
    return "; ".join(f"expect: {word} is for {', '.join(names)}" for word, names in by.items())


def _duplicate_ids(items: list) -> list[tuple[tuple, str]]:
    """Ids used twice (also by checks that failed validation otherwise)."""
    problems = []
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        cid = item.get("id") if isinstance(item, dict) else None
        if not isinstance(cid, str):
            continue
        if cid in first:
            problems.append((("checks", i, "id"), f"id {cid!r} is already used by checks[{first[cid]}]"))
        first.setdefault(cid, i)
    return problems


def _relations(checks: list[tuple[int, Check]]) -> list[tuple[tuple, str]]:
    """`requires` naming checks that exist, of earlier stages only, and no cycle."""
    problems = []
    by_id = {c.id: c for _, c in checks}
    for i, c in checks:
        for j, r in enumerate(c.requires):
            if r == c.id:
                problems.append((("checks", i, "requires", j), "a check cannot require itself"))
            elif r not in by_id:
                problems.append((("checks", i, "requires", j),
                                 f"unknown check {r!r} (valid: {', '.join(x for x in by_id if x != c.id) or 'none'})"))
            elif by_id[r].stage > c.stage:
                problems.append((("checks", i, "requires", j),
                                 f"{r!r} is in stage {by_id[r].stage}, after this check's stage {c.stage}: "
                                 "a check may require checks of its own stage or earlier ones"))
    index = {c.id: i for i, c in checks}
    for cycle in _cycles(by_id):
        problems.append((("checks", index[cycle[0]], "requires"), "requires go round in a circle: " + " -> ".join(cycle)))
    return problems


def _cycles(by_id: dict[str, Check]) -> list[list[str]]:
    out, done = [], set()
    for start in by_id:
        stack, path = [start], []
        seen_here: dict[str, int] = {}

        def visit(node: str) -> None:
            if node in done or node not in by_id:
                return
            if node in seen_here:
                cyc = path[seen_here[node]:] + [node]
                if sorted(cyc[:-1]) not in [sorted(c[:-1]) for c in out]:
                    out.append(cyc)
                return
            seen_here[node] = len(path)
            path.append(node)
            for r in by_id[node].requires:
                visit(r)
            path.pop()
            del seen_here[node]

        visit(stack[0])
        done.add(start)
    return out


def order(checks: tuple[Check, ...] | list[Check]) -> list[Check]:
    """File order, except that a check comes after every check it requires."""
    by_id = {c.id: c for c in checks}
    out: list[Check] = []
    placed: set[str] = set()

    def place(c: Check) -> None:
        if c.id in placed:
            return
        placed.add(c.id)
        for r in c.requires:
            if r in by_id:
                place(by_id[r])
        out.append(c)

    for c in checks:
        place(c)
    return out
