"""A node's `exec:` commands: run inside the node, in order, once the lab is built, each exit
code checked (containerlab's `exec:`, which runs after its links are wired).

Which commands a build runs. A node whose namespace this build made (a new node, a container
made anew) runs its whole list. Otherwise the commands it already ran, the same ones in the same
order from the first, are not run again, and the rest run: the command that failed last time and
those after it, a command added or changed (`linklab set`, an edited file) and those after it.
Nothing a command did is undone: a command that is run again must be one that can run twice
(`ip addr replace`, not `ip addr add`), or the node rebuilt (`linklab down`, then `up`).

A service (an item with `background: true`, linklab/backends/linux/services.py) is started at
its place in the list and waited for until ready before the next item runs. One that already
runs as written is left running, even when the items before it run again; one that exited, or
that `linklab set --restart NODE/NAME` names, is started again alone; one whose item changed is
stopped and started again, with the items after it; one no longer in the list is stopped.

Nodes run their lists side by side (each command is a process start, ~0.3 s under software
emulation); a node stops at its first failure, and every node's failure is reported at once.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from linklab import runner
from linklab.backends.linux import services
from linklab.errors import CommandFailed
from linklab.ready import NotReady
from linklab.model.resolved import Lab, Service

# A command that starts a daemon must let it go (detached, its output closed or redirected):
# its caller waits for the command's output to end, as `docker exec` (containerlab) does.
TIMEOUT_S = 120.0
PARALLEL = 4
OUTPUT_LINES = 8


def key(item: list[str] | Service) -> Any:
    """An exec: item as the state file records it (what `ran` holds): a command's argv, a
    service's mapping."""
    return item.model_dump(mode="json") if isinstance(item, Service) else item


def first_to_run(wanted: list, ran: list) -> int:
    """The index in `wanted` of the first item to run, given what the node already ran (in
    order, each with exit code 0 or, a service, ready): the length of their common beginning."""
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


class ServiceFailure:
    """One node's service that did not become ready (stopped: nothing of it is left running)."""

    def __init__(self, node: str, index: int, total: int, svc: Service, err: NotReady, log: str):
        self.node, self.index, self.total, self.svc, self.err, self.log = node, index, total, svc, err, log

    def text(self) -> str:
        why, _, out = str(self.err).partition("; its output's last lines:\n")
        head = (f"node {self.node}: service {self.svc.name} (exec item {self.index + 1} of {self.total}): "
                f"{why.replace('; it printed nothing', ' (it printed nothing)')}: {words(self.svc.run)}")
        lines = [line for line in out.splitlines() if line.strip()][-OUTPUT_LINES:]
        return "\n".join([head, *(f"    {line}" for line in lines), f"    its log: {self.log}"])


def run(lab: Lab, where: Callable[[str], str], env_of: Callable[[str], dict[str, str]], fresh: set[str],
        previous: dict[str, Any], say=print, *, processes: list[dict[str, Any]] = (),
        restart: set[tuple[str, str]] = frozenset()) -> tuple[dict[str, Any], list[Any], list[dict[str, Any]]]:
    """Run what each node still has to run, start the services that do not run. `where(node)` is
    where its commands run (runner's netns=), `env_of(node)` what they find in their environment
    beside the caller's, `fresh` the nodes whose namespace this build made, `previous` what the
    last build recorded, `processes` the processes it owned (its services among them), `restart`
    the (node, service) pairs to start again even if they run. Returns the record to keep
    (node -> {"ran": the items that exited 0 or became ready, in order; "failed": the failure's
    text}), the failures and the records of the services the lab owns now."""
    old_services = services.records(list(processes))
    nodes = [n for n in lab.nodes if n.exec or services.records(old_services, n.name)]
    record: dict[str, Any] = {}
    plans: dict[str, tuple[int, list[int]]] = {}
    for n in nodes:
        ran = [] if n.name in fresh else list((previous.get(n.name) or {}).get("ran", []))
        start = first_to_run([key(x) for x in n.exec], ran)
        old = {r["name"]: r for r in services.records(old_services, n.name)}
        again = [i for i, x in enumerate(n.exec[:start]) if isinstance(x, Service)
                 and ((n.name, x.name) in restart or x.name not in old or not services.same(old[x.name], x))]
        record[n.name] = {"ran": [key(x) for x in n.exec[:start]]}
        plans[n.name] = (start, again)
    kept: list[dict[str, Any]] = []
    count = sum(len(n.exec) - plans[n.name][0] + len(plans[n.name][1]) for n in nodes)
    if count:
        todo = [n.name for n in nodes if len(n.exec) > plans[n.name][0] or plans[n.name][1]]
        say(f"  exec: {count} item{'s' if count != 1 else ''} in {', '.join(todo)}")

    def one(node: str) -> Failure | ServiceFailure | None:
        items, (start, again) = lab.node(node).exec, plans[node]
        netns, env = where(node), env_of(node)
        old = {r["name"]: r for r in services.records(old_services, node)}
        mine: list[dict[str, Any]] = []
        try:
            for i, item in enumerate(items):
                if i < start and i not in again:
                    if isinstance(item, Service):
                        mine.append(old.pop(item.name))  # runs as written: left running
                    continue
                if isinstance(item, list):
                    try:
                        runner.run(item, netns=netns, timeout=TIMEOUT_S, env=env or None)
                    except CommandFailed as e:
                        failure = Failure(node, i, len(items), e)
                        record[node]["failed"] = failure.text()
                        return failure
                else:
                    if item.name in old:
                        services.stop([old.pop(item.name)])
                    if i < start:
                        say(f"  exec: {node}: service {item.name} started again")
                    rec, proc = services.start(lab.name, node, item, netns, env)
                    try:
                        services.wait(item, proc, netns, rec)
                    except NotReady as e:
                        services.stop([rec])
                        failure = ServiceFailure(node, i, len(items), item, e, rec["log"])
                        record[node]["failed"] = failure.text()
                        return failure
                    mine.append(rec)
                if i >= start:
                    record[node]["ran"].append(key(item))
            services.stop(list(old.values()))  # services no longer in the list
            old = {}
            return None
        finally:
            # Reached or not (a failure stops the list): what still runs stays owned.
            kept.extend(mine + [r for r in old.values() if services.running(r)])

    with ThreadPoolExecutor(max_workers=max(1, min(PARALLEL, len(nodes)))) as pool:
        failures = [f for f in pool.map(one, [n.name for n in nodes]) if f is not None]
    return record, failures, kept

