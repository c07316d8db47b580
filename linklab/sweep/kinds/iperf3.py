"""The default tool kind: iperf3 clients from the point's client to its server
(linklab/measure/traffic.py), the servers kept up from point to point."""

from __future__ import annotations

from typing import Any

from linklab.handle import LabHandle
from linklab.measure.traffic import ServerPool, stop_stale_iperf3
from linklab.sweep import measure_rep
from linklab.sweep.kinds.base import Kind


class Iperf3Kind(Kind):
    name = "iperf3"
    tcp_ports = True
    comms = ("iperf3",)

    def __init__(self, workdir, tool=None):
        super().__init__(workdir, tool)
        self.servers = ServerPool()

    def clean(self, handle: LabHandle) -> list[str]:
        # iperf3s a killed sweep left running in the lab (they live in their own sessions).
        return [f"iperf3 on {node.name}" for node in handle.lab.nodes if stop_stale_iperf3(handle, node.name)]

    def serve(self, handle, plan, events) -> None:
        self.servers.get(handle, plan.server, plan.client, plan.tool.port,
                         plan.tool.streams if plan.tool.parallel == "processes" else 1,
                         measure_rep.report_interval(plan, events))

    def traffic(self, handle, plan, omit, events):
        return measure_rep.traffic_for(plan, handle, omit, events)

    def stop(self) -> None:
        self.servers.stop()

    def columns(self, plan) -> dict[str, Any]:
        t = plan.tool
        return {"duration_s": t.duration, "cc": plan.cc, "protocol": t.protocol, "ip": t.ip, "streams": t.streams,
                "parallel": t.parallel, "mss": t.mss, "length": t.length}
