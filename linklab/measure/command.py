"""A program of the user's own as the traffic (`tool.kind: command`): its argv with the lab's names
substituted and the metrics read from its output: pure. Waiting until its server is ready is
linklab/ready.py's (the node services' wait too).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping
from typing import Any

from linklab.measure.base import MeasurementError
from linklab.ready import tail

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


class CommandError(MeasurementError):
    """The program failed, or what it printed does not hold a declared metric."""


def split(command: str | list[str] | tuple[str, ...]) -> list[str]:
    """A command as an argv: a string split as a POSIX shell would split it (quotes, escapes),
    but never run by one; a list as it is."""
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if not argv:
        raise ValueError("empty command")
    return argv


def placeholders(command: str | list[str] | tuple[str, ...]) -> list[str]:
    """The ${NAME} placeholders a command uses, in order."""
    parts = [command] if isinstance(command, str) else list(command)
    return [m for p in parts for m in PLACEHOLDER.findall(str(p))]


def substitute(command: str | list[str] | tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    """The argv with every ${NAME} replaced by values[NAME] (after splitting: a value with spaces
    stays one argument). An unknown name raises ValueError listing the valid ones."""
    def one(arg: str) -> str:
        def repl(m: re.Match) -> str:
            if m[1] not in values:
                raise ValueError(f"unknown placeholder ${{{m[1]}}} (valid: {', '.join('${' + k + '}' for k in values)})")
            return str(values[m[1]])
        return PLACEHOLDER.sub(repl, arg)
    return [one(a) for a in split(command)]


# -- metrics ---------------------------------------------------------------------------------

def json_document(text: str) -> Any:
    """The program's JSON output: the whole of it, or else its last line that is JSON (a program
    may log before its result)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise CommandError("the output holds no JSON document")


def at_path(doc: Any, path: str) -> Any:
    """doc["a"]["b"][0] for "a.b.0": a dotted path through objects, whole numbers index arrays."""
    here = doc
    for i, part in enumerate(path.split(".")):
        where = ".".join(path.split(".")[:i]) or "the document"
        if isinstance(here, dict):
            if part not in here:
                raise CommandError(f"no {part!r} in {where} (it has: {', '.join(map(str, here)) or 'nothing'})")
            here = here[part]
        elif isinstance(here, list) and re.fullmatch(r"-?\d+", part):
            try:
                here = here[int(part)]
            except IndexError:
                raise CommandError(f"{where} has {len(here)} items, no [{part}]") from None
        else:
            raise CommandError(f"{where} is {type(here).__name__}, not an object: no {part!r}")
    return here


def number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise CommandError(f"{what} is {json.dumps(value)[:80]}, not a number")
    try:
        v = float(value)
    except ValueError:
        raise CommandError(f"{what} is {str(value)[:80]!r}, not a number") from None
    if not math.isfinite(v):
        raise CommandError(f"{what} is {v}, not a finite number")
    return v


def extract(name: str, spec: Mapping[str, Any], text: str) -> float:
    """One declared metric from the program's output: {"json": dotted path} or {"regex": one group}.
    CommandError names the metric and why."""
    try:
        if spec.get("json") is not None:
            return number(at_path(json_document(text), spec["json"]), f"json: {spec['json']}")
        m = re.search(spec["regex"], text, re.MULTILINE)
        if m is None:
            raise CommandError(f"no match for regex {spec['regex']!r}")
        return number(m.group(1), f"regex: {spec['regex']!r}")
    except CommandError as e:
        raise CommandError(f"{name}: {e}") from None


def read_metrics(metrics: Mapping[str, Mapping[str, Any]], text: str) -> dict[str, float]:
    """Every declared metric, or CommandError naming each that cannot be read and the output's tail."""
    out, problems = {}, []
    for name, spec in metrics.items():
        try:
            out[name] = extract(name, spec, text)
        except CommandError as e:
            problems.append(str(e))
    if problems:
        raise CommandError("; ".join(problems) + f"; the output's last lines:\n{tail(text) or '(nothing)'}")
    return out
