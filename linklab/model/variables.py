"""Per-student variants: `vars:` declared in a topology or a checks file, and `${name}` written
in their values, replaced by one value per variable chosen from a seed (a student's id).

    vars:
      members: {choices: [2, 3]}           # one of these
      mtu: {range: [3000, 4000], step: 500}  # lo, lo+step, ... up to hi
    links:
      - endpoints: [h1, h2]
        mtu: ${mtu}                        # the whole value: keeps its type (an integer here)
        name: bond${members}               # inside text: the value's text

Without a seed every variable takes its `default` (else its first choice, or the range's low
end), so the file is a lab as it stands. With one, the value is drawn from sha256 of the seed,
the variable's name and its declaration: a topology and its checks that declare a variable
alike get the same value from the same seed, on any machine, in any order. Pure.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import ValidationError, model_validator

from linklab.model.loader import pydantic_problems
from linklab.model.topology import Model

Scalar = int | float | str | bool
REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_RANGE_VALUES = 100_000


class Variable(Model):
    """One variable: `choices` or `range` (with `step`), and optionally the value without a seed."""

    choices: list[Scalar] | None = None
    range: tuple[float, float] | None = None
    step: float = 1
    default: Scalar | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _one_kind(self):
        if (self.choices is None) == (self.range is None):
            raise ValueError("give either choices: [a, b, ...] or range: [low, high]")
        if self.choices is not None and not self.choices:
            raise ValueError("choices: needs at least one value")
        if self.range is not None:
            lo, hi = self.range
            if lo > hi:
                raise ValueError(f"range [{lo:g}, {hi:g}]: the low end is above the high end")
            if self.step <= 0:
                raise ValueError(f"step must be more than 0, got {self.step:g}")
            if (hi - lo) / self.step + 1 > MAX_RANGE_VALUES:
                raise ValueError(f"range [{lo:g}, {hi:g}] in steps of {self.step:g} has more than {MAX_RANGE_VALUES} values")
        if self.default is not None and self.default not in self.values():
            raise ValueError(f"default {self.default!r} is not one of its values")
        return self

    def values(self) -> list[Scalar]:
        if self.choices is not None:
            return list(self.choices)
        lo, hi = self.range
        n = int((hi - lo) / self.step + 1e-9) + 1
        whole = all(float(x).is_integer() for x in (lo, hi, self.step))
        return [int(lo + i * self.step) if whole else round(lo + i * self.step, 9) for i in range(n)]

    def pick(self, seed: str | None, name: str) -> Scalar:
        values = self.values()
        if seed is None:
            return self.default if self.default is not None else values[0]
        declared = json.dumps(self.model_dump(mode="json", exclude={"description", "default"}), sort_keys=True)
        digest = hashlib.sha256(f"linklab-vars\0{seed}\0{name}\0{declared}".encode()).hexdigest()
        return values[int(digest, 16) % len(values)]


Problem = tuple[tuple, str]


def declared(data: dict, key: str = "vars") -> tuple[dict[str, Variable], list[Problem]]:
    """The variables a file's data declares under `key`, and the problems with them (path, message)."""
    raw = data.get(key)
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [((key,), f"expected a mapping (name: {{choices: [...]}} or {{range: [lo, hi]}}), got {type(raw).__name__}")]
    out: dict[str, Variable] = {}
    problems: list[Problem] = []
    for name, spec in raw.items():
        if not NAME.match(str(name)):
            problems.append(((key, name), f"bad variable name {name!r} (letters, digits and _, not starting with a digit)"))
            continue
        try:
            out[str(name)] = Variable.model_validate(spec if spec is not None else {})
        except ValidationError as e:
            problems += pydantic_problems(e, Variable, prefix=(key, name))
    return out, problems


def values(variables: dict[str, Variable], seed: str | None) -> dict[str, Scalar]:
    """Each variable's value for this seed (None: their defaults)."""
    return {name: v.pick(seed, name) for name, v in variables.items()}


def substitute(data: Any, vals: dict[str, Scalar], skip: tuple[str, ...] = ("vars",),
               path: tuple = ()) -> tuple[Any, list[Problem]]:
    """`data` with every `${name}` replaced (top-level keys in `skip` left as they are), and the
    references to variables nobody declared, each with its path."""
    problems: list[Problem] = []

    def walk(node: Any, here: tuple) -> Any:
        if isinstance(node, dict):
            return {k: (v if not here and k in skip else walk(v, here + (k,))) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, here + (i,)) for i, v in enumerate(node)]
        if isinstance(node, str) and "${" in node:
            unknown = [m for m in REF.findall(node) if m not in vals]
            if unknown:
                valid = ", ".join(vals) or "none declared"
                problems.append((here, f"unknown variable {', '.join(map(repr, unknown))} (valid: {valid}; declare it under vars:)"))
                return node
            whole = REF.fullmatch(node.strip())
            if whole:
                return vals[whole[1]]
            return REF.sub(lambda m: _text(vals[m[1]]), node)
        return node

    return walk(data, path), problems


def _text(v: Scalar) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{v:g}" if isinstance(v, float) else str(v)


def references(data: Any) -> set[str]:
    """Names of every variable `data` refers to."""
    if isinstance(data, dict):
        return set().union(*(references(v) for v in data.values())) if data else set()
    if isinstance(data, list):
        return set().union(*(references(v) for v in data)) if data else set()
    return set(REF.findall(data)) if isinstance(data, str) else set()
