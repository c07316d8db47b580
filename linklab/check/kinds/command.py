"""command: a command run in a node (an argv list, or words split as a shell would split them,
but run without a shell) exits with `exit` (0), within `timeout` (10 s), and its standard output
matches a regular expression (`stdout:`) or, read as JSON, has a value at each path (`json:`
{path: value}; a path is keys and list indexes joined by dots: `0.dst`, `nexthops.1.dev`).
Any check a teacher can write as a command, with no Python.

    - {id: forwarding, kind: command, node: r1, run: "sysctl -n net.ipv4.ip_forward", stdout: "^1$"}
    - {id: ecmp, kind: command, node: h1, run: [ip, -j, route, show, 10.0.9.0/24],
       json: {0.nexthops.1.gateway: 10.0.2.2}}
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from linklab import units
from linklab.check.kinds.base import FAIL, PASS, Check, Context, Judgement, Kind, Regex, node_problem
from linklab.errors import CommandFailed
from linklab.model.resolved import Lab

MISSING = object()


def _argv(v):
    return shlex.split(v) if isinstance(v, str) else v


class Params(Check):
    node: str
    run: Annotated[list[str], BeforeValidator(_argv), Field(min_length=1)]
    exit: Annotated[int, Field(ge=0, le=255)] = 0
    stdout: Regex | None = None
    json_: Annotated[dict[str, Any] | None, Field(alias="json")] = None
    timeout: Annotated[float, BeforeValidator(units.parse_time), Field(gt=0, le=600)] = 10.0


def at(doc: Any, path: str) -> Any:
    """The value at a dotted path of a JSON document (MISSING when there is none). Pure."""
    for key in path.split("."):
        if isinstance(doc, list) and key.lstrip("-").isdigit() and -len(doc) <= int(key) < len(doc):
            doc = doc[int(key)]
        elif isinstance(doc, dict) and key in doc:
            doc = doc[key]
        else:
            return MISSING
    return doc


def same(have: Any, want: Any) -> bool:
    """Equal, or equal as written (YAML's 77 and `ip -j`'s "77")."""
    return have == want or (not isinstance(have, (dict, list)) and str(have) == str(want))


def mismatches(p: Params, out: dict[str, Any]) -> list[str]:
    """What of exit/stdout/json the command's run does not show. Pure."""
    if out.get("timed_out"):
        return [f"did not finish within {units.format_time(p.timeout)}"]
    wrong = [] if out.get("rc") == p.exit else [f"exit {out.get('rc')}, not {p.exit}"]
    text = out.get("stdout", "")
    if p.stdout is not None and not re.search(p.stdout, text, re.M):
        wrong.append(f"stdout does not match {p.stdout!r}")
    if p.json_:
        try:
            doc = json.loads(text)
        except ValueError:
            return wrong + ["stdout is not JSON"]
        for path, want in p.json_.items():
            have = at(doc, path)
            if have is MISSING:
                wrong.append(f"{path}: missing")
            elif not same(have, want):
                wrong.append(f"{path} = {json.dumps(have)}, not {json.dumps(want)}")
    return wrong


class Command(Kind):
    name = "command"
    Params = Params
    summary = "a command run in a node: its exit code, a regex or JSON values of its output, within a timeout"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        return node_problem(lab, p.node, ("node",))

    def expected(self, p: Params, lab: Lab) -> str:
        parts = [f"exit {p.exit}"] + ([f"stdout ~ {p.stdout!r}"] if p.stdout else []) + \
                [f"{k} = {json.dumps(v)}" for k, v in (p.json_ or {}).items()]
        return f"{p.node}: `{shlex.join(p.run)}` " + ", ".join(parts)

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        try:
            res = ctx.run(p.node, p.run, timeout=p.timeout)
        except CommandFailed as e:  # timed out (runner raises then, whatever check=)
            return {"timed_out": e.timed_out, "rc": e.returncode, "stdout": e.stdout, "stderr": e.stderr}
        return {"rc": res.returncode, "stdout": res.stdout, "stderr": res.stderr}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        wrong = mismatches(p, raw)
        out = " ".join((raw.get("stdout") or raw.get("stderr") or "").split())
        shown = ("timed out" if raw.get("timed_out") else f"exit {raw.get('rc')}") + (f": {out[:200]}" if out else "")
        return Judgement(FAIL if wrong else PASS, shown, "; ".join(wrong), {"rc": raw.get("rc")})
