"""Several flows at once (an experiment's `flows:`, or `flows: rrul`): one iperf3 client per flow
on the flow's client node, each against its own server on the flow's server node (an iperf3
3.12 server runs one test at a time), started at the flow's offset into the window. Every flow
reports every FLOW_INTERVAL_S with the receiver's series (--get-server-output): the per-flow
goodput over the window that the report draws and `linklab export --to flent` writes.

The row: per flow `flow_<name>_goodput_bps` (what arrived), `_retransmits`, `_rtt_ms` (the
sender's mean smoothed RTT), `_direction` (up: the client sent; down: the server did); over all
flows `throughput_bps` (their sum, judged as one flow's is), `goodput_up_bps`,
`goodput_down_bps`, `flow_count` and `jain_index`, Jain's fairness index of the flows' goodputs
(1: equal shares; 1/n: one flow took everything).
"""

from __future__ import annotations

import dataclasses
import subprocess
import threading
from typing import Any

from linklab import procs, runner
from linklab.handle import LabHandle
from linklab.measure.iperf3 import Iperf3Client, Iperf3Server, parse_result
from linklab.measure.stats import jain_index
from linklab.measure.traffic import CC_SYSCTL, stop_stale_iperf3, wait_listening
from linklab.results.samples import FLOW_PREFIX as RAW_PREFIX  # each flow's JSON: raw file flow-<name>.json
from linklab.sweep.kinds.base import Kind
from linklab.units import parse_rate

FLOW_INTERVAL_S = 0.2  # flent's default step: its plots' resolution


def flow_port(base: int, index: int) -> int:
    return base + index


def flow_row(flows: list[Any], results: dict[str, Any]) -> dict[str, Any]:
    """The row's flow columns from each flow's parsed iperf3 result (by name): see the module's text."""
    row: dict[str, Any] = {}
    goodputs, up, down = [], 0.0, 0.0
    for f in flows:
        r = results[f.name]
        bps = r.received_bps
        goodputs.append(bps)
        up, down = (up + bps, down) if f.direction == "up" else (up, down + bps)
        row.update({f"flow_{f.name}_goodput_bps": bps, f"flow_{f.name}_retransmits": r.retransmits,
                    f"flow_{f.name}_rtt_ms": None if r.rtt_mean_us is None else round(r.rtt_mean_us / 1e3, 3),
                    f"flow_{f.name}_direction": f.direction})
    return {"throughput_bps": sum(goodputs), "goodput_up_bps": up, "goodput_down_bps": down, "flow_count": len(flows),
            "jain_index": round(jain_index(goodputs), 4) if goodputs else None, **row}


class FlowsTraffic:
    """One repetition's flows: each client started at its offset, all waited for, each parsed."""

    def __init__(self, clients: list[tuple[Any, str, Iperf3Client]], timeout: float):
        self.clients = clients  # (flow, client node, client)
        self.timeout = timeout
        self.running: dict[str, subprocess.Popen] = {}
        self.timers: list[threading.Timer] = []
        self.failed: list[str] = []
        self.outputs: dict[str, str] = {}

    def prepare(self, rep) -> None:
        """A flow without its own cc sends with its client node's default, named to iperf3 (a
        kept-up server would apply an earlier test's otherwise: linklab/measure/traffic.py)."""
        for i, (flow, node, client) in enumerate(self.clients):
            if client.congestion is None:
                cc = rep.handle.backend.read_sysctls(rep.lab, node, [CC_SYSCTL])[CC_SYSCTL] or None
                self.clients[i] = (flow, node, dataclasses.replace(client, congestion=cc))

    def _launch(self, rep, flow, node: str, client: Iperf3Client) -> None:
        try:
            self.running[flow.name] = runner.start(client.argv(), netns=rep.handle.ns(node), stdout=subprocess.PIPE,
                                                   stderr=subprocess.PIPE, names=not runner.is_address(client.server))
        except Exception as e:  # a timer thread's failure is the repetition's, said in row()
            self.failed.append(f"flow {flow.name}: {e}")

    def start(self, rep) -> None:
        for flow, node, client in self.clients:
            if flow.start > 0:
                t = threading.Timer(flow.start, self._launch, (rep, flow, node, client))
                t.daemon = True
                self.timers.append(t)
                t.start()
            else:
                self._launch(rep, flow, node, client)

    def wait(self, rep) -> None:
        for t in self.timers:
            t.join()
        for flow, _, _ in self.clients:
            p = self.running.get(flow.name)
            if p is None:
                continue
            out, err = procs.communicate(p, timeout=self.timeout)
            self.outputs[flow.name] = out.decode(errors="replace")
            rep.raw[f"{RAW_PREFIX}{flow.name}.json"] = self.outputs[flow.name]
            if err.strip():
                rep.raw[f"{RAW_PREFIX}{flow.name}.stderr"] = err.decode(errors="replace")

    def row(self, rep) -> dict[str, Any]:
        if self.failed:
            from linklab.measure.iperf3 import Iperf3Error
            raise Iperf3Error("; ".join(self.failed))
        flows = [f for f, _, _ in self.clients]
        return flow_row(flows, {name: parse_result(out) for name, out in self.outputs.items()})


