"""`tool.kind: command`: a program of the user's own as the traffic. Its server (if any) runs on
the point's server node, kept up for the point (and the next, when that wants the same command);
its client runs on the client node once per repetition; the metrics the experiment declares are
read from the client's output (linklab/measure/command.py). Both run in the experiment's
directory (under `linklab ab`, the arm's revision's), by argv, never through a shell.

Raw output per repetition: client.out, client.err, and server.log, what the server printed
while the repetition ran (all of it at the point's first repetition). A client that exits
non-zero, or whose output lacks a declared metric, fails its repetition with the output's tail.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from linklab import procs, runner
from linklab.handle import LabHandle
from linklab.measure.command import PLACEHOLDER, CommandError, read_metrics, split, substitute
from linklab.ready import NotReady, tail, wait_ready
from linklab.sweep.kinds.base import Kind

OUTPUT_GRACE_S = 30.0  # beyond the tool's timeout: a client killed past it still gives its output


def same_command(argv: list[str], want: list[str]) -> bool:
    """Whether a running process's argv is the command `want`, its ${...} arguments matching any."""
    return len(argv) == len(want) and all(PLACEHOLDER.search(w) or a == w for a, w in zip(argv, want))


def values(handle: LabHandle, plan: Any, as_seen_by: str) -> dict[str, str]:
    """${server}, ${client}, ${NODE} as addresses `as_seen_by`'s hosts file gives them (the
    name itself where it gives none), ${point.AXIS} as the point's value."""
    lab = handle.lab
    me = lab.node(as_seen_by)

    def addr(name: str) -> str:
        target = name if plan.tool.ip == 4 else f"{name}-v6"
        return me.address_of(target) or target

    out = {n.name: addr(n.name) for n in lab.nodes}
    out.update(server=addr(plan.server), client=addr(plan.client))
    out.update({f"point.{axis}": str(v) for axis, v in (getattr(plan, "axes", None) or {}).items()})
    return out


class CommandTraffic:
    """One repetition: the client run on the client node; its metrics read in row()."""

    def __init__(self, kind: CommandKind, argv: list[str], timeout: float):
        self.kind, self.argv, self.timeout = kind, argv, timeout
        self.proc: subprocess.Popen | None = None
        self.out = self.err = ""
        self.returncode: int | None = None

    def prepare(self, rep) -> None:
        if self.kind.failed is not None:  # the point's server never became ready
            raise CommandError(str(self.kind.failed))

    def start(self, rep) -> None:
        self.proc = runner.start(self.argv, netns=rep.client_ns, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 cwd=self.kind.workdir)

    def wait(self, rep) -> None:
        out, err = procs.communicate(self.proc, timeout=self.timeout)
        self.returncode = self.proc.returncode
        self.out, self.err = out.decode(errors="replace"), err.decode(errors="replace")
        rep.raw["client.out"] = self.out
        if self.err:
            rep.raw["client.err"] = self.err
        server = self.kind.server_output()
        if server:
            rep.raw["server.log"] = server

    def row(self, rep) -> dict[str, Any]:
        if self.returncode != 0:
            why = "was killed past its timeout" if self.returncode in (-9, -15) else f"exited {self.returncode}"
            raise CommandError(f"the client {why}; its output's last lines:\n"
                               f"{tail(self.out + self.err) or '(nothing)'}")
        return {**read_metrics(self.kind.metrics, self.out), "client_exit": self.returncode}


class CommandKind(Kind):
    name = "command"

    def __init__(self, workdir: Path, tool: Any = None):
        super().__init__(workdir, tool)
        self.metrics: dict[str, dict[str, Any]] = {}
        self.proc: subprocess.Popen | None = None
        self.key: tuple | None = None
        self.failed: Exception | None = None
        self._logs = Path(tempfile.mkdtemp(prefix="linklab-command-"))
        self.log: Path | None = None
        self._read = 0  # how much of the server's log the repetitions have taken

    def clean(self, handle: LabHandle) -> list[str]:
        """Servers of this command a killed sweep left running on the lab's nodes (they would hold
        its port): a process whose argv is the server command's, any ${...} argument aside."""
        tool = getattr(self.exp_tool, "server", None)
        if tool is None:
            return []
        want = split(tool)
        stopped = []
        for node in handle.lab.nodes:
            stale = [pid for pid in handle.backend.node_pids(handle.lab, node.name)
                     if same_command(procs.cmdline(pid), want)]
            procs.stop(stale, grace=0.5)
            stopped += [f"{' '.join(want)} on {node.name}"] * bool(stale)
        return stopped

    def serve(self, handle, plan, events) -> None:
        tool = plan.tool
        self.metrics = {name: m.spec() for name, m in tool.metrics.items()}
        if tool.server is None:
            self.stop()
            return
        argv = substitute(tool.server, values(handle, plan, plan.server))
        key = (handle.name, plan.server, tuple(argv), tuple(sorted(handle.lab.node(plan.server).sysctls.items())))
        if self.key == key and self.proc is not None and self.proc.poll() is None and self.failed is None:
            return
        self.stop()
        self.log, self._read = self._logs / f"server-{len(list(self._logs.iterdir()))}.log", 0
        with open(self.log, "wb") as f:
            self.proc = runner.start(argv, netns=handle.ns(plan.server), stdout=f, stderr=subprocess.STDOUT,
                                     cwd=self.workdir)
        self.key = key
        try:
            wait_ready(tool.ready.model_dump() if tool.ready else None, self.proc, netns=handle.ns(plan.server),
                       workdir=self.workdir, log=self.log)
        except NotReady as e:
            self.failed = e  # each repetition of the point fails with it (CommandTraffic.prepare)

    def traffic(self, handle, plan, omit, events) -> CommandTraffic:
        argv = substitute(plan.tool.client, values(handle, plan, plan.client))
        return CommandTraffic(self, argv, plan.tool.timeout)

    def server_output(self) -> str:
        """What the server printed since the last repetition took its output."""
        if self.log is None:
            return ""
        try:
            data = self.log.read_bytes()
        except OSError:
            return ""
        new, self._read = data[self._read:], len(data)
        return new.decode(errors="replace")

    def stop(self) -> None:
        if self.proc is not None:
            procs.stop_popen([self.proc])
        self.proc = self.key = self.failed = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._logs, ignore_errors=True)

    def columns(self, plan) -> dict[str, Any]:
        t = plan.tool
        return {"kind": self.name, "client": t.client if isinstance(t.client, str) else " ".join(t.client),
                "ip": t.ip}
