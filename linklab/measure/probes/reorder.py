"""Reordering measured directly: a sequence-numbered UDP probe sent beside the flow
(linklab/measure/reorder.py), from once the flow is past slow start."""

from __future__ import annotations

import subprocess
import threading
from typing import Any

from linklab import procs, runner
from linklab.measure.probes.base import Probe, Repetition
from linklab.measure.reorder import ReorderProbe

AFTER_OMIT_S = 0.5  # the sender starts this long after iperf3's omitted warm-up


class Reordering(Probe):
    phase = "window_tail"

    def __init__(self, port: int, duration: float):
        self.port = port
        self.bursts = max(min(int((duration - 1.5) / 0.01), 400), 20)
        self.tool: ReorderProbe | None = None
        self.receiver: subprocess.Popen | None = None
        self.sender: subprocess.Popen | None = None
        self.timer: threading.Timer | None = None
        self.text = ""

    def before(self, rep: Repetition) -> None:
        # The receiver first: it prints "listening" once bound.
        self.tool = ReorderProbe(target=rep.lab.address(rep.server, rep.family), port=self.port,
                                 bursts=self.bursts, listen_s=1.0)
        self.receiver = runner.start(self.tool.receiver_argv(), netns=rep.server_ns, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.receiver.stdout.readline()

    def start(self, rep: Repetition) -> None:
        def send() -> None:
            self.sender = runner.start(self.tool.argv(), netns=rep.client_ns, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE)
        self.timer = threading.Timer(rep.omit + AFTER_OMIT_S, send)
        self.timer.start()

    def finish(self, rep: Repetition) -> None:
        if self.timer is not None:
            # Fired long ago when the traffic ran its course (it lasts omit + duration); cancelled
            # when the window was cut short.
            self.timer.cancel()
            self.timer.join()
        if self.sender is not None:
            procs.communicate(self.sender, timeout=30)
        if self.receiver is not None:
            self.text = procs.communicate(self.receiver, timeout=30)[0].decode(errors="replace")
            rep.raw["reorder-probe.txt"] = self.text

    def row(self, rep: Repetition) -> dict[str, Any]:
        return ReorderProbe.parse(self.text).row("reorder_") if self.receiver is not None else {}
