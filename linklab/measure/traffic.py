"""The window's load: iperf3 clients from a point's client to its server, and the servers they
reach, kept up from point to point.

Always name the congestion control: a long-running iperf3 3.12 server keeps the -C of an earlier
test otherwise (captured in tests/data/tools/iperf3_tcp_reverse_stale_cc.json), so the client
reads the client node's default when the point does not set one.
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from linklab import procs, runner
from linklab.handle import LabHandle
from linklab.measure.iperf3 import Iperf3Client, Iperf3Server, aggregate, parse_result
from linklab.measure.probes.base import Repetition
from linklab.ready import listening_ports

CC_SYSCTL = "net.ipv4.tcp_congestion_control"


class Traffic:
    """`client` (its congestion control None: the client node's default) run once, or as
    `processes` separate iperf3 processes of one stream each; `parallel` is recorded as
    `streams_as` (one iperf3's threads or separate processes: their CPU results differ)."""

    def __init__(self, client: Iperf3Client, *, processes: int | None, parallel: str, timeout: float):
        self.client, self.processes, self.parallel, self.timeout = client, processes, parallel, timeout
        self.running: list[subprocess.Popen] = []
        self.outputs: list[tuple[str, str]] = []

    def prepare(self, rep: Repetition) -> None:
        if self.client.congestion is None:
            cc = rep.handle.backend.read_sysctls(rep.lab, rep.client, [CC_SYSCTL])[CC_SYSCTL] or None
            self.client = dataclasses.replace(self.client, congestion=cc)

    def start(self, rep: Repetition) -> None:
        clients = self.client.as_processes(self.processes) if self.processes else [self.client]
        for c in clients:
            # A client given the server's address resolves no name: entered with nsenter, not
            # `ip netns exec` (its mounts cost ~0.05-0.2 s a start under software emulation).
            self.running.append(runner.start(c.argv(), netns=rep.client_ns, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, names=not runner.is_address(c.server)))

    def wait(self, rep: Repetition) -> None:
        """Until every client has ended (killed past the timeout); their output kept in rep.raw."""
        for p in self.running:
            out, err = procs.communicate(p, timeout=self.timeout)
            self.outputs.append((out.decode(errors="replace"), err.decode(errors="replace")))
        many = len(self.outputs) > 1
        for i, (out, err) in enumerate(self.outputs):
            rep.raw[f"iperf3-{i}.json" if many else "iperf3.json"] = out
            if err.strip():
                rep.raw[f"iperf3-{i}.stderr" if many else "iperf3.stderr"] = err
        rep.traffic_json = self.outputs[0][0] if self.outputs else ""

    def row(self, rep: Repetition) -> dict[str, Any]:
        results = [parse_result(out) for out, _ in self.outputs]  # raises Iperf3Error on iperf3's {"error": ...}
        result = results[0] if len(results) == 1 else aggregate(results)
        return {**result.row(""), "streams_as": self.parallel}


@dataclass
class Servers:
    """iperf3 servers on a point's server node, kept up across its repetitions."""

    procs: list[subprocess.Popen]
    ports: list[int]

    def stop(self) -> None:
        procs.stop_popen(self.procs)


class ServerPool:
    """The iperf3 servers kept up from point to point: the next point reuses them when it wants
    the same servers (node, ports, the node's sysctls) and they are still running, instead of
    stopping, starting and waiting for them again. They listen on every address, so MTU, bond-mode and impairment
    changes leave them serving; the client always names its congestion control (see above)."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.servers: Servers | None = None

    def get(self, handle: LabHandle, server: str, client: str, port: int, count: int,
            interval: float | None = None) -> Servers:
        # With the server node's sysctls: a connection a server accepts starts with the buffer its
        # listening socket got from tcp_rmem when the server started (sockets copy their
        # listener's), so a server kept up across a change of tcp_rmem would open every flow of
        # the next points at the old default's window (captured: 56 588 B from the old 128 KiB
        # default under a new "4096 32768 32768").
        sysctls = tuple(sorted(handle.lab.node(server).sysctls.items()))
        key = (handle.name, server, client, port, count, interval, sysctls)
        if self.servers is not None and self.key == key and all(p.poll() is None for p in self.servers.procs):
            return self.servers
        self.stop()
        self.servers, self.key = start_servers(handle, server, client, port, count, interval), key
        return self.servers

    def stop(self) -> None:
        if self.servers is not None:
            self.servers.stop()
        self.servers = self.key = None


def stop_stale_iperf3(handle: LabHandle, node: str) -> int:
    """iperf3 processes left on a lab node by a killed sweep would hold the ports."""
    stale = [pid for pid in handle.backend.node_pids(handle.lab, node)
             if (procs.identity(pid) or {}).get("comm") == "iperf3"]
    procs.stop(stale, grace=0.5)
    return len(stale)


def start_servers(handle: LabHandle, server: str, client: str, port: int, count: int,
                  interval: float | None = None) -> Servers:
    """`count` iperf3 servers on `server` from `port` on, once no stale iperf3 holds either side.
    With `interval`, each reports every `interval` s in JSON: the receiver's time series, which a
    client asking --get-server-output gets back (the sender's own intervals show what left its
    socket, not what arrived: they dip and catch up around a fault that the receiver saw whole)."""
    fleet = Iperf3Server.fleet(count, base_port=port, json_output=interval is not None, interval=interval)
    ns = handle.ns(server)
    for node in {client, server}:
        stop_stale_iperf3(handle, node)
    started = [runner.start(s.argv(), netns=ns, names=False) for s in fleet]  # a server resolves no name
    ports = [s.port for s in fleet]
    wait_listening(ns, ports)
    return Servers(started, ports)


def wait_listening(ns: str, ports: list[int], deadline_s: float = 15.0) -> None:
    """Until every server port accepts connections (a fixed sleep is too short under emulation)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        # By the namespace's name, also a container node's: the image need not have ss.
        out = runner.run(["ss", "-Hltn"], netns=runner.netns_of(ns), check=False, timeout=10).stdout
        if set(ports) <= listening_ports(out):
            return
        time.sleep(0.05)
