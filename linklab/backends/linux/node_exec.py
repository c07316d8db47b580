"""A node's `exec:` commands: run inside the node, in order, once the lab is built, each exit
code checked (containerlab's `exec:`, which runs after its links are wired).

Which commands a build runs. A node whose namespace this build made (a new node, a container
made anew) runs its whole list. Otherwise the commands it already ran, the same ones in the same
order from the first, are not run again, and the rest run: the command that failed last time and
those after it, a command added or changed (`linklab set`, an edited file) and those after it.
Nothing a command did is undone: a command that is run again must be one that can run twice
(`ip addr replace`, not `ip addr add`), or the node rebuilt (`linklab down`, then `up`).

Nodes run their lists side by side (each command is a process start, ~0.3 s under software
emulation); a node stops at its first failure, and every node's failure is reported at once.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from linklab import runner
from linklab.errors import CommandFailed
from linklab.model.resolved import Lab

# A command that starts a daemon must let it go (detached, its output closed or redirected):
# its caller waits for the command's output to end, as `docker exec` (containerlab) does.
TIMEOUT_S = 120.0
PARALLEL = 4
OUTPUT_LINES = 8


def first_to_run(wanted: list[list[str]], ran: list[list[str]]) -> int:
    """The index in `wanted` of the first command to run, given what the node already ran (in
    order, each with exit code 0): the length of their common beginning."""
    k = 0
    while k < len(wanted) and k < len(ran) and wanted[k] == ran[k]:
        k += 1
    return k


def words(argv: list[str]) -> str:
    """A command as a user reads (and could paste) it."""
    return shlex.join(argv)


class Failure:
    """One node's command that exited non-zero (or did not end)."""

    def __init__(self, node: str, index: int, total: int, err: CommandFailed):
        self.node, self.index, self.total, self.err = node, index, total, err

    def text(self) -> str:
        what = f"did not end within {TIMEOUT_S:g} s" if self.err.timed_out else f"exited {self.err.returncode}"
        out = (self.err.stderr or "") + (self.err.stdout or "")
        lines = [line for line in out.strip().splitlines() if line.strip()][-OUTPUT_LINES:]
        head = f"node {self.node}: exec command {self.index + 1} of {self.total} {what}: {words(self.err.argv)}"
        return "\n".join([head, *(f"    {line}" for line in lines)] if lines else [head + " (no output)"])


def run(lab: Lab, where: Callable[[str], str], env_of: Callable[[str], dict[str, str]], fresh: set[str],
        previous: dict[str, Any], say=print) -> tuple[dict[str, Any], list[Failure]]:
    """Run what each node still has to run. `where(node)` is where its commands run (runner's
    netns=), `env_of(node)` what they find in their environment beside the caller's, `fresh` the
    nodes whose namespace this build made, `previous` what the last build recorded. Returns the
    record to keep (node -> {"ran": the commands that exited 0, in order; "failed": the failure's
    text}) and the failures."""
    todo: dict[str, tuple[int, list[list[str]]]] = {}
    record: dict[str, Any] = {}
    for n in lab.nodes:
        if not n.exec:
            continue
        ran = [] if n.name in fresh else list((previous.get(n.name) or {}).get("ran", []))
        start = first_to_run(n.exec, ran)
        record[n.name] = {"ran": n.exec[:start]}
        if start < len(n.exec):
            todo[n.name] = (start, n.exec)
    if not todo:
        return record, []
    count = sum(len(cmds) - start for start, cmds in todo.values())
    say(f"  exec: {count} command{'s' if count != 1 else ''} in {', '.join(todo)}")

    def one(node: str) -> Failure | None:
        start, cmds = todo[node]
        netns, env = where(node), env_of(node)
        for i in range(start, len(cmds)):
            try:
                runner.run(cmds[i], netns=netns, timeout=TIMEOUT_S, env=env or None)
            except CommandFailed as e:
                failure = Failure(node, i, len(cmds), e)
                record[node]["failed"] = failure.text()
                return failure
            record[node]["ran"].append(cmds[i])
        return None

    with ThreadPoolExecutor(max_workers=min(PARALLEL, len(todo))) as pool:
        failures = [f for f in pool.map(one, list(todo)) if f is not None]
    return record, failures
