"""A sweep that measures what it is told, one step at a time: how `linklab ab` interleaves two
arms, each a `linklab sweep EXP --stepwise` of its own code and lab (linklab/ab/arms.py).

One JSON object per line. The sweep speaks first, once its lab is up and its run is open:
    {"hello": {"run": PATH, "repetitions": N, "pause": S, "points": [{"id", "key", "axes"}, ...],
               "todo": {point id: [rep, ...]}}}
then answers each command with one line:
    {"do": "prepare", "point": ID}          -> {"ok": true, "preflight_ok": bool, "problems": [...]}
    {"do": "measure", "point": ID, "rep": K} -> {"ok": true, "error": TEXT|null, "flags": TEXT}
                                               (measured once more first if the host was busy, as
                                               any sweep does unless --no-rerun-disturbed)
    {"do": "end"}                           -> {"ok": true}, and the sweep ends as any sweep does
    {"do": "end", "down": true}             -> the same, then the sweep takes its lab down itself
                                               (a driver need not start a linklab of its own for
                                               it; an arm too old to know says {"ok": true} and
                                               leaves its lab up, as before)
A command it cannot carry out gets {"ok": false, "error": TEXT} and the sweep goes on; the end of
stdin ends it too (its driver is gone). Everything else the sweep says goes to stderr: stdout is
the protocol's alone (dup'd away before anything else can print, a child process's output
included). What a step measures is recorded in the run as by any sweep, so `linklab report` and
the verdict read an arm like any run.
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO, Any

from linklab.errors import LinklabError
from linklab.sweep.engine import Prepared, Sweep, measure_settled, prepare_point
from linklab.sweep.matrix import Point

PROTOCOL = 1  # bumped when a command or a reply changes meaning: the driver refuses another


def protocol_stream() -> IO[str]:
    """This process's stdout, kept for the protocol; fd 1 then points at stderr, so that nothing
    else (a say(), a child's output) can write a line the driver would read."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def serve(sweep: Sweep, points: list[Point], todo: dict[str, list[int]],
          commands: IO[str] | None = None, replies: IO[str] | None = None) -> dict[str, Any]:
    """The stepwise order (engine.Order): hello, then one reply per command until "end"; the end
    command ({} when stdin ended first), so the caller can do what it asks once the sweep ends."""
    commands = commands if commands is not None else sys.stdin
    replies = replies if replies is not None else protocol_stream()
    by_id = {p.id: p for p in points}
    prepared: Prepared | None = None
    measured: set[tuple[str, int]] = set()  # asked twice is refused, even before its write lands

    def reply(**msg: Any) -> None:
        replies.write(json.dumps(msg, default=str) + "\n")
        replies.flush()

    reply(hello={"protocol": PROTOCOL, "run": str(sweep.store.path), "repetitions": sweep.exp.repetitions,
                 "pause": sweep.exp.pause,
                 "points": [{"id": p.id, "key": p.key, "axes": dict(p.axes)} for p in points], "todo": todo})
    for line in commands:
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
        except ValueError:
            cmd = None
        if not isinstance(cmd, dict):
            reply(ok=False, error=f"not a JSON command object: {line.strip()[:200]}")
            continue
        do = cmd.get("do")
        if do == "end":
            reply(ok=True)
            return cmd
        point = by_id.get(cmd.get("point"))
        if do not in ("prepare", "measure") or point is None:
            reply(ok=False, error=f"unknown command or point: {line.strip()[:200]} (commands: prepare, measure, "
                                  f"end; points: {', '.join(by_id)})")
            continue
        if do == "prepare":
            try:
                prepared = prepare_point(sweep, point)
            except LinklabError as e:
                prepared = None
                reply(ok=False, error=f"preparing {point.key}: {e}")
                continue
            reply(ok=True, preflight_ok=prepared.preflight.ok, problems=list(prepared.preflight.problems))
            continue
        rep = cmd.get("rep")
        if prepared is None or prepared.point.id != point.id:
            reply(ok=False, error=f"measure {point.key}: prepare it first")
        elif rep not in todo.get(point.id, []) or (point.id, rep) in measured:
            reply(ok=False, error=f"measure {point.key}: rep {rep!r} is not a repetition left to measure")
        else:
            measured.add((point.id, rep))
            sweep.progress.start_unit(f"{point.key} rep {rep}")
            row = measure_settled(sweep, prepared, rep)
            sweep.progress.finish_unit()
            reply(ok=True, error=row.get("error"), flags=row.get("flags") or "")
    return {}
