"""What held the sender back: its connections' tcp_info (linklab/measure/ss.py), read once in the
client's namespace near the end of the flow, when the kernel's busy / rwnd_limited /
sndbuf_limited times cover nearly all of it (they count from the connection's start)."""

from __future__ import annotations

import threading
from typing import Any

from linklab import runner
from linklab.errors import CommandFailed
from linklab.measure.probes.base import Probe, Repetition
from linklab.measure.ss import TcpInfo, limits_row

# Seconds before the flow's planned end that ss reads the sender: ss itself takes ~0.3 s to
# start under software emulation, and a flow that ended first has nothing left to read.
BEFORE_END_S = 1.0


class SenderTcpInfo(Probe):
    phase = "window_tail"

    def __init__(self, ports: tuple[int, ...], duration: float):
        self.tool = TcpInfo(ports=ports)
        self.duration = duration
        self.timer: threading.Timer | None = None
        self.text: str | None = None
        self.err = ""
        self.at_s: float | None = None

    def start(self, rep: Repetition) -> None:
        length = rep.omit + self.duration
        self.at_s = round(max(length - BEFORE_END_S, length / 2), 3)
        self.timer = threading.Timer(self.at_s, self._read, args=(rep,))
        self.timer.start()

    def _read(self, rep: Repetition) -> None:
        # By the namespace's name, also a container node's: the image need not have ss.
        try:
            res = runner.run(self.tool.argv(), netns=runner.netns_of(rep.client_ns), timeout=15, check=False,
                             names=self.tool.needs_names)
            self.text, self.err = res.stdout, res.stderr
        except CommandFailed as e:  # recorded, not fatal: the row then lacks the sender's tcp_info
            self.err = str(e)

    def finish(self, rep: Repetition) -> None:
        if self.timer is None:
            return
        # Fired before the flow's end when the traffic ran its course; cancelled when it was cut short.
        self.timer.cancel()
        self.timer.join()
        if self.text is not None or self.err:
            rep.raw["ss-sender.txt"] = (self.text or "") + self.err

    def row(self, rep: Repetition) -> dict[str, Any]:
        if self.text is None:
            return {}
        row = limits_row(TcpInfo.parse(self.text))
        return {**row, "sender_tcp_read_s": self.at_s} if row else {}