class FlowsKind(Kind):
    """The sweep's kind when the experiment has `flows:` (engine.Sweep)."""

    name = "flows"
    comms = ("iperf3",)

    def __init__(self, workdir, tool=None):
        super().__init__(workdir, tool)
        self.servers: list[subprocess.Popen] = []
        self.key: tuple | None = None

    def clean(self, handle: LabHandle) -> list[str]:
        return [f"iperf3 on {node.name}" for node in handle.lab.nodes if stop_stale_iperf3(handle, node.name)]

    def serve(self, handle, plan, events) -> None:
        """One server per flow on its server node, on port tool.port + the flow's index, kept up
        while the next point wants the same (nodes, ports, the server nodes' sysctls)."""
        port, interval = plan.tool.port, plan.tool.interval or FLOW_INTERVAL_S
        wanted = [(f.server, flow_port(port, i)) for i, f in enumerate(plan.flows)]
        key = (handle.name, tuple(wanted), interval,
               tuple(tuple(sorted(handle.lab.node(n).sysctls.items())) for n in sorted({s for s, _ in wanted})))
        if self.key == key and all(p.poll() is None for p in self.servers):
            return
        self.stop()
        for node in sorted({n for f in plan.flows for n in (f.client, f.server)}):
            stop_stale_iperf3(handle, node)
        for node, p in wanted:
            server = Iperf3Server(port=p, json_output=True, interval=interval)
            self.servers.append(runner.start(server.argv(), netns=handle.ns(node), names=False))
        for node in sorted({n for n, _ in wanted}):
            wait_listening(handle.ns(node), [p for n, p in wanted if n == node])
        self.key = key

    def traffic(self, handle, plan, omit, events) -> FlowsTraffic:
        tool = plan.tool
        clients = []
        for i, f in enumerate(plan.flows):
            name = f.server if tool.ip == 4 else f"{f.server}-v6"
            rate = f.udp_rate or tool.udp_rate
            clients.append((f, f.client, Iperf3Client(
                server=handle.lab.node(f.client).address_of(name) or name, port=flow_port(tool.port, i),
                duration=f.duration or tool.duration, streams=f.streams, protocol=f.protocol,
                bitrate=parse_rate(rate) * handle.lab.scale if f.protocol == "udp" else None,
                congestion=f.cc or plan.cc, ipv6=tool.ip == 6, omit=omit, reverse=f.direction == "down",
                interval=tool.interval or FLOW_INTERVAL_S, get_server_output=True)))
        longest = max((f.start + (f.duration or tool.duration) for f in plan.flows), default=tool.duration)
        return FlowsTraffic(clients, timeout=longest + omit + 30)

    def stop(self) -> None:
        procs.stop_popen(self.servers)
        self.servers, self.key = [], None

    def columns(self, plan) -> dict[str, Any]:
        t = plan.tool
        return {"kind": self.name, "duration_s": t.duration, "cc": plan.cc, "ip": t.ip,
                "flows": "; ".join(f"{f.name}: {f.client}->{f.server} {f.direction} {f.protocol} x{f.streams}"
                                   + (f" {f.cc}" if f.cc else "") + (f" +{f.start:g}s" if f.start else "")
                                   for f in plan.flows)}
