"""UDP round trips under load (`measure: [udp_rtt]`): irtt (linklab/measure/irtt.py) sends one
small UDP packet every LOAD_INTERVAL_S from the client through the whole window to an irtt server
on the server node, beside the ICMP load ping (flent's RRUL runs both: a queue that treats UDP
and ICMP alike shows the same delay in each; one that hashes flows shows each its own). The row
keeps the round trips past slow start, as the load ping's (udp_rtt_p50_ms, _p95_ms, _loss_pct)."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

from linklab import procs, runner
from linklab.errors import EnvironmentProblem
from linklab.measure.irtt import IrttClient, IrttError, IrttServer
from linklab.measure.probes.base import Probe, Repetition
from linklab.measure.probes.ping import LOAD_INTERVAL_S, LOAD_SKIP_S
from linklab.setup_groups import install_command

RAW = "irtt.json"
READY_WAIT_LINES = 20  # the server's lines read for its listener's start before giving up


def start_server(server: IrttServer, netns: str | None, where: str) -> subprocess.Popen:
    """`server` started (in `netns`), returned once it says it listens: a client sent before
    that is refused ("read: connection refused") and ends at once. IrttError, the server
    stopped, when it says something else or ends."""
    proc = runner.start(server.argv(), netns=netns, names=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    said = []
    for _ in range(READY_WAIT_LINES):  # it prints "[ListenerStart] ..." once bound
        line = proc.stdout.readline().decode(errors="replace")
        said.append(line)
        if not line or IrttServer.READY in line:
            break
    if IrttServer.READY not in said[-1]:
        procs.stop_popen([proc])
        raise IrttError(f"irtt server on {where} did not start listening: {''.join(said).strip()[:200]}")
    return proc


class UdpRoundTrips(Probe):
    phase = "window_tail"

    def __init__(self, port: int, duration: float):
        self.port, self.duration = port, duration
        self.server: subprocess.Popen | None = None
        self.client: subprocess.Popen | None = None
        self.out = self.err = ""

    def before(self, rep: Repetition) -> None:
        if shutil.which("irtt") is None:
            raise EnvironmentProblem("measure: [udp_rtt] sends its round trips with irtt, which is not installed",
                                     hint=f"install it: {install_command('irtt')}")
        server = IrttServer(address=rep.lab.address(rep.server, rep.family), port=self.port)
        self.server = start_server(server, rep.server_ns, rep.server)

    def start(self, rep: Repetition) -> None:
        client = IrttClient(address=rep.lab.address(rep.server, rep.family), duration_s=self.duration + rep.omit,
                            interval_s=LOAD_INTERVAL_S, port=self.port)
        self.client = runner.start(client.argv(), netns=rep.client_ns, names=False, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)

    def finish(self, rep: Repetition) -> None:
        try:
            if self.client is not None:
                out, err = procs.communicate(self.client, timeout=15)
                self.out, self.err = out.decode(errors="replace"), err.decode(errors="replace")
                rep.raw[RAW] = self.out
                if self.err.strip():
                    rep.raw["irtt.stderr"] = self.err
        finally:
            if self.server is not None:
                procs.stop_popen([self.server])

    def row(self, rep: Repetition) -> dict[str, Any]:
        if self.client is None:
            return {}
        if not self.out.strip():
            raise IrttError(f"irtt client gave no round trips: {self.err.strip()[:200] or 'no output'}")
        return IrttClient.parse(self.out).window(rep.omit + LOAD_SKIP_S).row("udp_rtt_")
