"""CPU during the window: per core, and per process (iperf3 on each side) from its threads
(linklab/measure/cpu.py), sampled once a second."""

from __future__ import annotations

import json
from typing import Any

from linklab import runner
from linklab.measure.cpu import CpuSampler, CpuWindow
from linklab.measure.probes.base import Probe, Repetition


class CpuLoad(Probe):
    phase = "cpu_sampling"

    def __init__(self, comms: tuple[str, ...] = ("iperf3",), interval: float = 1.0):
        self.sampler = CpuSampler(comms=list(comms), interval=interval)
        self.window: CpuWindow | None = None
        self.started = False

    def before(self, rep: Repetition) -> None:
        # Last of the probes to begin, first to finish: the samples cover the traffic's window.
        self.sampler.start()
        self.started = True

    def finish(self, rep: Repetition) -> None:
        if not self.started:
            return
        self.window = self.sampler.stop()
        rep.raw["cpu.json"] = json.dumps({"seconds": self.window.seconds, "cores": self.window.cores,
                                          "series": self.window.series}, default=str)

    def row(self, rep: Repetition) -> dict[str, Any]:
        if self.window is None:
            return {}
        # Processes are told apart by their network namespace's name (a container node's too).
        return self.window.row("cpu", labels={runner.netns_of(rep.client_ns): "client",
                                              runner.netns_of(rep.server_ns): "server"})
